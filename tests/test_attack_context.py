"""`get_context` shows Markdown pages of the docs folder only (issue #32): a note whose
`source.path` names any other file of the checkout (a hostile team server sets it for
`annotate mcp --remote`) shows no line of it, on both backends."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import annotate
from annotate.context import get_context

from .conftest import text_note, write_project

BACKENDS = ("sqlite", "postgresql")
SECRET = "API_KEY=sk-live-not-for-agents"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = write_project(tmp_path, "# Install\n\nRun pip install mkdocs-annotate in a shell.\n")
    (root / ".env").write_text(SECRET + "\n")
    (root / "docs" / ".hidden.md").write_text(SECRET + "\n")
    (root / "docs" / ".private").mkdir()
    (root / "docs" / ".private" / "notes.md").write_text(SECRET + "\n")
    (root / "docs" / "config.yml").write_text(SECRET + "\n")
    (root / "docs" / "leak.md").symlink_to(root / ".env")
    (root / "README.md").write_text(SECRET + "\n")  # Markdown, but outside the docs folder
    with (root / "mkdocs.yml").open("a") as f:
        f.write(f"# {SECRET}\n")
    return root


@pytest.mark.parametrize(
    "path",
    [
        ".env",
        "mkdocs.yml",
        "README.md",
        "docs/.hidden.md",
        "docs/.private/notes.md",
        "docs/config.yml",
        "docs/leak.md",
        "docs/../.env",
        "/etc/passwd",
    ],
)
def test_a_note_naming_another_file_shows_none_of_it(
    project: Path, db_url: str | None, path: str
) -> None:
    store = annotate.open(project, db=db_url)
    note = store.add_annotation(text_note())
    assert note.source is not None and note.source.path == "docs/guide/install.md"
    # What a hostile team server stores: the same note, pointing elsewhere.
    store.conn.execute("UPDATE annotations SET source_path = ? WHERE id = ?", (path, note.id))
    shown = get_context(store, note.id)
    # Before the fix: the secret's line, numbered, for the agent to read.
    assert SECRET not in shown.text() and shown.lines == ()
    assert shown.warning is not None
    store.close()


def test_a_page_of_the_docs_folder_is_still_shown(project: Path, db_url: str | None) -> None:
    store = annotate.open(project, db=db_url)
    note = store.add_annotation(text_note())
    shown = get_context(store, note.id)
    assert "Run pip install mkdocs-annotate in a shell." in shown.text()
    os.remove(project / ".env")  # the fixture's files do not matter to a real page
    assert get_context(store, note.id).lines == shown.lines
    store.close()

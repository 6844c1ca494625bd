"""A file's line hashes kept once per version of the file (annotate/lineversions.py, issue #31)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import annotate
from annotate import lineversions, schema
from annotate.export import render
from annotate.reconcile import line_hashes
from annotate.store import Store

from .conftest import touch_write, write_install_page

# Each test taking `db_url` runs on both (tests/conftest.py).
BACKENDS = ("sqlite", "postgresql")

SAYS = (
    "Download the installer from the releases page of the project",
    "Check that your Python interpreter is recent enough for the tool",
    "Create a virtual environment so that nothing else is disturbed",
    "Run the installer and answer its questions about the target folder",
    "Open a new shell so the command is found on your search path",
    "Verify the installation by asking the tool for its version number",
)
PAGE = "".join(f"## Part {i}\n\n{says}.\n\n" for i, says in enumerate(SAYS, 1))

REWRITTEN = SAYS[1] + "."


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_install_page(tmp_path, PAGE)


def note(i: int) -> dict[str, Any]:
    exact = SAYS[i - 1]
    return {"pageUrl": "/install/", "note": f"n{i}", "selectedText": exact,
            "quote": {"exact": exact, "prefix": "", "suffix": ""}}  # fmt: skip


def rows(store: Store, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with store._tx(write=False) as conn:
        return [tuple(r) for r in conn.execute(sql, params).fetchall()]


def test_a_page_keeps_its_line_hashes_once(project: Path, db_url: str | None) -> None:
    store = annotate.open(project, db=db_url)
    made = [store.add_annotation(note(i)) for i in range(1, 7)]
    key = lineversions.key("docs/install.md", line_hashes(PAGE))
    assert rows(store, "SELECT DISTINCT source_lines FROM annotations") == [(key,)]
    assert rows(store, "SELECT key, path, lines FROM line_versions") == [
        (key, "docs/install.md", line_hashes(PAGE))
    ]
    # An edit that moves every note: their new version is kept, the old one no note points at
    # is dropped.
    edited = "Added above.\n\n" + PAGE
    touch_write(project / "docs" / "install.md", edited)
    listed = store.list_annotations("/install/")
    assert [a.source.line_start for a in listed if a.source] == [
        a.source.line_start + 2 for a in made if a.source
    ]
    now = lineversions.key("docs/install.md", line_hashes(edited))
    assert rows(store, "SELECT DISTINCT source_lines FROM annotations") == [(now,)]
    assert rows(store, "SELECT key FROM line_versions") == [(now,)]
    store.close()


def test_a_page_saved_unchanged_writes_no_note(project: Path, db_url: str | None) -> None:
    """A new mtime with the same text: the version's row records it, the notes' rows stay as
    they were, and the next read finds nothing to do."""
    store = annotate.open(project, db=db_url)
    for i in range(1, 5):
        store.add_annotation(note(i))
    before = rows(store, "SELECT id, source_mtime, source_lines FROM annotations ORDER BY id")
    feed = store.changes(0)[1]
    at = touch_write(project / "docs" / "install.md", PAGE)
    listed = store.list_annotations("/install/")
    assert [a.source.line_start for a in listed if a.source] == [3, 7, 11, 15]
    assert rows(store, "SELECT id, source_mtime, source_lines FROM annotations ORDER BY id") == (
        before
    )
    assert rows(store, "SELECT mtime FROM line_versions") == [(at,)]
    assert store.changes(0)[1] == feed
    # A rewritten part after that: its note goes stale and keeps its lines, the others move.
    edited = "New first line.\n\n" + PAGE.replace(REWRITTEN, "Homebrew users can run brew instead.")
    touch_write(project / "docs" / "install.md", edited)
    states = [(a.anchor_state, a.source.line_start) for a in store.list_annotations("/install/")
              if a.source]  # fmt: skip
    assert states == [("anchored", 5), ("stale", 9), ("anchored", 13), ("anchored", 17)]
    store.close()


def exports(store: Store) -> dict[str, str]:
    """The JSON and Markdown exports, the JSON's time of export left out."""
    out = {f: render(store, f) for f in ("json", "markdown")}
    out["json"] = re.sub(r'"exportedAt": "[^"]*"', "", out["json"])
    return out


def downgrade(store: Store) -> None:
    """The store as schema version 12 wrote it: each note holding its file's line hashes, no
    table of versions."""
    with store._tx(write=True) as conn:
        conn.execute("UPDATE annotations SET source_lines = ?", (line_hashes(PAGE),))
        conn.execute("DROP TABLE line_versions")
        conn.execute("DELETE FROM schema_version WHERE version = 13")


def test_a_store_of_version_12_is_converted_on_open(project: Path, db_url: str | None) -> None:
    store = annotate.open(project, db=db_url)
    made = [store.add_annotation(note(i)) for i in range(1, 5)]
    element = store.add_annotation(
        {"type": "element", "pageUrl": "/install/", "note": "e",
         "elementSelector": {"cssSelector": "img"}}
    )  # fmt: skip
    exported = exports(store)
    downgrade(store)
    store.close()
    store = annotate.open(project, db=db_url)
    assert store.schema_version == schema.LATEST == 13
    key = lineversions.key("docs/install.md", line_hashes(PAGE))
    assert set(rows(store, "SELECT DISTINCT source_lines FROM annotations")) == {(key,), (None,)}
    assert rows(store, "SELECT key, lines FROM line_versions") == [(key, line_hashes(PAGE))]
    assert {a.id for a in store.list_annotations()} == {a.id for a in [*made, element]}
    assert exports(store) == exported
    # The converted version carries a stale note's lines through the next edit (issue #26).
    edited = "New first line.\n\n" + PAGE.replace(REWRITTEN, "Homebrew users can run brew instead.")
    touch_write(project / "docs" / "install.md", edited)
    got = store.get_annotation(made[1].id)
    assert (got.anchor_state, got.source.line_start) == ("stale", 9)  # type: ignore[union-attr]
    store.close()


def test_notes_an_edit_did_not_touch_are_not_written(project: Path, db_url: str | None) -> None:
    """A word added to one part: the other parts' notes keep their rows (their version's row
    names the new version), and the edits after that still carry every note."""
    store = annotate.open(project, db=db_url)
    made = [store.add_annotation(note(i)) for i in range(1, 7)]
    before = dict(rows(store, "SELECT id, source_mtime FROM annotations"))
    page = project / "docs" / "install.md"
    # Alone, a note read by its id: its version cannot speak for the others, not looked at.
    touch_write(page, PAGE.replace(SAYS[5], SAYS[5] + " again"))
    assert store.get_annotation(made[0].id).source.line_start == 3  # type: ignore[union-attr]
    assert {n for (n,) in rows(store, "SELECT next FROM line_versions")} == {None}
    edited = PAGE.replace(SAYS[5], SAYS[5] + " first")
    touch_write(page, edited)
    listed = store.list_annotations("/install/")
    assert [a.source.line_start for a in listed if a.source] == [3, 7, 11, 15, 19, 23]
    after = dict(rows(store, "SELECT id, source_mtime FROM annotations"))
    written = {id for id in after if after[id] != before[id]}
    assert made[0].id not in written and len(written) < len(made)
    now = lineversions.key("docs/install.md", line_hashes(edited))
    old = lineversions.key("docs/install.md", line_hashes(PAGE))
    # The version only the note read alone saw, which no note points at, is gone.
    assert set(rows(store, "SELECT key, next FROM line_versions")) == {(old, now), (now, None)}
    # Read again: nothing to do (no row written, the same answer).
    assert store.list_annotations("/install/") == listed
    assert dict(rows(store, "SELECT id, source_mtime FROM annotations")) == after
    # Two lines added above: every note moves, those never written included.
    touch_write(page, "Added.\n\n" + edited)
    listed = store.list_annotations("/install/")
    assert [a.source.line_start for a in listed if a.source] == [5, 9, 13, 17, 21, 25]
    assert {a.anchor_state for a in listed} == {"anchored"}
    store.close()


def test_versions_planned_in_worker_processes_are_kept(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`reconcile(workers=2)` plans in other processes: the keys come back with their path and
    hashes (`LineKey`), and their versions are written with the notes."""
    from annotate import relocator

    monkeypatch.setattr(relocator, "PARALLEL_MIN_ROWS", 1)
    store = annotate.open(project)
    for i in range(1, 5):
        store.add_annotation(note(i))
    edited = "Added.\n\n" + PAGE.replace(REWRITTEN, "Homebrew users can run brew instead.")
    touch_write(project / "docs" / "install.md", edited)
    assert store.reconcile(workers=2) == 4
    now = lineversions.key("docs/install.md", line_hashes(edited))
    assert rows(store, "SELECT key, lines FROM line_versions") == [(now, line_hashes(edited))]
    listed = store.list_annotations("/install/")
    assert [(a.anchor_state, a.source.line_start) for a in listed if a.source] == [
        ("anchored", 5), ("stale", 9), ("anchored", 13), ("anchored", 17)
    ]  # fmt: skip
    store.close()


def test_edits_that_touch_no_note_keep_two_versions(project: Path, db_url: str | None) -> None:
    """Edits far from every note write no note and leave the version the notes keep and the
    file's current one, however many there were."""
    store = annotate.open(project, db=db_url)
    for i in range(1, 4):
        store.add_annotation(note(i))
    before = rows(store, "SELECT id, source_mtime, source_lines FROM annotations ORDER BY id")
    page = project / "docs" / "install.md"
    for word in ("one", "two", "three"):
        edited = PAGE.replace(SAYS[5], f"{SAYS[5]} {word}")
        touch_write(page, edited)
        listed = store.list_annotations("/install/")
        assert [a.source.line_start for a in listed if a.source] == [3, 7, 11]
    assert rows(store, "SELECT id, source_mtime, source_lines FROM annotations ORDER BY id") == (
        before
    )
    old = lineversions.key("docs/install.md", line_hashes(PAGE))
    now = lineversions.key("docs/install.md", line_hashes(edited))
    assert set(rows(store, "SELECT key, next FROM line_versions")) == {(old, now), (now, None)}
    store.close()

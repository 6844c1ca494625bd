"""Issue #29 item 3, docs pages: a review remembers the Markdown it was sent against, and says per
file what changed since (library on both backends, REST, CLI; the panel: tests/browser)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

import annotate
from annotate.cli import cli
from annotate.documents import word_changes, word_diff_counted
from annotate.errors import ReviewNotFound
from annotate.web import create_app

from .conftest import text_note, write_project

BACKENDS = ("sqlite", "postgresql")
TOKEN = "test-token-0123456789abcdef"
API = "/__annotate/api"
INSTALL_MD = """\
# Install

Some words first.

Run pip install mkdocs-annotate in a shell.

## Next

Then add the plugin to mkdocs.yml and run mkdocs serve.
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write_project(tmp_path, INSTALL_MD)
    (tmp_path / "docs" / "index.md").write_text("# Home\n\nWelcome to the docs.\n")
    return tmp_path


@pytest.fixture
def store(project: Path, db_url: str | None) -> Iterator[annotate.Store]:
    s = annotate.open(project, db=db_url)
    yield s
    s.close()


def sent_and_edited(project: Path, store: annotate.Store) -> str:
    """A review of a note on install.md and a page note on the home page, then the agent's edit
    of install.md (the home page untouched); the review's id."""
    a = store.add_annotation(text_note())
    store.add_page_note({"pageUrl": "/", "note": "Say hello."})
    review = store.create_review({"mode": "edit"})
    page = project / "docs" / "guide" / "install.md"
    page.write_text(page.read_text().replace("Run pip install", "Run pipx install"))
    store.address_annotation(a.id, message="Mentioned pipx.")
    return review.id


def test_changes_since_the_review_was_sent(project: Path, store: annotate.Store) -> None:
    got = store.reviews.changes(sent_and_edited(project, store))
    assert got["done"] is False  # the page note still waits
    assert got["files"] == [
        {"path": "docs/guide/install.md", "changed": True, "added": 1, "removed": 1,
         "diff": "# Install\n\nSome words first.\n\nRun [-pip-]{+pipx+} install "
                 "mkdocs-annotate in a shell … .yml and run mkdocs serve.\n"},
        {"path": "docs/index.md", "changed": False},
    ]  # fmt: skip


def test_a_deleted_file_and_an_unknown_review(project: Path, store: annotate.Store) -> None:
    id = sent_and_edited(project, store)
    (project / "docs" / "index.md").unlink()
    files = store.reviews.changes(id)["files"]
    assert files[1] == {"path": "docs/index.md", "changed": True, "missing": True}
    with pytest.raises(ReviewNotFound):
        store.reviews.changes("rv_nosuchreview00")


def test_a_long_file_answers_only_around_the_change(project: Path, store: annotate.Store) -> None:
    page = project / "docs" / "guide" / "install.md"
    page.write_text(INSTALL_MD + "".join(f"Filler sentence number {i}.\n" for i in range(2000)))
    store.add_annotation(text_note())
    id = store.create_review({"mode": "edit"}).id
    page.write_text(page.read_text().replace("number 1000.", "number one thousand."))
    [f] = [f for f in store.reviews.changes(id)["files"] if f["changed"]]
    assert (f["added"], f["removed"]) == (2, 1)
    assert "[-1000-]{+one thousand+}" in f["diff"] and len(f["diff"]) < 400


@pytest.mark.sqlite_only
def test_rest_and_openapi(project: Path, store: annotate.Store) -> None:
    id = sent_and_edited(project, store)
    app = create_app(store, token=TOKEN)
    with TestClient(
        app, base_url="http://127.0.0.1:8000", headers={"X-Annotate-Token": TOKEN}
    ) as c:
        r = c.get(f"{API}/reviews/{id}/changes")
        assert r.status_code == 200
        assert r.json() == store.reviews.changes(id)
        missing = c.get(f"{API}/reviews/rv_nosuchreview00/changes")
        assert missing.status_code == 404 and missing.json()["code"] == "not_found"
        paths = c.get("/__annotate/openapi.json").json()["paths"]
        assert "get" in paths["/__annotate/api/reviews/{id}/changes"]


@pytest.mark.sqlite_only
def test_cli(project: Path, store: annotate.Store) -> None:
    id = sent_and_edited(project, store)
    run = CliRunner().invoke(cli, ["review", id, "--changes", "--project", str(project)])
    assert run.exit_code == 0, run.output
    assert run.output.splitlines()[:3] == [
        f"Changed since review {id} was sent:",
        "docs/guide/install.md: +1 -1 words",
        "# Install",
    ]
    assert "Run [-pip-]{+pipx+} install" in run.output
    assert "docs/index.md: unchanged" in run.output
    as_json = CliRunner().invoke(
        cli, ["review", id, "--changes", "--json", "--project", str(project)]
    )
    assert json.loads(as_json.output) == store.reviews.changes(id)
    bad = CliRunner().invoke(cli, ["review", "rv_nosuchreview00", "--changes", "--project",
                                   str(project)])  # fmt: skip
    assert bad.exit_code == 1 and len(bad.output.strip().splitlines()) == 1


@pytest.mark.sqlite_only
def test_a_store_of_the_previous_version_gains_the_table(project: Path) -> None:
    import sqlite3

    from annotate import schema

    annotate.open(project).close()
    path = project / ".annotate" / "annotations.db"
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE review_sources")
        conn.execute("DROP TABLE line_versions")  # version 13 came after
        conn.execute("DELETE FROM schema_version WHERE version >= 12")
    conn.close()
    with annotate.open(project) as store:
        assert store.schema_version == schema.LATEST
        id = sent_and_edited(project, store)
        files = store.reviews.changes(id)["files"]
        assert [f["path"] for f in files] == ["docs/guide/install.md", "docs/index.md"]


@pytest.mark.sqlite_only
@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("a\nb\nc\n", "a\nB\nc\n"),
        ("a\nb\nc\n", "x\nb\nc\n"),
        ("a\nb\nc\n", "a\nb\nc\nd\n"),
        ("a\nb\nc", "a\nb\nc\n"),
        ("a\nb\n", "a\nb\n"),
        ("", "new\n"),
        ("same\nsame\nsame\n", "same\nsame\n"),
    ],
)
def test_the_word_diff_without_the_common_lines_rebuilds_both(old: str, new: str) -> None:
    # word_changes diffs only the lines between those both texts start and end with.
    pieces = word_changes(old, new)
    assert "".join(t for k, t in pieces if k != "ins") == old
    assert "".join(t for k, t in pieces if k != "del") == new
    assert (word_diff_counted(old, new) is None) == (old == new)


def test_a_follow_up_review_remembers_its_file_too(project: Path, store: annotate.Store) -> None:
    # Reopened with a follow-up: a review of its own, sent now, whose changes start from here.
    page = project / "docs" / "guide" / "install.md"
    a = store.add_annotation(text_note())
    store.create_review({"mode": "edit"})
    page.write_text(page.read_text().replace("Run pip install", "Run pipx install"))
    store.address_annotation(a.id)
    store.reopen(a.id, "And uv too, please.")
    follow_up = store.list_reviews()[-1].id
    assert [x.id for x in store.get_review(follow_up).annotations] == [a.id]
    assert store.reviews.changes(follow_up)["files"] == [
        {"path": "docs/guide/install.md", "changed": False}
    ]
    page.write_text(page.read_text().replace("in a shell", "or uv in a shell"))
    [f] = store.reviews.changes(follow_up)["files"]
    assert (f["added"], f["removed"]) == (2, 0) and "{+or uv +}" in f["diff"]

"""`--db` (issue #27 items 4 and 8): the file never moves the project, a file that does not exist
is never silently a new empty store, and what needs no Markdown works from any folder. Each case
runs `annotate` in a real process, from the folder a user would run it in."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import annotate

from .conftest import text_note, write_project

ANNOTATE = str(Path(sys.executable).parent / "annotate")
INSTALL_MD = "# Install\n\nRun pip install mkdocs-annotate in a shell.\n"
NO_PROJECT = (
    "Error: No documentation project in {} or any folder above it (looked for zensical.toml, "
    "mkdocs.yml, mkdocs.yaml, properdocs.yml, properdocs.yaml): run this in the project, or name "
    "it with --project PATH\n"
)


def project_in(folder: Path) -> Path:
    folder.mkdir()
    return write_project(folder, INSTALL_MD)


def run(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "ANNOTATE_DB"}
    return subprocess.run(
        [ANNOTATE, *args],
        cwd=cwd,
        env={**environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def ok(cwd: Path, *args: str) -> str:
    done = run(cwd, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def moved(tmp_path: Path) -> tuple[Path, Path, Path, str]:
    """A project whose store, holding one anchored text note, was copied to a folder outside
    it: (project, the copy, a folder in no project, the note's id)."""
    project = project_in(tmp_path / "project")
    with annotate.open(project) as store:
        note = store.add_annotation(text_note())
    assert note.anchor_state == "anchored"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    db = elsewhere / "notes.db"
    shutil.copy(project / ".annotate" / "annotations.db", db)
    return project, db, elsewhere, note.id


def anchors(cwd: Path, *args: str) -> list[tuple[str, str | None]]:
    listed = json.loads(ok(cwd, "list", "--json", *args))
    return [(n["anchorState"], (n.get("source") or {}).get("path")) for n in listed]


def test_a_db_outside_the_project_points_into_the_project(
    moved: tuple[Path, Path, Path, str],
) -> None:
    project, db, elsewhere, id = moved
    located = [("anchored", "docs/guide/install.md")]
    # From the project, and from anywhere with --project: the project's Markdown, not the file's.
    assert anchors(project, "--db", str(db)) == located
    assert anchors(elsewhere, "--db", str(db), "--project", str(project)) == located
    context = ok(project, "context", id, "--db", str(db))
    assert "> 3 | Run pip install mkdocs-annotate in a shell." in context
    assert "gone" not in context
    # From a folder in no project: read as stored (never re-located as orphaned, nor written).
    assert anchors(elsewhere, "--db", str(db)) == located
    assert anchors(project, "--db", str(db)) == located


def test_what_needs_no_markdown_works_from_any_folder(
    moved: tuple[Path, Path, Path, str],
) -> None:
    _, db, elsewhere, id = moved
    assert json.loads(ok(elsewhere, "summary", "--json", "--db", str(db)))["pages"] == 1
    assert f"[{id}]" in ok(elsewhere, "get", id, "--db", str(db))
    assert ok(elsewhere, "token", "add", "ada", "--db", str(db)).startswith("ann_")
    assert ok(elsewhere, "token", "list", "--db", str(db)).startswith("ada  reviewer  since ")
    assert ok(elsewhere, "reply", id, "On it", "--db", str(db)).startswith(f"Replied to {id}")
    # What needs the Markdown says which project is missing, in one line.
    for needs in (["context", id], ["target", id, "pipx install mkdocs-annotate"]):
        done = run(elsewhere, *needs, "--db", str(db))
        assert (done.returncode, done.stdout) == (1, "")
        assert done.stderr == NO_PROJECT.format(elsewhere.resolve())
    [note] = json.loads(ok(elsewhere, "list", "--json", "--db", str(db)))
    assert (note["anchorState"], note.get("replacedText")) == ("anchored", None)


def test_a_postgresql_store_works_from_any_folder(tmp_path: Path, pg_url: str) -> None:
    project = project_in(tmp_path / "project")
    with annotate.open(project, db=pg_url) as store:
        note = store.add_annotation(text_note())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert [n["id"] for n in json.loads(ok(elsewhere, "list", "--json", "--db", pg_url))] == [
        note.id
    ]
    summary = json.loads(ok(elsewhere, "summary", "--json", "--db", pg_url))
    assert summary["annotations"]["open"] == 1
    assert ok(elsewhere, "token", "add", "ada", "--db", pg_url).startswith("ann_")
    assert "ada  reviewer" in ok(elsewhere, "token", "list", "--db", pg_url)
    done = run(elsewhere, "context", note.id, "--db", pg_url)
    assert (done.returncode, done.stderr) == (1, NO_PROJECT.format(elsewhere.resolve()))


READING = [
    ["list"],
    ["notes"],
    ["get", "a_x"],
    ["summary"],
    ["context", "a_x"],
    ["history", "a_x"],
    ["export"],
    ["reviews"],
    ["reply", "a_x", "hi"],
    ["address", "a_x"],
    ["delete", "a_x"],
    ["send"],
    ["token", "list"],
    ["token", "revoke", "ada"],
]


@pytest.mark.parametrize("args", READING, ids=lambda a: " ".join(a))
def test_a_missing_db_is_refused_by_what_reads_it(tmp_path: Path, args: list[str]) -> None:
    project = write_project(tmp_path, INSTALL_MD)
    typo = tmp_path / "notse.db"
    done = run(project, *args, "--db", str(typo))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"Error: {typo} does not exist: check --db (or $ANNOTATE_DB); annotate serve, proxy, "
        "mcp, import and token add make a new store there\n"
    )
    assert not typo.exists()


def test_a_missing_db_in_the_environment_is_refused_too(tmp_path: Path) -> None:
    project = write_project(tmp_path, INSTALL_MD)
    typo = tmp_path / "notse.db"
    done = run(project, "list", env={"ANNOTATE_DB": str(typo)})
    assert (done.returncode, done.stderr.count("\n")) == (1, 1)
    assert done.stderr.startswith(f"Error: {typo} does not exist")
    assert not typo.exists()


def test_what_creates_a_store_says_so(tmp_path: Path) -> None:
    project = project_in(tmp_path / "project")
    exported = tmp_path / "export.json"
    with annotate.open(project) as store:
        note = store.add_annotation(text_note())
    assert ok(project, "export", "--format", "json", "-o", str(exported)) == ""
    for args in (["import", str(exported)], ["token", "add", "ada"]):
        new = tmp_path / f"{args[0]}.db"
        done = run(project, *args, "--db", str(new))
        assert done.returncode == 0, done.stderr
        assert f"New, empty store at {new} (--db named no existing file)\n" in done.stderr
        assert new.exists()
        # Once made, it is an existing store: nothing more is said.
        again = run(project, "list", "--db", str(new))
        assert (again.returncode, again.stderr) == (0, "")
    listed = json.loads(ok(project, "list", "--json", "--db", str(tmp_path / "import.db")))
    assert [n["id"] for n in listed] == [note.id]


def test_the_mcp_server_says_so_on_stderr(tmp_path: Path) -> None:
    project = write_project(tmp_path, INSTALL_MD)
    new = tmp_path / "team.db"
    done = subprocess.run(
        [ANNOTATE, "mcp", "--db", str(new)],
        cwd=project,
        stdin=subprocess.DEVNULL,  # the host hangs up at once: the server stops
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stdout == ""  # stdout is the protocol's
    assert done.stderr.startswith(f"New, empty store at {new} (--db named no existing file)\n")

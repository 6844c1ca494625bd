"""A read-only store still reads (issue #27 item 7): `annotate` run as a user would, in a real
process, on a store whose file, folder or both cannot be written.

The tests run as root here, who writes a 0444 file and a 0555 folder anyway: as root each is
also made immutable (`chattr +i`), which stops root too; as anyone else the modes do.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

import annotate
from annotate.compose import build_server

from .conftest import text_note, write_project

ANNOTATE = str(Path(sys.executable).parent / "annotate")
INSTALL_MD = "# Install\n\nRun pip install mkdocs-annotate in a shell.\n"
ROOT = os.geteuid() == 0


def annotate_cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ANNOTATE, *args], cwd=project, capture_output=True, text=True, timeout=60, check=False
    )


def lock(path: Path, mode: int) -> None:
    path.chmod(mode)
    if ROOT:
        subprocess.run(["chattr", "+i", str(path)], check=True)


def unlock(path: Path, mode: int) -> None:
    if ROOT:
        subprocess.run(["chattr", "-i", str(path)], check=True)
    path.chmod(mode)


@pytest.fixture(params=["file", "folder", "both"])
def read_only(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, str, str]]:
    """A project whose store holds a text note and a page note, whose Markdown changed since
    (so reading re-locates the note, which writes), then made read-only: (project, the text
    note's id, the sentence a write answers)."""
    project = write_project(tmp_path, INSTALL_MD)
    store = annotate.open(project)
    a = store.add_annotation(text_note())
    store.add_page_note({"pageUrl": "/guide/install/", "note": "Split this page."})
    store.close()
    md = project / "docs" / "guide" / "install.md"
    md.write_text("# Install\n\nAn intro line.\n\n" + INSTALL_MD.split("\n\n", 1)[1])
    os.utime(md, (1_000_000_000, 1_000_000_000))  # not the mtime the store recorded
    folder = project / ".annotate"
    db = folder / "annotations.db"
    locked = {"file": [(db, 0o444)], "folder": [(folder, 0o555)]}
    locked["both"] = locked["file"] + locked["folder"]
    why = {
        "file": "the file is read-only",
        "folder": f"its folder {str(folder)!r} is read-only",
        "both": "the file is read-only",
    }[request.param]
    for path, mode in locked[request.param]:
        lock(path, mode)
    try:
        yield project, a.id, f"{db} cannot be written: {why}; reading still works"
    finally:
        unlock(folder, 0o700)
        unlock(db, 0o644)


def digest(project: Path) -> str:
    return hashlib.sha256((project / ".annotate" / "annotations.db").read_bytes()).hexdigest()


def test_reads_work_and_writes_say_why(read_only: tuple[Path, str, str]) -> None:
    project, id, refused = read_only
    before = digest(project)
    listed = annotate_cli(project, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [n["note"] for n in json.loads(listed.stdout)] == [
        "Mention pipx as well.",
        "Split this page.",
    ]
    got = annotate_cli(project, "get", id)
    assert got.returncode == 0, got.stderr
    assert 'quote: "pip install mkdocs-annotate"' in got.stdout
    summary = annotate_cli(project, "summary", "--json")
    assert summary.returncode == 0, summary.stderr
    counts = json.loads(summary.stdout)
    assert (counts["annotations"]["open"], counts["pageNotes"]["open"]) == (1, 1)
    context = annotate_cli(project, "context", id)
    assert context.returncode == 0, context.stderr
    assert "Run pip install mkdocs-annotate in a shell." in context.stdout
    exported = annotate_cli(project, "export")
    assert exported.returncode == 0 and "Mention pipx as well." in exported.stdout
    for write in (["reply", id, "done"], ["start", id], ["delete", id]):
        done = annotate_cli(project, *write)
        assert (done.returncode, done.stdout, done.stderr) == (1, "", f"Error: {refused}\n")
    assert digest(project) == before
    wal = project / ".annotate" / "annotations.db-wal"
    assert not wal.exists() or wal.stat().st_size == 0  # nothing waits in a WAL either


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_the_mcp_server_reads_it_too(read_only: tuple[Path, str, str]) -> None:
    project, id, refused = read_only
    async with Client(build_server(project)) as client:

        async def call(name: str, **args: Any) -> tuple[bool, str]:
            result = await client.call_tool(name, args)
            return bool(result.is_error), result.content[0].text  # type: ignore[union-attr]

        is_error, text = await call("list_annotations")
        assert not is_error, text
        assert [a["id"] for a in json.loads(text)] == [id]
        assert await call("add_agent_reply", id=id, message="done") == (True, refused)


def test_the_web_app_reads_it_too(read_only: tuple[Path, str, str]) -> None:
    from starlette.testclient import TestClient

    from annotate.web import create_app

    project, id, refused = read_only
    token = "t" * 32
    store = annotate.open(project)
    client = TestClient(
        create_app(store, token=token),
        base_url="http://127.0.0.1:8000",
        headers={"X-Annotate-Token": token},
    )
    with client:
        r = client.get("/__annotate/api/annotations")
        assert r.status_code == 200, r.text
        assert [a["id"] for a in r.json()["annotations"]] == [id]
        r = client.post(f"/__annotate/api/annotations/{id}/replies", json={"message": "hi"})
        assert (r.status_code, r.json()) == (503, {"error": refused, "code": "store_read_only"})
    store.close()

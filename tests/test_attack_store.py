"""Faults of the store file under a running server and on disk (issue #17 items 2, 4 and 8).

Each case breaks the real file the way it breaks in use (`git clean -fdX`, `truncate -s 0`, a full
or read-only file system, a read-only file) and asserts the exact answer and that nothing was
stored twice or lost. Full and read-only file systems are real mounts made in a private mount
namespace (`unshare`), so nothing leaks out of the test; a read-only file is also made immutable
when the tests run as root, who writes a 0444 file anyway.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

import annotate
from annotate import tokens
from annotate.cli import cli
from annotate.web import create_app

API = "/__annotate/api"


def note(text: str) -> dict[str, str]:
    return {"pageUrl": "/guide/", "note": text}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, TestClient, str]]:
    """A project in a git repository, served as `annotate serve` serves it (a store and a
    TokenFile), with the token its pages carry."""
    project = tmp_path / "site"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    store = annotate.open(project)
    token_file = tokens.TokenFile(project)
    token = token_file()
    app = create_app(store, token=token_file)
    with TestClient(
        app, base_url="http://127.0.0.1:8000", headers={"X-Annotate-Token": token}
    ) as c:
        yield project, c, token
    store.close()


def post(client: TestClient, text: str) -> str:
    r = client.post(f"{API}/page-notes", json=note(text))
    assert r.status_code == 201, r.text
    return r.json()["id"]


def served_notes(client: TestClient) -> list[str]:
    r = client.get(f"{API}/page-notes?includeResolved=true")
    return [n["note"] for n in r.json()["pageNotes"]]


def on_disk(project: Path) -> list[str]:
    """The page notes another process finds: what the CLI and the MCP server would read."""
    out = subprocess.run(
        [sys.executable, "-m", "annotate.cli", "notes", "--all", "--json", "--project", project],
        capture_output=True,
        text=True,
        check=True,
    )
    return [n["note"] for n in json.loads(out.stdout)]


def git_clean(project: Path) -> None:
    # What issue #17 ran: `.annotate/` is gitignored, so -X removes it with everything in it.
    subprocess.run(["git", "-C", project, "clean", "-q", "-fdX"], check=True)
    assert not (project / ".annotate").exists()


def test_git_clean_under_a_running_server_loses_no_acknowledged_write(
    served: tuple[Path, TestClient, str], caplog: pytest.LogCaptureFixture
) -> None:
    project, client, token = served
    before = [f"before {i}" for i in range(3)]
    for text in before:
        post(client, text)
    git_clean(project)
    after = [f"after {i}" for i in range(5)]
    with caplog.at_level(logging.WARNING):
        for text in after:
            post(client, text)  # with the token the open page carries
    assert on_disk(project) == before + after
    # The token file is written again with the same token, so open pages keep working.
    assert tokens.token_path(project).read_text() == token + "\n"
    assert (project / ".annotate" / ".gitignore").exists()
    db = project / ".annotate" / "annotations.db"
    assert [r.getMessage() for r in caplog.records] == [
        f"{tokens.token_path(project)} was deleted while in use; wrote it again",
        f"{db} was deleted while in use; the 3 notes this process still held were written "
        "into the new file",
    ]


def test_a_store_recreated_empty_by_another_process_is_refilled(
    served: tuple[Path, TestClient, str],
) -> None:
    project, client, _ = served
    post(client, "first")
    git_clean(project)
    assert on_disk(project) == []  # the CLI ran first and made a new, empty store
    post(client, "second")
    assert on_disk(project) == ["first", "second"]
    assert served_notes(client) == ["first", "second"]


def test_a_store_replaced_by_one_with_notes_is_used_as_it_is(
    served: tuple[Path, TestClient, str], caplog: pytest.LogCaptureFixture
) -> None:
    project, client, _ = served
    post(client, "old")
    git_clean(project)
    other = annotate.open(project)
    other.add_page_note(note("theirs"))
    other.close()
    with caplog.at_level(logging.WARNING, logger="annotate.store"):
        post(client, "mine")
    # The server writes where everyone else reads; it does not mix two stores.
    assert on_disk(project) == ["theirs", "mine"]
    assert served_notes(client) == ["theirs", "mine"]
    assert caplog.records[-1].getMessage() == (
        f"{project / '.annotate' / 'annotations.db'} was replaced by another file while in use; "
        "it holds notes of its own, so it is used as it is (the 1 note of the file it replaced "
        "is not in it)"
    )


def test_two_processes_holding_the_deleted_file_restore_it_once(tmp_path: Path) -> None:
    # The dev server and the MCP server both had the store open; each writes after the delete.
    first = annotate.open(tmp_path)
    first.add_page_note(note("shared"))
    code = (
        "import sys, annotate\n"
        "s = annotate.open(sys.argv[1]); s.list_page_notes()\n"
        "sys.stdin.readline()\n"  # wait until the folder is gone
        "s.add_page_note({'pageUrl': '/guide/', 'note': 'from the other'})\n"
    )
    other = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path)], stdin=subprocess.PIPE, text=True
    )
    try:
        # Wait until the other process has the file open.
        deadline = 200
        while deadline and not _holds(other.pid, tmp_path / ".annotate" / "annotations.db"):
            deadline -= 1
            time.sleep(0.05)
        assert deadline, "the other process never opened the store"
        shutil.rmtree(tmp_path / ".annotate")
        first.add_page_note(note("from the first"))
        assert other.communicate("go\n", timeout=30) == (None, None)
    finally:
        if other.poll() is None:
            other.kill()
    assert other.returncode == 0
    assert sorted(on_disk(tmp_path)) == ["from the first", "from the other", "shared"]


def _holds(pid: int, path: Path) -> bool:
    try:
        return any(
            os.readlink(f"/proc/{pid}/fd/{fd}") == str(path) for fd in os.listdir(f"/proc/{pid}/fd")
        )
    except OSError:
        return False


def test_a_deleted_project_is_refused_not_recreated(
    served: tuple[Path, TestClient, str],
) -> None:
    project, client, _ = served
    post(client, "kept nowhere")
    shutil.rmtree(project)
    r = client.post(f"{API}/page-notes", json=note("lost"))
    db = project / ".annotate" / "annotations.db"
    assert (r.status_code, r.json()) == (
        503,
        {
            "error": f"{db} was deleted while in use and cannot be recreated (the project "
            "folder is gone)",
            "code": "store_gone",
        },
    )
    assert not project.exists()


# -- empty and truncated files ------------------------------------------------------------------


def filled(project: Path, n: int = 200) -> Path:
    store = annotate.open(project)
    for i in range(n):
        store.add_page_note(note(f"note {i} " + "x" * 200))
    store.close()  # the last connection checkpoints: every note is in the main file
    path = project / ".annotate" / "annotations.db"
    assert not Path(f"{path}-wal").exists()
    return path


EMPTY = (
    "is not a readable annotation database (the file is empty: it was truncated or made by "
    "another program, never by mkdocs-annotate; restore it from a backup or move it away)"
)


def test_a_zero_byte_store_is_refused_not_started_again(tmp_path: Path) -> None:
    path = filled(tmp_path)
    os.truncate(path, 0)  # truncate -s 0
    r = CliRunner().invoke(cli, ["list", "--project", str(tmp_path)])
    assert (r.exit_code, r.output) == (1, f"Error: {path} {EMPTY}\n")
    with pytest.raises(annotate.StoreCorruptError) as e:
        annotate.open(tmp_path)
    assert str(e.value) == f"{path} {EMPTY}"
    assert path.stat().st_size == 0  # nothing was written into it


def test_a_store_emptied_under_a_running_server_takes_no_write(
    served: tuple[Path, TestClient, str],
) -> None:
    project, client, _ = served
    post(client, "before")
    path = project / ".annotate" / "annotations.db"
    os.truncate(path, 0)
    r = client.post(f"{API}/page-notes", json=note("after"))
    assert (r.status_code, r.json()) == (500, {"error": f"{path} {EMPTY}", "code": "store_error"})
    assert path.stat().st_size == 0


def test_an_empty_file_given_with_db_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.touch()
    r = CliRunner().invoke(cli, ["list", "--db", str(path)])
    assert (r.exit_code, r.output) == (1, f"Error: {path} {EMPTY}\n")
    assert path.stat().st_size == 0


@pytest.mark.parametrize("keep", ["10 bytes", "100 bytes", "one page", "two pages", "half"])
def test_a_truncated_store_is_refused_and_left_as_it_is(tmp_path: Path, keep: str) -> None:
    path = filled(tmp_path)
    size = {"10 bytes": 10, "100 bytes": 100, "one page": 4096, "two pages": 8192}.get(
        keep, path.stat().st_size // 2
    )
    os.truncate(path, size)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    detail = "not an SQLite database" if size < 16 else "database disk image is malformed"
    with pytest.raises(annotate.StoreCorruptError) as e:
        annotate.open(tmp_path).list_page_notes()
    assert str(e.value) == f"{path} is not a readable annotation database ({detail})"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest


# -- full and read-only -------------------------------------------------------------------------

# Run in a private mount namespace; prints one JSON line. argv: project folder, case.
FAULT = r"""
import json, os, subprocess, sys
from starlette.testclient import TestClient
import annotate
from annotate.web import create_app

project, case = sys.argv[1], sys.argv[2]
out = {}
if case == "full":
    os.makedirs(project)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", project], check=True)
    store = annotate.open(project)
    acknowledged = []
    # Large notes, then notes the size of the last one, fill what room the large ones left (where
    # that room falls depends on the file's layout: its tables).
    for text in ("x" * 5000, "one more"):
        try:
            while True:
                acknowledged.append(store.add_page_note({"pageUrl": "/p/", "note": text}).id)
        except annotate.StoreError as e:
            out["error"] = [type(e).__name__, e.code, e.http_status, str(e)]
else:
    store = annotate.open(project)
    acknowledged = [store.add_page_note({"pageUrl": "/p/", "note": f"n{i}"}).id for i in range(3)]
    store.close()
    folder = os.path.join(project, ".annotate")
    subprocess.run(["mount", "--bind", folder, folder], check=True)
    subprocess.run(["mount", "-o", "remount,ro,bind", folder], check=True)
    store = annotate.open(project)
# As large as the write that found the disk full: a smaller one may fit in what is left, or not,
# depending on how many pages the schema takes.
big = "x" * 5000
try:
    store.add_page_note({"pageUrl": "/p/", "note": big})
except annotate.StoreError as e:
    out["again"] = [type(e).__name__, e.code, e.http_status, str(e)]
client = TestClient(create_app(store, token="t" * 32), base_url="http://127.0.0.1:8000")
r = client.post("/__annotate/api/page-notes", json={"pageUrl": "/p/", "note": big},
                headers={"X-Annotate-Token": "t" * 32})
out["http"] = [r.status_code, r.json()]
out["stored"] = [n.id for n in store.list_page_notes()] == acknowledged
out["fresh"] = [n.id for n in annotate.open(project).list_page_notes()] == acknowledged
print(json.dumps(out))
"""


def in_namespace(project: Path, case: str) -> dict:
    # Root makes its mounts in a private namespace; anyone else in a user namespace of their own.
    unshare = ["unshare", "-m"] if os.geteuid() == 0 else ["unshare", "-r", "-m"]
    cmd = [*unshare, "--propagation", "private", sys.executable, "-c", FAULT, str(project), case]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_disk_full_says_so_and_keeps_every_acknowledged_write(tmp_path: Path) -> None:
    project = tmp_path / "small"
    out = in_namespace(project, "full")
    db = project / ".annotate" / "annotations.db"
    message = f"{db} cannot be written: no space left on the device"
    assert out["error"] == ["StoreFullError", "store_full", 507, message]
    assert out["again"] == out["error"]
    assert out["http"] == [507, {"error": message, "code": "store_full"}]
    assert out["stored"] and out["fresh"]  # reads work; nothing half-written shows up


def test_a_read_only_file_system_is_read_and_not_written(tmp_path: Path) -> None:
    out = in_namespace(tmp_path, "ro")
    db = tmp_path / ".annotate" / "annotations.db"
    message = f"{db} cannot be written: its file system is read-only; reading still works"
    assert out == {
        "again": ["StoreReadOnlyError", "store_read_only", 503, message],
        "http": [503, {"error": message, "code": "store_read_only"}],
        "stored": True,
        "fresh": True,
    }


@pytest.fixture
def read_only_file(tmp_path: Path) -> Iterator[Path]:
    """A store of one note whose file cannot be written: 0444, and immutable for root (who
    writes a 0444 file anyway)."""
    store = annotate.open(tmp_path)
    store.add_page_note(note("kept"))
    store.close()
    db = tmp_path / ".annotate" / "annotations.db"
    db.chmod(0o444)
    root = os.geteuid() == 0
    if root:
        subprocess.run(["chattr", "+i", db], check=True)
    yield db
    if root:
        subprocess.run(["chattr", "-i", db], check=True)


def test_a_read_only_file_is_read_and_not_written(read_only_file: Path) -> None:
    db = read_only_file
    project = db.parent.parent
    digest = hashlib.sha256(db.read_bytes()).hexdigest()
    store = annotate.open(project)
    [kept] = store.list_page_notes()
    assert kept.note == "kept"
    message = f"{db} cannot be written: the file is read-only; reading still works"
    with pytest.raises(annotate.StoreReadOnlyError) as e:
        store.add_reply(kept.id, "refused")
    assert (str(e.value), e.value.code, e.value.http_status) == (message, "store_read_only", 503)
    r = CliRunner().invoke(cli, ["notes", "--project", str(project)])
    assert r.exit_code == 0 and "kept" in r.output
    r = CliRunner().invoke(cli, ["reply", kept.id, "refused", "--project", str(project)])
    assert (r.exit_code, r.output) == (1, f"Error: {message}\n")
    store.close()
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest
    assert [n.replies for n in annotate.open(project).list_page_notes()] == [()]


def test_git_clean_under_mkdocs_serve_loses_nothing(tmp_path: Path) -> None:
    """Issue #17's reproduction, through the plugin on a real `mkdocs serve`."""
    from .test_plugin_serve import FIXTURE, DevServer

    project = tmp_path / "project"
    shutil.copytree(FIXTURE, project)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    server = DevServer(project)
    try:
        with server.api() as api:
            for i in range(3):
                assert api.post("page-notes", json=note(f"before {i}")).status_code == 201
            git_clean(project)
            for i in range(5):
                r = api.post("page-notes", json=note(f"after {i}"))  # the page's old token
                assert r.status_code == 201, r.text
        server.wait_for("was deleted while in use; the 3 notes this process still held")
    finally:
        assert server.stop() == 0
    assert on_disk(project) == [f"before {i}" for i in range(3)] + [f"after {i}" for i in range(5)]

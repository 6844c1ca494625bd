"""`annotate serve --workers 2` for real, on SQLite and PostgreSQL (annotate/web/workers.py).

Each test holds two keep-alive connections that were answered by different worker processes (the
health check names its worker in `X-Annotate-Worker`; connections are opened until two pids
answered), writes through one and reads through the other: what a worker remembered on its own
(an anchor answer, a person's token, the change feed's newest number) would show as a stale
answer here. Stopping: SIGINT or SIGTERM to the parent, even SIGKILL, leaves no worker running.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import annotate
from annotate.compose import local_factory
from annotate.web.server import bind
from annotate.web.workers import STARTUP_S, Spec, supervise

from .conftest import text_note, write_project
from .pgcluster import free_port
from .serving import listening

BACKENDS = ["sqlite", "postgresql"]
API = "/__annotate/api"
PAGE_TEXT = "Install\nRun pip install mkdocs-annotate in a shell."
HTML = (
    "<html><body><h1>Install</h1><p>Run pip install mkdocs-annotate in a shell.</p></body></html>"
)


class Conn:
    """One keep-alive connection, so one worker answers all of its requests."""

    def __init__(self, port: int, headers: dict[str, str]) -> None:
        self.http = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.headers = headers
        status, head, _ = self.call("GET", "/__annotate/health")
        assert status == 200
        self.pid = int(head["x-annotate-worker"])

    def call(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], Any]:
        sent = {**self.headers, **(headers or {})}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            sent["Content-Type"] = "application/json"
        self.http.request(method, path, body=data, headers=sent)
        r = self.http.getresponse()
        raw = r.read()
        head = {k.lower(): v for k, v in r.getheaders()}
        is_json = head.get("content-type", "").startswith("application/json")
        return r.status, head, json.loads(raw) if raw and is_json else raw


class Workers:
    def __init__(self, proc: subprocess.Popen[str], port: int, project: Path) -> None:
        self.proc, self.port, self.project = proc, port, project
        self.conns: list[Conn] = []

    def two(self, headers: dict[str, str]) -> tuple[Conn, Conn]:
        """Two connections answered by different workers (connections are opened until two pids
        answered: the kernel does not hand them out in turn, and a worker still starting takes
        none)."""
        first = Conn(self.port, headers)
        self.conns.append(first)
        deadline = time.monotonic() + 120  # a loaded machine starts a worker slowly
        while time.monotonic() < deadline:
            other = Conn(self.port, headers)
            if other.pid != first.pid:
                self.conns.append(other)
                return first, other
            other.http.close()
            time.sleep(0.05)
        raise AssertionError("every connection went to one worker")

    def pids(self) -> set[int]:
        """The workers' pids: the parent's children (Linux /proc)."""
        out = set()
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == self.proc.pid:
                out.add(int(stat.parent.name))
        return out


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper has stopped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _start(project: Path, site: Path, *options: str) -> Workers:
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "annotate.cli", "serve", str(site), "--port", "0"),
            *("--project", str(project), "--workers", "2", *options),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    line, host, port = listening(proc, 60)
    assert host == "127.0.0.1"
    assert "2 workers" in line
    return Workers(proc, port, project)


def _stop(w: Workers, sig: int = signal.SIGINT) -> int:
    for conn in w.conns:
        conn.http.close()
    if w.proc.poll() is None:
        w.proc.send_signal(sig)
    try:
        return w.proc.wait(20)
    finally:
        w.proc.stdout.close()  # type: ignore[union-attr]
        w.proc.stderr.close()  # type: ignore[union-attr]


@pytest.fixture
def site(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "project").mkdir()
    project = write_project(
        tmp_path / "project", "# Install\n\nRun pip install mkdocs-annotate in a shell.\n"
    )
    site = tmp_path / "site"
    (site / "guide" / "install").mkdir(parents=True)
    (site / "guide" / "install" / "index.html").write_text(HTML)
    return project, site


@pytest.fixture
def team(site: tuple[Path, Path], db_url: str | None) -> Iterator[tuple[Workers, dict[str, str]]]:
    """Team mode on two workers, and each person's token (one reviewer, one maintainer)."""
    project, folder = site
    with annotate.open(project, db=db_url) as store:
        tokens = {
            "ann": store.add_token("ann@example.com", "reviewer"),
            "max": store.add_token("max", "maintainer"),
        }
    w = _start(project, folder, "--team", *(["--db", db_url] if db_url else []))
    yield w, tokens
    assert _stop(w) == 0


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_a_write_through_one_worker_is_read_by_the_other(
    team: tuple[Workers, dict[str, str]],
) -> None:
    w, tokens = team
    a, b = w.two(_bearer(tokens["ann"]))
    page = "/guide/install/"
    # B answers first with no note: an answer it kept would now be stale.
    assert b.call("GET", f"{API}/annotations?page={page}")[2]["annotations"] == []
    anchor = {"pageUrl": page, "text": PAGE_TEXT}
    assert b.call("POST", f"{API}/anchor", anchor)[2] == {"anchors": []}

    status, _, note = a.call(
        "POST", f"{API}/annotations", text_note(position={"start": 12, "end": 39})
    )
    assert status == 201, note
    listed = b.call("GET", f"{API}/annotations?page={page}")[2]["annotations"]
    assert [n["id"] for n in listed] == [note["id"]]
    anchors = b.call("POST", f"{API}/anchor", anchor)[2]["anchors"]
    assert [(x["id"], x["start"], x["end"]) for x in anchors] == [(note["id"], 12, 39)]

    # A page note, a reply, a review sent: each read back through the other worker.
    status, _, page_note = b.call(
        "POST", f"{API}/page-notes", {"pageUrl": page, "pageTitle": "Install", "note": "Shorter."}
    )
    assert status == 201, page_note
    notes = a.call("GET", f"{API}/page-notes?page={page}")[2]["pageNotes"]
    assert [n["id"] for n in notes] == [page_note["id"]]
    assert (
        a.call("POST", f"{API}/annotations/{note['id']}/replies", {"message": "Also uv."})[0] == 201
    )
    replies = b.call("GET", f"{API}/annotations/{note['id']}")[2]["replies"]
    assert [r["message"] for r in replies] == ["Also uv."]
    status, _, review = b.call("POST", f"{API}/reviews", {"mode": "edit"})
    assert status == 201, review
    reviews = a.call("GET", f"{API}/reviews?pending=true")[2]["reviews"]
    assert [r["id"] for r in reviews] == [review["id"]]

    # The note anchored again once its text is gone from the page: B's answer follows A's edit.
    assert a.call("DELETE", f"{API}/annotations/{note['id']}")[0] == 204
    assert b.call("POST", f"{API}/anchor", anchor)[2] == {"anchors": []}


def test_a_revoked_token_is_refused_by_every_worker_at_once(
    team: tuple[Workers, dict[str, str]], site: tuple[Path, Path], db_url: str | None
) -> None:
    w, tokens = team
    a, b = w.two(_bearer(tokens["ann"]))
    for conn in (a, b):  # each worker has let her in: a worker that remembered would again
        assert conn.call("GET", f"{API}/annotations")[0] == 200
    with annotate.open(site[0], db=db_url) as store:
        store.revoke_token("ann@example.com")
    for conn in (a, b):
        status, _, body = conn.call("GET", f"{API}/annotations")
        assert status == 401, body
        assert conn.call("POST", f"{API}/annotations", text_note())[0] == 401
    # The maintainer's token still works on both.
    a, b = w.two(_bearer(tokens["max"]))
    assert {a.call("GET", f"{API}/annotations")[0], b.call("GET", f"{API}/annotations")[0]} == {200}


def test_a_long_poll_on_one_worker_wakes_on_a_write_through_the_other(
    team: tuple[Workers, dict[str, str]],
) -> None:
    w, tokens = team
    a, b = w.two(_bearer(tokens["ann"]))
    cursor = b.call("GET", f"{API}/changes")[2]["cursor"]
    answer: list[Any] = []
    waiting = threading.Thread(
        target=lambda: answer.append(b.call("GET", f"{API}/changes?since={cursor}&timeout=25"))
    )
    waiting.start()
    time.sleep(0.5)  # B polls by now; until the write, nothing to report
    assert waiting.is_alive()
    status, _, note = a.call("POST", f"{API}/annotations", text_note())
    assert status == 201
    # Well within the poll's 25 s: woken by the write (the poll on SQLite, NOTIFY on PostgreSQL).
    waiting.join(12)
    assert not waiting.is_alive(), "the write through A did not wake the long-poll on B"
    status, _, body = answer[0]
    assert status == 200
    assert [(e["id"], e["action"]) for e in body["events"]] == [(note["id"], "created")]


def test_concurrent_writes_through_both_workers_lose_nothing(
    team: tuple[Workers, dict[str, str]],
) -> None:
    """Six connections, three to each worker, write at once: every note and reply is saved once
    (on SQLite the workers queue on the store's lock file, annotate/backends/writers.py)."""
    w, tokens = team
    conns = [c for _ in range(3) for c in w.two(_bearer(tokens["ann"]))]
    assert len({c.pid for c in conns}) == 2
    made: list[list[str]] = [[] for _ in conns]
    failed: list[Any] = []

    def write(i: int) -> None:
        for n in range(12):
            status, _, note = conns[i].call(
                "POST", f"{API}/annotations", text_note(note=f"From {i}, number {n}.")
            )
            if status != 201:
                failed.append(note)
                return
            made[i].append(note["id"])
            path = f"{API}/annotations/{note['id']}/replies"
            if conns[i].call("POST", path, {"message": f"Reply {n}."})[0] != 201:
                failed.append(path)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(len(conns))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert failed == []
    listed = conns[0].call("GET", f"{API}/annotations?page=/guide/install/")[2]["annotations"]
    assert sorted(n["id"] for n in listed) == sorted(i for ids in made for i in ids)
    assert len(listed) == 6 * 12
    assert all(len(n["replies"]) == 1 for n in listed)


@pytest.mark.sqlite_only
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_stopping_the_parent_stops_every_worker(site: tuple[Path, Path], sig: int) -> None:
    w = _start(*site)
    a, b = w.two({"X-Annotate-Token": (site[0] / ".annotate" / "token").read_text().strip()})
    pids = w.pids()
    assert pids == {a.pid, b.pid}
    # A pending long-poll on each worker: answered at once, not held for the graceful period.
    cursor = a.call("GET", f"{API}/changes")[2]["cursor"]
    polls = [
        threading.Thread(target=c.call, args=("GET", f"{API}/changes?since={cursor}"), daemon=True)
        for c in (a, b)
    ]
    for t in polls:
        t.start()
    time.sleep(0.3)
    assert _stop(w, sig) == 0
    assert not [pid for pid in pids if _alive(pid)]
    for t in polls:
        t.join(5)
        assert not t.is_alive()


@pytest.mark.sqlite_only
def test_a_killed_parent_leaves_no_worker(site: tuple[Path, Path]) -> None:
    w = _start(*site)
    w.two({})
    pids = w.pids()
    assert len(pids) == 2
    w.proc.kill()
    _stop(w)
    deadline = time.monotonic() + 60
    while [pid for pid in pids if _alive(pid)] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in pids if _alive(pid)]
    with pytest.raises(OSError):
        Conn(w.port, {})  # the port is closed: no worker kept it


@pytest.mark.sqlite_only
def test_a_worker_that_dies_while_serving_is_replaced(site: tuple[Path, Path]) -> None:
    w = _start(*site)
    try:
        a, _ = w.two({})
        # Past the start-up window (the workers started before they answered): a worker dying
        # now is replaced, not taken for one that failed at start.
        time.sleep(STARTUP_S)
        os.kill(a.pid, signal.SIGKILL)
        deadline = time.monotonic() + 120  # a loaded machine starts a worker slowly
        while time.monotonic() < deadline and (len(w.pids()) < 2 or a.pid in w.pids()):
            time.sleep(0.1)
        assert len(w.pids()) == 2 and a.pid not in w.pids()
        token = (site[0] / ".annotate" / "token").read_text().strip()
        c, d = w.two({"X-Annotate-Token": token})
        assert {c.pid, d.pid} == w.pids()
        assert c.call("POST", f"{API}/annotations", text_note())[0] == 201
    finally:
        assert _stop(w) == 0


@pytest.mark.sqlite_only
def test_token_host_and_origin_checks_on_every_worker(site: tuple[Path, Path]) -> None:
    w = _start(*site)
    try:
        token = (site[0] / ".annotate" / "token").read_text().strip()
        for conn in w.two({"X-Annotate-Token": token}):
            assert conn.call("GET", f"{API}/annotations")[0] == 200
            assert (
                conn.call("GET", f"{API}/annotations", headers={"X-Annotate-Token": "x"})[0] == 401
            )
            assert (
                conn.call("GET", f"{API}/annotations", headers={"Host": "evil.example"})[0] == 403
            )
            status = conn.call(
                "POST", f"{API}/annotations", text_note(), {"Origin": "http://evil.example"}
            )[0]
            assert status == 403
            # The page carries the project token, as with one process.
            assert f'"token":"{token}"'.encode() in conn.call("GET", "/guide/install/")[2]
    finally:
        assert _stop(w) == 0


@pytest.mark.sqlite_only
def test_read_only_on_every_worker(site: tuple[Path, Path]) -> None:
    w = _start(*site, "--read-only")
    try:
        token = (site[0] / ".annotate" / "token").read_text().strip()
        for conn in w.two({"X-Annotate-Token": token}):
            assert conn.call("POST", f"{API}/annotations", text_note())[0] == 405
            assert conn.call("GET", f"{API}/annotations")[0] == 200
    finally:
        assert _stop(w) == 0
    with annotate.open(site[0]) as store:
        assert store.list_annotations(status="all") == []


@pytest.mark.sqlite_only
def test_a_worker_that_fails_at_start_stops_the_server(site: tuple[Path, Path]) -> None:
    # A database no worker can reach (the parent checked it and it went away): each worker exits
    # with its one-line error, and the supervisor stops, status 1, instead of starting them again.
    spec = Spec(str(site[1]), str(site[0]), db="postgresql://127.0.0.1:1/nowhere")
    sock = bind("127.0.0.1", 0)
    try:
        assert supervise(spec, sock, 2) == 1
    finally:
        sock.close()


def test_local_factory(site: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    project, folder = site
    monkeypatch.chdir(project)
    with pytest.raises(SystemExit, match="ANNOTATE_SITE_DIR must name"):
        local_factory({"ANNOTATE_SITE_DIR": str(folder / "nowhere")})
    app = local_factory(
        {
            "ANNOTATE_SITE_DIR": str(folder),
            "ANNOTATE_PROJECT": str(project),
            "ANNOTATE_READ_ONLY": "1",
        }
    )
    from starlette.testclient import TestClient

    token = (project / ".annotate" / "token").read_text().strip()
    with TestClient(app, base_url="http://127.0.0.1") as client:
        headers = {"X-Annotate-Token": token}
        assert client.get(f"{API}/annotations", headers=headers).status_code == 200
        assert (
            client.post(f"{API}/annotations", json=text_note(), headers=headers).status_code == 405
        )


@pytest.mark.sqlite_only
def test_the_local_factory_under_uvicorn_workers(site: tuple[Path, Path]) -> None:
    # The import string uvicorn's own multi-process mode needs: each worker builds the app from
    # the environment, and the project token guards it as under `annotate serve`.
    project, folder = site
    port = free_port()
    env = {**os.environ, "ANNOTATE_SITE_DIR": str(folder), "ANNOTATE_PROJECT": str(project)}
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "uvicorn", "--factory", "annotate.web.local:app"),
            *("--port", str(port), "--workers", "2", "--log-level", "warning"),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                conn.request("GET", "/__annotate/health")
                assert conn.getresponse().status == 200
                conn.close()
                break
            except OSError:
                assert time.monotonic() < deadline, "uvicorn did not answer"
                time.sleep(0.2)
        token = (project / ".annotate" / "token").read_text().strip()
        for headers, status in (({"X-Annotate-Token": token}, 201), ({}, 401)):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            body = json.dumps(text_note()).encode()
            conn.request(
                "POST",
                f"{API}/annotations",
                body=body,
                headers={**headers, "Content-Type": "application/json"},
            )
            assert conn.getresponse().status == status
            conn.close()
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(30)
        proc.stderr.close()  # type: ignore[union-attr]
    with annotate.open(project) as store:
        assert len(store.list_annotations(status="all")) == 1

"""`annotate serve` for real: a uvicorn subprocess on a free port, a small site in tmp_path, and a
write by another process that reaches a pending long-poll within 2 s (docs/overlay.md, "Live
updates")."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import annotate
from annotate.cli import cli

from .conftest import text_note


class Server:
    def __init__(self, proc: subprocess.Popen[str], url: str, project: Path) -> None:
        self.proc = proc
        self.url = url
        self.project = project
        match = re.match(r"http://([^:/]+):(\d+)/", url)
        assert match
        self.host, self.port = match[1], int(match[2])

    @property
    def token(self) -> str:
        return (self.project / ".annotate" / "token").read_text().strip()

    def request(
        self, method: str, path: str, body: Any = None, timeout: float = 10
    ) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        headers = {"X-Annotate-Token": self.token}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        conn.request(method, path, body=data, headers=headers)
        r = conn.getresponse()
        out = r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        conn.close()
        return out


def _first_line(proc: subprocess.Popen[str], timeout: float) -> str:
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(timeout)
    if not line:
        proc.kill()
        raise AssertionError(f"annotate serve printed nothing in {timeout} s")
    return line[0]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    project = tmp_path / "project"
    site = tmp_path / "site"
    (site / "guide").mkdir(parents=True)
    project.mkdir()
    (site / "index.html").write_text("<!doctype html><html><body><h1>Home</h1></body></html>")
    (site / "guide" / "index.html").write_text(
        "<html><body><p>Run pip install mkdocs-annotate in a shell.</p></body></html>"
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "annotate.cli",
            "serve",
            str(site),
            "--port",
            "0",
            "--project",
            str(project),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    line = _first_line(proc, 20)
    match = re.search(r"http://\S+?/", line)
    assert match, line
    assert line.startswith(f"Serving {site} at {match[0]}")
    yield Server(proc, match[0], project)
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise
    finally:
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]


def test_serve_for_real(server: Server) -> None:
    token_file = server.project / ".annotate" / "token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600

    status, _, body = server.request("GET", "/guide/")
    assert status == 200
    html = body.decode()
    assert f'"token":"{server.token}"' in html
    assert '<script src="/__annotate/overlay/annotate.js" defer></script>' in html
    assert '<link rel="stylesheet" href="/__annotate/overlay/annotate.css">' in html
    assert html.index("annotate.js") < html.index("</body>")

    status, _, body = server.request("POST", "/__annotate/api/annotations", text_note())
    assert status == 201, body
    created = json.loads(body)
    status, _, body = server.request("GET", "/__annotate/api/annotations")
    assert [a["id"] for a in json.loads(body)["annotations"]] == [created["id"]]
    cursor = json.loads(server.request("GET", "/__annotate/api/changes")[2])["cursor"]

    # A long-poll waits; the library writes to the database file from this (another) process.
    answer: dict[str, Any] = {}

    def poll() -> None:
        status, _, body = server.request(
            "GET", f"/__annotate/api/changes?since={cursor}", timeout=30
        )
        answer["at"] = time.monotonic()
        answer["status"], answer["body"] = status, json.loads(body)

    waiting = threading.Thread(target=poll)
    waiting.start()
    time.sleep(0.5)
    assert waiting.is_alive()  # nothing to report yet: it is waiting
    with annotate.open(server.project) as store:
        store.add_agent_reply(created["id"], "Added a pipx line.")
    wrote = time.monotonic()
    waiting.join(5)
    assert answer["status"] == 200
    assert answer["at"] - wrote < 2.0
    events = answer["body"]["events"]
    assert [(e["id"], e["action"]) for e in events] == [(created["id"], "agent_reply")]

    status, _, _ = server.request("GET", "/__annotate/")
    assert status == 200
    assert server.request("GET", "/__annotate/health")[0] == 200


def test_ctrl_c_ends_pending_long_polls(server: Server) -> None:
    cursor = json.loads(server.request("GET", "/__annotate/api/changes")[2])["cursor"]
    threading.Thread(
        target=lambda: _ignore(server.request, "GET", f"/__annotate/api/changes?since={cursor}"),
        daemon=True,
    ).start()
    time.sleep(0.3)
    started = time.monotonic()
    server.proc.send_signal(signal.SIGINT)
    assert server.proc.wait(10) == 0
    assert time.monotonic() - started < 5


def _ignore(fn: Any, *args: Any) -> None:
    with contextlib.suppress(OSError):
        fn(*args)


# -- errors before the server starts -------------------------------------------------------------


def test_port_taken(tmp_path: Path) -> None:
    (tmp_path / "site").mkdir()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        r = CliRunner().invoke(
            cli, ["serve", str(tmp_path / "site"), "--port", str(port), "--project", str(tmp_path)]
        )
    assert r.exit_code == 1
    assert r.output == (
        f"Error: Port {port} on 127.0.0.1 is already in use; stop the other server or choose "
        "another with --port\n"
    )


def test_missing_dir(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["serve", str(tmp_path / "site"), "--project", str(tmp_path)])
    assert r.exit_code == 1
    assert r.output == (
        f"Error: {str(tmp_path / 'site')!r} is not a folder: give the built site, e.g. "
        "`annotate serve site/`\n"
    )


def test_missing_project(tmp_path: Path) -> None:
    (tmp_path / "site").mkdir()
    r = CliRunner().invoke(cli, ["serve", str(tmp_path / "site"), "--project", str(tmp_path / "p")])
    assert r.exit_code == 1
    assert r.output == f"Error: Project folder {str(tmp_path / 'p')!r} does not exist\n"


def test_hosts_for_urls_and_host_checks() -> None:
    from annotate.web.server import extra_hosts, url_host

    assert url_host("127.0.0.1") == "127.0.0.1"
    assert url_host("::1") == "[::1]"
    assert url_host("0.0.0.0") == "127.0.0.1"
    assert extra_hosts("127.0.0.1") == extra_hosts("localhost") == extra_hosts("::1") == []
    assert extra_hosts("192.168.1.20") == ["192.168.1.20"]
    assert socket.gethostname() in extra_hosts("0.0.0.0")

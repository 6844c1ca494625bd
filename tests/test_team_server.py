"""Team mode on a real uvicorn, where the peer's address matters (docs/team.md, "Identity").

The identity header counts only from a trusted proxy. The server listens on 127.0.0.1 and the
requests leave from chosen loopback addresses (Linux routes all of 127.0.0.0/8 to `lo`): from
127.0.0.2, the proxy named by `--trusted-proxy`, the header names the person; from 127.0.0.1 or
127.0.0.3 the same header is refused with 403 and nothing is stored. The factory runs under
`uvicorn --factory` with two workers and its access log on: no token in it.
"""

from __future__ import annotations

import http.client
import json
import os
import re
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

from .conftest import text_note, write_project

HEADER = "X-Forwarded-Email"
API = "/__annotate/api"
PAGE = "<!doctype html><html><body><p>Run pip install mkdocs-annotate in a shell.</p></body></html>"


def _project(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "project").mkdir()
    project = write_project(tmp_path / "project", "# Install\n\nRun pip install it.\n")
    site = tmp_path / "site"
    (site / "guide" / "install").mkdir(parents=True)
    (site / "guide" / "install" / "index.html").write_text(PAGE)
    return project, site


class Running:
    """A server subprocess and requests to it from a chosen source address."""

    def __init__(self, proc: subprocess.Popen[str], port: int) -> None:
        self.proc = proc
        self.port = port
        self.stderr: list[str] = []

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        source: str = "127.0.0.1",
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, str], Any]:
        conn = http.client.HTTPConnection(
            "127.0.0.1", self.port, timeout=10, source_address=(source, 0)
        )
        sent = dict(headers or {})
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            sent["Content-Type"] = "application/json"
        conn.request(method, path, body=data, headers=sent)
        r = conn.getresponse()
        raw = r.read()
        answer = {k.lower(): v for k, v in r.getheaders()}
        conn.close()
        is_json = answer.get("content-type", "").startswith("application/json")
        return r.status, answer, json.loads(raw) if is_json and raw else raw.decode()

    def stop(self) -> str:
        """Stop it (Ctrl+C) and return what it wrote to stderr."""
        self.proc.send_signal(signal.SIGINT)
        try:
            out, err = self.proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
            raise
        return out + (err or "")


def _wait_for_line(proc: subprocess.Popen[str], pattern: str, timeout: float) -> re.Match[str]:
    found: list[re.Match[str]] = []
    seen: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line)
            match = re.search(pattern, line)
            if match:
                found.append(match)
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    if not found:
        proc.kill()
        raise AssertionError(f"no line matching {pattern!r} in {timeout} s: {seen}")
    return found[0]


def _serve(project: Path, site: Path, *flags: str) -> Running:
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
            *flags,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    match = _wait_for_line(proc, r"http://127\.0\.0\.1:(\d+)/", 20)
    return Running(proc, int(match[1]))


@pytest.fixture
def proxied(tmp_path: Path) -> Iterator[tuple[Running, annotate.Store]]:
    """`annotate serve --identity-header` trusting 127.0.0.2 only, with one maintainer."""
    project, site = _project(tmp_path)
    running = _serve(
        project,
        site,
        "--identity-header",
        HEADER,
        "--trusted-proxy",
        "127.0.0.2",
        "--maintainer",
        "lead@example.com",
    )
    store = annotate.open(project)
    yield running, store
    store.close()
    running.stop()


def _count(store: annotate.Store) -> int:
    return int(store.conn.execute("SELECT count(*) FROM changes").fetchone()[0])


def test_the_header_counts_only_from_the_trusted_proxy(
    proxied: tuple[Running, annotate.Store],
) -> None:
    server, store = proxied
    status, _, body = server.request(
        "POST", f"{API}/annotations", text_note(), source="127.0.0.2", headers={HEADER: "ada@x.org"}
    )
    assert status == 201 and body["author"] == "ada@x.org"
    before = _count(store)
    for source in ("127.0.0.1", "127.0.0.3"):
        status, _, answer = server.request(
            "POST",
            f"{API}/annotations",
            text_note(note="Spoofed."),
            source=source,
            headers={HEADER: "lead@example.com"},
        )
        assert (status, answer) == (
            403,
            {
                "error": f"The {HEADER} header is only accepted from a trusted proxy "
                f"(--trusted-proxy); this request came from {source}",
                "code": "forbidden",
            },
        )
    assert _count(store) == before
    assert [a.note for a in store.list_annotations()] == ["Mention pipx as well."]


def test_roles_from_the_header(proxied: tuple[Running, annotate.Store]) -> None:
    server, _ = proxied
    ada = {HEADER: "ada@x.org"}
    _, _, note = server.request(
        "POST", f"{API}/annotations", text_note(), source="127.0.0.2", headers=ada
    )
    path = f"{API}/annotations/{note['id']}"
    status, _, answer = server.request(
        "PATCH", path, {"note": "Mine now."}, source="127.0.0.2", headers={HEADER: "eve@x.org"}
    )
    assert status == 403 and answer["code"] == "forbidden"
    status, _, answer = server.request(
        "PATCH", path, {"note": "Agreed."}, source="127.0.0.2", headers={HEADER: "lead@example.com"}
    )
    assert status == 200 and answer["note"] == "Agreed."
    # No identity at all: the page goes to the sign-in page, the API answers 401.
    status, headers, _ = server.request("GET", "/guide/install/", source="127.0.0.3")
    assert status == 303 and headers["location"] == "/__annotate/signin?next=/guide/install/"
    status, _, answer = server.request("GET", f"{API}/annotations", source="127.0.0.3")
    assert status == 401 and answer["code"] == "unauthorized"


def test_by_default_only_loopback_is_trusted(tmp_path: Path) -> None:
    project, site = _project(tmp_path)
    server = _serve(project, site, "--identity-header", HEADER)
    try:
        ok, _, body = server.request(
            "GET", "/guide/install/", source="127.0.0.1", headers={HEADER: "ada@x.org"}
        )
        assert ok == 200 and '"person":{"name":"ada@x.org","role":"reviewer"}' in body
        refused, _, _ = server.request(
            "GET", "/guide/install/", source="127.0.0.2", headers={HEADER: "ada@x.org"}
        )
        assert refused == 403
    finally:
        server.stop()


def test_the_factory_under_uvicorn_with_workers(tmp_path: Path) -> None:
    project, site = _project(tmp_path)
    with annotate.open(project) as store:
        ada = store.add_token("ada", "reviewer")
        bot = store.add_token("bot", "agent")
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "ANNOTATE_SITE_DIR": str(site),
        "ANNOTATE_PROJECT": str(project),
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "--factory",
            "annotate.web.team:app",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--workers",
            "2",
            "--no-proxy-headers",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    port = int(_wait_for_line(proc, r"running on http://127\.0\.0\.1:(\d+)", 30)[1])
    server = Running(proc, port)
    try:
        deadline = time.monotonic() + 30
        while True:  # the workers start after the line above
            try:
                status, _, _ = server.request("GET", "/__annotate/health")
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        assert status == 200
        status, _, note = server.request(
            "POST", f"{API}/annotations", text_note(), headers={"Authorization": f"Bearer {ada}"}
        )
        assert status == 201 and note["author"] == "ada"
        status, _, answer = server.request(
            "POST",
            f"{API}/annotations/{note['id']}/status",
            {"action": "accept"},
            headers={"Authorization": f"Bearer {bot}"},
        )
        assert status == 403 and answer["code"] == "forbidden"
        # The browser's way in: the sign-in form, then the cookie.
        form = f"token={ada}&next=%2Fguide%2Finstall%2F"
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request(
            "POST",
            "/__annotate/signin",
            body=form,
            headers={
                "Content-Type": "application/x-www-form-urlencoded",
                "Origin": f"http://127.0.0.1:{port}",
            },
        )
        r = conn.getresponse()
        r.read()
        conn.close()
        assert r.status == 303 and r.getheader("location") == "/guide/install/"
        cookie = r.getheader("set-cookie") or ""
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie
        status, _, page = server.request(
            "GET", "/guide/install/", headers={"Cookie": cookie.split(";")[0]}
        )
        assert status == 200 and '"person":{"name":"ada","role":"reviewer"}' in page
    finally:
        output = server.stop()
    assert '"POST /__annotate/signin HTTP/1.1" 303' in output  # the access log was on
    assert ada not in output and bot not in output


def test_a_loopback_team_server_without_tokens_says_how_to_add_one(tmp_path: Path) -> None:
    project, site = _project(tmp_path)
    server = _serve(project, site, "--team")
    try:
        assert server.proc.stdout is not None
        hint = server.proc.stdout.readline()
        assert (
            hint == "No one can sign in yet: add a personal token with `annotate token add NAME`.\n"
        )
        status, _, answer = server.request("GET", f"{API}/summary")
        assert status == 401 and answer["code"] == "unauthorized"
        with annotate.open(project) as store:  # tokens are looked up on every request
            token = store.add_token("ada")
        status, _, _ = server.request(
            "GET", f"{API}/summary", headers={"Authorization": f"Bearer {token}"}
        )
        assert status == 200
    finally:
        server.stop()

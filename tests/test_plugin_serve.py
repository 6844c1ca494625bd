"""The plugin under a real `mkdocs serve` subprocess (issue #6): the API on the dev server's port,
no rebuild when a note is saved, source lines that follow an agent's edit, `--no-livereload`,
`--dirty`, ProperDocs."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import annotate
from annotate.tokens import read_token

FIXTURE = Path(__file__).parent / "fixtures" / "plugin_project"
BIN = Path(sys.executable).parent
CONFIG = re.compile(r'<script type="application/json" id="annotate-config">(.*?)</script>')
REBUILD = ("Building documentation", "Detected file changes")
QUOTE = "pip install mkdocs-annotate"
INSTALL_MD = "docs/guide/install.md"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class DevServer:
    """`mkdocs serve` (or `properdocs serve`) on a free port, its log collected line by line."""

    def __init__(self, project: Path, *args: str, command: str = "mkdocs") -> None:
        self.project = project
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [str(BIN / command), "serve", "-a", f"127.0.0.1:{self.port}", *args],
            cwd=project,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.http = httpx.Client(base_url=self.base, timeout=30)
        self.wait_for("Serving on")

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()

    @property
    def log(self) -> str:
        with self._changed:
            return "\n".join(self.lines)

    def count(self, text: str) -> int:
        with self._changed:
            return sum(text in line for line in self.lines)

    def wait_for(self, text: str, times: int = 1, timeout: float = 30) -> None:
        with self._changed:
            ok = self._changed.wait_for(
                lambda: (
                    sum(text in line for line in self.lines) >= times
                    or self.proc.poll() is not None
                ),
                timeout,
            )
        if not ok or self.count(text) < times:
            raise AssertionError(f"{text!r} ×{times} never came; the server said:\n{self.log}")

    def epoch(self) -> int:
        """The livereload epoch: the version of the site browsers would reload to."""
        return int(self.http.get("/livereload/0/0").text)

    def config(self, path: str = "/") -> dict[str, Any]:
        page = self.http.get(path)
        assert page.status_code == 200
        match = CONFIG.search(page.text)
        assert match, f"no overlay configuration in {path}"
        return json.loads(match[1])

    def api(self) -> httpx.Client:
        token = self.config()["token"]
        return httpx.Client(
            base_url=f"{self.base}/__annotate/api/",
            headers={"X-Annotate-Token": token},
            timeout=30,
        )

    def stop(self) -> int:
        """Ctrl+C, as a user stops it; the exit code."""
        self.http.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self._reader.join(timeout=5)
                raise AssertionError(
                    f"Ctrl+C did not stop the server; it said:\n{self.log}"
                ) from None
        self._reader.join(timeout=5)
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        assert "Traceback" not in self.log, self.log
        return self.proc.returncode


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(FIXTURE, root)
    return root


@pytest.fixture
def server(project: Path) -> Iterator[DevServer]:
    s = DevServer(project)
    yield s
    s.stop()


def note_on_install(**extra: Any) -> dict[str, Any]:
    """What the overlay sends for a selection on /guide/install/."""
    return {
        "type": "text",
        "pageUrl": "/guide/install/",
        "pageTitle": "Install",
        "note": "Mention pipx as well.",
        "selectedText": QUOTE,
        "quote": {"exact": QUOTE, "prefix": "The recommended command is ", "suffix": " in a"},
        "position": {"start": 90, "end": 90 + len(QUOTE)},
        **extra,
    }


def line_of(path: Path, text: str) -> int:
    lines = path.read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def test_health_page_and_api_on_the_same_port(server: DevServer, project: Path) -> None:
    assert server.http.get("/__annotate/health").json()["ok"] is True
    page = server.http.get("/guide/install/")
    assert page.headers["cache-control"] == "no-store"
    assert int(page.headers["content-length"]) == len(page.content)
    # The overlay comes after livereload's script, before the last </body>.
    assert page.text.index("livereload(") < page.text.index('id="annotate-config"')
    assert page.text.rstrip().endswith("</html>")
    config = server.config("/guide/install/")
    assert config["token"] == read_token(project)
    assert config["api"] == "/__annotate/api/"
    assert server.http.get("/__annotate/overlay/none.js").status_code == 404

    with server.api() as api:
        assert api.get("annotations").json() == {"annotations": []}
        created = api.post("annotations", json=note_on_install())
        assert created.status_code == 201, created.text
        item = created.json()
        line = line_of(project / INSTALL_MD, QUOTE)
        assert item["source"]["path"] == INSTALL_MD
        assert (item["source"]["lineStart"], item["source"]["lineEnd"]) == (line, line)
        assert item["anchorState"] == "anchored"
    # A page asked for under a foreign name (DNS rebinding) is refused, as on `annotate serve`.
    foreign = server.http.get("/guide/install/", headers={"Host": "attacker.example"})
    assert foreign.status_code == 403
    assert foreign.json()["code"] == "forbidden_host"
    assert "annotate-config" not in foreign.text
    assert "annotate-config" in server.http.get("/", headers={"Host": "localhost"}).text
    # Without the token: refused, as on `annotate serve`.
    assert server.http.get("/__annotate/api/annotations").status_code == 401
    # Non-HTML files pass through untouched.
    css = server.http.get("/css/base.css")
    assert css.status_code == 200 and "annotate" not in css.text


def test_saving_a_note_does_not_rebuild(server: DevServer, project: Path) -> None:
    builds = server.count("Building documentation")
    epoch = server.epoch()
    with server.api() as api:
        item = api.post("annotations", json=note_on_install()).json()
        api.post(f"annotations/{item['id']}/replies", json={"message": "And uv."})
        api.post("page-notes", json={"pageUrl": "/", "pageTitle": "Home", "note": "Shorter."})
        api.post("reviews", json={"mode": "edit"})
    assert (project / ".annotate" / "annotations.db").is_file()
    # The watcher polls every 0.5 s and waits 0.1 s for changes to settle: give it time.
    time.sleep(2)
    assert server.count("Building documentation") == builds
    assert server.count("Detected file changes") == 0
    assert server.epoch() == epoch


def test_agent_edit_rebuilds_and_source_lines_follow(server: DevServer, project: Path) -> None:
    epoch = server.epoch()
    with server.api() as api:
        id = api.post("annotations", json=note_on_install()).json()["id"]
    md = project / INSTALL_MD
    old_line = line_of(md, QUOTE)

    # The agent: library calls on the same database, a plain edit of the Markdown file.
    with annotate.open(project) as store:
        assert store.get_annotation(id).source.line_start == old_line
        store.set_in_progress(id)
        text = md.read_text().replace(
            "Run the installer", "Check Python 3.10 or later first.\n\nRun the installer"
        )
        md.write_text(text.replace(QUOTE, "pipx install mkdocs-annotate"))
        store.update_annotation_target(id, "pipx install mkdocs-annotate")
        store.address_annotation(id)
        store.add_agent_reply(id, "Switched to pipx.")

    server.wait_for("Reloading browsers")
    assert server.epoch() > epoch
    assert "pipx install mkdocs-annotate" in server.http.get("/guide/install/").text
    with server.api() as api:
        item = api.get(f"annotations/{id}").json()
    new_line = line_of(md, "pipx install mkdocs-annotate")
    assert new_line == old_line + 2
    assert item["status"] == "addressed"
    assert (item["source"]["lineStart"], item["source"]["lineEnd"]) == (new_line, new_line)
    assert item["replacedText"] == "pipx install mkdocs-annotate"
    assert item["replies"][-1]["message"] == "Switched to pipx."


def test_page_source_comes_from_the_plugin(tmp_path: Path) -> None:
    """docs_dir set through `!ENV`: guessing from mkdocs.yml would look in `docs/`; the plugin
    knows each page's `src_uri`. A path sent by the browser is ignored."""
    root = tmp_path / "project"
    shutil.copytree(FIXTURE, root)
    (root / "docs").rename(root / "content")
    config = (root / "mkdocs.yml").read_text()
    (root / "mkdocs.yml").write_text("docs_dir: !ENV [ANNOTATE_TEST_DOCS, content]\n" + config)
    server = DevServer(root)
    try:
        with server.api() as api:
            sent = note_on_install(source={"path": "../../etc/passwd", "lineStart": 1})
            created = api.post("annotations", json=sent)
            assert created.status_code == 201, created.text
            source = created.json()["source"]
        assert source["path"] == "content/guide/install.md"
        assert source["lineStart"] == line_of(root / "content/guide/install.md", QUOTE)
    finally:
        server.stop()


def test_no_livereload(project: Path) -> None:
    server = DevServer(project, "--no-livereload")
    try:
        assert "review endpoint mounted" in server.log
        assert server.http.get("/__annotate/health").json()["ok"] is True
        page = server.http.get("/guide/install/").text
        assert "livereload(" not in page
        assert server.config("/guide/install/")["token"]
        with server.api() as api:
            created = api.post("annotations", json=note_on_install())
            assert created.status_code == 201
            assert created.json()["source"]["path"] == INSTALL_MD
    finally:
        assert server.stop() == 0


def test_dirty(project: Path) -> None:
    server = DevServer(project, "--dirty")
    try:
        with server.api() as api:
            id = api.post("annotations", json=note_on_install()).json()["id"]
        md = project / INSTALL_MD
        md.write_text("# Moved\n\nA new first paragraph.\n\n" + md.read_text())
        server.wait_for("Reloading browsers")
        # Pages that were not rebuilt and the one that was both get the overlay.
        assert server.config("/")["token"] == server.config("/guide/install/")["token"]
        with server.api() as api:
            item = api.get(f"annotations/{id}").json()
        assert item["source"]["lineStart"] == line_of(md, QUOTE)
    finally:
        assert server.stop() == 0


def test_ctrl_c_ends_pending_long_polls(server: DevServer) -> None:
    with server.api() as api:
        cursor = api.get("changes").json()["cursor"]
        answers: list[int] = []
        poll = threading.Thread(
            target=lambda: answers.append(
                api.get("changes", params={"since": cursor, "timeout": 25}).status_code
            )
        )
        poll.start()
        time.sleep(0.5)
        started = time.monotonic()
        assert server.stop() == 0
        poll.join(timeout=10)
    assert time.monotonic() - started < 10
    assert answers == [200]


def test_material_theme(project: Path) -> None:
    config = (project / "mkdocs.yml").read_text()
    material = "name: material\n  features:\n    - navigation.instant\n"
    (project / "mkdocs.yml").write_text(config.replace("name: mkdocs\n", material))
    server = DevServer(project)
    try:
        assert server.config("/guide/install/")["token"]
        assert server.http.get("/__annotate/health").status_code == 200
    finally:
        server.stop()


def test_properdocs(project: Path) -> None:
    server = DevServer(project, "-f", "mkdocs.yml", command="properdocs")
    try:
        assert server.http.get("/__annotate/health").json()["ok"] is True
        builds = server.count("Building documentation")
        with server.api() as api:
            item = api.post("annotations", json=note_on_install()).json()
        assert item["source"]["path"] == INSTALL_MD
        time.sleep(1.5)
        assert server.count("Building documentation") == builds
    finally:
        assert server.stop() == 0


def call_review_app(site: Any) -> tuple[str, dict[str, str], bytes]:
    from wsgiref.util import setup_testing_defaults

    from mkdocs_plugin.serve import ReviewApp

    def api(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        raise AssertionError("not an API request")

    environ: dict[str, Any] = {"PATH_INFO": "/page/", "HTTP_HOST": "127.0.0.1:8000"}
    setup_testing_defaults(environ)
    answer: list[Any] = []
    body = ReviewApp(site, api, lambda: "<!-- overlay -->")(
        environ, lambda status, headers, exc_info=None: answer.extend([status, dict(headers)])
    )
    content = b"".join(body)
    return answer[0], answer[1], content


def test_review_app_with_a_lazy_wsgi_app() -> None:
    """A WSGI app that calls start_response only when its body is iterated, and one that writes
    through the write() callable: both get the overlay, with a right Content-Length."""

    def lazy(environ: dict[str, Any], start_response: Any) -> Iterator[bytes]:
        start_response("200 OK", [("Content-Type", "text/html"), ("Content-Length", "28")])
        yield b"<html><body>hi</body>"
        yield b"</html>"

    def writer(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        write = start_response("404 Not Found", [("Content-Type", "text/html")])
        write(b"<body>gone")
        return [b"</body>"]

    for site, expected_status, expected in (
        (lazy, "200 OK", b"<html><body>hi<!-- overlay --></body></html>"),
        (writer, "404 Not Found", b"<body>gone<!-- overlay --></body>"),
    ):
        status, headers, content = call_review_app(site)
        assert (status, content) == (expected_status, expected)
        assert headers["Content-Length"] == str(len(expected))
        assert headers["Cache-Control"] == "no-store"


# -- the WSGI bridge (mkdocs_plugin/serve.py `Endpoint`, issue #17) -----------------------------


@pytest.fixture
def endpoint(store: annotate.Store) -> Iterator[Any]:
    from annotate.web import create_app
    from mkdocs_plugin.serve import Endpoint

    app = create_app(store, token="t" * 20, changes_timeout=1, poll_interval=0.05)
    e = Endpoint(app)
    yield e
    e.close()


def wsgi_environ(path: str, method: str = "GET", body: bytes = b"", **headers: str) -> Any:
    from io import BytesIO
    from wsgiref.util import setup_testing_defaults

    environ: dict[str, Any] = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "HTTP_HOST": "127.0.0.1:8000",
        "HTTP_X_ANNOTATE_TOKEN": "t" * 20,
        "wsgi.input": BytesIO(body),
        **{k.upper(): v for k, v in headers.items()},
    }
    setup_testing_defaults(environ)
    return environ


def pending_tasks(loop: Any) -> list[Any]:
    import asyncio

    async def others() -> list[Any]:
        return [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]

    return asyncio.run_coroutine_threadsafe(others(), loop).result(5)


def test_an_answer_the_client_left_leaves_no_pending_task(endpoint: Any) -> None:
    """The server closes the answer after its first chunk (the browser left at a reload): the
    app's task must end, not wait forever and be reported at the next garbage collection as
    "Task was destroyed but it is pending!" (issue #14)."""
    environ = wsgi_environ("/__annotate/api/changes", QUERY_STRING="since=0&timeout=0.2")
    body = endpoint(environ, lambda status, headers, exc_info=None: None)
    assert next(iter(body)).startswith(b'{"events":')
    body.close()  # what wsgiref does when writing to the socket fails
    deadline = time.monotonic() + 5
    while pending_tasks(endpoint.loop) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pending_tasks(endpoint.loop) == []


def test_hop_by_hop_headers_are_dropped(endpoint: Any) -> None:
    """The 413 asks to close the connection; wsgiref refuses the header (it closes anyway)."""
    answer: list[Any] = []
    environ = wsgi_environ(
        "/__annotate/api/page-notes",
        "POST",
        b"x" * (1024 * 1024 + 1),
        CONTENT_TYPE="application/json",
        CONTENT_LENGTH=str(1024 * 1024 + 1),
    )
    body = endpoint(
        environ, lambda status, headers, exc_info=None: answer.extend([status, headers])
    )
    content = b"".join(body)
    body.close()
    assert answer[0] == "413 Request Entity Too Large"
    assert "connection" not in {k.lower() for k, _ in answer[1]}
    assert json.loads(content)["code"] == "too_large"


@pytest.mark.parametrize(
    ("raw", "status", "code"),
    [
        (
            b'5\r\n{"pag\r\n18;ext=1\r\neUrl": "/", "note": "x"}\r\n0\r\nTrailer: x\r\n\r\n',
            201,
            None,
        ),
        (b"zz\r\n{}\r\n0\r\n\r\n", 400, "invalid_json"),
        (b'5\r\n{"pag', 400, "invalid_json"),
        (b"2\r\n{}XX0\r\n\r\n", 400, "invalid_json"),
        (b"-2\r\n{}\r\n0\r\n\r\n", 400, "invalid_json"),
        (b"0x2\r\n{}\r\n0\r\n\r\n", 400, "invalid_json"),
        (b"100001\r\n" + b"x" * 0x100001 + b"\r\nbroken", 413, "too_large"),
    ],
    ids=[
        "with extensions and trailers",
        "bad size",
        "truncated",
        "no chunk end",
        "negative size",
        "0x prefix",
        "over the limit, then broken",
    ],
)
def test_chunked_bodies(
    endpoint: Any, store: annotate.Store, raw: bytes, status: int, code: str | None
) -> None:
    answer: list[Any] = []
    environ = wsgi_environ(
        "/__annotate/api/page-notes",
        "POST",
        raw,
        CONTENT_TYPE="application/json",
        HTTP_TRANSFER_ENCODING="chunked",
        CONTENT_LENGTH="3",  # chunked wins (RFC 9112 §6.3)
    )
    body = endpoint(environ, lambda s, headers, exc_info=None: answer.append(s))
    content = json.loads(b"".join(body))
    getattr(body, "close", lambda: None)()
    assert int(answer[0].split()[0]) == status, content
    if code is None:
        assert store.get_page_note(content["id"]).note == "x"
    else:
        assert content["code"] == code
        assert store.list_page_notes() == []


def test_other_transfer_codings_are_501(endpoint: Any) -> None:
    answer: list[Any] = []
    environ = wsgi_environ(
        "/__annotate/api/page-notes", "POST", b"", HTTP_TRANSFER_ENCODING="gzip, chunked"
    )
    content = json.loads(b"".join(endpoint(environ, lambda s, h, e=None: answer.append(s))))
    assert answer == ["501 Not Implemented"]
    assert content == {
        "error": "Transfer-Encoding 'gzip, chunked' is not supported",
        "code": "not_implemented",
    }

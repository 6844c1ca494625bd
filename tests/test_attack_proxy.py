"""The attack suite, proxy side (issue #32, item 6): `annotate proxy` in front of a hostile upstream.

The upstream is a raw asyncio server written here, answering each path with bytes no honest dev
server sends: a second answer after `Content-Length`, bytes on an idle connection, 100 MB of
headers, a gzip bomb, answers that trickle or stall. The proxy is the real `annotate proxy`
command (a subprocess, default limits) where memory or the defaults are the point, and the
`Proxy` app on uvicorn in a thread with `Limits` of a second where time is.
"""

from __future__ import annotations

import asyncio
import http.client
import os
import re
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
import uvicorn

import annotate
from annotate.proxy import Limits, Proxy, TargetCheckProtocol, parse_upstream
from annotate.tokens import TokenFile
from annotate.web.app import create_app
from annotate.web.server import bind
from annotate.web.static import overlay_snippet

MB = 1024 * 1024
PAGE = b"<!doctype html><html><head><title>T</title></head><body><p>Hello proxy.</p></body></html>"
HTML = {"Accept": "text/html"}
Route = Callable[[asyncio.StreamWriter], Awaitable[None]]


def answer(body: bytes, content_type: bytes = b"text/plain") -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s" % (
        content_type,
        len(body),
        body,
    )


def gzip_bomb(size: int) -> bytes:
    """A gzip HTML page that inflates to `size` bytes (300 MB: about 300 KB)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [packer.compress(b"<!doctype html><html><body><p>")]
    block = b"\0" * MB
    parts += [packer.compress(block) for _ in range(size // MB)]
    parts.append(packer.compress(b"</p></body></html>") + packer.flush())
    return b"".join(parts)


BOMB = gzip_bomb(300 * MB)


# -- the hostile upstream -------------------------------------------------------------------------


async def smuggle(writer: asyncio.StreamWriter) -> None:
    # One write: the answer and, past its Content-Length, a second one.
    writer.write(answer(b"hello") + answer(b"smuggled"))


async def smuggle_page(writer: asyncio.StreamWriter) -> None:
    writer.write(answer(PAGE, b"text/html") + answer(b"smuggled"))


async def late(writer: asyncio.StreamWriter) -> None:
    # A complete answer; then, while the connection is idle in the pool, an answer to nothing.
    writer.write(answer(b"first"))
    await writer.drain()
    await asyncio.sleep(0.3)
    writer.write(answer(b"late"))


async def plain(writer: asyncio.StreamWriter) -> None:
    writer.write(answer(b"next"))


async def page(writer: asyncio.StreamWriter) -> None:
    writer.write(answer(PAGE, b"text/html"))


async def huge_header(writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\nX-Pad: ")
    for _ in range(100):
        writer.write(b"a" * MB)
        await writer.drain()
    writer.write(b"\r\nContent-Length: 2\r\n\r\nok")


async def many_headers(writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\n")
    line = b"X-Pad: " + b"a" * 1000 + b"\r\n"
    for _ in range(100):
        writer.write(line * 1000)
        await writer.drain()
    writer.write(b"Content-Length: 2\r\n\r\nok")


async def bomb(writer: asyncio.StreamWriter) -> None:
    writer.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(BOMB), BOMB)
    )


async def silent(writer: asyncio.StreamWriter) -> None:
    await asyncio.sleep(3600)


async def trickle_head(writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
    while True:
        writer.write(b"a")
        await writer.drain()
        await asyncio.sleep(0.2)


async def trickle_page(writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 1000\r\n\r\n<p>")
    while True:
        await writer.drain()
        await asyncio.sleep(0.2)
        writer.write(b"a")


async def stall(writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\nfirst")
    await writer.drain()
    await asyncio.sleep(3600)


async def cut_chunks(writer: asyncio.StreamWriter) -> None:
    # A chunked body whose connection ends before its last chunk.
    writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n")
    await writer.drain()
    writer.close()


ROUTES: dict[str, Route] = {
    "/smuggle": smuggle,
    "/smuggle-page": smuggle_page,
    "/late": late,
    "/next": plain,
    "/page": page,
    "/huge-header": huge_header,
    "/many-headers": many_headers,
    "/bomb": bomb,
    "/silent": silent,
    "/trickle-head": trickle_head,
    "/trickle-page": trickle_page,
    "/stall": stall,
    "/cut-chunks": cut_chunks,
}


class Hostile:
    """The upstream: a raw asyncio server in a thread, keeping connections alive between
    requests as an HTTP/1.1 server does; `requests` lists the paths it was asked for."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.loop = asyncio.new_event_loop()
        self.port = 0
        ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self.thread.start()
        assert ready.wait(10)

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()
        server.close()
        tasks = asyncio.all_tasks(self.loop)
        for task in tasks:
            task.cancel()
        self.loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        self.loop.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                path = head.split(b" ", 2)[1].decode()
                self.requests.append(path)
                await ROUTES[path](writer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture(scope="module")
def hostile() -> Iterator[Hostile]:
    upstream = Hostile()
    yield upstream
    upstream.close()


# -- the proxy ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def command(
    hostile: Hostile, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[int, int]]:
    """The real `annotate proxy --upstream` (default limits): its port and process id."""
    project = tmp_path_factory.mktemp("attack-proxy")
    (project / "mkdocs.yml").write_text("site_name: t\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "annotate.cli", "proxy", "--port", "0", "--project", str(project),
         "--upstream", str(hostile.port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    line = proc.stdout.readline()  # type: ignore[union-attr]
    match = re.search(r"Reviewing http://127\.0\.0\.1:(\d+)/", line)
    assert match, line
    yield int(match[1]), proc.pid
    proc.send_signal(2)
    proc.wait(15)
    stderr = proc.stderr.read()  # type: ignore[union-attr]
    proc.stdout.close()  # type: ignore[union-attr]
    proc.stderr.close()  # type: ignore[union-attr]
    assert "Traceback" not in stderr, stderr


# A second, where a limit is time: the tests wait for it.
FAST = Limits(first_byte=1.0, head_time=1.0, page_time=1.0, idle=1.0)


@pytest.fixture(scope="module")
def fast(hostile: Hostile, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """The `Proxy` app with one-second limits, on uvicorn in a thread: its port."""
    project = tmp_path_factory.mktemp("attack-proxy-fast")
    (project / "mkdocs.yml").write_text("site_name: t\n")
    store = annotate.open(project)
    token = TokenFile(project)
    app = Proxy(
        parse_upstream(str(hostile.port)),
        create_app(store, token=token),
        lambda: overlay_snippet(token(), pinned=True),
        token=token,
        limits=FAST,
    )
    sock = bind("127.0.0.1", 0)
    config = uvicorn.Config(
        app, http=TargetCheckProtocol, log_level="warning", lifespan="off", ws="websockets-sansio"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    yield sock.getsockname()[1]
    app.stop()
    server.should_exit = True
    thread.join(10)
    sock.close()
    store.close()


def request(
    conn: http.client.HTTPConnection, path: str, headers: dict[str, str] | None = None
) -> tuple[http.client.HTTPResponse, bytes]:
    conn.request("GET", path, headers=headers or {})
    response = conn.getresponse()
    return response, response.read()


def peak_memory(pid: int) -> int:
    """The process's peak resident memory (VmHWM), in bytes."""
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
    assert found
    return int(found[1]) * 1024


# -- one answer per request -----------------------------------------------------------------------


@pytest.mark.parametrize(("path", "kind"), [("/smuggle", "text"), ("/smuggle-page", "page")])
def test_bytes_after_content_length_never_reach_the_browser(
    command: tuple[int, int], hostile: Hostile, path: str, kind: str
) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", command[0], timeout=10)
    response, body = request(conn, path, HTML if kind == "page" else None)
    assert response.status == 200
    if kind == "page":
        assert body.startswith(PAGE[:-14]) and b'id="annotate-config"' in body
    else:
        assert body == b"hello"
    # The next request on the same browser connection is answered by the upstream, not by the
    # bytes it sent past the first answer.
    asked = hostile.requests.count("/next")
    response, body = request(conn, "/next")
    assert (response.status, body) == (200, b"next")
    assert hostile.requests.count("/next") == asked + 1
    conn.close()


def test_bytes_on_an_idle_upstream_connection_answer_nothing(
    command: tuple[int, int], hostile: Hostile
) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", command[0], timeout=10)
    assert request(conn, "/late")[1] == b"first"
    time.sleep(0.6)  # the upstream sends its answer to nothing meanwhile
    for _ in range(3):
        assert request(conn, "/next")[1] == b"next"
    conn.close()


# -- sizes ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/huge-header", "/many-headers"])
def test_100_mb_of_response_headers_are_refused(command: tuple[int, int], path: str) -> None:
    before = peak_memory(command[1])
    conn = http.client.HTTPConnection("127.0.0.1", command[0], timeout=30)
    response, body = request(conn, path)
    conn.close()
    assert response.status == 502
    assert b"over 64 KB of headers" in body
    assert peak_memory(command[1]) - before < 50 * MB


def test_a_gzip_bomb_passes_through_untouched(command: tuple[int, int]) -> None:
    # 300 KB that inflate to 300 MB: the proxy inflates up to its page limit (32 MB), then
    # sends the page on as it came, without the overlay. Before: 343 MB to 1.1 GB.
    assert len(BOMB) < MB
    conn = http.client.HTTPConnection("127.0.0.1", command[0], timeout=30)
    response, body = request(conn, "/bomb", {**HTML, "Accept-Encoding": "gzip"})
    conn.close()
    assert response.status == 200
    assert response.headers["Content-Encoding"] == "gzip"
    assert body == BOMB
    assert peak_memory(command[1]) < 250 * MB


# -- time -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/silent", "/trickle-head"])
def test_an_upstream_that_does_not_answer_in_time_is_a_504(fast: int, path: str) -> None:
    # `/trickle-head`: one byte of its headers every 0.2 s, for ever (before: held for good).
    conn = http.client.HTTPConnection("127.0.0.1", fast, timeout=15)
    started = time.monotonic()
    response, body = request(conn, path)
    conn.close()
    assert response.status == 504
    assert body.startswith(b"annotate proxy: the dev server did not answer")
    assert time.monotonic() - started < 10


def test_a_page_that_trickles_streams_on_without_the_overlay(fast: int) -> None:
    # The page is held to inject the overlay for `page_time`, then goes on as it comes.
    conn = http.client.HTTPConnection("127.0.0.1", fast, timeout=15)
    conn.request("GET", "/trickle-page", headers=HTML)
    response = conn.getresponse()
    assert response.status == 200
    assert response.headers["Content-Length"] == "1000"  # the upstream's: nothing injected
    assert response.read(4) == b"<p>a"
    conn.close()


@pytest.mark.parametrize("path", ["/stall", "/cut-chunks"])
def test_a_body_cut_short_reaches_the_browser_cut_short(fast: int, path: str) -> None:
    # `/stall`: 5 of 100 bytes, then nothing (cut after `idle`); `/cut-chunks`: the connection
    # ends before the last chunk. Neither may look like a whole answer to the browser.
    conn = http.client.HTTPConnection("127.0.0.1", fast, timeout=15)
    conn.request("GET", path)
    response = conn.getresponse()
    with pytest.raises(http.client.IncompleteRead) as cut:
        response.read()
    assert cut.value.partial == b"first"
    conn.close()


def test_an_honest_page_still_gets_the_overlay(fast: int, command: tuple[int, int]) -> None:
    for port in (fast, command[0]):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        response, body = request(conn, "/page", HTML)
        conn.close()
        assert response.status == 200
        assert body.count(b'id="annotate-config"') == 1
        assert int(response.headers["Content-Length"]) == len(body)

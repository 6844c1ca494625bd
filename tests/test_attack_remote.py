"""`annotate mcp --remote` against a hostile or broken team server and local mistakes (issue #32):
an endless answer stops at the size limit, a FIFO as the token file is refused instead of hanging
the call, and a password written into the URL never reaches a message. The server is a real
uvicorn server on a free port; the client is the real `Remote`."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from annotate.mcp_remote import MAX_ANSWER_BYTES, Remote, RemoteError, endpoint, read_token_file

from .pgcluster import free_port

pytestmark = pytest.mark.anyio
CHUNK = b"x" * (1024 * 1024)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def endless(request: Request) -> StreamingResponse:
    """An answer that never ends: JSON as far as the headers go, then bytes forever (until the
    client hangs up, or 4 times the limit)."""

    async def body() -> AsyncIterator[bytes]:
        for _ in range(4 * MAX_ANSWER_BYTES // len(CHUNK)):
            yield CHUNK

    return StreamingResponse(body(), media_type="application/json")


@pytest.fixture
def hostile() -> Iterator[str]:
    app = Starlette(routes=[Route("/{path:path}", endless, methods=["GET", "POST", "DELETE"])])
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}/"
    server.should_exit = True
    thread.join()


def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text("ann_" + "t" * 40 + "\n")
    path.chmod(0o600)
    return path


async def test_an_endless_answer_stops_at_the_limit(hostile: str, tmp_path: Path) -> None:
    remote = Remote(hostile, token_file(tmp_path))
    with pytest.raises(RemoteError) as caught:
        await remote.call("list_annotations", {}, timeout_s=60)
    # Before the fix: the whole answer read into memory (200 MB took 1.3 GB), then a JSON error.
    assert str(caught.value) == (
        f"The team server at {hostile} sent an answer larger than "
        f"{MAX_ANSWER_BYTES // (1024 * 1024)} MB: not read further"
    )


def test_a_fifo_as_the_token_file_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "token"
    os.mkfifo(fifo, 0o600)
    caught: list[BaseException] = []

    def read() -> None:
        try:
            read_token_file(fifo)
        except BaseException as e:
            caught.append(e)

    reading = threading.Thread(target=read, daemon=True)
    reading.start()
    reading.join(timeout=30)  # before the fix: blocked in open() until a writer came, forever
    if reading.is_alive():
        with open(fifo, "w") as writer:  # let the stuck reader go
            writer.write("x\n")
    assert not reading.is_alive() or reading.join(timeout=5) is None
    assert [str(e) for e in caught] == [f"The token file {fifo} is not a regular file"]


@pytest.mark.parametrize(
    "url",
    [
        "http://agent:hunter2@review.example.com/",
        "https://:hunter2@review.example.com/__annotate/mcp",
        "ftp://agent:hunter2@review.example.com/",
        "http://agent:hunter2@/",
    ],
)
def test_a_password_in_the_url_is_never_shown(url: str) -> None:
    with pytest.raises(RemoteError) as caught:
        endpoint(url)
    # Before the fix: the URL as given, password included, in the agent's error.
    assert "hunter2" not in str(caught.value) and "***@" in str(caught.value)


def test_a_plain_token_file_still_works(tmp_path: Path) -> None:
    assert read_token_file(token_file(tmp_path)) == "ann_" + "t" * 40
    _ = anyio  # the anyio plugin runs the async tests above

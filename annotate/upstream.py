"""The proxy's side toward its one dev server (`annotate proxy`, proxy.py): the upstream's address,
one HTTP/1.1 connection to it (`Link`), and its answer parsed as the bytes arrive (`Answer`)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import cast
from urllib.parse import urlsplit

import httptools

from .errors import ValidationError
from .web.security import is_loopback

__all__ = [
    "PAUSE_AT",
    "Answer",
    "Link",
    "Upstream",
    "UpstreamGone",
    "UpstreamTimeout",
    "parse_upstream",
]

# Reading from the upstream pauses while this much of a streamed body waits for the browser.
PAUSE_AT = 1024 * 1024


@dataclass(frozen=True)
class Upstream:
    """The one server the proxy forwards to: `http://host:port`, with an optional path prefix."""

    host: str
    port: int
    prefix: str = ""

    @property
    def netloc(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def origin(self) -> str:
        return f"http://{self.netloc}"


def parse_upstream(url: str, *, allow_remote: bool = False) -> Upstream:
    """The upstream named by `url` (`http://127.0.0.1:8001`, `localhost:8001`, `8001`).

    A host that is not loopback is refused unless `allow_remote`: the proxy would otherwise
    forward the reviewer's browser to another machine with a page holding the token.
    """
    text = url.strip()
    if text.isdigit():
        text = f"127.0.0.1:{text}"
    if "://" not in text:
        text = "http://" + text
    parts = urlsplit(text)
    if parts.scheme != "http":
        raise ValidationError(
            f"Upstream {url!r} must be an http:// address (the dev server on this machine)",
            "upstream",
        )
    try:
        port = parts.port
    except ValueError:
        port = None
    host = (parts.hostname or "").lower()
    if not host or port is None or parts.query or parts.fragment or parts.username:
        raise ValidationError(
            f"Upstream {url!r} must be host:port, e.g. http://127.0.0.1:8001", "upstream"
        )
    if not allow_remote and not is_loopback(host):
        raise ValidationError(
            f"Upstream {url!r} is not a loopback address: the proxy forwards only to this "
            "machine unless you pass --allow-remote-upstream",
            "upstream",
        )
    return Upstream(host, port, parts.path.rstrip("/"))


class UpstreamGone(Exception):
    """The upstream closed or refused the connection before answering."""


class UpstreamTimeout(Exception):
    """The upstream took longer than `proxy.Limits` allows."""


class _Trailing(Exception):
    """Raised in the parser's callback to stop at the first complete answer."""


class Answer:
    """One answer of the upstream, parsed by httptools as its bytes arrive.

    Only the first complete answer counts: bytes after it (past its `Content-Length`, after its
    last chunk) are never relayed, and the connection is not used again. The head (1xx answers
    included) is refused past `max_head` bytes; httptools itself would buffer any length."""

    def __init__(self, max_head: int) -> None:
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.headers_done = False
        self.done = False
        self.body: list[bytes] = []
        self.buffered = 0
        self.keep_alive = True
        self.head_bytes = 0
        self.max_head = max_head
        self.trailing = False  # bytes came after the complete answer
        self.error = ""  # not valid HTTP, or a head too large: the answer is refused (502)
        self.parser = httptools.HttpResponseParser(self)

    @property
    def failed(self) -> bool:
        return bool(self.error)

    @property
    def head_ready(self) -> bool:
        """The final (non-1xx) answer's head is complete."""
        return self.headers_done and self.status >= 200

    def feed(self, data: bytes) -> None:
        if self.done:
            self.trailing = True
            return
        if not self.head_ready:
            self.head_bytes += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            pass  # the body of an upgrade answer is not ours to read: it ends here
        except httptools.HttpParserError as e:
            if self.done or self.trailing:
                self.trailing = True  # the answer was complete; what came after is not HTTP
            elif not self.error:
                self.error = f"the dev server's answer is not valid HTTP: {e}"
        if not self.head_ready and self.head_bytes > self.max_head and not self.error:
            self.error = f"the dev server's answer has over {self.max_head // 1024} KB of headers"

    def take_body(self) -> bytes:
        data = b"".join(self.body)
        self.body.clear()
        self.buffered = 0
        return data

    # httptools callbacks
    def on_message_begin(self) -> None:
        if self.done:
            if self.status >= 200:
                self.trailing = True
                raise _Trailing
            # After an informational (1xx) answer: the next one starts afresh.
            self.headers = []
            self.headers_done = self.done = False

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        self.keep_alive = self.parser.should_keep_alive()
        self.headers_done = True

    def on_body(self, body: bytes) -> None:
        self.body.append(body)
        self.buffered += len(body)

    def on_message_complete(self) -> None:
        self.done = True


class Link(asyncio.Protocol):
    """One HTTP/1.1 connection to the upstream, feeding its bytes straight to the parser.

    No stream reader between the socket and httptools: an answer is parsed as it arrives, a
    connection the upstream closes while pooled is known at once, and bytes on a connection
    nobody asked anything of (a second answer, a late one) end it instead of answering the next
    request."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.answer: Answer | None = None
        self.lost = False
        self.reusable = True
        self.reading_paused = False
        self.pause_at = PAUSE_AT  # a page held whole for the overlay raises it to its limit
        self._waiter: asyncio.Future[bool] | None = None
        self._drained: asyncio.Future[None] | None = None

    # asyncio callbacks
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, but have its methods.
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        answer = self.answer
        if answer is None:
            self.close()  # bytes nobody asked for
            return
        answer.feed(data)
        if answer.trailing or answer.error:
            # What it parsed stays with the answer; nothing more is read from this connection.
            self.close()
            self._wake()
            return
        if answer.buffered > self.pause_at and not self.reading_paused and self.transport:
            self.transport.pause_reading()  # the browser reads slower than the upstream writes
            self.reading_paused = True
        self._wake()

    def eof_received(self) -> bool | None:
        return None  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.reusable = False
        self._wake()
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    def pause_writing(self) -> None:
        self._drained = self.loop.create_future()

    def resume_writing(self) -> None:
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        self._drained = None

    # used by the proxy
    def write(self, data: bytes) -> None:
        if self.lost or self.transport is None:
            raise UpstreamGone("the connection closed")
        self.transport.write(data)

    async def drain(self) -> None:
        if self._drained is not None:
            await self._drained
        if self.lost:
            raise UpstreamGone("the connection closed")

    def resume(self) -> None:
        """Read again once the browser has taken what was buffered."""
        if self.reading_paused and self.transport is not None:
            self.reading_paused = False
            self.transport.resume_reading()

    async def wait(self, timeout: float) -> bool:
        """Until more of the answer arrived or the connection ended: False when `timeout` s
        passed first."""
        if self.lost:
            return True
        waiter: asyncio.Future[bool] = self.loop.create_future()
        self._waiter = waiter
        timer = self.loop.call_later(max(timeout, 0.0), _settle, waiter, False)
        try:
            return await waiter
        finally:
            timer.cancel()
            self._waiter = None

    def _wake(self) -> None:
        if self._waiter is not None:
            _settle(self._waiter, True)

    def close(self) -> None:
        self.reusable = False
        if self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        self.reusable = False
        if self.transport is not None:
            self.transport.abort()


def _settle(future: asyncio.Future[bool], value: bool) -> None:
    if not future.done():
        future.set_result(value)

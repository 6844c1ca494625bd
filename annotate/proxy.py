"""`annotate proxy`: the overlay on any dev server, through a reverse proxy on loopback.

The proxy stands in front of one dev server (Zensical, ProperDocs, MkDocs without the plugin, Hugo,
Vite, `python -m http.server`…) and

- serves `/__annotate/` itself, with the same app as `annotate serve` (API, review page, overlay);
- injects the overlay and the token into the dev server's HTML pages (gzip or identity, chunked or
  not: the page is decoded, injected and sent with a new `Content-Length`);
- passes every other request through as it came: streamed bodies, status codes, caching and
  content-type headers, and WebSocket upgrades on any path (Zensical's reload socket opens on the
  page's own URL; Vite and Hugo use WebSockets; MkDocs long-polls, which is plain HTTP).

It is never an open proxy: it forwards only to its one upstream (loopback unless the user says
otherwise), refuses `CONNECT` and absolute-form targets (`GET http://elsewhere/ HTTP/1.1`), and
applies `annotate serve`'s Host and Origin rules to every request (`web/security.py`), so a
DNS-rebinding page cannot read a page holding the token. `X-Annotate-Token` never leaves for the
upstream. The side toward the upstream (its address, one connection, an answer parsed as it
arrives) is `upstream.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from .upstream import (
    PAUSE_AT,
    Answer,
    Link,
    Upstream,
    UpstreamGone,
    UpstreamTimeout,
    parse_upstream,
)
from .web.responses import error_response
from .web.security import TOKEN_HEADER, Guard
from .web.static import FRAME_HEADERS, inject

__all__ = [
    "ABSOLUTE_TARGET",
    "Limits",
    "Proxy",
    "TargetCheckProtocol",
    "Upstream",
    "parse_upstream",
]

log = logging.getLogger("annotate.proxy")

# Set in the ASGI scope by `TargetCheckProtocol` when the request line's target does not start
# with `/` (absolute form, `*`): uvicorn's parser keeps only the path of such a target.
ABSOLUTE_TARGET = "annotate.absolute_target"
# Connection-level headers (RFC 9110 §7.6.1): they describe one hop, never the next.
HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"expect",
    }
)
TOKEN = TOKEN_HEADER.lower().encode("latin-1")
IDLE_CONNECTIONS = 16
HTML_TYPES = (b"text/html", b"application/xhtml+xml")
# The encodings the proxy can undo to inject the overlay; on HTML-looking requests the upstream is
# asked for these only (a br or zstd page could not be injected).
HTML_ACCEPT_ENCODING = b"gzip, identity"
DECODERS: dict[bytes, Callable[[], Any]] = {
    b"gzip": lambda: zlib.decompressobj(16 + zlib.MAX_WBITS),
    b"x-gzip": lambda: zlib.decompressobj(16 + zlib.MAX_WBITS),
    b"deflate": lambda: zlib.decompressobj(),
}
# Answers without a body whatever their headers say (RFC 9112 §6.3).
NO_BODY_STATUSES = frozenset({204, 304})
# The largest WebSocket message taken from the upstream (uvicorn's own limit the other way).
WEBSOCKET_MESSAGE = 16 * 1024 * 1024
# The folder of the store and the token (annotate/paths): never forwarded, in case the dev server
# serves the project folder itself (`python -m http.server` in a folder of HTML).
STORE_FOLDER = ".annotate"


@dataclass(frozen=True)
class Limits:
    """How much the proxy takes from its upstream, and for how long (issue #32): a dev server
    is trusted with the pages, not with the proxy's memory or time."""

    page: int = 32 * 1024 * 1024  # bytes of an HTML page held to inject, before and after gzip
    head: int = 64 * 1024  # bytes of an answer's status line and headers (502 beyond)
    first_byte: float = 90.0  # s until an answer starts (MkDocs' reload long-poll holds 60 s)
    head_time: float = 10.0  # s from an answer's first byte to the end of its headers (504)
    page_time: float = 10.0  # s for a page held to inject; then it streams on untouched
    idle: float = 90.0  # s without a byte while a body streams: the answer is cut


class TargetCheckProtocol(HttpToolsProtocol):
    """uvicorn's HTTP protocol, marking requests whose target is not a path (absolute form)."""

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        if not self.url.startswith(b"/"):
            # uvicorn types the scope as a closed TypedDict; ASGI lets a server add keys.
            self.scope[ABSOLUTE_TARGET] = True  # type: ignore[literal-required]


class Proxy:
    """The ASGI app: `/__annotate/` to `annotate_app`, everything else to the upstream."""

    def __init__(
        self,
        upstream: Upstream,
        annotate_app: ASGIApp,
        snippet: Callable[[], str],
        *,
        token: Callable[[], str],
        allowed_hosts: Iterable[str] = (),
        limits: Limits | None = None,
    ) -> None:
        self.upstream = upstream
        self.annotate_app = annotate_app
        self.snippet = snippet
        self.token = token
        # The snippet for the current token: building it looks up the overlay files' hashes,
        # which was most of what the proxy spent on a page (issue #27, benchmarks/proxy.py).
        self._snippet: tuple[str, str] = ("", "")
        self.limits = limits or Limits()
        self.idle: list[Link] = []
        self.busy: set[Link] = set()
        self.sockets: set[Any] = set()  # open WebSockets to the upstream
        self.loop: asyncio.AbstractEventLoop | None = None
        self.stopping = False
        # The Host and Origin rules of `annotate serve`, on every path the proxy forwards.
        self.forward = Guard(
            self._forward, token=token, allowed_hosts=allowed_hosts, methods=lambda path: None
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            return
        if self.loop is None:
            self.loop = asyncio.get_running_loop()
        path = scope["path"]
        if scope.get(ABSOLUTE_TARGET) or not path.startswith("/"):
            await self._refuse(
                scope, receive, send, 400, "Absolute request targets are refused: not a proxy"
            )
            return
        if kind == "http" and scope["method"] == "CONNECT":
            await self._refuse(scope, receive, send, 405, "CONNECT is refused: not a proxy")
            return
        if path == "/__annotate" or path.startswith("/__annotate/"):
            await self.annotate_app(scope, receive, send)
            return
        if STORE_FOLDER in path.lower().split("/"):
            # The store and the token, when the project is the folder a static server serves.
            await self._refuse(scope, receive, send, 404, "Not forwarded: annotate's own files")
            return
        await self.forward(scope, receive, send)

    def stop(self) -> None:
        """End every forwarded request and WebSocket now: the server is stopping. Safe to call
        from a signal handler (the work is done in the event loop)."""
        if self.loop is None or self.stopping:
            self.stopping = True
            return
        self.stopping = True
        with contextlib.suppress(RuntimeError):  # the loop is already closed
            self.loop.call_soon_threadsafe(self._stop_now)

    def _stop_now(self) -> None:
        for link in [*self.busy, *self.idle]:
            link.abort()
        self.idle.clear()
        for socket in list(self.sockets):
            with contextlib.suppress(Exception):
                socket.transport.abort()

    async def _refuse(
        self, scope: Scope, receive: Receive, send: Send, status: int, message: str
    ) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        response = error_response(status, "forbidden_target", message)
        response.headers["Connection"] = "close"
        await response(scope, receive, send)

    async def _forward(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
        else:
            await self._http(scope, receive, send)

    # -- HTTP -------------------------------------------------------------------------------

    def _target(self, scope: Scope) -> bytes:
        raw: bytes = scope.get("raw_path") or scope["path"].encode("utf-8")
        query: bytes = scope.get("query_string", b"")
        return self.upstream.prefix.encode("ascii") + raw + (b"?" + query if query else b"")

    def _request_head(self, scope: Scope, *, html: bool, chunked: bool) -> bytes:
        method = scope["method"].encode("ascii")
        lines = [method + b" " + self._target(scope) + b" HTTP/1.1"]
        lines.append(b"host: " + self.upstream.netloc.encode("ascii"))
        for name, value in scope["headers"]:
            if name in HOP_BY_HOP or name == b"host" or name == TOKEN:
                continue
            if name == b"accept-encoding" and html:
                continue
            if name == b"origin":
                # Guard let only our own origin through: to the upstream it is its own.
                value = self.upstream.origin.encode("ascii")
            if name == b"content-length" and chunked:
                continue
            lines.append(name + b": " + value)
        if html:
            lines.append(b"accept-encoding: " + HTML_ACCEPT_ENCODING)
        if chunked:
            lines.append(b"transfer-encoding: chunked")
        return b"\r\n".join(lines) + b"\r\n\r\n"

    async def _connect(self) -> Link:
        loop = asyncio.get_running_loop()
        try:
            _, link = await loop.create_connection(
                lambda: Link(loop), self.upstream.host, self.upstream.port
            )
        except OSError as e:
            raise UpstreamGone(str(e)) from None
        return link

    def _pooled(self) -> Link | None:
        while self.idle:
            link = self.idle.pop()
            if link.reusable and not link.lost:
                return link
        return None

    def _release(self, link: Link) -> None:
        link.answer = None
        if (
            link.reusable
            and not link.lost
            and not self.stopping
            and len(self.idle) < IDLE_CONNECTIONS
        ):
            self.idle.append(link)
        else:
            link.close()

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope["headers"])
        method = scope["method"]
        html = method in ("GET", "HEAD") and b"text/html" in headers.get(b"accept", b"")
        chunked = b"transfer-encoding" in headers
        has_body = chunked or headers.get(b"content-length", b"0") not in (b"", b"0")
        head = self._request_head(scope, html=html, chunked=chunked)
        # A pooled connection the upstream has closed meanwhile fails at once: a request without
        # a body is then sent again on a new one (a streamed body cannot be replayed).
        pooled = None if has_body else self._pooled()
        while True:
            try:
                link = pooled or await self._connect()
            except UpstreamGone as e:
                await self._bad_gateway(scope, send, str(e))
                return
            answer = link.answer = Answer(self.limits.head)
            self.busy.add(link)
            try:
                link.write(head)
                if has_body:
                    await self._send_body(link, receive, chunked)
                await self._head(link, answer)
                break
            except (UpstreamGone, UpstreamTimeout) as e:
                self.busy.discard(link)
                link.close()
                if pooled is not None and not answer.head_bytes and not self.stopping:
                    pooled = None
                    if isinstance(e, UpstreamGone):
                        continue
                timeout = isinstance(e, UpstreamTimeout)
                await self._bad_gateway(scope, send, str(e), status=504 if timeout else 502)
                return
            except BaseException:
                self.busy.discard(link)
                link.close()
                raise
        try:
            complete = await self._relay(link, answer, scope, send, html=html)
        except BaseException:
            link.close()
            raise
        finally:
            self.busy.discard(link)
        if complete and answer.keep_alive and not answer.trailing:
            self._release(link)
        else:
            link.close()

    async def _send_body(self, link: Link, receive: Receive, chunked: bool) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise UpstreamGone("the browser went away")
            chunk = message.get("body", b"")
            if chunk:
                link.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
                await link.drain()
            if not message.get("more_body", False):
                break
        if chunked:
            link.write(b"0\r\n\r\n")
        await link.drain()

    async def _head(self, link: Link, answer: Answer) -> None:
        """Wait for the answer's head: its first byte within `first_byte` s (a long poll holds
        it), the rest within `head_time` s of it."""
        limits = self.limits
        deadline = 0.0
        while not answer.head_ready and not answer.error:
            if link.lost:
                what = "its headers" if answer.head_bytes else "an answer"
                raise UpstreamGone(f"the connection closed before {what}")
            if answer.head_bytes:
                now = self._now()
                deadline = deadline or now + limits.head_time
                arrived = now < deadline and await link.wait(deadline - now)
                if not arrived and not answer.head_ready:
                    raise UpstreamTimeout(f"its headers took over {limits.head_time:g} s to arrive")
            elif not await link.wait(limits.first_byte):
                raise UpstreamTimeout(f"no answer in {limits.first_byte:g} s")

    def _now(self) -> float:
        assert self.loop is not None
        return self.loop.time()

    async def _relay(
        self, link: Link, answer: Answer, scope: Scope, send: Send, *, html: bool
    ) -> bool:
        """Send the upstream's answer on; True when it was complete (the connection can serve
        another request if the upstream keeps it)."""
        if answer.error:
            await self._bad_gateway(scope, send, answer.error)
            return False
        status = answer.status
        headers = [(n.lower(), v) for n, v in answer.headers if n.lower() not in HOP_BY_HOP]
        headers = self._rewrite_location(headers)
        bodiless = scope["method"] == "HEAD" or status in NO_BODY_STATUSES
        if bodiless:
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            # A body after a bodiless answer's head would be read as the next answer.
            return answer.done and not answer.body
        content_type = _header(headers, b"content-type").split(b";")[0].strip().lower()
        encoding = _header(headers, b"content-encoding").strip().lower()
        injectable = (
            status == 200
            and content_type in HTML_TYPES
            and (not encoding or encoding == b"identity" or encoding in DECODERS)
        )
        if injectable and await self._whole_body(link, answer):
            page = answer.take_body()
            link.resume()
            await self._send_page(page, headers, encoding, send)
            return answer.done
        # Not a page, or too large or too slow: what was read goes on as it is, the rest after.
        await send({"type": "http.response.start", "status": status, "headers": headers})
        idle = self.limits.idle
        while True:
            chunk = answer.take_body()
            link.resume()
            if chunk:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            if answer.done:
                break
            if link.lost:
                if _delimited(answer.headers) and not (self.stopping and _chunked(headers)):
                    return False  # cut short: the browser must not take it for the whole body
                break  # a body that ends with the connection, or a stream ended by Ctrl+C
            if not await link.wait(idle):
                log.warning("%s: no data from the dev server for %g s", scope["path"], idle)
                return False
            if answer.failed:
                return False
        await send({"type": "http.response.body", "body": b""})
        return answer.done

    async def _whole_body(self, link: Link, answer: Answer) -> bool:
        """Read the whole page within the limits; False when it is too large or too slow."""
        limits = self.limits
        deadline = self._now() + limits.page_time
        link.pause_at = limits.page
        try:
            while not answer.done and not link.lost:
                if answer.buffered > limits.page or answer.failed:
                    return False
                remaining = deadline - self._now()
                if remaining <= 0 or not await link.wait(min(remaining, limits.idle)):
                    return False
        finally:
            link.pause_at = PAUSE_AT
        return answer.buffered <= limits.page

    async def _send_page(
        self, page: bytes, headers: list[tuple[bytes, bytes]], encoding: bytes, send: Send
    ) -> None:
        body = _inflate(page, encoding, self.limits.page) if encoding in DECODERS else page
        if body:
            body = inject(body, self._current_snippet())
            headers = _page_headers(headers, len(body))
        else:
            body = page  # not what it claims to be, or too large inflated: sent on untouched
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def _current_snippet(self) -> str:
        token = self.token()
        if self._snippet[0] != token:
            self._snippet = (token, self.snippet())
        return self._snippet[1]

    async def _bad_gateway(self, scope: Scope, send: Send, why: str, status: int = 502) -> None:
        if self.stopping:
            await _plain(send, 503, "annotate proxy is stopping.\n")
        else:
            await _bad_gateway(scope, send, why, status)

    def _rewrite_location(self, headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
        # A redirect to the upstream's own address would take the browser past the proxy.
        own = self.upstream.origin.encode("ascii")
        alias = f"http://localhost:{self.upstream.port}".encode("ascii")
        out = []
        for name, value in headers:
            if name == b"location":
                for base in (own, alias):
                    if value == base or value.startswith(base + b"/"):
                        value = value[len(base) :] or b"/"
                        break
            out.append((name, value))
        return out

    # -- WebSocket --------------------------------------------------------------------------

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed, InvalidHandshake
        from websockets.typing import Origin

        message = await receive()
        if message["type"] != "websocket.connect":
            return
        target = self._target(scope).decode("latin-1")
        headers = [
            (n.decode("latin-1"), v.decode("latin-1"))
            for n, v in scope["headers"]
            if n
            not in (
                b"host",
                b"origin",
                b"connection",
                b"upgrade",
                TOKEN,
                b"sec-websocket-key",
                b"sec-websocket-version",
                b"sec-websocket-extensions",
                b"sec-websocket-protocol",
            )
        ]
        try:
            upstream = await connect(
                f"ws://{self.upstream.netloc}{target}",
                additional_headers=headers,
                origin=Origin(self.upstream.origin),
                subprotocols=scope.get("subprotocols") or None,
                compression=None,
                ping_interval=None,
                max_size=WEBSOCKET_MESSAGE,
                open_timeout=10,
                close_timeout=1,
                user_agent_header=None,
                proxy=None,
            )
        except (OSError, InvalidHandshake, asyncio.TimeoutError) as e:
            log.info("WebSocket to %s%s refused: %s", self.upstream.origin, target, e)
            await send({"type": "websocket.close", "code": 1011})
            return
        await send({"type": "websocket.accept", "subprotocol": upstream.subprotocol})

        async def to_upstream() -> None:
            while True:
                message = await receive()
                if message["type"] == "websocket.disconnect":
                    code = message.get("code", 1000)
                    # 1005, 1006, 1015 describe a close; they are never sent (RFC 6455 §7.4.1).
                    await upstream.close(1000 if code in (1005, 1006, 1015) else code)
                    return
                data = message.get("text")
                await upstream.send(message.get("bytes") or b"" if data is None else data)

        async def to_browser() -> None:
            try:
                async for data in upstream:
                    if isinstance(data, str):
                        await send({"type": "websocket.send", "text": data})
                    else:
                        await send({"type": "websocket.send", "bytes": data})
            except ConnectionClosed:
                pass
            code = 1001 if self.stopping else upstream.close_code or 1000
            with contextlib.suppress(Exception):
                await send(
                    {
                        "type": "websocket.close",
                        "code": code if code not in (1005, 1006) else 1000,
                        "reason": upstream.close_reason or "",
                    }
                )

        tasks = [asyncio.ensure_future(to_upstream()), asyncio.ensure_future(to_browser())]
        self.sockets.add(upstream)
        if self.stopping:
            self._stop_now()
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self.sockets.discard(upstream)
            for task in tasks:
                task.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.gather(*tasks, return_exceptions=True)
            with contextlib.suppress(Exception):
                await upstream.close()


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> bytes:
    for key, value in headers:
        if key == name:
            return value
    return b""


def _page_headers(headers: list[tuple[bytes, bytes]], length: int) -> list[tuple[bytes, bytes]]:
    """The upstream's headers for a page now holding the token: its encoding and length are ours;
    no cache may keep it, no other site may read it (CORS) or frame it."""
    dropped = {
        b"content-length",
        b"content-encoding",
        b"etag",
        b"last-modified",
        b"cache-control",
        b"expires",
        b"access-control-allow-origin",
        b"access-control-allow-credentials",
        b"content-md5",
        b"digest",
    }
    out = [(n, v) for n, v in headers if n not in dropped]
    names = {n for n, _ in out}
    out.append((b"content-length", str(length).encode("ascii")))
    out.append((b"cache-control", b"no-store"))
    for name, value in FRAME_HEADERS.items():
        key = name.lower().encode("ascii")
        if key == b"x-frame-options" and key in names:
            continue
        out.append((key, value.encode("ascii")))
    if b"x-content-type-options" not in names:
        out.append((b"x-content-type-options", b"nosniff"))
    return out


def _delimited(headers: list[tuple[bytes, bytes]]) -> bool:
    """The answer says where its body ends (a length or chunks): a connection closing before
    that cut it short."""
    return any(n.lower() in (b"content-length", b"transfer-encoding") for n, _ in headers)


def _chunked(headers: list[tuple[bytes, bytes]]) -> bool:
    """The answer goes to the browser in chunks (uvicorn's way without a length): ending it
    early is a clean end."""
    return not any(n == b"content-length" for n, _ in headers)


def _inflate(data: bytes, encoding: bytes, limit: int) -> bytes:
    """`data` decoded, or b"" when it is not valid in `encoding` or inflates past `limit`
    bytes (a gzip bomb: 300 KB that inflate to 300 MB); the inflater stops at the limit."""
    inflater = DECODERS[encoding]()
    try:
        body: bytes = inflater.decompress(data, limit + 1)
    except zlib.error:
        return b""
    if len(body) > limit or inflater.unconsumed_tail:
        return b""
    return body


async def _bad_gateway(scope: Scope, send: Send, why: str, status: int = 502) -> None:
    await _plain(
        send,
        status,
        f"annotate proxy: the dev server did not answer ({why}). Is it running? "
        "The page will work again once it is.\n",
    )


async def _plain(send: Send, status: int, text: str) -> None:
    body = text.encode()
    message: Message = {
        "type": "http.response.start",
        "status": status,
        "headers": [
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", str(len(body)).encode("ascii")),
            (b"cache-control", b"no-store"),
        ],
    }
    await send(message)
    await send({"type": "http.response.body", "body": body})

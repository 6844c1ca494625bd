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
upstream.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httptools
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from .errors import ValidationError
from .web.responses import error_response
from .web.security import TOKEN_HEADER, Guard, is_loopback
from .web.static import FRAME_HEADERS, inject

__all__ = ["ABSOLUTE_TARGET", "Proxy", "TargetCheckProtocol", "Upstream", "parse_upstream"]

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
# A page larger than this is passed through without the overlay rather than held in memory.
MAX_HTML = 32 * 1024 * 1024
READ_SIZE = 64 * 1024
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


class TargetCheckProtocol(HttpToolsProtocol):
    """uvicorn's HTTP protocol, marking requests whose target is not a path (absolute form)."""

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        if not self.url.startswith(b"/"):
            # uvicorn types the scope as a closed TypedDict; ASGI lets a server add keys.
            self.scope[ABSOLUTE_TARGET] = True  # type: ignore[literal-required]


class _Connection:
    """One HTTP/1.1 connection to the upstream."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


class _Response:
    """The upstream's answer as httptools parses it."""

    def __init__(self) -> None:
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.headers_done = False
        self.done = False
        self.body: list[bytes] = []
        self.keep_alive = True
        self.parser = httptools.HttpResponseParser(self)

    # httptools callbacks
    def on_message_begin(self) -> None:
        # Also after an informational (1xx) answer: the next one starts afresh.
        self.headers = []
        self.headers_done = self.done = False
        self.body.clear()

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        self.keep_alive = self.parser.should_keep_alive()
        self.headers_done = True

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        self.done = True

    def take_body(self) -> bytes:
        data = b"".join(self.body)
        self.body.clear()
        return data


class UpstreamGone(Exception):
    """The upstream closed or refused the connection before answering."""


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
    ) -> None:
        self.upstream = upstream
        self.annotate_app = annotate_app
        self.snippet = snippet
        self.idle: list[_Connection] = []
        # The Host and Origin rules of `annotate serve`, on every path the proxy forwards.
        self.forward = Guard(
            self._forward, token=token, allowed_hosts=allowed_hosts, methods=lambda path: None
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            return
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
        await self.forward(scope, receive, send)

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

    async def _connect(self) -> _Connection:
        try:
            reader, writer = await asyncio.open_connection(self.upstream.host, self.upstream.port)
        except OSError as e:
            raise UpstreamGone(str(e)) from None
        return _Connection(reader, writer)

    def _release(self, conn: _Connection) -> None:
        if len(self.idle) < IDLE_CONNECTIONS and not conn.reader.at_eof():
            self.idle.append(conn)
        else:
            conn.close()

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope["headers"])
        method = scope["method"]
        html = method in ("GET", "HEAD") and b"text/html" in headers.get(b"accept", b"")
        chunked = b"transfer-encoding" in headers
        has_body = chunked or headers.get(b"content-length", b"0") not in (b"", b"0")
        head = self._request_head(scope, html=html, chunked=chunked)
        # A pooled connection the upstream has closed meanwhile fails at once: a request without
        # a body is then sent again on a new one (a streamed body cannot be replayed).
        for attempt in range(2):
            pooled = attempt == 0 and bool(self.idle) and not has_body
            try:
                conn = self.idle.pop() if pooled else await self._connect()
            except UpstreamGone as e:
                await _bad_gateway(scope, send, str(e))
                return
            try:
                conn.writer.write(head)
                if has_body:
                    await self._send_body(conn, receive, chunked)
                else:
                    await conn.writer.drain()
                answer = _Response()
                first = await conn.reader.read(READ_SIZE)
                if not first:
                    raise UpstreamGone("the connection closed before an answer")
            except (OSError, UpstreamGone) as e:
                conn.close()
                if pooled:
                    continue
                await _bad_gateway(scope, send, str(e))
                return
            break
        try:
            reusable = await self._relay(conn, answer, first, scope, send, html=html)
        except BaseException:
            conn.close()
            raise
        if reusable:
            self._release(conn)
        else:
            conn.close()

    async def _send_body(self, conn: _Connection, receive: Receive, chunked: bool) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise UpstreamGone("the browser went away")
            chunk = message.get("body", b"")
            if chunk:
                conn.writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
                await conn.writer.drain()
            if not message.get("more_body", False):
                break
        if chunked:
            conn.writer.write(b"0\r\n\r\n")
        await conn.writer.drain()

    async def _read(self, conn: _Connection, answer: _Response, data: bytes) -> bool:
        """Parse `data`, or the next bytes from the connection; False at its end."""
        if not data:
            data = await conn.reader.read(READ_SIZE)
            if not data:
                return False
        with contextlib.suppress(httptools.HttpParserUpgrade):
            answer.parser.feed_data(data)
        return True

    async def _relay(
        self,
        conn: _Connection,
        answer: _Response,
        data: bytes,
        scope: Scope,
        send: Send,
        *,
        html: bool,
    ) -> bool:
        """Send the upstream's answer on; True when the connection can serve another request."""
        try:
            # Informational answers (103 Early Hints) are not relayed: ASGI cannot send them.
            while True:
                while not answer.headers_done:
                    if not await self._read(conn, answer, data):
                        raise UpstreamGone("the connection closed in the answer's headers")
                    data = b""
                if answer.status >= 200:
                    break
                answer.headers_done = False
        except httptools.HttpParserError as e:
            await _bad_gateway(scope, send, f"the dev server's answer is not valid HTTP: {e}")
            return False
        except UpstreamGone as e:
            await _bad_gateway(scope, send, str(e))
            return False
        status = answer.status
        headers = [(n.lower(), v) for n, v in answer.headers if n.lower() not in HOP_BY_HOP]
        headers = self._rewrite_location(headers)
        bodiless = scope["method"] == "HEAD" or status in NO_BODY_STATUSES
        if bodiless:
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return answer.done and answer.keep_alive and not answer.body
        content_type = _header(headers, b"content-type").split(b";")[0].strip().lower()
        encoding = _header(headers, b"content-encoding").strip().lower()
        if (
            status == 200
            and content_type in HTML_TYPES
            and (not encoding or encoding == b"identity" or encoding in DECODERS)
        ):
            page = await self._whole_body(conn, answer)
            if page is not None:
                await self._send_page(page, headers, encoding, send)
                return answer.done and answer.keep_alive
            # Too large: what was read goes on as it is, and the rest streams after it.
        await send({"type": "http.response.start", "status": status, "headers": headers})
        while True:
            chunk = answer.take_body()
            if chunk:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            if answer.done:
                break
            try:
                more = await self._read(conn, answer, b"")
            except httptools.HttpParserError:
                more = False
            if not more:
                answer.keep_alive = False
                break
        await send({"type": "http.response.body", "body": b""})
        return answer.done and answer.keep_alive

    async def _whole_body(self, conn: _Connection, answer: _Response) -> bytes | None:
        size = sum(len(b) for b in answer.body)
        while not answer.done:
            if size > MAX_HTML:
                return None
            if not await self._read(conn, answer, b""):
                answer.keep_alive = False  # a body that ends with the connection
                break
            size = sum(len(b) for b in answer.body)
        return answer.take_body()

    async def _send_page(
        self, page: bytes, headers: list[tuple[bytes, bytes]], encoding: bytes, send: Send
    ) -> None:
        body = page
        try:
            if encoding in DECODERS:
                body = DECODERS[encoding]().decompress(page)
        except zlib.error:
            body = b""  # not what it claims to be: sent on untouched
        if body:
            body = inject(body, self.snippet())
            headers = _page_headers(headers, len(body))
        else:
            body = page
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

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
                max_size=None,
                open_timeout=10,
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
                    await upstream.close(message.get("code", 1000))
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
            code = upstream.close_code or 1000
            with contextlib.suppress(Exception):
                await send(
                    {
                        "type": "websocket.close",
                        "code": code if code not in (1005, 1006) else 1000,
                        "reason": upstream.close_reason or "",
                    }
                )

        tasks = [asyncio.ensure_future(to_upstream()), asyncio.ensure_future(to_browser())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.gather(*tasks, return_exceptions=True)
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


async def _bad_gateway(scope: Scope, send: Send, why: str) -> None:
    body = (
        f"annotate proxy: the dev server did not answer ({why}). Is it running? "
        "The page will work again once it is.\n"
    ).encode()
    message: Message = {
        "type": "http.response.start",
        "status": 502,
        "headers": [
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", str(len(body)).encode("ascii")),
            (b"cache-control", b"no-store"),
        ],
    }
    await send(message)
    await send({"type": "http.response.body", "body": body})

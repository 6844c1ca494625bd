"""A lean asyncio HTTP/1.1 client for load generators (benchmarks/team.py): keep-alive
connections to one server, JSON in and out, and httpx's two failures that a load generator tells
apart, nothing else.

httpx costs the team benchmark's client about 2 ms of CPU a request, a third of the run's own
CPU on this 2-core machine: CPU the servers under test then lack. This client does what the
benchmark needs for a tenth of that; the servers' answers and the times are the same requests'.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from typing import Any
from urllib.parse import urlsplit

__all__ = ["ConnectError", "Pool", "Response", "TransportError"]


class TransportError(Exception):
    """The request may have reached the server, and no answer came (as httpx's)."""


class ConnectError(TransportError):
    """No connection: nothing was sent."""


class Response:
    def __init__(self, status_code: int, content: bytes) -> None:
        self.status_code = status_code
        self.content = content

    def json(self) -> Any:
        return json.loads(self.content)


Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class Pool:
    """Keep-alive connections to `base_url` (`http://host:port`), as many as requests at once;
    one idle longer than `keepalive` seconds is closed rather than reused (keep it under the
    server's own idle limit: a request sent as the server closes its end gets no answer)."""

    def __init__(self, base_url: str, *, timeout: float, keepalive: float) -> None:
        url = urlsplit(base_url)
        self.host, self.port = url.hostname or "127.0.0.1", url.port or 80
        self.timeout = timeout
        self.keepalive = keepalive
        self._idle: deque[tuple[float, Connection]] = deque()
        self._head = f"Host: {self.host}:{self.port}\r\n"

    async def _connection(self) -> Connection:
        now = time.monotonic()
        while self._idle:
            since, conn = self._idle.pop()  # the most recently used first
            if now - since < self.keepalive:
                return conn
            conn[1].close()
        try:
            return await asyncio.wait_for(
                asyncio.open_connection(self.host, self.port), self.timeout
            )
        except (OSError, asyncio.TimeoutError) as e:
            raise ConnectError(str(e)) from None

    async def request(
        self, method: str, path: str, json_body: Any = None, headers: dict[str, str] | None = None
    ) -> Response:
        body = b"" if json_body is None else json.dumps(json_body).encode()
        head = f"{method} {path} HTTP/1.1\r\n{self._head}"
        head += "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        if json_body is not None:
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        reader, writer = await self._connection()
        try:
            writer.write(head.encode("latin-1") + b"\r\n" + body)
            status, content, keep = await asyncio.wait_for(_answer(reader), self.timeout)
        except (OSError, EOFError, ValueError, asyncio.TimeoutError, asyncio.IncompleteReadError):
            writer.close()
            raise TransportError(f"{method} {path}: no answer") from None
        if keep:
            self._idle.append((time.monotonic(), (reader, writer)))
        else:
            writer.close()
        return Response(status, content)

    async def aclose(self) -> None:
        while self._idle:
            self._idle.pop()[1][1].close()


async def _answer(reader: asyncio.StreamReader) -> tuple[int, bytes, bool]:
    """The status, the body and whether the connection stays open."""
    raw = await reader.readuntil(b"\r\n\r\n")
    lines = raw.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    fields = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            fields[name.strip().lower()] = value.strip()
    if "content-length" in fields:
        content = await reader.readexactly(int(fields["content-length"]))
    elif fields.get("transfer-encoding", "").lower() == "chunked":
        parts = []
        while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)
        await reader.readuntil(b"\r\n")  # the empty trailer
        content = b"".join(parts)
    else:
        content = b""  # 204, 304: no body
    return status, content, fields.get("connection", "").lower() != "close"

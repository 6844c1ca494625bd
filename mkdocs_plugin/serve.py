"""The review endpoint inside `mkdocs serve`: one WSGI app in front of the dev server's.

Requests under `/__annotate/` go to the Starlette app (through a2wsgi, on an event loop thread
of its own); every other request goes to MkDocs' own app, and its HTML answers get the overlay
injected at response time. Injecting there, not into the built files, keeps the token out of
`site_dir`, survives `--dirty` (pages not rebuilt still get the current token) and leaves
livereload's own injection alone (issue #6).

The dev server is the standard library's `wsgiref`, which a2wsgi leaves some gaps in (issue #17):
it refuses hop-by-hop headers such as `Connection: close`, it does not decode a chunked request
body (a2wsgi then reads it as empty), and an answer it could not finish sending (the browser left
a long-poll at a reload) would leave the app's task pending forever. `Endpoint` closes each gap.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from http import HTTPStatus
from io import BytesIO
from typing import Any, BinaryIO
from wsgiref.util import is_hop_by_hop

from a2wsgi import ASGIMiddleware
from starlette.applications import Starlette
from starlette.types import Receive, Scope, Send

from annotate.web.responses import BAD_JSON, FORBIDDEN_HOST, error_response
from annotate.web.security import (
    ANCHOR_BODY_LIMIT,
    ANCHOR_PATH,
    BODY_LIMIT,
    DRAIN_LIMIT,
    HostCheck,
)
from annotate.web.static import FRAME_HEADERS, inject

__all__ = ["PREFIX", "Endpoint", "ReviewApp", "quiet_access_log", "trusted_host"]

PREFIX = "/__annotate"
# The environ key under which a request's ASGI tasks are kept (a2wsgi passes the environ on in
# the scope as `wsgi_environ`).
TASKS = "annotate.tasks"
NOT_IMPLEMENTED = "not_implemented"
CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,16}")

Environ = dict[str, Any]
StartResponse = Callable[..., Callable[[bytes], object]]
WSGIApp = Callable[[Environ, StartResponse], Iterable[bytes]]


class Endpoint:
    """The Starlette app as a WSGI app, on an event loop this object starts and stops.

    a2wsgi sends no lifespan events, so what the app holds open (the change feed) is closed here.
    """

    def __init__(self, app: Starlette) -> None:
        self.app = app
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="annotate-endpoint", daemon=True
        )
        self.thread.start()
        # a2wsgi types the ASGI scope and the WSGI environ as closed TypedDicts; Starlette's scope
        # and wsgiref's environ are the open mappings the ASGI spec and PEP 3333 describe.
        self._wsgi: WSGIApp = ASGIMiddleware(self._tracked, loop=self.loop)  # type: ignore[arg-type, assignment]
        self._active = 0
        self._idle = threading.Condition()

    async def _tracked(self, scope: Scope, receive: Receive, send: Send) -> None:
        tasks = scope.get("wsgi_environ", {}).get(TASKS)
        if tasks is not None:
            tasks.append(asyncio.current_task())
        await self.app(scope, receive, send)

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        refused = _dechunk(environ)
        if refused is not None:
            return _error(start_response, *refused)
        tasks: list[asyncio.Task[Any]] = []
        environ[TASKS] = tasks

        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            # wsgiref asserts that an app sends no hop-by-hop header; it closes the connection
            # after each answer anyway, which is what `Connection: close` asked for.
            kept = [(k, v) for k, v in headers if not is_hop_by_hop(k)]
            return start_response(status, kept, exc_info)

        with self._idle:
            self._active += 1
        try:
            body = self._wsgi(environ, start)
        except BaseException:
            self._done(tasks)
            raise
        return _Closing(body, lambda: self._done(tasks))

    def _done(self, tasks: list[asyncio.Task[Any]]) -> None:
        # The answer was sent, or could not be (the client left): a task still waiting to send
        # would otherwise wait forever, and be reported as destroyed while pending at the next
        # garbage collection ("Task was destroyed but it is pending!", issue #14).
        if not self.loop.is_closed():
            for task in tasks:
                self.loop.call_soon_threadsafe(task.cancel)
        with self._idle:
            self._active -= 1
            self._idle.notify_all()

    def close(self, wait: float = 3.0) -> None:
        """End pending long-polls, let answers in flight finish (up to `wait` s), stop the loop."""
        self.app.state.feed.close()
        with self._idle:
            self._idle.wait_for(lambda: self._active == 0, timeout=wait)
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        if not self.thread.is_alive():
            self.loop.close()


class _Closing:
    """A WSGI body that calls `done` once when the server closes it (the answer is sent)."""

    def __init__(self, body: Iterable[bytes], done: Callable[[], None]) -> None:
        self.body = body
        self.done: Callable[[], None] | None = done

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.body)

    def close(self) -> None:
        try:
            close = getattr(self.body, "close", None)
            if close is not None:
                close()
        finally:
            done, self.done = self.done, None
            if done is not None:
                done()


def _dechunk(environ: Environ) -> tuple[int, str, str] | None:
    """Decode a chunked request body in place (wsgiref passes it on raw), giving the environ a
    `Content-Length`; or the refusal for a body that cannot be read.

    A body over its route's limit is cut at one byte past it, so the app answers 413 as it does
    for any other; the rest is read and dropped (up to DRAIN_LIMIT) so the client sees that
    answer rather than a reset connection.
    """
    coding = environ.get("HTTP_TRANSFER_ENCODING")
    if coding is None:
        return None
    if coding.strip().lower() != "chunked":
        return (501, NOT_IMPLEMENTED, f"Transfer-Encoding {coding!r} is not supported")
    limit = ANCHOR_BODY_LIMIT if environ.get("PATH_INFO") == ANCHOR_PATH else BODY_LIMIT
    try:
        body = _read_chunks(environ["wsgi.input"], limit + 1)
    except ValueError:
        return (400, BAD_JSON, "Request body is not valid chunked encoding")
    # Chunked wins over a Content-Length sent with it (RFC 9112 §6.3).
    del environ["HTTP_TRANSFER_ENCODING"]
    environ["CONTENT_LENGTH"] = str(len(body))
    environ["wsgi.input"] = BytesIO(body)
    return None


def _read_chunks(stream: BinaryIO, keep: int) -> bytes:
    """The first `keep` bytes of a chunked body, the rest read and dropped; ValueError when the
    encoding is broken before `keep` bytes came (after that, the body is too large whatever the
    rest holds)."""
    kept: list[bytes] = []
    size_kept = read = 0
    try:
        while True:
            line = stream.readline(1024)
            size_text = line.split(b";", 1)[0].strip()
            if not line.endswith(b"\n") or not CHUNK_SIZE.fullmatch(size_text):
                raise ValueError("chunk size")
            size = int(size_text, 16)
            if size == 0:
                while stream.readline(1024).strip():  # trailer fields
                    pass
                break
            read += size
            if read > keep + DRAIN_LIMIT:
                break  # past what is worth draining: the connection closes with the answer
            while size:
                data = stream.read(min(size, 65536))
                if not data:
                    raise ValueError("truncated chunk")
                size -= len(data)
                if size_kept < keep:
                    kept.append(data[: keep - size_kept])
                    size_kept += len(kept[-1])
            if stream.readline(3).strip():
                raise ValueError("chunk end")
    except ValueError:
        if size_kept < keep:
            raise
    return b"".join(kept)


def _error(start_response: StartResponse, status: int, code: str, message: str) -> Iterable[bytes]:
    """A JSON error answer `{error, code}`, as a WSGI app gives it."""
    response = error_response(status, code, message)
    start_response(f"{status} {HTTPStatus(status).phrase}", list(response.headers.items()))
    return [bytes(response.body)]


def _drain(body: Iterable[bytes]) -> bytes:
    """All of a WSGI answer's body, closing it as a server would (a file handle inside)."""
    try:
        return b"".join(body)
    finally:
        close = getattr(body, "close", None)
        if close is not None:
            close()


def _is_html(headers: list[tuple[str, str]]) -> bool:
    return any(
        k.lower() == "content-type" and v.lower().startswith("text/html") for k, v in headers
    )


def trusted_host(allowed_hosts: Iterable[str] = ()) -> Callable[[Environ], bool]:
    """Whether a request's `Host` is a loopback name or one the user chose (`-a HOST:PORT`).

    Any other name may be DNS rebinding: an attacker's name that resolves to this machine, whose
    page could then read ours, the token among them. Such a request gets 403, pages included, as
    on `annotate serve` (docs/security.md).
    """
    check = HostCheck(allowed_hosts)
    return lambda environ: check(environ.get("HTTP_HOST", ""))


def quiet_access_log(server: Any) -> None:
    """Log requests to `/__annotate/` at debug level only.

    MkDocs' dev server logs every answer that is not a 200 as a warning: each saved note (201)
    and each overlay file revalidated (304) would look like an error (issue #14). The app logs
    its own failures (annotate/web/security.py, `CatchAll`).
    """
    handler = getattr(server, "RequestHandlerClass", None)
    if handler is None or not hasattr(handler, "log_request"):
        return

    # The dev server's own handler class, known only at run time: mypy takes no variable as a base.
    class Handler(handler):  # type: ignore[misc,valid-type]
        def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
            path = getattr(self, "path", "")
            if path == PREFIX or path.startswith((PREFIX + "/", PREFIX + "?")):
                self.log_message('"%s" code %s', self.requestline, code)  # debug in MkDocs
                return
            super().log_request(code, size)

    server.RequestHandlerClass = Handler


class ReviewApp:
    """`site` (the dev server's app) with `api` mounted under `/__annotate/` and `snippet()`
    injected into its HTML answers to requests whose `Host` is `trusted`."""

    def __init__(
        self,
        site: WSGIApp,
        api: WSGIApp,
        snippet: Callable[[], str],
        trusted: Callable[[Environ], bool] | None = None,
    ) -> None:
        self.site = site
        self.api = api
        self.snippet = snippet
        self.trusted = trusted or trusted_host()

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == PREFIX or path.startswith(PREFIX + "/"):
            # Also skips the dev server's wait for a running rebuild: saving a note never blocks.
            return self.api(environ, start_response)
        if not self.trusted(environ):
            host = environ.get("HTTP_HOST", "")
            return _error(start_response, 403, FORBIDDEN_HOST, HostCheck.refusal(host))

        answer: list[Any] = []
        written: list[bytes] = []

        def capture(
            status: str, headers: list[tuple[str, str]], exc_info: Any = None
        ) -> Callable[[bytes], object]:
            answer[:] = [status, headers, exc_info]
            return written.append

        body = self.site(environ, capture)
        drained: bytes | None = None
        if not answer:
            # An app that calls start_response lazily, on the first chunk.
            drained = _drain(body)
        status, headers, exc_info = answer
        if not _is_html(headers) and drained is None and not written:
            start_response(status, headers, exc_info)
            return body  # streamed as the dev server would; the server closes it
        content = b"".join(written) + (drained if drained is not None else _drain(body))
        if not _is_html(headers):
            start_response(status, headers, exc_info)
            return [content]
        content = inject(content, self.snippet())
        replaced = ("content-length", "cache-control", "x-frame-options")
        headers = [(k, v) for k, v in headers if k.lower() not in replaced]
        # no-store: the page holds the token, and a rebuilt page must not come from a cache.
        headers += [("Content-Length", str(len(content))), ("Cache-Control", "no-store")]
        # Another Content-Security-Policy the site sends still applies: each one is enforced.
        headers += list(FRAME_HEADERS.items())
        start_response(status, headers, exc_info)
        return [content]

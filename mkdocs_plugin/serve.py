"""The review endpoint inside `mkdocs serve`: one WSGI app in front of the dev server's.

Requests under `/__annotate/` go to the Starlette app (through a2wsgi, on an event loop thread
of its own); every other request goes to MkDocs' own app, and its HTML answers get the overlay
injected at response time. Injecting there, not into the built files, keeps the token out of
`site_dir`, survives `--dirty` (pages not rebuilt still get the current token) and leaves
livereload's own injection alone (SPEC §6, issue #6).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from a2wsgi import ASGIMiddleware
from starlette.applications import Starlette

from annotate.web.security import host_name, is_loopback
from annotate.web.static import inject

__all__ = ["PREFIX", "Endpoint", "ReviewApp", "trusted_host"]

PREFIX = "/__annotate"

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
        self._wsgi = ASGIMiddleware(app, loop=self.loop)  # type: ignore[arg-type]
        self._active = 0
        self._idle = threading.Condition()

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        with self._idle:
            self._active += 1
        try:
            body = self._wsgi(environ, start_response)
        except BaseException:
            self._done()
            raise
        return _Closing(body, self._done)

    def _done(self) -> None:
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

    A page reached through any other name (DNS rebinding) is served without the overlay, so
    it never hands out the token (docs/security.md).
    """
    allowed = frozenset(h.lower() for h in allowed_hosts)

    def check(environ: Environ) -> bool:
        name = host_name(environ.get("HTTP_HOST", ""))
        return name is not None and (is_loopback(name) or name.strip("[]") in allowed)

    return check


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
            return self.site(environ, start_response)

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
        headers = [
            (k, v) for k, v in headers if k.lower() not in ("content-length", "cache-control")
        ]
        # no-store: the page holds the token, and a rebuilt page must not come from a cache.
        headers += [("Content-Length", str(len(content))), ("Cache-Control", "no-store")]
        start_response(status, headers, exc_info)
        return [content]

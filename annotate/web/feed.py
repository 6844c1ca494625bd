"""The long-poll behind `GET /__annotate/api/changes?since=N` (docs/http-api.md).

Writes come from other processes too (the MCP server, the CLI), so an in-process signal cannot be
enough: waiting requests look at the database every `interval`. They share one cheap query (the
newest change number, cached for half an interval), so ten open tabs cost what one does. On
PostgreSQL, a commit by any server also wakes them at once (`Store.subscribe`, LISTEN/NOTIFY in
annotate/pgdb.py): the notification only wakes, the change table answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable

import anyio
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from ..store import Store

__all__ = ["ChangeFeed"]

DEFAULT_TIMEOUT = 25.0  # below the usual 30 s proxy and browser idle limits
DEFAULT_INTERVAL = 0.15  # a write shows well within docs/overlay.md's "a second or two"


class ChangeFeed:
    def __init__(
        self, store: Store, *, timeout: float = DEFAULT_TIMEOUT, interval: float = DEFAULT_INTERVAL
    ) -> None:
        self.store = store
        self.timeout = timeout
        self.interval = interval
        self._lock = threading.Lock()
        self._latest = 0
        self._checked = float("-inf")
        self.closing = False
        self._waiters: set[Callable[[], None]] = set()
        self._unsubscribe: Callable[[], None] | None = None

    def close(self) -> None:
        """Answer every pending long-poll now (the server is shutting down)."""
        self.closing = True
        if self._unsubscribe is not None:
            self._unsubscribe()
        self._wake()

    def _wake(self) -> None:
        """Another server committed a change (called from the store's listening thread)."""
        with self._lock:
            self._checked = float("-inf")
            waiters = list(self._waiters)
        for wake in waiters:
            wake()

    def _subscribe(self) -> None:
        with self._lock:
            if self._unsubscribe is None and not self.closing:
                self._unsubscribe = self.store.subscribe(self._wake)

    def latest(self) -> int:
        """The number of the newest change, read at most once per half interval."""
        with self._lock:
            if time.monotonic() - self._checked < self.interval / 2:
                return self._latest
        latest = self.store.changes(0, limit=0)[1]
        with self._lock:
            self._latest, self._checked = latest, time.monotonic()
        return latest

    async def wait(self, cursor: int, timeout: float, request: Request | None = None) -> None:
        """Return once a change newer than `cursor` exists, after `timeout` seconds, when the
        client has gone, or when the server shuts down."""
        deadline = time.monotonic() + timeout
        self._subscribe()
        event = asyncio.Event()
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None  # not on asyncio (trio): polling alone

        def wake() -> None:
            if loop is not None:
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                    loop.call_soon_threadsafe(event.set)

        with self._lock:
            self._waiters.add(wake)
        try:
            while (left := deadline - time.monotonic()) > 0 and not self.closing:
                with anyio.move_on_after(min(self.interval, left)):
                    if loop is None:
                        await anyio.sleep(left)
                    else:
                        await event.wait()
                event.clear()
                if self.closing or await run_in_threadpool(self.latest) > cursor:
                    return
                if request is not None and await request.is_disconnected():
                    return
        finally:
            with self._lock:
                self._waiters.discard(wake)

"""One worker process of `annotate serve --workers N` (annotate/web/workers.py starts them):
`python -m annotate.web.worker FD PARENT_PID`, the settings in `ANNOTATE_WORKER`. Its own module so
that the supervisor, which `web/server.py` calls, imports nothing of the server back."""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import socket
import sys
from collections.abc import Callable
from typing import Any

from ..errors import StoreError
from .server import build_app, feed_server, uvicorn_options
from .workers import ENV, Spec, WorkerPid

__all__ = ["main", "run_worker"]


def _die_with(parent: int) -> None:
    """SIGTERM when the parent dies (Linux); if it is gone already, stop now."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        raise SystemExit(0)


def run_worker(fd: int, parent: int, spec: Spec, build: Callable[..., Any]) -> None:
    """One worker: its own store and app over the inherited socket, until SIGTERM."""
    import uvicorn

    from ..store import open as open_store

    _die_with(parent)
    sock = socket.socket(fileno=fd)
    store = open_store(spec.project, db=spec.db)
    store.keep_open()
    try:
        app = build(spec, store)
        config = uvicorn.Config(WorkerPid(app), **uvicorn_options(spec.read_only, spec.team))
        server = feed_server(config, app.state.feed)
        # As `annotate serve` does: what lives as long as the server is left out of full passes.
        gc.collect()
        gc.freeze()
        with contextlib.suppress(KeyboardInterrupt):
            server.run(sockets=[sock])
    finally:
        sock.close()
        store.close()


def main(argv: list[str]) -> None:
    fd, parent = int(argv[0]), int(argv[1])
    try:
        run_worker(fd, parent, Spec.from_json(os.environ[ENV]), build_app)
    except StoreError as e:
        raise SystemExit(f"Error: {e}") from None


if __name__ == "__main__":
    main(sys.argv[1:])

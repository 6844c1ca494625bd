"""Writers of one SQLite file queue in the kernel, across processes (issue #31).

SQLite lets one connection write at a time. One that finds the file locked by another process
retries from its busy handler, which sleeps between tries in growing steps (1, 2, 5, 10 … 100 ms):
it wakes long after a transaction of a millisecond or two ended, or misses a short gap between
two of the other process's transactions and sleeps again. Under `annotate serve --workers N` on
SQLite, that sleep was the p99 of a write. So every write transaction of this library first takes
an exclusive `flock` on a lock file beside the store (`<file>.lock`), then `BEGIN IMMEDIATE`:
a writer waits in the kernel, which wakes it when the holder lets go, and the write lock is free by
then. Threads of one process queue on their own lock before this one (backends/sqlite.py), so one
thread per process waits here at most.

The wait is bounded by the store's busy timeout, as SQLite's was: a writer still waiting then gets
`StoreBusyError` (a stopped process holding a transaction open cannot hang the others). `flock` has
no timeout, so a contended wait happens in a helper thread on a descriptor of its own; given up on,
that thread lets the lock go as soon as it gets it. Without `fcntl` (Windows), or where the lock
file cannot be opened (a read-only folder: no write would succeed there anyway), writers fall back
to SQLite's busy handler. A lock file deleted or replaced while in use (`git clean -fdX` under a
server) is noticed after locking, by comparing inodes, and the lock is taken again on the new file.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

try:
    import fcntl

    FLOCK = True
except ImportError:  # Windows: SQLite's busy handler alone
    FLOCK = False

__all__ = ["WriterQueue"]


class WriterQueue:
    """The cross-process queue of one store file's writers: `acquire()` then `release()`."""

    def __init__(self, database: Path) -> None:
        self.path = Path(f"{database}.lock")

    def _open(self) -> int | None:
        if not FLOCK:
            return None
        for flags in (os.O_RDWR | os.O_CREAT, os.O_RDONLY):  # flock needs no write access
            try:
                return os.open(self.path, flags, 0o600)
            except OSError:
                continue
        return None

    def acquire(self, timeout: float) -> int | None:
        """Wait up to `timeout` seconds to be the only writer; return the descriptor holding the
        lock (for `release`), or None when the queue is not available (SQLite's busy handler then
        decides, as before). Raises TimeoutError when the wait timed out."""
        for _ in range(3):  # a lock file replaced while we waited: once more on the new one
            fd = self._open()
            if fd is None:
                return None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if not _wait(fd, timeout):  # which closes it
                    raise TimeoutError(str(self.path)) from None
            except OSError:
                os.close(fd)
                return None
            if self._current(fd):
                return fd
            self.release(fd)
        return None

    def _current(self, fd: int) -> bool:
        """Whether `fd` is the file now at our path (not one deleted or replaced meanwhile)."""
        try:
            here, held = os.stat(self.path), os.fstat(fd)
        except OSError:
            return False
        return (here.st_dev, here.st_ino) == (held.st_dev, held.st_ino)

    @staticmethod
    def release(fd: int) -> None:
        """Let the next writer in. LOCK_UN before closing: a process forked meanwhile holds a copy
        of the descriptor, and closing ours alone would leave the lock held by that copy."""
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _wait(fd: int, timeout: float) -> bool:
    """Block on `fd`'s lock for up to `timeout` seconds, in a helper thread (flock cannot time
    out); True once held. Given up on, the helper releases the lock as soon as it gets it."""
    done = threading.Event()
    guard = threading.Lock()
    state = {"held": False, "abandoned": False}

    def block() -> None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            os.close(fd)
            done.set()
            return
        with guard:
            if state["abandoned"]:
                WriterQueue.release(fd)
                return
            state["held"] = True
            done.set()

    threading.Thread(target=block, name="annotate-writer-queue", daemon=True).start()
    done.wait(timeout)
    with guard:
        if not state["held"]:
            state["abandoned"] = True
        return state["held"]

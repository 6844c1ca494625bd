"""Re-locating many notes at once (issue #31): after a branch switch, in the background.

A read that finds more notes to locate again than a frame can afford (`INLINE_ROWS` notes or
`INLINE_FILES` files, a branch switch rather than an edit) does not locate them first: it marks
the anchored ones `pending` (`anchorState: "pending"`, their `source` the lines last known), answers
from what is stored, and starts this store's background re-locator. That pass locates every note
whose file changed, file after file, and writes each answer as any read would (with the change
feed's row when a reader sees a change), guarded as any read's: a note written meanwhile by a verb,
another read or another process is not overwritten. One pass runs at a time per store object; it is
idempotent, so several processes may run theirs.

Large plans run on `workers` processes (`plan_parallel`), the files split between them: locating
is CPU-bound, one GIL per process.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import logging
import multiprocessing
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from . import reconcile
from .lineversions import LineKey
from .models import Build

__all__ = ["INLINE_FILES", "INLINE_ROWS", "Relocator", "by_file", "inline", "plan_parallel"]

# A read locates at most this many notes, in at most this many changed files, before answering:
# an agent's edit of a few pages (a 200-note page is ~15 ms to parse and search); more is a branch
# switch, left to the background.
INLINE_ROWS = 1_000
INLINE_FILES = 8
# The background pass writes its answers this many files at a time: each write transaction is
# short, so verbs and other readers wait little for the write lock.
BATCH_FILES = 20
# Below this many notes a plan stays in this process: starting workers costs ~0.5 s.
PARALLEL_MIN_ROWS = 4_000

log = logging.getLogger(__name__)


def inline(rows: int, files: int) -> bool:
    """Whether a read locates these many notes in these many changed files before answering."""
    return rows <= INLINE_ROWS and files <= INLINE_FILES


def by_file(rows: Sequence[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """The rows grouped by the file they are located in (a note without one: by page)."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row["source_file"] or f"\0{row['page_url']}", []).append(row)
    return list(groups.values())


def _plan_chunk(
    project: Path,
    rows: list[dict[str, Any]],
    registered: dict[str, str | None],
    objects: dict[str, list[Any]],
    lines: dict[str, str],
    build: Build | None,
    force: bool,
) -> tuple[dict[str, dict[str, Any]], dict[LineKey, float], dict[str, tuple[LineKey, int]]]:
    """`reconcile.plan` in a worker process, the file versions it saw and its notes the edits
    did not touch (`Locator.unmoved`): the pages' records and the line hashes of the versions
    the rows keep come along as dicts."""
    locator = reconcile.Locator(
        project,
        registered=registered.get,
        page_objects=objects.get,
        lines_of=lambda keys: {k: lines[k] for k in keys if k in lines},
    )
    planned = reconcile.plan(rows, locator, force=force, build=build)
    return planned, locator.seen, locator.unmoved


def plan_parallel(
    rows: Sequence[Mapping[str, Any]],
    project: Path,
    pages: Mapping[str, tuple[str | None, str | None]],
    lines: Mapping[str, str],
    *,
    workers: int,
    build: Build | None = None,
    force: bool = False,
) -> tuple[dict[str, dict[str, Any]], dict[LineKey, float], dict[str, tuple[LineKey, int]]]:
    """`reconcile.plan` of `rows` on `workers` processes, each given whole files (`pages`: each
    page URL's registered file and generated objects, as the `pages` table holds them; `lines`:
    the line hashes of the file versions the rows keep), the file versions they saw and their
    notes the edits did not touch (`Locator.unmoved`)."""
    registered = {url: src for url, (src, _) in pages.items()}
    objects: dict[str, list[Any]] = {}
    for url, (_, generated) in pages.items():
        try:
            found = json.loads(generated) if generated else None
        except ValueError:
            found = None
        if found:
            objects[url] = found
    chunks: list[list[dict[str, Any]]] = [[] for _ in range(workers)]
    # Largest files first, each to the chunk with the fewest notes: the chunks end together.
    for group in sorted(by_file(rows), key=len, reverse=True):
        min(chunks, key=len).extend(dict(r) for r in group)
    # spawn, not fork: the server forking while another thread holds a lock would hang the child.
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(len(chunks), mp_context=context) as pool:
        futures = []
        for chunk in chunks:
            if chunk:
                kept = {k: lines[k] for k in {r["source_lines"] for r in chunk} if k in lines}
                args = (project, chunk, registered, objects, kept, build, force)
                futures.append(pool.submit(_plan_chunk, *args))
        planned: dict[str, dict[str, Any]] = {}
        seen: dict[LineKey, float] = {}
        unmoved: dict[str, tuple[LineKey, int]] = {}
        for future in futures:
            done, saw, still = future.result()
            planned.update(done)
            seen.update(saw)
            for was, (now, n) in still.items():  # a file's notes are all in one chunk
                unmoved[was] = (now, n + unmoved.get(was, (now, 0))[1])
    ordered = {row["id"]: planned[row["id"]] for row in rows if row["id"] in planned}
    return ordered, seen, unmoved


class Sources(Protocol):
    """What the re-locator asks of the store's sources (annotate/sources.py)."""

    def relocate_changed(self, batch_files: int, hold: Callable[[], None]) -> int: ...


class Relocator:
    """The background re-locator of one store object (module docstring)."""

    def __init__(self, sources: Sources) -> None:
        self._sources = sources
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._again = False
        self._gate: tuple[threading.Event, threading.Event] | None = None

    @property
    def running(self) -> bool:
        """Whether a background pass is under way."""
        with self._lock:
            return self._thread is not None

    def start(self) -> None:
        """Start the background pass, or have the running one look again when it is done."""
        with self._lock:
            if self._thread is not None:
                self._again = True
                return
            # A daemon: a short-lived process (the CLI) exits without waiting; what it left
            # pending is located by the next read or pass, in this process or another.
            self._thread = threading.Thread(
                target=self._run, name="annotate-relocator", daemon=True
            )
            self._thread.start()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the background pass to end; return whether none runs now."""
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return not self.running

    @contextlib.contextmanager
    def paused(self) -> Iterator[threading.Event]:
        """Hold the background pass before its next write until the block ends (a bulk change
        that would have it locate notes twice; the tests, to write between its read and write).
        Yields an event set once the pass waits there."""
        gate = (threading.Event(), threading.Event())
        self._gate = gate
        try:
            yield gate[0]
        finally:
            self._gate = None
            gate[1].set()

    def _hold(self) -> None:
        gate = self._gate
        if gate is not None:
            gate[0].set()
            gate[1].wait()

    def _run(self) -> None:
        try:
            while True:
                self._sources.relocate_changed(BATCH_FILES, self._hold)
                with self._lock:
                    if not self._again:
                        self._thread = None
                        return
                    self._again = False
        except Exception:  # a closed store, a lost connection: the next read starts again
            log.debug("background re-location stopped", exc_info=True)
            with self._lock:
                self._thread = None

"""Writers of one SQLite file queue across processes (annotate/backends/writers.py, issue #31).

Another process writes in long transactions with short gaps between them, as a worker of
`annotate serve --workers 2` does under load. SQLite's busy handler, sleeping between tries, kept
missing those gaps: a writer of this process ran out of its busy timeout ("database is locked",
`StoreBusyError`). Queued in the kernel, it is woken when the other lets go and gets its turn.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import annotate
from annotate.backends.writers import WriterQueue

from .conftest import text_note, write_project

# The other process: write transactions of HOLD_S each, GAP_S apart, until told to stop.
HOLD_S, GAP_S = 0.05, 0.002
OTHER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from annotate.backends.sqlite import SqliteBackend

    db, stop = SqliteBackend(sys.argv[1]), Path(sys.argv[2])
    print("ready", flush=True)
    while not stop.exists():
        with db.transaction(write=True) as conn:
            conn.execute("UPDATE schema_version SET applied_at = applied_at")
            time.sleep(float(sys.argv[3]))
        time.sleep(float(sys.argv[4]))
    """
)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[annotate.Store]:
    project = write_project(tmp_path, "# Install\n\nRun pip install mkdocs-annotate in a shell.\n")
    with annotate.open(project) as opened:
        yield opened


def _other_writer(db: Path, stop: Path, hold: float, gap: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", OTHER, str(db), str(stop), str(hold), str(gap)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    return proc


def _stop(proc: subprocess.Popen[str], stop: Path) -> int:
    stop.touch()
    try:
        return proc.wait(10)
    finally:
        assert proc.stdout is not None
        proc.stdout.close()


def test_a_writer_gets_its_turn_between_another_processs_transactions(
    store: annotate.Store, tmp_path: Path
) -> None:
    assert store.path is not None
    stop = tmp_path / "stop"
    other = _other_writer(store.path, stop, HOLD_S, GAP_S)
    # A busy timeout of ten of the other's transactions: enough to wait for one, never enough
    # for a sleeping busy handler to land in a 2 ms gap every time.
    waiting = annotate.Store(store.path, project_dir=tmp_path, busy_timeout=10 * HOLD_S)
    try:
        ids = [waiting.add_annotation(text_note(note=f"Note {n}")).id for n in range(50)]
    finally:
        waiting.close()
        assert _stop(other, stop) == 0
    assert [a.id for a in store.list_annotations(page_url="/guide/install/")] == ids


def test_a_writer_waits_no_longer_than_the_busy_timeout(
    store: annotate.Store, tmp_path: Path
) -> None:
    """A process that holds its transaction open (stopped, or slow) makes the others' writes fail
    with StoreBusyError after their busy timeout, as SQLite's handler did, and nothing is written."""
    assert store.path is not None
    stop = tmp_path / "stop"
    other = _other_writer(store.path, stop, 3.0, 0.0)
    waiting = annotate.Store(store.path, project_dir=tmp_path, busy_timeout=0.3)
    try:
        time.sleep(0.2)  # the other's first transaction is under way
        with pytest.raises(annotate.StoreBusyError, match="is busy"):
            waiting.add_annotation(text_note())
    finally:
        assert _stop(other, stop) == 0
    assert store.list_annotations() == []
    # The lock the helper thread was still waiting for is let go: the next write goes through.
    assert waiting.add_annotation(text_note()).id
    waiting.close()


def test_a_lock_file_deleted_while_in_use_is_made_again(store: annotate.Store) -> None:
    assert store.path is not None
    lock = Path(f"{store.path}.lock")
    store.add_annotation(text_note())
    assert lock.exists()
    lock.unlink()
    held = WriterQueue(store.path).acquire(1.0)
    assert held is not None
    # Locked on the file now at the path, which every other writer opens.
    assert os.fstat(held).st_ino == lock.stat().st_ino
    WriterQueue.release(held)
    assert len(store.list_annotations()) == 1
    store.add_annotation(text_note(note="After."))
    assert len(store.list_annotations()) == 2

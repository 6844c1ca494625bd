"""Crash safety: a writer killed with SIGKILL at random points loses nothing it reported (issue #2).

The writer prints each id only after the library call returned, so a printed id is a write the caller
was told had succeeded; after every kill the file must open, pass `PRAGMA integrity_check`, and hold
every printed write. At most the one call in flight at the kill may have committed unprinted.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import annotate

ROUNDS = 20
SEED = 20240602
MAX_DELAY_S = 0.4
START_TIMEOUT_S = 20.0

# Each cycle walks one new annotation through the lifecycle. The note is near its 10,000-character
# limit so every write spans several pages and the WAL reaches its auto-checkpoint within a round:
# kills then also land in the middle of a checkpoint, not only of a commit.
WRITER = """
import sys
import annotate

store = annotate.Store(sys.argv[1])
print("ready", flush=True)
n = 0
while True:
    a = store.add_annotation({
        "pageUrl": f"/guide/page-{n % 50}/",
        "note": f"note {n} " + "x" * 9000,
        "selectedText": f"quote {n}",
    })
    print("s", a.id, a.status, flush=True)
    item = store.add_agent_reply(a.id, f"reply {n}")
    print("r", a.id, item.replies[-1].id, flush=True)
    for change in (store.set_in_progress, store.address_annotation, store.accept):
        item = change(a.id)
        print("s", a.id, item.status, flush=True)
    n += 1
"""
NEXT = {"open": "in_progress", "in_progress": "addressed", "addressed": "resolved"}


def run_and_kill(db: Path, log: Path, delay: float) -> list[str]:
    """Start the writer, let it write for `delay` seconds after it opened the store, SIGKILL it."""
    with log.open("w") as out:
        # stdout goes to a file, not a pipe: a full pipe would block the writer, and the kernel
        # keeps every line it flushed even though the process dies.
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(db)], stdout=out, stderr=subprocess.PIPE
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not log.read_text().startswith("ready\n"):
            assert proc.poll() is None, proc.communicate()[1].decode()
            assert time.monotonic() < deadline, "the writer did not start"
            time.sleep(0.005)
        time.sleep(delay)
    finally:
        proc.send_signal(signal.SIGKILL)
        _, err = proc.communicate()
    # It must have died of the kill, not of an error of its own.
    assert proc.returncode == -signal.SIGKILL, err.decode()
    text = log.read_text()
    return text[: text.rfind("\n") + 1].splitlines()[1:]  # whole lines after "ready"


def test_sigkill_loses_no_reported_write(tmp_path: Path) -> None:
    # One database across all rounds: each round starts on a file left by a killed writer (hot WAL,
    # stale -shm), and checking the earlier rounds' rows proves recovery never drops older commits.
    db = tmp_path / "annotations.db"
    rng = random.Random(SEED)
    before: dict[str, str] = {}  # status of every annotation at the end of the previous round
    before_replies: set[str] = set()
    reported_total = 0

    for round in range(ROUNDS):
        lines = run_and_kill(db, tmp_path / f"writer{round}.log", rng.uniform(0, MAX_DELAY_S))
        reported: dict[str, str] = {}  # id -> last status the writer reported
        reported_replies: set[str] = set()
        for line in lines:
            kind, id, value = line.split()
            if kind == "s":
                reported[id] = value
            else:
                reported_replies.add(value)
        reported_total += len(lines)

        with annotate.Store(db) as store:
            assert store.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            items = {a.id: a for a in store.list_annotations(include_resolved=True)}
            replies = {r.id for a in items.values() for r in a.replies}
        where = f"round {round}"

        # Earlier rounds' writes are all still there, unchanged.
        assert all(items[id].status == status for id, status in before.items()), where
        assert before_replies <= replies, where
        # Every write reported this round is there ...
        assert set(reported) <= set(items), where
        assert reported_replies <= replies, where
        # ... and beyond them at most the one call the kill interrupted after its commit.
        unreported = len(replies - before_replies - reported_replies)
        for id, a in items.items():
            if id in before:
                continue
            if id not in reported:
                assert a.status == "open", where
                unreported += 1
            elif a.status != reported[id]:
                assert a.status == NEXT[reported[id]], where
                unreported += 1
        assert unreported <= 1, where

        before = {id: a.status for id, a in items.items()}
        before_replies = replies

    assert reported_total > ROUNDS * 10  # the kills landed among writes, not before them

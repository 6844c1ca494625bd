"""Writers of one SQLite file in several processes (issue #31): how long a write waits to begin.

    .venv/bin/python benchmarks/writers.py [--processes 2] [--writes 400] [--hold-ms 1.0]
                                           [--gap-ms 2.0]

`--processes` processes (as the workers of `annotate serve --workers N`) each run `--writes` write
transactions through the store's own `transaction(write=True)`: an UPDATE, then `--hold-ms` of
CPU inside the transaction (what a note's write holds the lock for), then a pause outside it of
0 to 2 x `--gap-ms` (the rest of a request). Each write's wait (from asking for the transaction
to being in it) is recorded. Two rows in the same run: the writers queued on the store's lock
file (annotate/backends/writers.py), and the same with the queue turned off in every process
(SQLite's busy handler alone, as before issue #31), the baseline. Run with an interpreter whose
`annotate` has no queue, only the baseline row is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import p
from _machine import describe

import annotate


def child(
    db: str, start: str, writes: int, hold: float, gap: float, queued: bool, seed: int
) -> None:
    from annotate.backends.sqlite import SqliteBackend

    if not queued:
        try:
            from annotate.backends.writers import WriterQueue
        except ImportError:
            pass
        else:
            WriterQueue.acquire = lambda self, timeout: None  # type: ignore[method-assign]
    backend = SqliteBackend(db)
    rng = random.Random(seed)
    backend.conn.execute("SELECT 1")
    while not os.path.exists(start):
        time.sleep(0.001)
    waits, failed = [], 0
    for _ in range(writes):
        asked = time.perf_counter()
        try:
            with backend.transaction(write=True) as conn:
                waits.append((time.perf_counter() - asked) * 1000)
                conn.execute("UPDATE schema_version SET applied_at = applied_at")
                until = time.perf_counter() + hold / 1000
                while time.perf_counter() < until:
                    pass
        except annotate.StoreBusyError:
            failed += 1
        time.sleep(rng.uniform(0, 2 * gap) / 1000)
    print(json.dumps({"waits": waits, "failed": failed}))


def measure(args: argparse.Namespace, queued: bool) -> tuple[list[float], int, float]:
    with tempfile.TemporaryDirectory(prefix="annotate-writers-") as tmp:
        annotate.open(Path(tmp)).close()
        db = str(Path(tmp) / ".annotate" / "annotations.db")
        start = str(Path(tmp) / "start")
        procs = [
            subprocess.Popen(
                [
                    *(sys.executable, __file__, "--child", db, start),
                    *(str(args.writes), str(args.hold_ms), str(args.gap_ms), str(int(queued))),
                    str(n),
                ],
                stdout=subprocess.PIPE,
                text=True,
            )
            for n in range(args.processes)
        ]
        time.sleep(1.0)  # every child has its connection
        began = time.perf_counter()
        Path(start).touch()
        outs = [json.loads(proc.communicate()[0]) for proc in procs]
        seconds = time.perf_counter() - began
    waits = [w for out in outs for w in out["waits"]]
    return waits, sum(out["failed"] for out in outs), seconds


def has_queue() -> bool:
    try:
        import annotate.backends.writers  # noqa: F401
    except ImportError:
        return False
    return True


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        db, start, writes, hold, gap, queued, seed = sys.argv[2:9]
        child(db, start, int(writes), float(hold), float(gap), queued == "1", int(seed))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--writes", type=int, default=400)
    parser.add_argument("--hold-ms", type=float, default=1.0)
    parser.add_argument("--gap-ms", type=float, default=2.0)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    rows = [("SQLite's busy handler alone (baseline)", *measure(args, queued=False))]
    if has_queue():
        rows.append(("queued on the lock file", *measure(args, queued=True)))
    print(describe())
    print()
    print(
        f"{args.processes} processes x {args.writes} writes, {args.hold_ms:g} ms held, "
        f"0-{2 * args.gap_ms:g} ms between; load average {load:.1f} before, "
        f"{os.getloadavg()[0]:.1f} after."
    )
    print()
    print("| writers | writes | wait p50 ms | p99 ms | max ms | p99 / baseline | busy errors | s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    base = p(rows[0][1], 99)
    for label, waits, failed, seconds in rows:
        print(
            f"| {label} | {len(waits)} | {p(waits, 50):.2f} | {p(waits, 99):.2f} | "
            f"{max(waits):.2f} | {p(waits, 99) / base:.2f} | {failed} | {seconds:.1f} |"
        )


if __name__ == "__main__":
    main()

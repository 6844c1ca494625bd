"""Re-location at scale (issue #31): a page listed right after an edit, and a branch switch.

    .venv/bin/python benchmarks/relocate.py [--size 100000] [--db postgresql://…] [--runs 30]

The store of `benchmarks/store.py` (the same pages, notes and prefill; a 200-note busy page). Rows:

- "list after an edit": `list_annotations(page_url=busy)` right after one paragraph of the busy
  page was rewritten (its first base paragraph: no note quotes it), `--runs` times;
- "reconcile, branch switch": every page gets a paragraph above its notes (another branch's
  Markdown), then `Store.reconcile()` locates every note again (`--workers`: its processes);
- after another switch, the first listing of the busy page, the first listing of every
  unresolved note (the web API's JSON), and the time until every note is located again (the
  background pass's end; the listing's own time when a version locates everything first).

Prints medians (p50, p99 for the repeated row) and the load average before and after; with
`--db URL` the store is on PostgreSQL (a fresh schema, dropped afterwards). Run it with the
`python` of the tree to measure: the before tree's against this file gives the baseline.
"""

from __future__ import annotations

import argparse
import os
import random
import secrets
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import store as bench
from _common import p
from _machine import describe


def run(size: int, runs: int, workers: int, db: str | None) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="annotate-relocate-") as folder:
        rng = random.Random(bench.SEED + size)
        store, data = bench.prefill(Path(folder) / "site", size, rng, db)
        pages: list[bench.Page] = data["pages"]
        busy = pages[0].url
        path = store.project_dir / pages[0].path
        text = "\n".join(pages[0].lines) + "\n"
        store.list_annotations(page_url=busy)
        # Saved once unchanged, as `benchmarks/store.py` does before its edits: located in it.
        os.utime(path, (time.time() + 1, time.time() + 1))
        store.list_annotations(page_url=busy)
        times = []
        for k in range(1, runs + 1):
            path.write_text(text.replace(pages[0].lines[2], f"{pages[0].lines[2]} edit{k}", 1))
            os.utime(path, (time.time() + 10 + k, time.time() + 10 + k))
            t = time.perf_counter()
            store.list_annotations(page_url=busy)
            times.append((time.perf_counter() - t) * 1e3)
        out["list after an edit"] = times

        def switch(bump: float) -> None:
            for page in pages:
                file = store.project_dir / page.path
                lines = file.read_text().split("\n")
                file.write_text("\n".join([*lines[:1], "", bench.words(rng, 25, 60), *lines[1:]]))
                os.utime(file, (time.time() + bump, time.time() + bump))

        switch(100_000)
        kwargs: dict[str, Any] = {"workers": workers} if workers > 1 else {}
        t = time.perf_counter()
        moved = store.reconcile(**kwargs)
        out["reconcile, branch switch"] = [(time.perf_counter() - t) * 1e3]
        out["notes re-located"] = [float(moved)]
        switch(200_000)
        t = time.perf_counter()
        store.list_annotations(page_url=busy)
        out["first page listing after it"] = [(time.perf_counter() - t) * 1e3]
        t = time.perf_counter()
        store.list_annotations(as_json=True)
        first = (time.perf_counter() - t) * 1e3
        out["first listing of all after it"] = [first]
        t = time.perf_counter()
        relocator = getattr(store.sources, "relocator", None)
        if relocator is not None:
            relocator.wait()
        out["all located again after it"] = [first + (time.perf_counter() - t) * 1e3]
        states = store.summary().anchor_states
        out["anchored after it"] = [float(states.get("anchored", 0))]
        store.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--db", metavar="URL", help="a PostgreSQL database (a fresh schema in it)")
    args = parser.parse_args(argv)
    print(describe())
    print(f"load before: {os.getloadavg()[0]:.2f}")
    db = None
    if args.db:
        import psycopg

        schema = f"reloc_{secrets.token_hex(4)}"
        with psycopg.connect(args.db, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        joiner = "&" if "?" in args.db else "?"
        db = f"{args.db}{joiner}options=-csearch_path%3D{schema}"
    try:
        out = run(args.size, args.runs, args.workers, db)
    finally:
        if args.db:
            with psycopg.connect(args.db, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    print(f"load after: {os.getloadavg()[0]:.2f}")
    backend = "PostgreSQL" if args.db else "SQLite"
    print(f"{backend}, {args.size:,} notes, workers {args.workers}")
    for name, times in out.items():
        if len(times) > 1:
            print(f"  {name:<32} p50 {p(times, 50):9.2f} ms  p99 {p(times, 99):9.2f} ms")
        elif "notes" in name or "anchored" in name:
            print(f"  {name:<32} {times[0]:12,.0f}")
        else:
            print(f"  {name:<32} {times[0]:12.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""benchmarks/store.py's verbs on SQLite and on PostgreSQL in one run, p50 and p99 side by side,
with each backend's prefill and how many notes the branch switch moved (issue #31).

    .venv/bin/python benchmarks/store_backends.py [--sizes 1000,10000,100000] [--db URL]

Without `--db`, a throwaway PostgreSQL with fsync on (tests/pgcluster.py, as benchmarks/team.py
starts it) is started and stopped; the SQLite file runs as the store opens it (WAL,
synchronous=NORMAL). The prefill and the verbs are benchmarks/store.py's, imported from the
folder of this script, so the same file measures an older tree when run with its Python
(`/work/wt/before/.venv/bin/python benchmarks/store_backends.py`: the library is the one that
Python imports). Prints the machine, its load before and after, and the library's path.
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.append(str(HERE.parent))  # tests.pgcluster, after the library the Python imports

import psycopg  # noqa: E402
from _common import p  # noqa: E402
from _machine import describe  # noqa: E402
from store import LABELS, SEED, measure_verbs, prefill  # noqa: E402

import annotate  # noqa: E402


def load() -> str:
    return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def run_backend(folder: Path, n: int, db: str | None) -> dict[str, Any]:
    rng = random.Random(SEED + n)
    t = time.perf_counter()
    store, data = prefill(folder, n, rng, db)
    prefilled = time.perf_counter() - t
    times = measure_verbs(store, data, rng)[0]
    store.close()
    return {"times": times, "insert_s": data["insert_s"], "reconcile_s": data["reconcile_s"],
            "relocated": data["relocated"], "moved": data["moved"], "prefill_s": prefilled}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="default %(default)s")
    parser.add_argument("--db", metavar="URL", help="a PostgreSQL database (default: throwaway)")
    args = parser.parse_args(argv)
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    print(describe())
    print(f"library: {Path(annotate.__file__).parent}; {load()}")
    cluster = None
    url = args.db
    if url is None:
        from tests.pgcluster import PgCluster

        cluster = PgCluster(durable=True)
        url = cluster.url
    schema = f"bench_{secrets.token_hex(4)}"
    joiner = "&" if "?" in url else "?"
    head = (f"{'size':>8}  {'operation':<30} {'SQLite p50':>10} {'p99':>8} {'PG p50':>9} "
            f"{'p99':>8} {'PG/SQLite':>9}")  # fmt: skip
    lines = [head, "-" * len(head)]
    try:
        with tempfile.TemporaryDirectory(prefix="annotate-bench-") as folder:
            for n in sizes:
                got = {}
                for name in ("sqlite", "postgresql"):
                    db = None
                    if name == "postgresql":
                        with psycopg.connect(url, autocommit=True) as conn:
                            conn.execute(f"CREATE SCHEMA {schema}_{n}")
                        db = f"{url}{joiner}options=-csearch_path%3D{schema}_{n}"
                    print(f"… {n:,} annotations on {name} ({load()})", file=sys.stderr, flush=True)
                    got[name] = run_backend(Path(folder) / f"{name}-{n}", n, db)
                for op, times in got["sqlite"]["times"].items():
                    pg = got["postgresql"]["times"][op]
                    lines.append(
                        f"{n:>8,}  {LABELS[op]:<30} {p(times, 50):>10.3f} {p(times, 99):>8.2f} "
                        f"{p(pg, 50):>9.3f} {p(pg, 99):>8.2f} {p(pg, 50) / p(times, 50):>9.2f}"
                    )
                for name, r in got.items():
                    lines.append(
                        f"{'':>10}{name}: prefill {r['prefill_s']:.1f} s (insert_raw "
                        f"{r['insert_s']:.1f} s, reconcile {r['reconcile_s']:.1f} s locating "
                        f"{r['relocated']:,}); branch switch moved {r['moved']:,}"
                    )
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            for n in sizes:
                conn.execute(f"DROP SCHEMA IF EXISTS {schema}_{n} CASCADE")
        if cluster is not None:
            cluster.stop()
    print("\n".join(lines))
    print(load())
    return 0


if __name__ == "__main__":
    sys.exit(main())

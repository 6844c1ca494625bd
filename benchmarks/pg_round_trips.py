"""Round trips to PostgreSQL per verb of benchmarks/store.py (issue #31): what each verb waits
for the server, and how many statements it sends.

    .venv/bin/python benchmarks/pg_round_trips.py [--size 1000] [--db URL]

Without `--db`, a throwaway PostgreSQL (tests/pgcluster.py) is started and stopped. A round trip is
a statement sent on its own or a pipeline's end (its sync), as tests/test_pg_batch.py counts them;
the prefill is benchmarks/store.py's. Counts, not times: the same on any machine.
"""

from __future__ import annotations

import argparse
import os
import random
import secrets
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.append(str(HERE.parent))  # tests.pgcluster, after the library the Python imports

import psycopg  # noqa: E402
from psycopg import Cursor, Pipeline  # noqa: E402
from store import SEED, new_annotation, prefill, words  # noqa: E402

from annotate.export import render  # noqa: E402


@contextmanager
def counting() -> Iterator[list[str]]:
    """Every wait for the server while inside: a statement alone, or a pipeline's sync."""
    waits: list[str] = []
    execute, executemany, leave = Cursor.execute, Cursor.executemany, Pipeline.__exit__

    def sent(self: Cursor[Any], query: Any, *args: Any, **kwargs: Any) -> Any:
        waits.append(str(query) if not self.connection._pipeline else "queued")
        return execute(self, query, *args, **kwargs)

    def sent_many(self: Cursor[Any], query: Any, *args: Any, **kwargs: Any) -> Any:
        waits.append(str(query) if not self.connection._pipeline else "queued")
        return executemany(self, query, *args, **kwargs)

    def synced(self: Pipeline, *args: Any) -> None:
        if self.level == 1:
            waits.append("sync")
        leave(self, *args)

    Cursor.execute, Cursor.executemany, Pipeline.__exit__ = sent, sent_many, synced  # type: ignore[method-assign]
    try:
        yield waits
    finally:
        Cursor.execute, Cursor.executemany, Pipeline.__exit__ = execute, executemany, leave  # type: ignore[method-assign]


def trips(
    call: Callable[[], object], before: Callable[[], object] | None = None
) -> tuple[int, int]:
    """(round trips, statements) of one call, after a warm-up call."""
    if before is not None:
        before()
    call()
    if before is not None:
        before()
    with counting() as waits:
        call()
    return sum(w != "queued" for w in waits), sum(w != "sync" for w in waits)


def run(url: str, size: int) -> list[tuple[str, int, int]]:
    schema = f"trips_{secrets.token_hex(4)}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    joiner = "&" if "?" in url else "?"
    rng = random.Random(SEED + size)
    out: list[tuple[str, int, int]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="annotate-trips-") as folder:
            db = f"{url}{joiner}options=-csearch_path%3D{schema}"
            with counting() as waits:
                t = time.perf_counter()
                store, data = prefill(Path(folder) / "site", size, rng, db)
                print(f"prefill of {size:,}: {time.perf_counter() - t:.1f} s", file=sys.stderr)
            out.append(("prefill (insert_raw + reconcile)", sum(w != "queued" for w in waits),
                        sum(w != "sync" for w in waits)))  # fmt: skip
            pages = data["pages"]
            others = pages[1:]
            busy = pages[0].url
            ids = [a["id"] for a in data["annotations"]]
            out.append(
                ("create", *trips(lambda: store.add_annotation(new_annotation(rng, others))))
            )
            opened = [others[0]]
            out.append(("create, page prepared", *trips(
                lambda: store.add_annotation(new_annotation(rng, opened)),
                lambda: store.prepare_page(opened[0].url),
            )))  # fmt: skip
            out.append(("prepare_page (anchor route)", *trips(
                lambda: store.prepare_page(opened[0].url))))  # fmt: skip
            out.append(("get", *trips(lambda: store.get_annotation(rng.choice(ids)))))
            out.append(("list one page", *trips(lambda: store.list_annotations(page_url=busy))))
            out.append(("list one page, as JSON", *trips(
                lambda: store.list_annotations(page_url=busy, as_json=True))))  # fmt: skip
            saves = iter(range(1, 10**6))

            def save() -> None:
                at = time.time() + next(saves)
                os.utime(store.project_dir / pages[0].path, (at, at))

            out.append(("list, page just saved", *trips(
                lambda: store.list_annotations(page_url=busy), save)))  # fmt: skip
            out.append(("reply", *trips(lambda: store.add_agent_reply(rng.choice(ids), "ok"))))
            out.append(("export markdown", *trips(lambda: render(store, "markdown"))))
            out.append(("changes (feed)", *trips(lambda: store.changes(1))))

            def switch() -> None:
                for page in pages:
                    file = store.project_dir / page.path
                    lines = file.read_text().split("\n")
                    file.write_text("\n".join([*lines[:1], "", words(rng, 25, 60), *lines[1:]]))
                    at = time.time() + 2_000_000 + next(saves)
                    os.utime(file, (at, at))

            out.append(("reconcile, branch switch", *trips(store.reconcile, switch)))
            store.close()
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1000, help="notes in the store (%(default)s)")
    parser.add_argument(
        "--db", metavar="URL", help="a PostgreSQL database (default: a throwaway one)"
    )
    args = parser.parse_args(argv)
    cluster = None
    if args.db is None:
        from tests.pgcluster import PgCluster

        cluster = PgCluster()
    try:
        rows = run(args.db or cluster.url, args.size)  # type: ignore[union-attr]
    finally:
        if cluster is not None:
            cluster.stop()
    print(
        f"{'verb (' + format(args.size, ',') + ' notes)':<36} {'round trips':>11} {'statements':>10}"
    )
    for name, n, s in rows:
        print(f"{name:<36} {n:>11,} {s:>10,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

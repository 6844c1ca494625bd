"""The team benchmark's harness (benchmarks/team.py) for a few seconds with a few people: two
`annotate serve --team` instances on one PostgreSQL, one killed halfway, and every acknowledged
write found in the database afterwards. Counts only: the timings are the benchmark's to print."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "team.py"


def load_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("team_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_two_instances_one_killed_lose_no_acknowledged_write(tmp_path: Path, pg_url: str) -> None:
    bench = load_bench()
    pages = bench.make_project(tmp_path, pages=3)
    reviewers, agents = bench.add_tokens(tmp_path, pg_url, 4, 2)
    a, b = bench.start(tmp_path, pg_url, 2)
    try:
        load = bench.run_load(
            [a.base, b.base], pages, reviewers, agents,
            seconds=3, think=0.05, kill_at=1.0, kill=a.kill,
        )  # fmt: skip
    finally:
        a.stop()
        b.stop()
    assert a.proc.returncode == -9
    check = bench.verify(tmp_path, pg_url, load)
    assert check.lost == []
    assert check.acked == sum(len(v) for v in load.acked.values()) > 0
    assert load.acked["create"]
    # The people of the killed instance went on against the other one.
    assert load.failovers >= 1
    assert not [e for e in load.errors if "no answer" not in e], load.errors
    # Every write the clients sent got an answer or is counted unanswered, never both.
    for kind in bench.WRITES:
        assert not load.acked[kind] & load.unanswered[kind]


def test_the_burst_sends_one_request_per_person_at_once_and_loses_none(
    tmp_path: Path, pg_url: str
) -> None:
    bench = load_bench()
    pages = bench.make_project(tmp_path, pages=3)
    reviewers, agents = bench.add_tokens(tmp_path, pg_url, 5, 2)
    [server] = bench.start(tmp_path, pg_url, 1)
    burst = bench.Load()
    try:
        load = bench.run_load(
            [server.base], pages, reviewers, agents,
            seconds=1.5, think=0.05, burst=burst, server_cpu=server.cpu_seconds,
        )  # fmt: skip
    finally:
        server.stop()
    # One request per person: the reviewers' notes, the agents' lists.
    assert len(burst.times["create"]) == 5
    assert len(burst.times["agent list"]) == 2
    assert burst.seconds >= max(t for v in burst.times.values() for t in v)
    assert not burst.errors and not load.errors
    # The steady load's figures are its own: the burst's requests are not in them.
    assert load.requests > 0 and load.server_cpu > 0 and load.machine_cpu > 0
    assert not set(burst.acked["create"]) & set(load.acked["create"])
    check = bench.verify(tmp_path, pg_url, load, burst)
    assert check.lost == []
    assert check.acked == len(burst.acked["create"]) + sum(len(v) for v in load.acked.values())

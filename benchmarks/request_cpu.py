"""The server's CPU per request of each team action (issue #31), in-process, on both backends:
what a worker spends on one request, apart from any queue, client or machine load.

    .venv/bin/python benchmarks/request_cpu.py [--rounds 300] [--notes 40] [--db sqlite,pg]

The app `annotate serve --team` runs (`compose.team_app`) is called as ASGI directly (no HTTP
client, no uvicorn: both cost the same before and after any change to the app), with each
person's bearer token, on benchmarks/team.py's project. Each page first gets `--notes` notes;
then `--rounds` rounds of benchmarks/team.py's eight actions, one request at a time. The table
gives, per action, the median and mean CPU of this process (all its threads: the event loop and
the thread pool) per request, on PostgreSQL also the CPU of the cluster's backends per request
and the round trips per request (a statement sent alone or a pipeline's sync, counted as
benchmarks/pg_round_trips.py counts them, in a separate pass).

Run it with another checkout's interpreter (`/path/to/before/.venv/bin/python
benchmarks/request_cpu.py`) to measure that checkout's library: nothing here imports the library
from beside this file.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# benchmarks/mcp.py must not stand for the mcp SDK the library imports.
while str(HERE) in sys.path:
    sys.path.remove(str(HERE))

import annotate  # noqa: E402
from annotate.compose import team_app  # noqa: E402
from annotate.web.signin import Settings  # noqa: E402

sys.path.append(str(HERE))
sys.path.append(str(HERE.parent))  # tests.pgcluster, after the library the Python imports

from _common import selection  # noqa: E402
from pg_round_trips import counting  # noqa: E402
from team import AGENT_ACTIONS, REVIEWER_ACTIONS, add_tokens, make_project, tree_cpu  # noqa: E402

API = "/__annotate/api"
SEED = 31


class Asgi:
    """One request at a time straight into the app: scope, body, the answer's status and JSON."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def call(self, method: str, path: str, token: str, body: Any = None) -> tuple[int, Any]:
        raw = b"" if body is None else json.dumps(body).encode()
        target, _, query = path.partition("?")
        headers = [(b"host", b"127.0.0.1:8000"), (b"authorization", f"Bearer {token}".encode())]
        if body is not None:
            headers += [(b"content-type", b"application/json")]
            headers += [(b"content-length", str(len(raw)).encode())]
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
            "scheme": "http", "path": target, "raw_path": target.encode(),
            "query_string": query.encode(), "root_path": "", "headers": headers,
            "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000),
        }  # fmt: skip
        sent = False

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": raw, "more_body": False}
            await asyncio.sleep(3600)
            return {"type": "http.disconnect"}

        status = 0
        chunks: list[bytes] = []

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.app(scope, receive, send)
        data = b"".join(chunks)
        return status, json.loads(data) if data and data[:1] in b"{[" else None


class People:
    """benchmarks/team.py's actions, one request each, on a shared set of notes."""

    def __init__(self, asgi: Asgi, pages: list[Any], reviewers: list[str], agents: list[str]):
        self.asgi, self.pages, self.reviewers, self.agents = asgi, pages, reviewers, agents
        self.rng = random.Random(SEED)
        self.notes: list[str] = []
        self.open: list[str] = []
        self.cursor = 0
        self.count = 0

    async def act(self, action: str) -> int:
        rng, page = self.rng, self.rng.choice(self.pages)
        self.count += 1
        key = f"k{self.count}"
        reviewer, agent = rng.choice(self.reviewers), rng.choice(self.agents)
        call = self.asgi.call
        if action == "create":
            lines = page.text.split("\n")
            line = rng.randrange(1, len(lines))
            start = sum(len(x) + 1 for x in lines[:line])
            end = start + min(len(lines[line]), rng.randint(12, 40))
            body = {"pageUrl": page.url, "pageTitle": lines[0], "note": f"{key} needs a look",
                    "type": "text", **selection(page.text, start, end)}  # fmt: skip
            status, got = await call("POST", f"{API}/annotations", reviewer, body)
            if status == 201:
                self.notes.append(got["id"])
                self.open.append(got["id"])
        elif action == "list":
            status, _ = await call("GET", f"{API}/annotations?page={page.url}", reviewer)
        elif action == "reply":
            note = rng.choice(self.notes)
            body = {"message": key}
            status, _ = await call("POST", f"{API}/annotations/{note}/replies", reviewer, body)
        elif action == "feed":
            status, got = await call(
                "GET", f"{API}/changes?since={self.cursor}&timeout=0", reviewer
            )
            self.cursor = got["cursor"] if status == 200 else self.cursor
        elif action == "agent list":
            status, _ = await call("GET", f"{API}/annotations?page={page.url}&status=open", agent)
        elif action == "anchor":
            body = {"pageUrl": page.url, "text": page.text}
            status, _ = await call("POST", f"{API}/anchor", agent, body)
        elif action == "address":
            note = self.open.pop(rng.randrange(len(self.open)))
            body = {"action": "address", "message": key}
            status, _ = await call("POST", f"{API}/annotations/{note}/status", agent, body)
        else:
            note = rng.choice(self.notes)
            body = {"message": key}
            status, _ = await call("POST", f"{API}/annotations/{note}/replies", agent, body)
        if not 200 <= status < 300:
            raise SystemExit(f"{action}: HTTP {status}")
        return status


ACTIONS = (*REVIEWER_ACTIONS, *AGENT_ACTIONS)


def measure(db: str | None, args: argparse.Namespace, postmaster: int | None) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="annotate-reqcpu-"))
    pages = make_project(folder)
    reviewers, agents = add_tokens(folder, db, 20, 4)
    store = annotate.open(folder, db=db)
    store.keep_open()  # as `annotate serve` does
    app = team_app(folder / "site", store, Settings())
    people = People(Asgi(app), pages, reviewers, agents)
    cpu: dict[str, list[float]] = {a: [] for a in ACTIONS}
    db_cpu: dict[str, float] = dict.fromkeys(ACTIONS, 0.0)
    trips: dict[str, list[int]] = {a: [] for a in ACTIONS}
    stmts: dict[str, list[int]] = {a: [] for a in ACTIONS}

    async def main() -> None:
        for _ in range(args.notes * len(pages)):
            await people.act("create")
        for i in range(args.rounds):
            order = list(ACTIONS)
            people.rng.shuffle(order)
            for action in order:
                if i % 10 == 0 and db is not None:
                    # Counted apart: the counting wrapper's own CPU stays out of the times.
                    with counting() as waits:
                        await people.act(action)
                    trips[action].append(sum(w != "queued" for w in waits))
                    stmts[action].append(sum(w != "sync" for w in waits))
                    if args.show and i == 0:
                        print(action, [w[:60] for w in waits], file=sys.stderr)
                    continue
                pg = tree_cpu(postmaster) if postmaster else 0.0
                t = time.process_time()
                await people.act(action)
                cpu[action].append(time.process_time() - t)
                if postmaster:
                    db_cpu[action] += tree_cpu(postmaster) - pg

    try:
        asyncio.run(main())
    finally:
        store.close()
    return {"cpu": cpu, "db": db_cpu, "trips": trips, "stmts": stmts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--notes", type=int, default=40, help="notes on each page before")
    parser.add_argument("--db", default="sqlite,pg")
    parser.add_argument("--show", action="store_true", help="print each action's statements once")
    args = parser.parse_args()
    print(f"library: {Path(annotate.__file__).parent}; {args.rounds} rounds, "
          f"{args.notes} notes a page first")  # fmt: skip
    for backend in args.db.split(","):
        cluster = None
        if backend == "pg":
            from tests.pgcluster import PgCluster

            cluster = PgCluster(durable=True)
            postmaster = int((cluster.data / "postmaster.pid").read_text().split()[0])
        try:
            got = measure(cluster.new_schema() if cluster else None, args,
                          postmaster if cluster else None)  # fmt: skip
        finally:
            if cluster is not None:
                cluster.stop()
        print(f"\n### {backend}: CPU per request (ms)\n")
        print("| action | n | median | mean | PostgreSQL mean | round trips | statements |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        total = []
        for a in ACTIONS:
            times = got["cpu"][a]
            total += times
            trips = got["trips"][a]
            print(
                f"| {a} | {len(times)} | {statistics.median(times) * 1000:.2f} "
                f"| {statistics.fmean(times) * 1000:.2f} "
                f"| {got['db'][a] / len(times) * 1000:.2f} "
                f"| {statistics.median(trips) if trips else '–'} "
                f"| {statistics.median(got['stmts'][a]) if trips else '–'} |"
            )
        pg_all = sum(got["db"].values()) / len(total) * 1000
        print(f"| all | {len(total)} | {statistics.median(total) * 1000:.2f} "
              f"| {statistics.fmean(total) * 1000:.2f} | {pg_all:.2f} | | |")  # fmt: skip


if __name__ == "__main__":
    main()

"""A team on one review server (issue #20): two `annotate serve` instances on one PostgreSQL, 50
reviewers and 5 agents on loopback, against the same load on one instance on an SQLite file, and
the PostgreSQL run again with one instance killed mid-run.

    .venv/bin/python benchmarks/team.py [--seconds 60] [--reviewers 50] [--agents 5] [--think 1.0]
                                        [--no-fsync] [--replaced-text] [--instances 2]
                                        [--workers 1] [--sqlite-workers N] [--runs R,...]

`--instances N --workers W`: the PostgreSQL runs on N instances of `annotate serve --workers W`;
the SQLite run on one instance of `--sqlite-workers` workers (default N x W, the same number of
processes, on one file). `--runs postgresql,sqlite,killed` (the default: all three) picks runs.

A temp project gets Markdown pages and a built site. Each run starts from an empty store (a fresh
PostgreSQL schema or SQLite file) with a personal token per simulated person (`Store.add_token`),
answered by `annotate serve SITE --team` subprocesses (uvicorn, free loopback ports): every
request carries a person's bearer token and every write records its author.

Every simulated person is one asyncio task on keep-alive connections (_http.py) to one instance,
thinking a random 0 to 2 x `--think` seconds (also before the first action: people arrive at
random moments, not all in one millisecond, which is measured apart, as the burst), then acting:

- a reviewer creates a text note on a page, lists a page's notes, replies to a note someone made,
  and reads the change feed (`changes?since=CURSOR&timeout=0`);
- an agent lists a page's open notes, anchors the page (`POST /anchor` with the page's text, what
  the overlay and `get_context` do), addresses a note with a message and replies to one. With
  `--replaced-text` the agent first appends a line to the note's Markdown file, then addresses it
  with `replacedText` (the note's quote, still in the file), so the verb locates the note in the
  file just edited, as after an agent's edit (issue #28, item 6).

After the steady load, the **burst**: every person sends one request at the same instant (each
reviewer creates a note, each agent lists a page's open notes), the worst case of a team's first
minute, on warm servers. Its table gives p50, p99, the last answer, and the floor the CPU puts
under it: the requests times the CPU a request took in the steady load (every process's, from
/proc; the last two columns: the run's own, this process, the servers, its PostgreSQL), divided
by the cores. A burst over the per-action target times what the cores answer in a millisecond
cannot meet the target on any server: it says how long the queue takes to drain.

Runs: `postgresql` (`--instances`, the clients split between them), `sqlite` (one instance),
`postgresql, one killed` (instance A gets SIGKILL halfway; its clients fail over; no burst).
Each write carries a unique text. A write is acknowledged when it got a 2xx answer; afterwards the
database is read through the library and every acknowledged write must be in it (`lost` counts the
missing ones). A write sent but never answered (the killed instance) is not acknowledged: it is
counted apart, with how many of those the database holds anyway. A request refused at connect
(nothing sent) is sent again to the other instance, its time counted from the first try.

The tables give p50 and p99 per action in ms (ratios to the SQLite run, when there is one), the
writes, requests per second, the CPU of the client (this process), the servers (workers included,
not the killed instance) and the run's PostgreSQL in % of one core, and the servers' and
PostgreSQL's CPU per request: on a shared machine the times say how loaded it was, the CPU per
request what a quiet one would spend. PostgreSQL runs with fsync on (`--no-fsync`: off); the
SQLite file as the store opens it (WAL, synchronous=NORMAL). PostgreSQL logs every COMMIT over
30 ms, counted per run: a commit waits for its WAL with the write lock held.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
while str(HERE) in sys.path:
    sys.path.remove(str(HERE))
sys.path.insert(0, str(HERE.parent))  # tests.pgcluster

import httpx  # noqa: E402

import annotate  # noqa: E402

sys.path.append(str(HERE))

from _common import p, selection, sentence  # noqa: E402
from _http import ConnectError, Pool, TransportError  # noqa: E402
from _machine import describe  # noqa: E402

__all__ = ["Instance", "Load", "add_tokens", "make_project", "run_load", "start", "verify"]

SEED = 20
PAGES = 10
SENTENCES = 30
API = "/__annotate/api"
REVIEWER_ACTIONS = ("create", "list", "reply", "feed")
# `--replaced-text`: the docs folder of the run's project, whose Markdown an agent edits before it
# addresses a note with `replacedText` (issue #28, item 6); None: an address carries a message only.
REPLACED_TEXT: Path | None = None
AGENT_ACTIONS = ("agent list", "anchor", "address", "agent reply")
WRITES = ("create", "reply", "address", "agent reply")
TIMEOUT_S = 30.0
TARGET_MS = 50.0  # issue #20: p99 per action on this machine
SLOW_COMMIT_MS = 30
# uvicorn closes a connection idle for 5 s: a request sent on it just then would get no answer.
KEEPALIVE_S = 3.0


@dataclass
class Page:
    url: str
    text: str  # the page's text as the overlay reads it: title, then one line per paragraph


def make_project(root: Path, pages: int = PAGES, seed: int = SEED) -> list[Page]:
    """`mkdocs.yml`, `docs/pN.md` and the built `site/pN/index.html`, the same sentences in each."""
    rng = random.Random(seed)
    (root / "docs").mkdir(parents=True)
    (root / "mkdocs.yml").write_text("site_name: team bench\n")
    out = []
    for i in range(pages):
        title = f"Page {i}"
        lines = [sentence(rng) for _ in range(SENTENCES)]
        (root / "docs" / f"p{i}.md").write_text(f"# {title}\n\n" + "\n\n".join(lines) + "\n")
        html = "".join(f"<p>{line}</p>" for line in lines)
        (root / "site" / f"p{i}").mkdir(parents=True)
        (root / "site" / f"p{i}" / "index.html").write_text(
            f"<html><body><h1>{title}</h1>{html}</body></html>"
        )
        out.append(Page(f"/p{i}/", "\n".join([title, *lines])))
    return out


class Instance:
    """`annotate serve SITE --team [--workers N]` on a free loopback port, in a subprocess."""

    def __init__(self, project: Path, db: str | None = None, workers: int = 1) -> None:
        args = [sys.executable, "-m", "annotate.cli", "serve", str(project / "site"), "--team"]
        args += ["--port", "0", "--project", str(project), *(["--db", db] if db else [])]
        args += ["--workers", str(workers)] if workers > 1 else []
        self.workers = workers
        self._cpu = 0.0
        self._dead: dict[int, float] = {}
        self.proc = subprocess.Popen(
            args,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        first: list[str] = []
        reader = threading.Thread(target=lambda: first.append(self.proc.stdout.readline()))  # type: ignore[union-attr]
        reader.start()
        reader.join(60)
        match = re.search(r"http://([\d.]+):(\d+)/", first[0] if first else "")
        if match is None:
            self.kill()
            raise RuntimeError(f"annotate serve did not start: {first}")
        self.base = f"http://{match[1]}:{match[2]}"
        self._ready()

    def _ready(self) -> None:
        """Wait until every worker answers (each is a process that imports the app): requests
        sent before would wait for it, and count its start in their time."""
        seen: set[str] = set()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                r = httpx.get(self.base + "/__annotate/health", timeout=10)
                seen.add(r.headers.get("x-annotate-worker", "one"))
                if len(seen) >= self.workers:
                    return
            time.sleep(0.02)
        self.kill()
        raise RuntimeError(f"{self.workers} workers did not all answer: {seen}")

    def pids(self) -> list[int]:
        """The server process and its workers (Linux /proc)."""
        out = [self.proc.pid]
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError, IndexError, ValueError):
                if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == self.proc.pid:
                    out.append(int(stat.parent.name))
        return out

    def cpu_seconds(self) -> float:
        """User + system CPU time of the server process and its workers so far (Linux /proc; 0
        elsewhere); once killed, the last reading (its CPU after that reading is not counted)."""
        total = 0.0
        for pid in self.pids():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        if self.proc.poll() is None:
            self._cpu = total
        return self._cpu

    def kill(self) -> None:
        """SIGKILL to the server and its workers: no shutdown, in-flight requests get no answer."""
        for pid in self.pids()[::-1] if self.proc.poll() is None else []:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.proc.stdout:
            self.proc.stdout.close()


def start(project: Path, db: str | None, count: int, workers: int = 1) -> list[Instance]:
    """`count` instances of `workers` workers each, started side by side (each takes a second or
    more to import and bind)."""
    out: list[Instance | BaseException] = [RuntimeError("not started")] * count

    def one(i: int) -> None:
        try:
            out[i] = Instance(project, db, workers)
        except BaseException as e:  # re-raised below, once the others are stopped
            out[i] = e

    threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    started = [x for x in out if isinstance(x, Instance)]
    if len(started) < count:
        for x in started:
            x.stop()
        raise next(x for x in out if isinstance(x, BaseException))
    return started


@dataclass
class Load:
    """What a run measured: times per action, writes acknowledged and unanswered (by text)."""

    times: dict[str, list[float]] = field(default_factory=dict)
    acked: dict[str, set[str]] = field(default_factory=lambda: {w: set() for w in WRITES})
    unanswered: dict[str, set[str]] = field(default_factory=lambda: {w: set() for w in WRITES})
    errors: Counter[str] = field(default_factory=Counter)
    failovers: int = 0
    seconds: float = 0.0
    # CPU seconds during the steady load (not the burst): this process's, the servers', and
    # every process's on the machine (PostgreSQL's included).
    client_cpu: float = 0.0
    server_cpu: float = 0.0
    machine_cpu: float = 0.0
    db_cpu: float = 0.0  # the run's PostgreSQL cluster's processes (0 on SQLite)

    @property
    def own_cpu(self) -> float:
        """The CPU the run itself used (client, servers, its PostgreSQL): on a machine others
        share, `machine_cpu` counts their work too."""
        return self.client_cpu + self.server_cpu + self.db_cpu

    @property
    def requests(self) -> int:
        return sum(len(t) for t in self.times.values())


class Client:
    """One person: their token, on their instance and, once that one is gone, on the next."""

    def __init__(self, https: list[Pool], first: int, token: str, load: Load) -> None:
        self.https = https
        self.at = first
        self.load = load
        self.headers = {"Authorization": f"Bearer {token}"}

    def _fail_over(self) -> None:
        self.at = (self.at + 1) % len(self.https)
        self.load.failovers += 1

    async def call(
        self, action: str, method: str, path: str, body: Any = None, key: str = ""
    ) -> Any:
        """The answer's JSON on a 2xx (the write `key` acknowledged), else None."""
        start = time.perf_counter()
        for _ in range(len(self.https)):
            try:
                r = await self.https[self.at].request(method, API + path, body, self.headers)
                break
            except ConnectError:
                self._fail_over()  # nothing was sent: send it to the next instance
            except TransportError:
                # Sent, never answered (the instance died with it): not acknowledged.
                if key:
                    self.load.unanswered[action].add(key)
                self.load.errors[f"{action}: no answer"] += 1
                self._fail_over()
                return None
        else:
            self.load.errors[f"{action}: no instance"] += 1
            return None
        self.load.times.setdefault(action, []).append(time.perf_counter() - start)
        if not 200 <= r.status_code < 300:
            self.load.errors[f"{action}: {r.status_code}"] += 1
            return None
        if key:
            self.load.acked[action].add(key)
        return r.json() if r.content else {}


class Team:
    """What the simulated people share: the pages and the notes acknowledged so far."""

    def __init__(self, pages: list[Page]) -> None:
        self.pages = pages
        self.notes: list[str] = []


async def _create(client: Client, team: Team, page: Page, rng: random.Random, key: str) -> None:
    """A text note on a few words of one of the page's paragraphs, as the overlay sends it."""
    lines = page.text.split("\n")
    line = rng.randrange(1, len(lines))
    start = sum(len(x) + 1 for x in lines[:line])
    end_at = start + min(len(lines[line]), rng.randint(12, 40))
    body = {"pageUrl": page.url, "pageTitle": lines[0], "note": f"{key} needs a look"}
    created = await client.call(
        "create", "POST", "/annotations",
        {**body, "type": "text", **selection(page.text, start, end_at)}, key,
    )  # fmt: skip
    if created is not None:
        team.notes.append(created["id"])


async def _reviewer(client: Client, team: Team, n: int, end: float, think: float) -> None:
    rng = random.Random(SEED * 1000 + n)
    cursor: int | None = None
    count = 0
    while True:
        await asyncio.sleep(rng.uniform(0, 2 * think))
        if time.monotonic() >= end:
            break
        count += 1
        page = rng.choice(team.pages)
        action = rng.choice(REVIEWER_ACTIONS)
        if action == "reply" and not team.notes:
            action = "create"
        if action == "create":
            await _create(client, team, page, rng, f"r{n}-{count}")
        elif action == "list":
            await client.call("list", "GET", f"/annotations?page={page.url}")
        elif action == "reply":
            key = f"r{n}-{count}"
            note = rng.choice(team.notes)
            await client.call(
                "reply", "POST", f"/annotations/{note}/replies", {"message": key}, key
            )
        else:
            query = "" if cursor is None else f"?since={cursor}&timeout=0"
            got = await client.call("feed", "GET", f"/changes{query}")
            if got is not None:
                cursor = got["cursor"]


async def _agent(client: Client, team: Team, n: int, end: float, think: float) -> None:
    rng = random.Random(SEED * 2000 + n)
    open_notes: list[tuple[str, str, str]] = []  # (id, quote, page URL)
    count = 0
    while True:
        await asyncio.sleep(rng.uniform(0, 2 * think))
        if time.monotonic() >= end:
            break
        count += 1
        page = rng.choice(team.pages)
        action = rng.choice(AGENT_ACTIONS)
        if action in ("address", "agent reply") and not open_notes:
            action = "agent list"
        key = f"a{n}-{count}"
        if action == "agent list":
            got = await client.call(
                "agent list", "GET", f"/annotations?page={page.url}&status=open"
            )
            if got is not None:
                open_notes = [
                    (a["id"], (a.get("quote") or {}).get("exact", ""), a["pageUrl"])
                    for a in got["annotations"]
                ]
        elif action == "anchor":
            await client.call("anchor", "POST", "/anchor", {"pageUrl": page.url, "text": page.text})
        elif action == "address":
            note, exact, url = open_notes.pop(rng.randrange(len(open_notes)))
            body = {"action": "address", "message": key}
            if REPLACED_TEXT is not None and exact:
                # As an agent does: edit the page's Markdown, then address with the text that
                # stands where the quote was. The verb locates the note in the edited file.
                with (REPLACED_TEXT / f"{url.strip('/')}.md").open("a", encoding="utf-8") as f:
                    f.write(f"\nAn agent's edit, {key}.\n")
                body["replacedText"] = exact
            await client.call("address", "POST", f"/annotations/{note}/status", body, key)
        else:
            note = rng.choice(open_notes)[0]
            await client.call(
                "agent reply", "POST", f"/annotations/{note}/replies", {"message": key}, key
            )


def tree_cpu(root: int) -> float:
    """CPU seconds used so far by `root` and its children (Linux /proc; 0 elsewhere): the run's
    PostgreSQL postmaster and its backends."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(stat.parent.name) == root or int(fields[1]) == root:
                total += (int(fields[11]) + int(fields[12])) / tick
    return total


def machine_cpu() -> float:
    """CPU seconds every process on the machine has used so far, on all cores (Linux
    /proc/stat; 0 elsewhere): the client, the servers and PostgreSQL's own processes."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return 0.0
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def run_load(
    bases: list[str],
    pages: list[Page],
    reviewer_tokens: list[str],
    agent_tokens: list[str],
    *,
    seconds: float,
    think: float,
    kill_at: float | None = None,
    kill: Callable[[], None] | None = None,
    burst: Load | None = None,
    server_cpu: Callable[[], float] = lambda: 0.0,
    db_cpu: Callable[[], float] = lambda: 0.0,
) -> Load:
    """The people against `bases` (person i starts on instance i mod len(bases)) for `seconds`;
    `kill` is called `kill_at` seconds in (the clients of that instance then fail over). With
    `burst`, every person then sends one request at the same instant, measured into `burst`.
    `server_cpu`: the servers' CPU seconds so far (their share of the steady load)."""
    load = Load()
    team = Team(pages)

    async def main() -> None:
        # One connection pool per instance, shared by the people on it.
        https = [Pool(b, timeout=TIMEOUT_S, keepalive=KEEPALIVE_S) for b in bases]
        clients = [
            Client(https, i % len(bases), token, load)
            for i, token in enumerate([*reviewer_tokens, *agent_tokens])
        ]
        end = time.monotonic() + seconds
        people = [
            _reviewer(c, team, i, end, think) for i, c in enumerate(clients[: len(reviewer_tokens)])
        ]
        people += [
            _agent(c, team, i, end, think) for i, c in enumerate(clients[len(reviewer_tokens) :])
        ]

        async def killer() -> None:
            if kill is not None and kill_at is not None:
                await asyncio.sleep(kill_at)
                await asyncio.to_thread(kill)

        wall, cpu, mine = time.perf_counter(), machine_cpu(), time.process_time()
        servers, db = server_cpu(), db_cpu()
        await asyncio.gather(*people, killer())
        load.seconds = time.perf_counter() - wall
        load.machine_cpu = machine_cpu() - cpu
        load.client_cpu = time.process_time() - mine
        load.server_cpu = server_cpu() - servers
        load.db_cpu = db_cpu() - db
        if burst is not None:
            await asyncio.sleep(2 * think)  # the last answers are in; the servers are idle
            for c in clients:
                c.load = burst
            wall = time.perf_counter()
            await asyncio.gather(
                *(_burst(c, team, i, i >= len(reviewer_tokens)) for i, c in enumerate(clients))
            )
            burst.seconds = time.perf_counter() - wall
        for http in https:
            await http.aclose()

    asyncio.run(main())
    return load


async def _burst(client: Client, team: Team, n: int, agent: bool) -> None:
    """One request: a reviewer creates a note, an agent lists a page's open notes."""
    rng = random.Random(SEED * 3000 + n)
    page = rng.choice(team.pages)
    if agent:
        await client.call("agent list", "GET", f"/annotations?page={page.url}&status=open")
    else:
        await _create(client, team, page, rng, f"b{n}")


@dataclass
class Check:
    """Acknowledged writes found in the database, and the unanswered ones found anyway."""

    acked: int
    lost: list[str]
    unanswered: int
    unanswered_found: int


def verify(project: Path, db: str | None, *loads: Load) -> Check:
    """Read the whole store through the library and look for every write's unique text."""
    store = annotate.open(project, db=db)
    try:
        notes = store.list_annotations(status="all")
        texts = {str(a.to_dict()["note"]).split(" ", 1)[0] for a in notes}
        messages = {str(r["message"]) for a in notes for r in a.to_dict()["replies"]}
    finally:
        store.close()
    found = {"create": texts, "reply": messages, "address": messages, "agent reply": messages}
    acked = {w: set().union(*(x.acked[w] for x in loads)) for w in WRITES}
    unanswered = {w: set().union(*(x.unanswered[w] for x in loads)) for w in WRITES}
    lost = sorted(k for w in WRITES for k in acked[w] - found[w])
    gone = sum(len(unanswered[w]) for w in WRITES)
    anyway = sum(len(unanswered[w] & found[w]) for w in WRITES)
    return Check(sum(len(v) for v in acked.values()), lost, gone, anyway)


def add_tokens(
    project: Path, db: str | None, reviewers: int, agents: int
) -> tuple[list[str], list[str]]:
    """One personal token per person (what `annotate token add NAME --role R` makes)."""
    store = annotate.open(project, db=db)
    try:
        r = [store.add_token(f"reviewer{i}@example.com", "reviewer") for i in range(reviewers)]
        a = [store.add_token(f"agent{i}", "agent") for i in range(agents)]
    finally:
        store.close()
    return r, a


def _new_schema(url: str) -> str:
    import psycopg

    name = f"bench_{random.randrange(16**8):08x}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    return f"{url}?options=-csearch_path%3D{name}"


@dataclass
class Run:
    name: str
    load: Load
    burst: Load | None
    check: Check
    slow_commits: list[float] | None = None  # PostgreSQL's own log: COMMITs over SLOW_COMMIT_MS


class CommitLog:
    """The COMMITs PostgreSQL itself logs as slower than SLOW_COMMIT_MS: a commit waits for its
    WAL to reach the disk (fsync), and every write queued behind it waits too. Says whether a
    write's tail is the disk's or the servers'."""

    LINE = re.compile(r"duration: ([\d.]+) ms +execute [^:]*: COMMIT")

    def __init__(self, url: str, log: Path) -> None:
        import psycopg

        self.log = log
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"ALTER SYSTEM SET log_min_duration_statement = {SLOW_COMMIT_MS}")
            conn.execute("SELECT pg_reload_conf()")
        self.at = 0

    def mark(self) -> None:
        self.at = self.log.stat().st_size

    def since_mark(self) -> list[float]:
        with self.log.open(errors="replace") as f:
            f.seek(self.at)
            return [float(m[1]) for m in self.LINE.finditer(f.read())]


def one_run(
    name: str,
    project: Path,
    pages: list[Page],
    db: str | None,
    instances: int,
    args: argparse.Namespace,
    kill: bool = False,
    workers: int = 1,
    db_cpu: Callable[[], float] = lambda: 0.0,
) -> Run:
    reviewer_tokens, agent_tokens = add_tokens(project, db, args.reviewers, args.agents)
    global REPLACED_TEXT
    REPLACED_TEXT = project / "docs" if args.replaced_text else None
    servers = start(project, db, instances, workers)
    burst = None if kill else Load()
    try:
        load = run_load(
            [s.base for s in servers],
            pages,
            reviewer_tokens,
            agent_tokens,
            seconds=args.seconds,
            think=args.think,
            kill_at=args.seconds / 2 if kill else None,
            kill=servers[0].kill if kill else None,
            burst=burst,
            server_cpu=lambda: sum(s.cpu_seconds() for s in servers),
            db_cpu=db_cpu if db else lambda: 0.0,
        )
    finally:
        for s in servers:
            s.stop()
    return Run(name, load, burst, verify(project, db, load, *([burst] if burst else [])))


def _ms(values: list[float], q: float) -> str:
    return f"{p(values, q) * 1000:.1f}" if values else "–"


def _slow(commits: list[float] | None) -> str:
    if commits is None:
        return "–"
    return f"{len(commits)} ({max(commits):.0f} ms)" if commits else "0"


def _pct(cpu: float, seconds: float) -> str:
    return f"{100 * cpu / seconds:.0f} %"


def _ms_each(cpu: float, load: Load) -> str:
    """CPU per request in ms: what transfers from a shared machine to a quiet one."""
    return f"{1000 * cpu / max(load.requests, 1):.2f} ms"


def report(runs: list[Run], target_ms: float) -> None:
    """Print the tables, and whether every action's steady p99 is within `target_ms`."""
    base = next((r for r in runs if r.name.startswith("sqlite")), None)  # none: no ratios
    actions = [*REVIEWER_ACTIONS, *AGENT_ACTIONS]
    for r in runs:
        if r is base and len(runs) > 1:
            continue
        print(f"\n### {r.name}{f' vs {base.name}' if base else ''}, steady load (ms)\n")
        print("| action | n | p50 | p99 | sqlite p50 | sqlite p99 | p50 ratio | p99 ratio |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for a in actions:
            mine, theirs = r.load.times.get(a, []), base.load.times.get(a, []) if base else []
            ratios = (
                [f"{p(mine, q) / p(theirs, q):.2f}" for q in (50, 99)]
                if mine and theirs
                else ["–", "–"]
            )
            print(
                f"| {a} | {len(mine)} | {_ms(mine, 50)} | {_ms(mine, 99)} | {_ms(theirs, 50)} "
                f"| {_ms(theirs, 99)} | {ratios[0]} | {ratios[1]} |"
            )
    print("\n### Burst: every person's request at the same instant (ms)\n")
    print(
        "| run | requests | p50 | p99 | last answer | CPU per request (steady) "
        "| CPU floor of the last answer | the run's own CPU per request | its floor |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    cores = os.cpu_count() or 1
    for r in runs:
        if r.burst is None:
            continue
        times = [t for v in r.burst.times.values() for t in v]
        per = r.load.machine_cpu / max(r.load.requests, 1)
        own = r.load.own_cpu / max(r.load.requests, 1)
        print(
            f"| {r.name} | {len(times)} | {_ms(times, 50)} | {_ms(times, 99)} "
            f"| {max(times, default=0) * 1000:.1f} | {per * 1000:.1f} "
            f"| {len(times) * per / cores * 1000:.0f} | {own * 1000:.1f} "
            f"| {len(times) * own / cores * 1000:.0f} |"
        )
    print("\n### Writes and CPU (steady load)\n")
    print(
        "| run | requests/s | writes acknowledged | found | lost | unanswered (found) "
        f"| failovers | errors | client CPU | servers CPU | servers' CPU per request "
        "| PostgreSQL CPU | its CPU per request | machine CPU "
        f"| COMMITs over {SLOW_COMMIT_MS} ms, burst included (slowest) |"
    )
    print(
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: "
        "| ---: | ---: |"
    )
    for r in runs:
        c, load = r.check, r.load
        errors = Counter(load.errors) + (r.burst.errors if r.burst else Counter())
        said = ", ".join(f"{k} x{v}" for k, v in sorted(errors.items())) or "none"
        print(
            f"| {r.name} | {load.requests / load.seconds:.0f} | {c.acked} | {c.acked - len(c.lost)} "
            f"| {len(c.lost)} | {c.unanswered} ({c.unanswered_found}) | {load.failovers} "
            f"| {said} | {_pct(load.client_cpu, load.seconds)} "
            f"| {_pct(load.server_cpu, load.seconds)} | {_ms_each(load.server_cpu, load)} "
            f"| {_pct(load.db_cpu, load.seconds)} | {_ms_each(load.db_cpu, load)} "
            f"| {_pct(load.machine_cpu, load.seconds)} "
            f"| {_slow(r.slow_commits)} |"
        )
    over = [
        f"{r.name}: {a} {p(t, 99) * 1000:.1f} ms"
        for r in runs
        for a, t in r.load.times.items()
        if p(t, 99) * 1000 > target_ms
    ]
    print(
        f"\nSteady p99 <= {target_ms:g} ms on every action of every run: "
        + ("yes" if not over else "no (" + "; ".join(over) + ")")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="each run's length")
    parser.add_argument("--reviewers", type=int, default=50)
    parser.add_argument("--agents", type=int, default=5)
    parser.add_argument("--think", type=float, default=1.0, help="mean seconds between actions")
    parser.add_argument(
        "--replaced-text",
        action="store_true",
        help="agents edit the page's Markdown, then address with replacedText (the quote)",
    )
    parser.add_argument(
        "--no-fsync", action="store_true", help="PostgreSQL without fsync (where the time goes)"
    )
    parser.add_argument("--instances", type=int, default=2, help="PostgreSQL runs' instances")
    parser.add_argument("--workers", type=int, default=1, help="`--workers` of each instance")
    parser.add_argument(
        "--sqlite-workers", type=int, help="the SQLite instance's workers (default: the total)"
    )
    parser.add_argument("--runs", default="postgresql,sqlite,killed", help="which runs")
    args = parser.parse_args()
    sqlite_workers = args.sqlite_workers or args.instances * args.workers
    wanted = set(args.runs.split(","))

    from tests.pgcluster import PgCluster

    print(describe())
    print(
        f"{args.reviewers} reviewers + {args.agents} agents, {args.seconds:g} s per run, "
        f"think 0-{2 * args.think:g} s, {PAGES} pages, PostgreSQL fsync {'off' if args.no_fsync else 'on'}; "
        f"PostgreSQL: {args.instances} instances x {args.workers} workers, SQLite: 1 x {sqlite_workers}"
    )
    folder = Path(tempfile.mkdtemp(prefix="annotate-team-bench-"))
    cluster = PgCluster(durable=not args.no_fsync)
    commits = CommitLog(cluster.url, cluster.folder / "log")
    postmaster = int((cluster.data / "postmaster.pid").read_text().split()[0])
    runs = []
    try:
        pg = f"postgresql {args.instances}x{args.workers}"
        for key, name, backend, instances, workers, kill in (
            ("postgresql", pg, "pg", args.instances, args.workers, False),
            ("sqlite", f"sqlite 1x{sqlite_workers}", "sqlite", 1, sqlite_workers, False),
            ("killed", f"{pg}, one killed", "pg", args.instances, args.workers, True),
        ):
            if key not in wanted:
                continue
            project = folder / re.sub(r"\W+", "-", name)
            pages = make_project(project)
            db = _new_schema(cluster.url) if backend == "pg" else None
            print(f"running {name}…", file=sys.stderr)
            commits.mark()
            runs.append(
                one_run(
                    name, project, pages, db, instances, args, kill, workers,
                    db_cpu=lambda: tree_cpu(postmaster),
                )
            )  # fmt: skip
            if backend == "pg":
                runs[-1].slow_commits = commits.since_mark()
    finally:
        cluster.stop()
        shutil.rmtree(folder, ignore_errors=True)
    report(runs, TARGET_MS)
    lost = sum(len(r.check.lost) for r in runs)
    if lost:
        raise SystemExit(f"{lost} acknowledged writes lost")


if __name__ == "__main__":
    main()

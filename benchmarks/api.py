"""The web endpoint over loopback (issues #4, #31): `annotate serve` in a subprocess, 10k stored notes.

    .venv/bin/python benchmarks/api.py [--annotations 10000] [--seconds 3] [--db pg | --db URL]
                                       [--no-fsync] [--serve-arg ARG ...] [--only KEY,...]
                                       [--reuse DIR]

Every row runs on SQLite (the project's file); with `--db`, then on PostgreSQL as well: `--db pg`
starts a throwaway server (tests/pgcluster.py's `PgCluster`, fsync on unless `--no-fsync`, stopped
at the end), `--db postgresql://…` uses that database (a new schema in it, left there). Each
`--serve-arg` is passed to `annotate serve` as it is (`--serve-arg=--workers --serve-arg=2`). To
measure another tree with this script, run it with that tree's interpreter: the server runs from
the project folder, so `annotate` is always the interpreter's.

A temp project gets a `docs/` folder of Markdown pages (registered the way the MkDocs plugin
registers them) and a built `site/`. One busy page holds 200 text annotations over ~150 kB of text,
the others 20 each (10k notes on ~500 pages, 100k on ~5,000). The busy page's notes and those of
the 10 pages "under review" are made through the library (`Store.add_annotation`, each located
in its Markdown as it is saved); the others' rows, as the overlay sends them, go in through
`Store.insert_raw` in one transaction, and `Store.reconcile()` then locates every one of them in
its page's Markdown (the library's own pass: each file parsed once, each quote found in it);
their first location is recorded as `add_annotation` records it. The fill stops unless every note
is anchored with its lines (100k notes: about 1.5 min, loaded). PostgreSQL gets the same rows,
copied from the SQLite file before its run (`COPY`; filled note by note through the library, its
round trips took 11 min at 100k), read by the same Markdown files. `--reuse DIR` keeps the filled
project in DIR (made on the first run) and copies it for each later run: alternating before/after
runs then skip the fill (the store's schema must be the same in both trees).
Then `annotate serve site/` runs in a subprocess (uvicorn, one process unless told otherwise) and
a plain `http.client` client with keep-alive measures, one request at a time:

- create an annotation: on the 10 pages "under review" (what a reviewer does); on any page
  (each one's Markdown parsed afresh: the library keeps 128 pages parsed); and on any page just
  opened, as in a browser: the overlay anchors the page when it loads, which prepares its
  Markdown in the background, and the note is saved a moment later (only the save is timed);
- get one annotation, list one page, list the busy page;
- anchor the busy page: its text as it was when the notes were made, and as a rebuild leaves it
  after edits (a sentence added on top, which re-wraps every paragraph; 10 quoted sentences
  reworded, 5 deleted). The server remembers answers per (page, text, selectors), so these runs
  send a new version of the text every time (a counter appended at the end: same offsets, new
  text); it also keeps each page's word-pair index, so a version costs its new lines (here, the
  counter's). "Again" sends the same text, as a reload of an unchanged page does. "First
  load after the rebuild" sends the text as it was (untimed), then the edited one, none of whose
  lines the server has seen: the cost of the first page load after such an edit;
- baselines, in the same run, for what the machine's HTTP round trip costs: the health route (no
  store) and the anchor route on a page without notes (the 140 kB body alone);

then 8 concurrent clients, each on its own connection, for `--seconds` per row: requests, p50,
p99, and the CPU a request cost on each side (this process's clients, the server's processes,
PostgreSQL's processes when started here; from /proc, so other processes on the machine are not
counted). The **CPU floor** is the least p50 the CPU allows: 8 requests always in flight share the
cores (8 x CPU a request / cores), and the server's share runs on one core per process (one GIL:
8 x server CPU a request / processes); the larger of the two. A p99 target under that floor cannot
be met on this machine whatever the scheduling. Every answer's status is checked: any other status
counts as an error. `--only` measures some rows only (the health baseline always).
"""

from __future__ import annotations

import argparse
import http.client
import importlib.util
import itertools
import json
import os
import random
import re
import secrets
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import AnnotateServer, p, selection, sentence
from _machine import describe

import annotate

Request = tuple[str, str, "bytes | None", int]  # method, path, body, expected status

SEED = 4
BUSY_PAGE = "/busy/"
BUSY_NOTES = 200
BUSY_SENTENCES = 1_500  # ~150 kB of page text
PER_PAGE = 20
PAGE_SENTENCES = 40
REVIEWED = 10  # a reviewer goes through a few pages at a time
RUNS = {
    "floor": 1_000,
    "floor_body": 300,
    "create": 500,
    "create_cold": 300,
    "create_opened": 300,
    "get": 1_000,
    "list": 500,
    "list_busy": 200,
    "anchor_same": 200,
    "anchor_edited": 100,
    "anchor_again": 500,
    "anchor_rewrapped": 60,
}
WARMUP = 20
READING_PAUSE = 0.2  # s between a page load and its note: far less than a reviewer takes
CLIENTS = 8
THROUGHPUT = ("create", "get", "list", "anchor_same", "anchor_again")
# Issue #4's targets (ms), and issue #31's for the concurrent rows.
P50_TARGET, P99_TARGET = 5.0, 25.0
CONCURRENT_P99_TARGET = 16.0

# -- the project ---------------------------------------------------------------------------------


class Project:
    """Docs, built site and a filled store in `root` (`db`: a PostgreSQL URL, else the project's
    SQLite file)."""

    def __init__(self, root: Path, total: int, rng: random.Random, db: str | None) -> None:
        self.root = root
        self.rng = rng
        self.total = total
        (root / "docs").mkdir()
        (root / "site").mkdir()
        (root / "mkdocs.yml").write_text("site_name: bench\n")
        self.pages: dict[str, str] = {}
        self.others: list[str] = []
        self.texts: dict[str, tuple[str, list[str]]] = {}
        store = annotate.open(root, db=db)
        started = time.perf_counter()

        busy = [sentence(rng) for _ in range(BUSY_SENTENCES)]
        self.busy_text = self._page(BUSY_PAGE, busy)
        chosen = sorted(rng.sample(range(BUSY_SENTENCES), BUSY_NOTES))
        store.register_pages({BUSY_PAGE: "docs/busy.md"})
        for i in chosen:
            store.add_annotation(self.note(BUSY_PAGE, self.busy_text, busy[i]))
        left = total - BUSY_NOTES
        bulk: list[dict[str, Any]] = []
        for n in itertools.count(1):
            if left <= 0:
                break
            url = f"/page-{n}/"
            sentences = [sentence(rng) for _ in range(PAGE_SENTENCES)]
            text = self._page(url, sentences)
            self.others.append(url)
            self.texts[url] = (text, sentences)
            notes = [self.note(url, text, q) for q in rng.sample(sentences, min(PER_PAGE, left))]
            left -= PER_PAGE
            if n <= REVIEWED:
                store.register_pages({url: self.pages[url]})
                for note in notes:
                    store.add_annotation(note)
            else:
                bulk += [_row(len(bulk) + k, note) for k, note in enumerate(notes)]
        if bulk:
            # The other pages' notes in one transaction, then located in their Markdown by the
            # library's own pass (`Store.reconcile`: each page's file parsed once, each quote
            # found in it), then their first location recorded as `add_annotation` records it.
            store.register_pages({url: self.pages[url] for url in self.others[REVIEWED:]})
            store.insert_raw(bulk, [], [])
            store.reconcile()
            store.conn.execute(
                "UPDATE annotations SET original_path = source_path, "
                "original_line_start = source_line_start, original_line_end = source_line_end, "
                "original_excerpt = source_excerpt WHERE original_path IS NULL"
            )
        located = store.conn.execute(
            "SELECT count(*) FROM annotations WHERE anchor_state = 'anchored' "
            "AND source_line_start IS NOT NULL AND original_line_start IS NOT NULL"
        ).fetchone()[0]
        store.close()
        if located != total:
            raise SystemExit(f"only {located:,} of {total:,} notes were located in their Markdown")
        print(
            f"… filled the store with {total:,} annotations on {len(self.pages)} pages in "
            f"{time.perf_counter() - started:.0f} s ({len(bulk):,} of them in bulk; all located "
            "in their Markdown)",
            file=sys.stderr,
            flush=True,
        )

        # The busy page as the overlay sends it after a rebuild of edited Markdown.
        edited = list(busy)
        for i in chosen[:10]:
            words = edited[i].split()
            words[2] = "reworded"
            edited[i] = " ".join(words)
        for i in chosen[10:15]:
            edited[i] = ""
        intro = "A new introduction paragraph, written after the review started."
        self.edited_text = self._text(BUSY_PAGE, [intro, *edited])

    @staticmethod
    def _paragraphs(sentences: list[str]) -> list[str]:
        return [" ".join(s for s in sentences[i : i + 5] if s) for i in range(0, len(sentences), 5)]

    def _text(self, url: str, sentences: list[str]) -> str:
        """The page text the overlay computes: the title, then each paragraph on its line."""
        return url.strip("/") + "\n" + "\n".join(self._paragraphs(sentences))

    def _page(self, url: str, sentences: list[str]) -> str:
        name = url.strip("/")
        paragraphs = self._paragraphs(sentences)
        (self.root / "docs" / f"{name}.md").write_text(
            f"# {name}\n\n" + "\n\n".join(paragraphs) + "\n"
        )
        (self.root / "site" / name).mkdir()
        (self.root / "site" / name / "index.html").write_text(
            f"<html><body><h1>{name}</h1>{''.join(f'<p>{p}</p>' for p in paragraphs)}</body></html>"
        )
        self.pages[url] = f"docs/{name}.md"
        return self._text(url, sentences)

    @staticmethod
    def note(url: str, text: str, quote: str) -> dict[str, Any]:
        start = text.index(quote)
        end = start + len(quote)
        return {
            "pageUrl": url,
            "pageTitle": url.strip("/"),
            "note": "Say this more plainly.",
            **selection(text, start, end),
        }


def filled(root: Path, total: int, reuse: str | None) -> Project:
    """A filled project in `root`: made there, or copied from `reuse` (and kept there when new)."""
    if reuse is None:
        return Project(root, total, random.Random(SEED), None)
    kept = Path(reuse) / str(total)
    saved = kept / "project.json"
    if saved.exists():
        shutil.copytree(kept / "root", root, dirs_exist_ok=True)
        project = Project.__new__(Project)
        project.__dict__.update(json.loads(saved.read_text()))
        project.root, project.rng = root, random.Random(SEED)
        project.texts = {k: (t, s) for k, (t, s) in project.texts.items()}
        return project
    project = Project(root, total, random.Random(SEED), None)
    shutil.copytree(root, kept / "root")
    state = {k: v for k, v in project.__dict__.items() if k not in ("root", "rng")}
    saved.write_text(json.dumps(state))
    return project


def _row(n: int, note: dict[str, Any]) -> dict[str, Any]:
    """A note as its row before it is located (`Store.insert_raw` columns): what the overlay sent,
    as `add_annotation` stores it."""
    stamp = f"2026-01-05T09:{n // 60_000 % 60:02d}:{n // 1000 % 60:02d}.{n % 1000:03d}Z"
    return {
        "id": f"a_b{n:09x}",
        "type": "text",
        "page_url": note["pageUrl"],
        "page_title": note["pageTitle"],
        "note": note["note"],
        "intent": "comment",
        "selected_text": note["selectedText"],
        "quote_exact": note["quote"]["exact"],
        "quote_prefix": note["quote"]["prefix"],
        "quote_suffix": note["quote"]["suffix"],
        "position_start": note["position"]["start"],
        "position_end": note["position"]["end"],
        "anchor_state": "anchored",
        "status": "open",
        "created_at": stamp,
        "updated_at": stamp,
    }


# -- the server and its clients ------------------------------------------------------------------


class Client:
    """One keep-alive connection; counts answers with an unexpected status."""

    def __init__(self, server: AnnotateServer) -> None:
        self.conn = http.client.HTTPConnection(server.host, server.port, timeout=60)
        self.headers = {"X-Annotate-Token": server.token}
        self.errors = 0

    def call(self, method: str, path: str, body: bytes | None = None, expect: int = 200) -> bytes:
        headers = self.headers
        if body is not None:
            headers = {**headers, "Content-Type": "application/json"}
        self.conn.request(method, path, body=body, headers=headers)
        r = self.conn.getresponse()
        data = r.read()
        if r.status != expect:
            self.errors += 1
        return data


def operations(project: Project, ids: list[str]) -> dict[str, tuple[str, Callable[[], Request]]]:
    """Each measured operation: its label and a maker of requests."""
    rng = project.rng
    version = itertools.count()
    kb = len(project.busy_text) // 1000

    def anchor(text: str, fresh: bool) -> Request:
        if fresh:  # a text the server has not seen: same offsets, one more line at the end
            text = f"{text}\n{next(version)}"
        return (
            "POST",
            "/__annotate/api/anchor",
            json.dumps({"pageUrl": BUSY_PAGE, "text": text}).encode(),
            200,
        )

    def create(pages: list[str]) -> Request:
        # What the overlay sends when a reviewer selects a sentence of a page.
        url = rng.choice(pages)
        text, sentences = project.texts[url]
        body = project.note(url, text, rng.choice(sentences))
        return "POST", "/__annotate/api/annotations", json.dumps(body).encode(), 201

    def opened(pages: list[str]) -> list[Request]:
        # As in a browser: the page loads (the overlay anchors it, untimed; a reviewer takes
        # seconds to select and type), then the note is saved (timed).
        url = rng.choice(pages)
        text, sentences = project.texts[url]
        body = project.note(url, text, rng.choice(sentences))
        load = json.dumps({"pageUrl": url, "text": text}).encode()
        return [
            ("POST", "/__annotate/api/anchor", load, 200),
            ("POST", "/__annotate/api/annotations", json.dumps(body).encode(), 201),
        ]

    again = anchor(project.busy_text, fresh=False)
    empty_page = json.dumps({"pageUrl": "/empty/", "text": project.busy_text}).encode()
    return {
        "floor": (
            "baseline: `GET /__annotate/health` (HTTP and the guard only, no store)",
            lambda: ("GET", "/__annotate/health", None, 200),
        ),
        "floor_body": (
            f"baseline: anchor a {kb} kB page with no notes (the body's cost)",
            lambda: ("POST", "/__annotate/api/anchor", empty_page, 200),
        ),
        "create": (
            f"create an annotation (on the {REVIEWED} pages under review)",
            lambda: create(project.others[:REVIEWED]),
        ),
        "create_cold": (
            f"create an annotation (on any of {len(project.others)} pages)",
            lambda: create(project.others),
        ),
        "create_opened": (
            f"create an annotation (on any of {len(project.others)} pages, just opened)",
            lambda: opened(project.others),
        ),
        "get": (
            "get one annotation",
            lambda: ("GET", f"/__annotate/api/annotations/{rng.choice(ids)}", None, 200),
        ),
        "list": (
            f"list one page ({PER_PAGE} notes)",
            lambda: (
                "GET",
                f"/__annotate/api/annotations?page={rng.choice(project.others)}",
                None,
                200,
            ),
        ),
        "list_busy": (
            f"list the busiest page ({BUSY_NOTES} notes)",
            lambda: ("GET", f"/__annotate/api/annotations?page={BUSY_PAGE}", None, 200),
        ),
        "anchor_same": (
            f"anchor a {BUSY_NOTES}-note page, {kb} kB, text unchanged",
            lambda: anchor(project.busy_text, fresh=True),
        ),
        "anchor_edited": (
            f"anchor a {BUSY_NOTES}-note page, {kb} kB, text edited",
            lambda: anchor(project.edited_text, fresh=True),
        ),
        "anchor_again": (
            f"anchor a {BUSY_NOTES}-note page again (same text: remembered)",
            lambda: again,
        ),
        "anchor_rewrapped": (
            f"anchor a {BUSY_NOTES}-note page, {kb} kB, edited, first load after the rebuild",
            # The page as it was, untimed, then as the rebuild left it: every line is new.
            lambda: [
                anchor(project.busy_text, fresh=True),
                anchor(project.edited_text, fresh=True),
            ],
        ),
    }


def timed(
    client: Client, make: Callable[[], Request | list[Request]], runs: int
) -> tuple[list[float], int]:
    """Latencies of `runs` requests; a maker may give a list, whose last request alone is timed
    (the others set the scene, followed by a pause)."""
    before = client.errors
    out = []
    for run in range(-WARMUP, runs):
        made = make()
        *setup, request = made if isinstance(made, list) else [made]
        for step in setup:
            client.call(*step)
        if setup:
            # A reviewer reads before writing a note; a rebuild takes longer than this. The
            # server's work after answering (preparing the page) is done by then.
            time.sleep(READING_PAUSE)
        t = time.perf_counter()
        client.call(*request)
        if run >= 0:
            out.append((time.perf_counter() - t) * 1000)
    return out, client.errors - before


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of process `pid` and of every process under it (Linux /proc; 0
    elsewhere): `annotate serve` and its workers, or a PostgreSQL server and its backends."""
    parents: dict[int, int] = {}
    used: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry.name)] = int(fields[1])
        used[int(entry.name)] = (int(fields[11]) + int(fields[12])) / tick
    total, todo = 0.0, [pid]
    children: dict[int, list[int]] = {}
    for child, parent in parents.items():
        children.setdefault(parent, []).append(child)
    while todo:
        at = todo.pop()
        total += used.get(at, 0.0)
        todo += children.get(at, [])
    return total


@dataclass
class Load:
    """One throughput run: requests, latencies, errors and the CPU each side used."""

    requests: int
    seconds: float
    ms: list[float]
    errors: int
    client_cpu: float  # this process: the 8 clients
    server_cpu: float  # `annotate serve` and its child processes
    database_cpu: float  # PostgreSQL's processes (0 on SQLite, or a server not started here)

    @property
    def per_request(self) -> float:
        """CPU ms a request costs, all sides counted."""
        return (self.client_cpu + self.server_cpu + self.database_cpu) / self.requests * 1000

    def floor(self, cores: int, processes: int) -> float:
        """The least p50 latency (ms) the CPU allows `CLIENTS` clients that each wait for their
        answer: every request in flight shares the cores (`CLIENTS` x CPU per request / cores),
        and the server's part of it runs on one core per process (one GIL each)."""
        server = self.server_cpu / self.requests * 1000
        return max(CLIENTS * self.per_request / cores, CLIENTS * server / processes)


def throughput(
    server: AnnotateServer, make: Callable[[], Request], seconds: float, database: int | None
) -> Load:
    latencies: list[list[float]] = [[] for _ in range(CLIENTS)]
    errors = [0] * CLIENTS
    ready = threading.Barrier(CLIENTS + 1)
    deadline = [float("inf")]
    lock = threading.Lock()

    def work(i: int) -> None:
        client = Client(server)
        client.call(*make())  # connect, warm up
        client.errors = 0
        ready.wait()
        while time.perf_counter() < deadline[0]:
            with lock:  # request makers share one random generator and counter
                request = make()
            t = time.perf_counter()
            client.call(*request)
            latencies[i].append((time.perf_counter() - t) * 1000)
        errors[i] = client.errors

    threads = [threading.Thread(target=work, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    ready.wait()

    def db_cpu() -> float:
        return process_cpu(database) if database else 0.0

    cpu = (time.process_time(), process_cpu(server.proc.pid), db_cpu())
    began = time.perf_counter()
    deadline[0] = began + seconds
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - began
    client = time.process_time() - cpu[0]
    served = process_cpu(server.proc.pid) - cpu[1]
    db = db_cpu() - cpu[2]
    flat = [x for xs in latencies for x in xs]
    return Load(len(flat), elapsed, flat, sum(errors), client, served, db)


@dataclass
class Run:
    """Every row measured on one backend."""

    backend: str
    located: dict[str, tuple[int, int]]
    rows: list[tuple[str, int, list[float], int]]
    loads: list[tuple[str, Load]]
    load_average: tuple[float, float]  # the machine's 1-minute load average before, after


def copy_store(project: Project, url: str) -> None:
    """The project's SQLite store, as filled, into the PostgreSQL database at `url` (its schema
    made by `annotate.open`): the same notes, located in the same Markdown files, at the cost of
    one COPY per table instead of a round trip per note and per location."""
    import sqlite3

    import psycopg

    source = annotate.open(project.root)
    assert source.path is not None
    source.close()
    annotate.open(project.root, db=url).close()  # the schema
    lite = sqlite3.connect(source.path)
    with psycopg.connect(url) as pg, pg.cursor() as cur:
        for table in ("pages", "annotations"):
            cur.execute(f"SELECT * FROM {table} LIMIT 0")
            theirs = {d.name for d in cur.description or ()}
            ours = [d[0] for d in lite.execute(f"SELECT * FROM {table} LIMIT 0").description]
            cols = ", ".join(c for c in ours if c in theirs)
            with cur.copy(f"COPY {table} ({cols}) FROM STDIN") as copy:
                for row in lite.execute(f"SELECT {cols} FROM {table} ORDER BY rowid"):
                    copy.write_row(row)
        cur.execute("SELECT count(*) FROM annotations WHERE source_line_start IS NOT NULL")
        copied = cur.fetchone()
    lite.close()
    if not copied or copied[0] != project.total:
        raise SystemExit(f"PostgreSQL holds {copied} located notes, not {project.total:,}")


def run(
    backend: str,
    project: Project,
    db: str | None,
    database: int | None,
    args: argparse.Namespace,
) -> Run:
    """Serve the project on `db` (None: its SQLite file), measure every row."""
    print(f"… {backend}", file=sys.stderr, flush=True)
    project.rng = random.Random(SEED + 1)  # the same requests on each backend
    loads_before = os.getloadavg()[0]
    server = AnnotateServer(project.root, [*(["--db", db] if db else []), *(args.serve_arg or [])])
    try:
        client = Client(server)
        listed = json.loads(
            client.call("GET", f"/__annotate/api/annotations?page={project.others[0]}")
        )
        ops = operations(project, [a["id"] for a in listed["annotations"]])
        located = {}
        for key in ("anchor_same", "anchor_edited"):
            anchors = json.loads(client.call(*ops[key][1]()))["anchors"]
            located[key] = (sum(a["start"] is not None for a in anchors), len(anchors))
        only = set(args.only.split(",")) if args.only else None
        rows = [
            (ops[key][0], runs, *timed(client, ops[key][1], runs))
            for key, runs in RUNS.items()
            if only is None or key in only or key == "floor"
        ]
        loads = [
            (ops[key][0], throughput(server, ops[key][1], args.seconds, database))
            for key in THROUGHPUT
            if only is None or key in only
        ]
    finally:
        server.stop()
    return Run(backend, located, rows, loads, (loads_before, os.getloadavg()[0]))


def report(runs: list[Run], args: argparse.Namespace) -> None:
    print(describe())
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    processes = _workers(args.serve_arg or [])
    served = " ".join(["annotate serve", *(args.serve_arg or [])])
    for r in runs:
        print()
        print(f"### {r.backend}")
        print()
        print(
            f"`{served}` (uvicorn, {processes} process{'es' if processes > 1 else ''}) over "
            f"loopback; {args.annotations:,} annotations stored. Located: "
            f"{'/'.join(map(str, r.located['anchor_same']))} on the unchanged page, "
            f"{'/'.join(map(str, r.located['anchor_edited']))} on the edited one (5 quotes "
            f"deleted). Load average {r.load_average[0]:.1f} before, {r.load_average[1]:.1f} after."
        )
        print()
        floor = p(r.rows[0][2], 50)
        print(
            "| one client, keep-alive | runs | p50 ms | p99 ms | p50 / health p50 | errors | "
            "target p50 < 5, p99 < 25 |"
        )
        print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
        for label, n, ms, errors in r.rows:
            ok = p(ms, 50) < P50_TARGET and p(ms, 99) < P99_TARGET and not errors
            print(
                f"| {label} | {n} | {p(ms, 50):.2f} | {p(ms, 99):.2f} | "
                f"{p(ms, 50) / floor:.1f} | {errors} | {'met' if ok else 'missed'} |"
            )
        print()
        print(
            f"| {CLIENTS} concurrent clients, {args.seconds:g} s each | requests | req/s | p50 ms "
            f"| p99 ms | errors | CPU ms a request: client / server / database | CPU floor of "
            f"the p50, ms | target p99 <= {CONCURRENT_P99_TARGET:g} |"
        )
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
        for label, load in r.loads:
            ms, n = load.ms, load.requests
            ok = p(ms, 99) <= CONCURRENT_P99_TARGET and not load.errors
            print(
                f"| {label} | {n:,} | {n / load.seconds:,.0f} | {p(ms, 50):.2f} | "
                f"{p(ms, 99):.2f} | {load.errors} | {load.client_cpu / n * 1000:.2f} / "
                f"{load.server_cpu / n * 1000:.2f} / {load.database_cpu / n * 1000:.2f} | "
                f"{load.floor(cores or 1, processes):.1f} | {'met' if ok else 'missed'} |"
            )
    print()
    print(
        f"CPU floor: {CLIENTS} clients each waiting for its answer keep {CLIENTS} requests in "
        f"flight, which share the {cores} cores ({CLIENTS} x CPU a request / cores) and the "
        f"server's {processes} process{'es' if processes > 1 else ''} (one GIL each: {CLIENTS} x "
        "server CPU a request / processes): the larger is the least p50 any scheduling gives. "
        "Other processes on the machine (its load average) take cores from both."
    )


def _workers(serve_args: list[str]) -> int:
    """The server's processes, from `--workers N` among the arguments passed to it."""
    joined = " ".join(serve_args)
    found = re.search(r"--workers[= ](\d+)", joined)
    return int(found[1]) if found else 1


def _pg_cluster() -> Any:
    """tests/pgcluster.py's `PgCluster`, loaded from this checkout by its path (not as `tests`,
    and without putting the checkout on sys.path: the measured `annotate` is the interpreter's)."""
    path = Path(__file__).resolve().parent.parent / "tests" / "pgcluster.py"
    spec = importlib.util.spec_from_file_location("_pgcluster", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.PgCluster


def _schema(url: str) -> str:
    """A URL whose tables land in a new schema of `url`'s database."""
    import psycopg

    name = f"bench_{secrets.token_hex(4)}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    joiner = "&" if "?" in url else "?"
    return f"{url}{joiner}options=-csearch_path%3D{name}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--annotations", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=3.0, help="per throughput run")
    parser.add_argument(
        "--db",
        help="also run every row on PostgreSQL: `pg` starts a throwaway server "
        "(tests/pgcluster.py), a postgresql:// URL uses that database (a new schema in it)",
    )
    parser.add_argument(
        "--no-fsync", action="store_true", help="`--db pg` without fsync (what the disk costs)"
    )
    parser.add_argument(
        "--serve-arg",
        action="append",
        metavar="ARG",
        help="one more argument for `annotate serve` (repeatable: --serve-arg=--workers "
        "--serve-arg=2)",
    )
    parser.add_argument(
        "--only", help="comma list of row keys to measure (e.g. create,list,anchor_same)"
    )
    parser.add_argument(
        "--reuse", metavar="DIR", help="keep the filled project in DIR and copy it for later runs"
    )
    args = parser.parse_args()
    runs = []
    cluster = None
    try:
        with tempfile.TemporaryDirectory(prefix="annotate-api-bench-") as tmp:
            project = filled(Path(tmp), args.annotations, args.reuse)
            database, db = None, None
            if args.db:
                url = args.db
                if args.db == "pg":
                    cluster = _pg_cluster()(durable=not args.no_fsync)
                    url = cluster.url
                    database = int((cluster.data / "postmaster.pid").read_text().split()[0])
                db = _schema(url)
                copy_store(project, db)  # before the SQLite run adds notes to its file
            runs.append(run("sqlite", project, None, None, args))
            if db is not None:
                runs.append(run("postgresql", project, db, database, args))
    finally:
        if cluster is not None:
            cluster.stop()
    report(runs, args)


if __name__ == "__main__":
    main()

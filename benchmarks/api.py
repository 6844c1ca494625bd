"""The web endpoint over loopback (issue #4): `annotate serve` in a subprocess, 10k stored notes.

    .venv/bin/python benchmarks/api.py [--annotations 10000] [--seconds 3]

A temp project gets a `docs/` folder of Markdown pages (registered the way the MkDocs plugin
registers them) and a built `site/`, and its store is filled through the library
(`Store.add_annotation`, so every note is located in its Markdown like a real one): one busy page
holds 200 text annotations over ~150 kB of text, the others 20 each (10k notes on ~500 pages).
Then `annotate serve site/` runs in a subprocess (uvicorn, one process) and a plain `http.client`
client with keep-alive measures, one request at a time:

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

then throughput with 8 concurrent clients, each on its own connection. Every answer's status is
checked: any other status counts as an error.
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import random
import sys
import tempfile
import threading
import time
from collections.abc import Callable
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
# Issue #4's targets (ms).
P50_TARGET, P99_TARGET = 5.0, 25.0

# -- the project ---------------------------------------------------------------------------------


class Project:
    """Docs, built site and a filled store in `root`."""

    def __init__(self, root: Path, total: int, rng: random.Random) -> None:
        self.root = root
        self.rng = rng
        (root / "docs").mkdir()
        (root / "site").mkdir()
        (root / "mkdocs.yml").write_text("site_name: bench\n")
        self.pages: dict[str, str] = {}
        self.others: list[str] = []
        self.texts: dict[str, tuple[str, list[str]]] = {}
        store = annotate.open(root)
        started = time.perf_counter()

        busy = [sentence(rng) for _ in range(BUSY_SENTENCES)]
        self.busy_text = self._page(BUSY_PAGE, busy)
        chosen = sorted(rng.sample(range(BUSY_SENTENCES), BUSY_NOTES))
        store.register_pages({BUSY_PAGE: "docs/busy.md"})
        for i in chosen:
            store.add_annotation(self.note(BUSY_PAGE, self.busy_text, busy[i]))
        left = total - BUSY_NOTES
        for n in itertools.count(1):
            if left <= 0:
                break
            url = f"/page-{n}/"
            sentences = [sentence(rng) for _ in range(PAGE_SENTENCES)]
            text = self._page(url, sentences)
            store.register_pages({url: self.pages[url]})
            self.others.append(url)
            self.texts[url] = (text, sentences)
            for quote in rng.sample(sentences, min(PER_PAGE, left)):
                store.add_annotation(self.note(url, text, quote))
            left -= PER_PAGE
        store.close()
        print(
            f"… filled the store with {total:,} annotations on {len(self.pages)} pages in "
            f"{time.perf_counter() - started:.0f} s",
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


def throughput(
    server: AnnotateServer, make: Callable[[], Request], seconds: float
) -> tuple[int, float, list[float], int]:
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
    began = time.perf_counter()
    deadline[0] = began + seconds
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - began
    flat = [x for xs in latencies for x in xs]
    return len(flat), len(flat) / elapsed, flat, sum(errors)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--annotations", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=3.0, help="per throughput run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="annotate-api-bench-") as tmp:
        project = Project(Path(tmp), args.annotations, random.Random(SEED))
        server = AnnotateServer(project.root)
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
            rows = [
                (ops[key][0], runs, *timed(client, ops[key][1], runs)) for key, runs in RUNS.items()
            ]
            loads = [
                (ops[key][0], *throughput(server, ops[key][1], args.seconds)) for key in THROUGHPUT
            ]
        finally:
            server.stop()

    print(describe())
    print(
        f"`annotate serve` (uvicorn, 1 process) over loopback; {args.annotations:,} annotations "
        f"stored. Located: {'/'.join(map(str, located['anchor_same']))} on the unchanged page, "
        f"{'/'.join(map(str, located['anchor_edited']))} on the edited one (5 quotes deleted)."
    )
    print()
    floor = p(rows[0][2], 50)
    print(
        "| one client, keep-alive | runs | p50 ms | p99 ms | p50 / health p50 | errors | "
        "target p50 < 5, p99 < 25 |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for label, runs, ms, errors in rows:
        ok = p(ms, 50) < P50_TARGET and p(ms, 99) < P99_TARGET and not errors
        print(
            f"| {label} | {runs} | {p(ms, 50):.2f} | {p(ms, 99):.2f} | "
            f"{p(ms, 50) / floor:.1f} | {errors} | {'met' if ok else 'missed'} |"
        )
    print()
    print(
        f"| {CLIENTS} concurrent clients, {args.seconds:g} s each | requests | req/s | p50 ms | p99 ms | errors |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for label, n, rate, ms, errors in loads:
        print(f"| {label} | {n:,} | {rate:,.0f} | {p(ms, 50):.2f} | {p(ms, 99):.2f} | {errors} |")


if __name__ == "__main__":
    main()

"""The MCP server over stdio (issue #7): `list_annotations` with 10k stored notes.

    .venv/bin/python benchmarks/mcp.py [--annotations 10000] [--runs 30]

A temp project gets Markdown pages with 20 text annotations each (10k notes on 500 pages), made
through the library (`Store.add_annotation`, so each is located in its Markdown like a real one).
The installed `annotate mcp` runs as a subprocess; the SDK's client calls it over stdio, one call at
a time, and each call is timed from request to parsed result (the client's JSON-RPC and pydantic
work included; the tool's text is not parsed again):

- `list_annotations({})`: what an agent asks first. It answers the first 50 notes (the default
  `limit`), with a second text block saying that more match;
- `list_annotations({pageUrl})`: the 20 notes of one page;
- `list_annotations({limit: 10000})`: every note in one answer (compact JSON; 14 MB indented),
  with the SDK's client and again with a plain client that reads the pipe line by line.

Then `show_annotation` (issue #19): its answer in bytes and the time to it, with no view of the page
open (it waits its 1.5 s), with one view acknowledging (a thread of this script that answers the
`show` change as a page does through the change feed: the call returns 0.5 s after the last
answer), and for a resolved note (the answer says why no passage is highlighted).

Each list call is measured with nothing changed, and after 100 Markdown files changed: before every timed
call, 100 files get a line added on top (or removed again), so each of their notes moves by two
lines and must be located again. The 100 always include the files of the notes asked for (the
first page's three files, the one page's file): the worst case for those calls.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

HERE = Path(__file__).resolve().parent
# This file is called mcp.py: its folder, first on sys.path, would shadow the `mcp` package.
while str(HERE) in sys.path:
    sys.path.remove(str(HERE))

from mcp import Client, StdioServerParameters, types  # noqa: E402

import annotate  # noqa: E402

sys.path.append(str(HERE))

from _common import p, selection, sentence  # noqa: E402
from _machine import describe  # noqa: E402

SEED = 7
PER_PAGE = 20
PAGE_SENTENCES = 40
CHANGED = 100
WARMUP = 3
# Issue #7's targets, p50 in ms: nothing changed, and after 100 Markdown files changed.
TARGET_UNCHANGED, TARGET_CHANGED = 50.0, 300.0
TOP = "A line added on top, so that every note below moves.\n\n"


def fill(root: Path, total: int, rng: random.Random) -> list[Path]:
    """Pages and notes; returns the Markdown files in the order their notes were made."""
    (root / "docs").mkdir()
    (root / "mkdocs.yml").write_text("site_name: bench\n")
    store = annotate.open(root)
    files: list[Path] = []
    started = time.perf_counter()
    for n in range(-(-total // PER_PAGE)):
        url, path = f"/page-{n}/", root / "docs" / f"page-{n}.md"
        sentences = [sentence(rng) for _ in range(PAGE_SENTENCES)]
        paragraphs = [" ".join(sentences[i : i + 5]) for i in range(0, PAGE_SENTENCES, 5)]
        path.write_text(f"# Page {n}\n\n" + "\n\n".join(paragraphs) + "\n")
        store.register_pages({url: f"docs/page-{n}.md"})
        files.append(path)
        text = "\n".join(paragraphs)  # the page text as the overlay sees it
        for quote in rng.sample(sentences, min(PER_PAGE, total - n * PER_PAGE)):
            start = text.index(quote)
            end = start + len(quote)
            store.add_annotation(
                {
                    "pageUrl": url,
                    "pageTitle": f"Page {n}",
                    "note": "Say this more plainly.",
                    **selection(text, start, end),
                }
            )
    store.close()
    print(
        f"… filled the store with {total:,} annotations on {len(files)} pages in "
        f"{time.perf_counter() - started:.0f} s",
        file=sys.stderr,
        flush=True,
    )
    return files


def toggle(path: Path) -> None:
    """Add a line on top of the file, or take it away again: every note in it moves."""
    text = path.read_text()
    path.write_text(text[len(TOP) :] if text.startswith(TOP) else TOP + text)


class Changer:
    """Before each call, changes 100 files: `must` ones, and others in turn."""

    def __init__(self, files: list[Path], must: list[Path]) -> None:
        self.must = must
        self.others = [f for f in files if f not in must]
        self.next = 0

    def __call__(self) -> None:
        for f in self.must:
            toggle(f)
        for _ in range(CHANGED - len(self.must)):
            toggle(self.others[self.next % len(self.others)])
            self.next += 1


async def timed(
    client: Client, args: dict[str, Any], runs: int, before: Callable[[], None] | None
) -> tuple[list[float], int]:
    """Milliseconds per call, and how many notes the last answer held."""
    out: list[float] = []
    notes = 0
    for i in range(WARMUP + runs):
        if before is not None:
            before()
        t = time.perf_counter()
        result = await client.call_tool("list_annotations", args)
        ms = (time.perf_counter() - t) * 1000
        if result.is_error:
            raise SystemExit(f"list_annotations {args} failed: {result.content[0].text}")
        notes = len(json.loads(result.content[0].text))
        if i >= WARMUP:
            out.append(ms)
    return out, notes


class RawClient:
    """JSON-RPC over the pipe with a plain line reader, for comparison: the SDK's stdio client
    splits its whole receive buffer again for every 64 kB chunk, which is quadratic in the size of
    one message and dominates a 14 MB answer."""

    def __init__(self, command: list[str]) -> None:
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.ids = itertools.count(1)
        self.request("initialize", {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        })  # fmt: skip
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")  # type: ignore[union-attr]
        self.proc.stdin.flush()  # type: ignore[union-attr]

    def request(self, method: str, params: dict[str, Any]) -> Any:
        id = next(self.ids)
        self.send({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        while True:
            answer = json.loads(self.proc.stdout.readline())  # type: ignore[union-attr]
            if answer.get("id") == id:
                return answer["result"]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        result = self.request("tools/call", {"name": name, "arguments": arguments})
        content = [types.TextContent(type="text", text=c["text"]) for c in result["content"]]
        return types.CallToolResult(content=content, is_error=result.get("isError", False))

    def close(self) -> None:
        self.proc.stdin.close()  # type: ignore[union-attr]
        self.proc.wait(10)
        self.proc.stdout.close()  # type: ignore[union-attr]


async def run(root: Path, files: list[Path], runs: int, full_runs: int) -> list[tuple[Any, ...]]:
    command = [str(Path(sys.executable).parent / "annotate"), "mcp", "--project", str(root)]
    params = StdioServerParameters(command=command[0], args=command[1:])
    middle = len(files) // 2
    page, page_file = f"/page-{middle}/", files[middle]
    everything = {"limit": 10_000}
    cases: list[tuple[str, dict[str, Any], list[Path], int]] = [
        ("first page: `{}` (limit 50)", {}, files[:3], runs),
        (f"one page: `{{pageUrl: {page!r}}}`", {"pageUrl": page}, [page_file], runs),
        ("everything: `{limit: 10000}`", everything, [], full_runs),
    ]
    rows: list[tuple[Any, ...]] = []

    async def measure(client: Any, label: str, args: dict[str, Any], must: list[Path], n: int):
        ms, notes = await timed(client, args, n, None)
        rows.append((label, "nothing changed", n, notes, ms, TARGET_UNCHANGED))
        ms, notes = await timed(client, args, n, Changer(files, must))
        rows.append((label, f"{CHANGED} files changed", n, notes, ms, TARGET_CHANGED))

    async with Client(params, read_timeout_seconds=600) as client:
        for case in cases:
            await measure(client, *case)
    raw = RawClient(command)
    try:
        await measure(raw, "everything, plain line-reading client", everything, [], full_runs)
    finally:
        raw.close()
    return rows


def _acknowledge_next_show(root: Path) -> threading.Thread:
    """A view of the page: acknowledges the next `show` change, as the overlay does."""
    with annotate.open(root) as store:
        seen = store.changes(0, limit=0)[1]

    def view() -> None:
        with annotate.open(root) as store:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                shows = [e for e in store.changes(seen)[0] if e["action"] == "show"]
                if shows:
                    store.acknowledge_show(shows[0]["seq"], "bench", shows[0]["pageUrl"])
                    return
                time.sleep(0.01)

    thread = threading.Thread(target=view, daemon=True)
    thread.start()
    return thread


async def show_sizes(root: Path) -> list[tuple[str, int, float, str]]:
    """(case, answer bytes, seconds to the answer, answer) of show_annotation over stdio."""
    command = [str(Path(sys.executable).parent / "annotate"), "mcp", "--project", str(root)]
    params = StdioServerParameters(command=command[0], args=command[1:])
    with annotate.open(root) as store:
        first, second = (a.id for a in store.list_annotations(limit=2))
        store.accept(second)
    rows = []
    async with Client(params, read_timeout_seconds=60) as client:
        for case, id, views in (
            ("no view of the page open", first, False),
            ("one view acknowledges", first, True),
            ("a resolved note, no view", second, False),
        ):
            thread = _acknowledge_next_show(root) if views else None
            start = time.perf_counter()
            result = await client.call_tool("show_annotation", {"id": id})
            took = time.perf_counter() - start
            if thread:
                thread.join()
            text = result.content[0].text
            rows.append((case, len(text.encode()), took, text))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--annotations", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=30, help="timed calls per case")
    parser.add_argument("--full-runs", type=int, default=5, help="… for the 10k-note answer")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="annotate-mcp-bench-") as tmp:
        root = Path(tmp)
        files = fill(root, args.annotations, random.Random(SEED))
        rows = anyio.run(run, root, files, args.runs, args.full_runs)
        shows = anyio.run(show_sizes, root)

    print(describe())
    print(
        f"`annotate mcp` over stdio, the SDK's client; {args.annotations:,} annotations on "
        f"{len(files)} pages. Targets (issue #7): p50 < {TARGET_UNCHANGED:g} ms unchanged, "
        f"< {TARGET_CHANGED:g} ms after {CHANGED} files changed."
    )
    print()
    print("| list_annotations | Markdown | runs | notes answered | p50 ms | p99 ms | target |")
    print("| --- | --- | ---: | ---: | ---: | ---: | --- |")
    for label, state, runs, notes, ms, target in rows:
        verdict = f"< {target:g}: {'met' if p(ms, 50) < target else 'missed'}"
        print(
            f"| {label} | {state} | {runs} | {notes:,} | {p(ms, 50):.1f} | {p(ms, 99):.1f} | "
            f"{verdict} |"
        )
    print()
    print("| show_annotation | answer bytes | answer after s |")
    print("| --- | ---: | ---: |")
    for case, size, took, _ in shows:
        print(f"| {case} | {size} | {took:.2f} |")
    print()
    print("Answers (compact, as the tool sends them):")
    for case, _, _, text in shows:
        print(f"- {case}: `{json.dumps(json.loads(text), ensure_ascii=False)}`")


if __name__ == "__main__":
    main()

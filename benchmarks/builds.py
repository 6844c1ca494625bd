"""Notes that record their build (issue #20, item 6): what `build` costs in bytes and in time.

    .venv/bin/python benchmarks/builds.py [--pages 50] [--per-page 20] [--runs 30]

A temp project in a real git repository (branch `main`) gets `--pages` Markdown pages of prose and
`--per-page` text notes on each, made through the library (`Store.add_annotation`, located in
their Markdown like real ones), three times over in three copies of the project:

- no build: notes made by a store without one (`build: null`, what a project outside git gets);
- made on HEAD: notes made by a store serving the checkout's build (`build: {branch, commit}`);
- re-anchored: the same, read after a newer commit of `main` that leaves their files alone, so
  every note says `anchoredOn`.

Sizes, in bytes, of what an agent and the overlay read: the MCP tool `list_annotations({})` (the
first 50 notes, the tool's text through the SDK's client in memory) and one page's listing as the
web API answers it (`Store.list_annotations(page, as_json=True)`).

Times (medians of `--runs`, in-process), for listing one page as the web API does:
the store with no build (baseline), serving the build the notes were made on (the extra query that
looks for notes made on an older commit of the branch finds none), and after a newer commit:
its first read (every note of the page located again in an unchanged file) and the reads after
it. And one `annotate.build.current` (a `git rev-parse`), which a server pays at most every 2 s.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

HERE = Path(__file__).resolve().parent
sys.path.remove(str(HERE))  # `mcp.py` next to this file would shadow the `mcp` package
from mcp import Client  # noqa: E402

sys.path.insert(0, str(HERE))
from _common import selection, sentence  # noqa: E402
from _machine import describe  # noqa: E402

import annotate  # noqa: E402
from annotate import build  # noqa: E402
from annotate.compose import build_server  # noqa: E402
from annotate.models import Build  # noqa: E402


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=Bench", "-c", "user.email=bench@example.com", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def project(root: Path, pages: int, per_page: int, rng: random.Random) -> list[dict[str, Any]]:
    """The Markdown pages, committed on `main`; the notes to make (one dict each)."""
    (root / "mkdocs.yml").write_text("site_name: bench\n")
    (root / ".gitignore").write_text(".annotate/\n")
    notes = []
    for i in range(pages):
        paragraphs = [" ".join(sentence(rng) for _ in range(3)) for _ in range(per_page)]
        (root / "docs").mkdir(exist_ok=True)
        (root / "docs" / f"page{i}.md").write_text(f"# Page {i}\n\n" + "\n\n".join(paragraphs))
        text = "\n".join(paragraphs)
        offset = 0
        for paragraph in paragraphs:
            start = offset + paragraph.index(" ") + 1
            picked = selection(text, start, start + 40)
            notes.append({"type": "text", "pageUrl": f"/page{i}/", "note": "Check this.", **picked})
            offset += len(paragraph) + 1
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "pages")
    return notes


def median_ms(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


async def mcp_bytes(root: Path) -> int:
    async with Client(build_server(root)) as client:
        result = await client.call_tool("list_annotations", {})
        return len(result.content[0].text.encode())  # type: ignore[union-attr]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=50)
    parser.add_argument("--per-page", type=int, default=20)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    rng = random.Random(20)
    tmp = Path(tempfile.mkdtemp(prefix="annotate-builds-"))
    try:
        first = tmp / "none"
        first.mkdir()
        notes = project(first, args.pages, args.per_page, rng)
        made, moved = tmp / "made", tmp / "moved"
        for copy in (made, moved):
            shutil.copytree(first, copy)
        for root, source in ((first, None), (made, "auto"), (moved, "auto")):
            with annotate.open(root, build=source) as store:  # type: ignore[arg-type]
                for note in notes:
                    store.add_annotation(note)
        # A newer commit of `main` that leaves the pages alone.
        (moved / "README.md").write_text("A newer build.\n")
        git(moved, "add", "-A")
        git(moved, "commit", "-q", "-m", "newer")

        page = "/page3/"
        sizes = {}
        for name, root in (("no build", first), ("made on HEAD", made), ("re-anchored", moved)):
            with annotate.open(root, build="auto") as store:
                one_page = len(store.list_annotations(page, as_json=True).encode())
            sizes[name] = (anyio.run(mcp_bytes, root), one_page)
        print(describe())
        print(f"{len(notes)} notes on {args.pages} pages; sizes in bytes")
        print(f"{'':<14}{'MCP list_annotations({})':>26}{'web API, one page':>20}")
        base = sizes["no build"]
        for name, (tool, listing) in sizes.items():
            print(
                f"{name:<14}{tool:>18} ({(tool - base[0]) / 50:+.0f}/note)"
                f"{listing:>12} ({(listing - base[1]) / args.per_page:+.0f}/note)"
            )

        with annotate.open(first) as store:
            baseline = median_ms(lambda: store.list_annotations(page, as_json=True), args.runs)
        with annotate.open(made, build="auto") as store:
            same = median_ms(lambda: store.list_annotations(page, as_json=True), args.runs)
        with annotate.open(made) as store:
            store.build = build.current(made)
            # Each run: a newer commit as the served build, then read (first) and read again.
            firsts, afters = [], []
            for i in range(args.runs):
                store.build = Build("main", f"{i:012x}")
                firsts.append(median_ms(lambda: store.list_annotations(page, as_json=True), 1))
                afters.append(median_ms(lambda: store.list_annotations(page, as_json=True), 1))
        git_ms = median_ms(lambda: build.current(made, env={}), args.runs)
        print()
        print(f"list one page ({args.per_page} notes), web API; median of {args.runs} runs, ms")
        rows = [
            ("no build (baseline)", baseline),
            ("serving the notes' build", same),
            ("newer commit, first read", statistics.median(firsts)),
            ("newer commit, reads after", statistics.median(afters)),
        ]
        for name, ms in rows:
            print(f"{name:<28}{ms:>8.2f}{ms / baseline:>8.2f}x")
        print(f"{'build.current (git)':<28}{git_ms:>8.2f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

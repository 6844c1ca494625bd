"""The review view in the chat (issue #19; docs/chat.md): its size, the time from `open_review`
to the page painted, and the answer sizes of its tools.

    .venv/bin/python benchmarks/chat.py [--runs 10] [--notes 20]

The Material fixture site (tests/fixtures/sites/material) is built with `mkdocs build` into a temp
project with `--notes` text notes on its home page. Then:

- **size**: the view (`ui://annotate/review.html`) raw and gzipped, against the browser overlay's
  script and stylesheet as `annotate serve` sends them (the same-run baseline: the view is the
  overlay plus its bridge, its page style and the HTML around them);
- **time to painted**: in Chromium, the host emulator of the tests (tests/browser/chathost/)
  with a real `annotate mcp` over stdio: from the agent's `open_review` call, through
  `resources/read`, the frame, `ui/initialize`, the tool result, `chat_page` and the overlay's
  first `chat_api` calls, to the overlay's `annotate:painted` mark in the view; against the
  baseline, the same page with the overlay under `annotate serve`, from `goto` to the same mark;
- **show_annotation with a view open**: once the page is painted, the agent's `show_annotation`
  of a note on it (through the same `annotate mcp` the view talks to): the time to its answer and
  how many views it reached, in the chat view and, as the baseline, in the browser overlay;
- **answer sizes** (bytes of the JSON-RPC result as the client gets it): what the model reads of
  `open_review` and `show_annotation`, and what the view's app-only tools answer, against
  `list_annotations` of the same page.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# benchmarks/mcp.py, first on sys.path with its folder, would shadow the `mcp` package.
while str(HERE) in sys.path:
    sys.path.remove(str(HERE))
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

import annotate  # noqa: E402
from annotate.chatview import view_html  # noqa: E402
from annotate.devserver import free_port  # noqa: E402
from annotate.web.static import find_overlay_dir, overlay_asset  # noqa: E402
from tests.browser.chathost import FULL_CAPS, HostServer, McpSession  # noqa: E402

sys.path.append(str(HERE))

from _common import CHROMIUM, CHROMIUM_ARGS, AnnotateServer  # noqa: E402
from _machine import describe  # noqa: E402

SITE = ROOT / "tests" / "fixtures" / "sites" / "material"
QUOTES = ("fixture site", "bold words", "inline code", "apples", "oranges", "lighthouses")
PAINTED = "() => performance.getEntriesByName('annotate:painted').length > 0"


def project(folder: Path, notes: int) -> Path:
    shutil.copytree(SITE, folder)
    with (folder / "mkdocs.yml").open("a") as f:
        f.write(f"dev_addr: 127.0.0.1:{free_port()}\n")  # no review server is found there
    subprocess.run(
        [str(Path(sys.executable).parent / "mkdocs"), "build", "-q"],
        cwd=folder,
        check=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    with annotate.open(folder) as store:
        for i in range(notes):
            quote = QUOTES[i % len(QUOTES)]
            store.add_annotation(
                {"type": "text", "pageUrl": "/", "note": f"Note {i}.", "selectedText": quote}
            )
    return folder


def size(data: dict[str, object]) -> int:
    return len(json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode())


def show(session: McpSession, id: str) -> tuple[float, int, dict[str, Any]]:
    """The agent's show_annotation of `id`: (ms to the answer, views reached, the result)."""
    start = time.perf_counter()
    result = session.call("show_annotation", {"id": id})
    took = (time.perf_counter() - start) * 1000
    assert not result.get("isError"), result
    return took, json.loads(result["content"][0]["text"])["views"], result


def row(name: str, ms: list[float], base: float) -> str:
    med = statistics.median(ms)
    return f"| {name} | {med:.0f} | {min(ms):.0f} | {max(ms):.0f} | {med / base:.2f} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--notes", type=int, default=20)
    args = parser.parse_args()
    print(describe())

    view = view_html().encode()
    overlay = find_overlay_dir()
    assert overlay is not None
    assets = [overlay_asset(overlay, n) for n in ("annotate.js", "annotate.css")]
    base_raw = sum(len(a.body) for a in assets if a)
    base_gz = sum(len(a.gzipped) for a in assets if a)
    view_gz = len(gzip.compress(view, 9, mtime=0))
    print("\n| what | bytes | gzipped | gzipped vs overlay |")
    print("| --- | ---: | ---: | ---: |")
    print(f"| browser overlay (annotate.js + annotate.css) | {base_raw:,} | {base_gz:,} | 1.00 |")
    print(
        f"| chat view (ui://annotate/review.html) | {len(view):,} | {view_gz:,} | "
        f"{view_gz / base_gz:.2f} |"
    )

    with tempfile.TemporaryDirectory() as tmp:
        root = project(Path(tmp) / "project", args.notes)
        session = McpSession(root).start()
        host = HostServer(session)
        server = AnnotateServer(root)
        with annotate.open(root) as store:
            shown_id = store.list_annotations("/")[0].id
        chat_ms: list[float] = []
        browser_ms: list[float] = []
        chat_show: list[float] = []
        browser_show: list[float] = []
        reached: set[int] = set()
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                for run in range(args.runs + 1):
                    context = browser.new_context(viewport={"width": 1200, "height": 800})
                    page = context.new_page()
                    page.goto(host.url)
                    start = time.perf_counter()
                    result = session.call("open_review", {"pageUrl": "/"})
                    page.evaluate(
                        "(s) => hostStart(s)",
                        {
                            "html": session.view_html(),
                            "caps": FULL_CAPS,
                            "input": {"pageUrl": "/"},
                            "result": result,
                            "context": {"theme": "light"},
                        },
                    )
                    page.wait_for_function("() => frames.length === 1")
                    page.main_frame.child_frames[0].wait_for_function(PAINTED, timeout=20000)
                    chat = (time.perf_counter() - start) * 1000
                    chat_took, chat_views, shown = show(session, shown_id)
                    context.close()

                    context = browser.new_context(viewport={"width": 1200, "height": 800})
                    page = context.new_page()
                    start = time.perf_counter()
                    page.goto(server.url)
                    page.wait_for_function(PAINTED, timeout=20000)
                    plain = (time.perf_counter() - start) * 1000
                    browser_took, browser_views, _ = show(session, shown_id)
                    context.close()
                    if run:  # the first run warms both up
                        chat_ms.append(chat)
                        browser_ms.append(plain)
                        chat_show.append(chat_took)
                        browser_show.append(browser_took)
                        reached |= {chat_views, browser_views}
                browser.close()

            answers = {
                "open_review (what the model reads)": session.call("open_review", {"pageUrl": "/"}),
                "show_annotation (what the model reads; one view reached)": shown,
                "list_annotations {pageUrl: /} (for comparison)": session.call(
                    "list_annotations", {"pageUrl": "/"}
                ),
                "chat_page (view only: the page)": session.call("chat_page", {"pageUrl": "/"}),
                "chat_api GET annotations?page=/ (view only)": session.call(
                    "chat_api", {"method": "GET", "path": "annotations?page=/&status=all"}
                ),
                "chat_api GET changes?since=0 (view only)": session.call(
                    "chat_api", {"method": "GET", "path": "changes?since=0&timeout=0"}
                ),
            }
        finally:
            server.stop()
            host.stop()
            session.stop()

    med_browser = statistics.median(browser_ms)
    print(f"\nTime to the page painted, {args.notes} notes on it, median of {args.runs} runs (ms):")
    print("\n| what | median | min | max | vs browser |")
    print("| --- | ---: | ---: | ---: | ---: |")
    print(row("browser overlay on annotate serve: goto → painted", browser_ms, med_browser))
    print(row("chat view in the emulator: open_review → painted", chat_ms, med_browser))

    base_show = statistics.median(browser_show)
    print(f"\nshow_annotation with one view of the page open, median of {args.runs} runs (ms):")
    print("\n| the view open | median | min | max | vs browser |")
    print("| --- | ---: | ---: | ---: | ---: |")
    print(row("browser overlay on annotate serve", browser_show, base_show))
    print(row("chat view in the emulator", chat_show, base_show))
    print(f"\nViews each call reached: {sorted(reached)} (1 expected: one view open at a time)")

    print("\nAnswer sizes (bytes of the tool result as JSON):")
    print("\n| tool call | result | model-visible text |")
    print("| --- | ---: | ---: |")
    for name, result in answers.items():
        text = sum(len(c.get("text", "").encode()) for c in result.get("content", []))
        print(f"| {name} | {size(result):,} | {text:,} |")


if __name__ == "__main__":
    main()

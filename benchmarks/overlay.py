"""The browser overlay (issue #5): its size, and how fast it paints a long page's highlights.

    .venv/bin/python benchmarks/overlay.py [--runs 15]

Size: the overlay's sources (`overlay/src/`) and `annotate.css`, raw and gzipped (level 9), as
written and as the server sends them (`annotate.js` joined from the sources and minified by rjsmin,
the stylesheet minified, both gzipped),
against astro-inline-review's client (100 KB raw, 20 KB gzip) and the targets of issue #5.

Paint: a temp MkDocs (Material) project with copies of one long page (1,000 paragraphs, ~220 kB of
page text), holding 10, 100 and 500 text annotations, made through the library
(`Store.add_annotation`, so each is located in its Markdown like a real one), positions taken from
the page text the overlay itself measures. `annotate serve site/` runs in a subprocess; Debian's
Chromium loads each page `--runs` times in a fresh context and reads the time from
DOMContentLoaded to the overlay's `performance.mark('annotate:painted')` (set once the notes are
fetched, the anchor route has answered and every highlight is registered). "first" is the first
load (the server has not seen that page text yet, so the anchor route locates every note), the
median and p90 are over the reloads that follow (the anchor answer is remembered), as for a
reviewer going back and forth. The same page is also measured as plain HTML (the same paragraphs in a
`<main>`, no theme JavaScript): Material's own start-up work after DOMContentLoaded runs on the same
main thread, so the plain rows show the overlay's part alone.
"""

from __future__ import annotations

import argparse
import gzip
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import CHROMIUM, CHROMIUM_ARGS, AnnotateServer, selection, sentence
from _machine import describe
from playwright.sync_api import Browser, sync_playwright

import annotate
from annotate.web.static import OVERLAY_CHUNKS, OVERLAY_SOURCES, SHADOW_CSS, overlay_asset

ROOT = Path(__file__).resolve().parent.parent
OVERLAY = ROOT / "overlay"
SEED = 5
COUNTS = (10, 100, 500)
PARAGRAPHS = 1_000
# astro-inline-review's client, and issue #5's targets.
PEER_RAW, PEER_GZIP = 100_000, 20_000
TARGET_RAW, TARGET_GZIP = 60_000, 15_000
TARGET_PAINT_MS = 150.0  # at 500 annotations


def sizes() -> list[tuple[str, int, int]]:
    """(file, raw, gzip) of the sources, then as `annotate serve` sends them (joined, minified)."""
    src = OVERLAY / "src"
    script = b"".join((src / n).read_bytes() for n in (SHADOW_CSS, *OVERLAY_SOURCES))
    page_css = (OVERLAY / "annotate.css").read_bytes()
    rows = [
        (f"src/*.js, src/{SHADOW_CSS} (source)", len(script), len(gzip.compress(script, 9))),
        ("annotate.css (source)", len(page_css), len(gzip.compress(page_css, 9))),
    ]
    for name in ("annotate.js", "annotate.css"):
        asset = overlay_asset(OVERLAY, name)
        assert asset is not None
        rows.append((f"{name} (served)", len(asset.body), len(asset.gzipped)))
    rows.append(("first load served", sum(r[1] for r in rows[2:]), sum(r[2] for r in rows[2:])))
    # Loaded on first use (issue #31): not part of the first load.
    for chunk in OVERLAY_CHUNKS:
        asset = overlay_asset(OVERLAY, chunk + ".js")
        assert asset is not None
        rows.append((f"{chunk}.js (served on first use)", len(asset.body), len(asset.gzipped)))
    return rows


def make_project(root: Path, rng: random.Random) -> list[list[str]]:
    """docs/long-N.md for each N, built with Material; returns the paragraphs' sentences."""
    (root / "docs").mkdir(parents=True)
    (root / "mkdocs.yml").write_text(
        "site_name: bench\nsite_url: http://127.0.0.1/\ntheme:\n  name: material\n  font: false\n"
    )
    paragraphs = [[sentence(rng, 8, 16) for _ in range(3)] for _ in range(PARAGRAPHS)]
    body = []
    for i, p in enumerate(paragraphs):
        if i % 50 == 0:
            body.append(f"## Section {i // 50 + 1}\n")
        body.append(" ".join(p) + "\n")
    text = "# A long page\n\n" + "\n".join(body)
    (root / "docs" / "index.md").write_text("# Bench\n\nSee the long pages.\n")
    for n in COUNTS:
        (root / "docs" / f"long-{n}.md").write_text(text)
    subprocess.run(
        [str(Path(sys.executable).parent / "mkdocs"), "build", "-q", "-d", str(root / "site")],
        cwd=root,
        check=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    html = "".join(f"<p>{' '.join(p)}</p>\n" for p in paragraphs)
    for n in COUNTS:
        folder = root / "site" / f"plain-{n}"
        folder.mkdir()
        (folder / "index.html").write_text(
            "<!doctype html><html><head><meta charset=utf-8><title>A long page</title>"
            f"<link rel=icon href='data:,'></head><body><main><h1>A long page</h1>\n{html}"
            "</main></body></html>"
        )
    return paragraphs


PAINTED = """() => {
  const mark = performance.getEntriesByName('annotate:painted')[0];
  const nav = performance.getEntriesByType('navigation')[0];
  const h = CSS.highlights.get('annotate');
  return {ms: mark.startTime - nav.domContentLoadedEventStart, painted: h ? h.size : 0};
}"""


def page_text(browser: Browser, url: str) -> str:
    context = browser.new_context()
    page = context.new_page()
    page.goto(url)
    page.wait_for_function("() => window.annotateOverlay")
    text: str = page.evaluate("annotateOverlay.pageText()")
    context.close()
    return text


def fill(project: Path, url: str, text: str, paragraphs: list[list[str]], n: int) -> None:
    rng = random.Random(SEED + n)
    chosen = sorted(rng.sample(range(len(paragraphs)), n))
    with annotate.open(project) as store:
        for i in chosen:
            quote = paragraphs[i][1]
            start = text.index(quote)
            end = start + len(quote)
            store.add_annotation(
                {
                    "type": "text",
                    "pageUrl": url,
                    "pageTitle": "A long page",
                    "note": f"Note on paragraph {i}.",
                    **selection(text, start, end),
                }
            )


def measure(browser: Browser, url: str, n: int, runs: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(runs + 1):
        context = browser.new_context()
        page = context.new_page()
        page.goto(url)
        page.wait_for_function(
            "() => performance.getEntriesByName('annotate:painted').length > 0", timeout=30_000
        )
        result = page.evaluate(PAINTED)
        context.close()
        if result["painted"] != n:
            raise SystemExit(f"{url}: {result['painted']} highlights painted, expected {n}")
        times.append(result["ms"])
    return times[0], times[1:]


def p(values: list[float], pct: int) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(pct / 100 * (len(values) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="reloads per page (default 15)")
    args = parser.parse_args()

    print(describe())
    rows = sizes()
    print()
    print("| overlay file | raw bytes | gzip bytes |")
    print("| --- | ---: | ---: |")
    for name, raw, gz in rows:
        print(f"| {name} | {raw:,} | {gz:,} |")
    _, raw, gz = next(r for r in rows if r[0] == "first load served")
    print(
        f"| astro-inline-review client | {PEER_RAW:,} | {PEER_GZIP:,} |\n"
        f"| target | ≤ {TARGET_RAW:,} | ≤ {TARGET_GZIP:,} |"
    )

    rng = random.Random(SEED)
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "project"
        started = time.perf_counter()
        paragraphs = make_project(project, rng)
        server = AnnotateServer(project)
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                print()
                print(f"Chromium {browser.version}")
                results = []
                for kind, prefix in (("Material", "long"), ("plain HTML", "plain")):
                    for n in COUNTS:
                        url = f"/{prefix}-{n}/"
                        text = page_text(browser, server.url + url.lstrip("/"))
                        fill(project, url, text, paragraphs, n)
                        first, times = measure(browser, server.url + url.lstrip("/"), n, args.runs)
                        results.append((kind, n, len(text), first, times))
                browser.close()
        finally:
            server.stop()
        setup = time.perf_counter() - started

    print(f"(set-up and runs: {setup:.0f} s)")
    print()
    print("DOMContentLoaded → highlights painted:")
    print()
    print(
        f"| page | annotations | page text | runs | first ms | median ms | p90 ms | "
        f"target < {TARGET_PAINT_MS:.0f} ms at 500 |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for kind, n, length, first, times in results:
        med = statistics.median(times)
        verdict = ("ok" if med < TARGET_PAINT_MS else "MISSED") if n == 500 else ""
        print(
            f"| {kind} | {n} | {length / 1000:.0f} kB | {len(times)} | {first:.1f} | {med:.1f} | "
            f"{p(times, 90):.1f} | {verdict} |"
        )
    size_ok = raw <= TARGET_RAW and gz <= TARGET_GZIP
    print()
    print(
        f"size: {raw / 1000:.1f} KB raw, {gz / 1000:.1f} KB gzip ({'ok' if size_ok else 'MISSED'})"
    )


if __name__ == "__main__":
    main()

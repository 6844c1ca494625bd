"""The plan gate's costs (issue #29): from the hook starting to the review page painted, and the
word diff of two revisions.

    .venv/bin/python benchmarks/plans.py [--runs 5]

1. **Hook start → page painted.** `annotate hook plan --no-browser` is started as Claude Code starts
   it, with a 30 kB plan (and, as the baseline in the same run, a 1 kB one) on stdin; Chromium
   (Playwright, /usr/bin/chromium) opens the address the hook prints on stderr and waits for the
   overlay's `annotate:painted` mark. The clock runs from `Popen` to that mark. The page is then
   approved and the hook's exit awaited (not timed). `annotate --version` in the same run is the
   cost of starting Python and importing the package.
2. **Revision diff.** `annotate.documents.word_diff_html` of a 100 kB Markdown file against a
   revision with one sentence in fifty changed, against the baseline of a plain line diff
   (`difflib.unified_diff`) of the same two texts; and the whole revision page
   (`docserver.plan_page`: render plus diff).
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
while str(HERE) in sys.path:
    sys.path.remove(str(HERE))
sys.path.insert(0, str(HERE.parent))

from benchmarks._common import sentence  # noqa: E402
from benchmarks._machine import describe  # noqa: E402

ANNOTATE = Path(sys.executable).parent / "annotate"
CHROMIUM = "/usr/bin/chromium"


def plan_text(size: int, rng: random.Random) -> str:
    """A plan of about `size` bytes: headings, numbered steps, a table and a code block."""
    parts = ["# Migration plan\n"]
    n = 0
    while sum(len(p) for p in parts) < size:
        n += 1
        parts.append(f"\n## Step {n}\n\n")
        parts += [f"{i}. {sentence(rng)}\n" for i in range(1, 6)]
        if n % 4 == 0:
            parts.append("\n| file | change |\n| --- | --- |\n| a.py | rename |\n")
        if n % 5 == 0:
            parts.append("\n```python\ndef step():\n    return 1\n```\n")
    return "".join(parts)


def hook_to_painted(project: Path, plan: str, browser: object) -> float:
    payload = json.dumps(
        {"session_id": f"b{time.monotonic_ns()}", "cwd": str(project), "tool_input": {"plan": plan}}
    )
    start = time.perf_counter()
    proc = subprocess.Popen(
        [str(ANNOTATE), "hook", "plan", "--no-browser", "--timeout", "120"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=project,
    )
    assert proc.stdin is not None and proc.stderr is not None
    proc.stdin.write(payload)
    proc.stdin.close()
    proc.stdin = None
    url = proc.stderr.readline().rsplit(" at ", 1)[1].strip()
    context = browser.new_context()  # type: ignore[attr-defined]
    page = context.new_page()
    page.goto(url)
    page.wait_for_function(
        "() => performance.getEntriesByName('annotate:painted').length > 0", timeout=60_000
    )
    took = time.perf_counter() - start
    page.get_by_role("button", name="Review panel").click()
    region = page.locator("#annotate-panel").get_by_role("region", name="Send to agent")
    region.get_by_label("Verdict").select_option("approve")
    region.get_by_role("button", name="Send to agent").click()
    proc.communicate(timeout=60)
    context.close()
    return took


def version_start(runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([str(ANNOTATE), "--version"], capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(29)
    print(describe())

    from playwright.sync_api import sync_playwright

    big, small = plan_text(30_000, rng), plan_text(1_000, rng)
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        project = Path(tmp)
        (project / "mkdocs.yml").write_text("site_name: bench\n")
        (project / "docs").mkdir()
        browser = p.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--headless", "--disable-gpu"]
        )
        os.environ["ANNOTATE_NO_BROWSER"] = "1"
        hook_to_painted(project, small, browser)  # warm: the store made, files cached
        rows = []
        for label, plan in (("1 kB plan (baseline)", small), ("30 kB plan", big)):
            times = [hook_to_painted(project, plan, browser) for _ in range(args.runs)]
            rows.append((label, len(plan), statistics.median(times)))
        browser.close()
        python = version_start(args.runs)
    base = rows[0][2]
    print(f"\nHook start → page painted (median of {args.runs}):\n")
    print("| plan | bytes | median ms | vs 1 kB |")
    print("| --- | ---: | ---: | ---: |")
    print(
        f"| `annotate --version` (Python + import) | | {python * 1000:.0f} | {python / base:.2f}× |"
    )
    for label, size, t in rows:
        print(f"| {label} | {size:,} | {t * 1000:.0f} | {t / base:.2f}× |")

    from annotate import documents
    from annotate.docserver import plan_page
    from annotate.plans import Plan, Revision

    old = plan_text(100_000, rng)
    lines = old.splitlines(keepends=True)
    new_lines = [
        (sentence(rng) + "\n") if i % 50 == 7 and line[:1].isdigit() else line
        for i, line in enumerate(lines)
    ]
    new = "".join(new_lines)

    def timed(fn: object, runs: int) -> float:
        out = []
        for _ in range(runs):
            start = time.perf_counter()
            fn()  # type: ignore[operator]
            out.append(time.perf_counter() - start)
        return statistics.median(out)

    line_diff = timed(lambda: list(difflib.unified_diff(lines, new_lines)), args.runs)
    word = timed(lambda: documents.word_diff_html(old, new), args.runs)
    plan = Plan(
        "pl_bench", "file:big.md", "Big", None, "t", "t",
        (Revision("pl_bench", 1, old, "t", "request_changes"), Revision("pl_bench", 2, new, "t")),
    )  # fmt: skip
    page = timed(lambda: plan_page(plan, 2, source="big.md"), args.runs)
    print(
        f"\nRevision diff of a {len(old):,}-byte file, {len(lines):,} lines (median of {args.runs}):\n"
    )
    print("| what | median ms | vs line diff |")
    print("| --- | ---: | ---: |")
    print(f"| `difflib.unified_diff`, lines (baseline) | {line_diff * 1000:.1f} | 1.00× |")
    print(f"| `word_diff_html` | {word * 1000:.1f} | {word / line_diff:.1f}× |")
    print(f"| `plan_page` (render + diff) | {page * 1000:.1f} | {page / line_diff:.1f}× |")


if __name__ == "__main__":
    main()

"""The MkDocs plugin's cost (issue #6): `mkdocs build` of the project's docs/ with the plugin enabled
vs without it, and page load time with vs without the overlay under `mkdocs serve`.

    .venv/bin/python benchmarks/build.py [--runs 15] [--loads 20]

A temp copy of `mkdocs.yml` and `docs/` gets two configs: `with.yml` (the project's own, plugin
enabled, default options) and `without.yml` (the plugin removed). Builds alternate between the two
(A B B A …) so drift in the machine's speed hits both alike, and the table shows the medians and
their ratio (target ≤ 1.05):

- in-process: `load_config` + `build`, as MkDocs' `build` command runs them, after one warm-up
  build each (imports done);
- command: `mkdocs build` in a fresh process each time, imports included.

Then both configs run under `mkdocs serve` side by side and Chromium (Debian's, through Playwright)
loads a few pages from each in turn, requests to other hosts refused: the time to the `load` event
(Navigation Timing) with and without the overlay, and with it the time until the overlay has
painted the page's notes (`annotate:painted`); plus the time to fetch the HTML alone (the
injection at response time).
"""

from __future__ import annotations

import argparse
import http.client
import logging
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import CHROMIUM, CHROMIUM_ARGS
from _machine import describe

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
PAGES = ("/", "/getting-started/", "/http-api/")
TARGET = 1.05
ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}


def make_project(folder: Path) -> dict[str, Path]:
    """`with.yml` and `without.yml` beside a copy of docs/."""
    shutil.copytree(ROOT / "docs", folder / "docs")
    config = (ROOT / "mkdocs.yml").read_text()
    if not re.search(r"^  - annotate$", config, re.M):
        raise SystemExit("mkdocs.yml does not enable the annotate plugin")
    (folder / "with.yml").write_text(config)
    (folder / "without.yml").write_text(re.sub(r"^  - annotate\n", "", config, flags=re.M))
    return {"with": folder / "with.yml", "without": folder / "without.yml"}


def alternate(runs: int, measure: Callable[[str], float]) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"with": [], "without": []}
    for i in range(runs):
        order = ("with", "without") if i % 2 == 0 else ("without", "with")
        for name in order:
            times[name].append(measure(name))
    return times


def build_in_process(configs: dict[str, Path], site: Path, runs: int) -> dict[str, list[float]]:
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    logging.getLogger("mkdocs").setLevel(logging.ERROR)

    def measure(name: str) -> float:
        start = time.perf_counter()
        config = load_config(str(configs[name]), site_dir=str(site / name))
        config.plugins.on_startup(command="build", dirty=False)
        build(config)
        config.plugins.on_shutdown()
        return time.perf_counter() - start

    measure("with"), measure("without")  # warm-up: imports, theme files
    return alternate(runs, measure)


def build_command(configs: dict[str, Path], site: Path, runs: int) -> dict[str, list[float]]:
    def measure(name: str) -> float:
        start = time.perf_counter()
        subprocess.run(
            [str(BIN / "mkdocs"), "build", "-q", "-f", str(configs[name]), "-d", str(site / name)],
            check=True,
            env=ENV,
            capture_output=True,
        )
        return time.perf_counter() - start

    return alternate(runs, measure)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Serve:
    """`mkdocs serve -f CONFIG` on a free port."""

    def __init__(self, config: Path) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen(
            [str(BIN / "mkdocs"), "serve", "-f", str(config), "-a", f"127.0.0.1:{self.port}"],
            cwd=config.parent,
            env=ENV,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                self.fetch("/")
                break
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise SystemExit(f"mkdocs serve -f {config.name} did not start") from None
                time.sleep(0.1)

    def fetch(self, path: str) -> bytes:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request("GET", path)
            return conn.getresponse().read()
        finally:
            conn.close()

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def page_loads(configs: dict[str, Path], loads: int) -> dict[str, dict[str, list[float]]]:
    """Per page: `load` ms without / with the overlay, `painted` ms, HTML fetch ms."""
    servers = {name: Serve(config) for name, config in configs.items()}
    results: dict[str, dict[str, list[float]]] = {
        page: {k: [] for k in ("load_without", "load_with", "painted", "html_without", "html_with")}
        for page in PAGES
    }
    try:
        for i in range(loads):
            for page in PAGES:
                order = ("with", "without") if i % 2 == 0 else ("without", "with")
                for name in order:
                    start = time.perf_counter()
                    servers[name].fetch(page)
                    results[page][f"html_{name}"].append((time.perf_counter() - start) * 1000)
        if not Path(CHROMIUM).exists():
            print(f"({CHROMIUM} not found: no browser page loads)")
            return results
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            context = browser.new_context(viewport={"width": 1400, "height": 900})
            context.route(re.compile(r"^https?://(?!127\.0\.0\.1)"), lambda route: route.abort())
            tab = context.new_page()
            for i in range(loads + 1):  # the first round warms the browser's caches up
                for page in PAGES:
                    order = ("with", "without") if i % 2 == 0 else ("without", "with")
                    for name in order:
                        tab.goto(f"http://127.0.0.1:{servers[name].port}{page}")
                        tab.wait_for_load_state("load")
                        if name == "with":
                            tab.wait_for_function(
                                "() => performance.getEntriesByName('annotate:painted').length"
                            )
                        timing = tab.evaluate(
                            """() => {
                              const n = performance.getEntriesByType('navigation')[0];
                              const p = performance.getEntriesByName('annotate:painted')[0];
                              return [n.loadEventEnd, p ? p.startTime : null];
                            }"""
                        )
                        if i == 0:
                            continue
                        results[page][f"load_{name}"].append(timing[0])
                        if name == "with" and timing[1] is not None:
                            results[page]["painted"].append(timing[1])
            browser.close()
    finally:
        for server in servers.values():
            server.stop()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="builds of each config (default 15)")
    parser.add_argument("--loads", type=int, default=20, help="page loads of each (default 20)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="annotate-bench-") as tmp:
        folder = Path(tmp)
        configs = make_project(folder)
        pages = len(list((folder / "docs").rglob("*.md")))
        in_process = build_in_process(configs, folder / "site", args.runs)
        command = build_command(configs, folder / "site", max(3, args.runs // 2))
        loads = page_loads(configs, args.loads)

    med = statistics.median
    print(describe())
    print()
    print(f"`mkdocs build` of docs/ ({pages} pages), builds alternating with / without the plugin")
    print()
    print("| build | runs | without s (median) | with s (median) | ratio | target ≤ 1.05 |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    for label, times in (("in-process", in_process), ("`mkdocs build` command", command)):
        ratio = med(times["with"]) / med(times["without"])
        verdict = "ok" if ratio <= TARGET else "over"
        print(
            f"| {label} | {len(times['with'])} | {med(times['without']):.3f} | "
            f"{med(times['with']):.3f} | {ratio:.3f} | {verdict} |"
        )
    print()
    print(f"page loads under `mkdocs serve`, {args.loads} each, alternating (medians, ms)")
    print()
    print(
        "| page | HTML without | HTML with | `load` without | `load` with | "
        "overlay painted | `load` ratio |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for page, r in loads.items():

        def m(key: str, r: dict[str, list[float]] = r) -> str:
            return f"{med(r[key]):.1f}" if r[key] else "n/a"

        ratio = (
            f"{med(r['load_with']) / med(r['load_without']):.2f}"
            if r["load_with"] and r["load_without"]
            else "n/a"
        )
        print(
            f"| `{page}` | {m('html_without')} | {m('html_with')} | {m('load_without')} | "
            f"{m('load_with')} | {m('painted')} | {ratio} |"
        )


if __name__ == "__main__":
    main()

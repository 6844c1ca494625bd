"""`annotate proxy` in front of a real `zensical serve` (issue #15): what the proxy and the overlay cost.

    .venv/bin/python benchmarks/proxy.py [--runs 15]

A temp Zensical project (Material-style theme, instant navigation on by default) with one long page
(60 paragraphs). `zensical serve` runs on a free loopback port, `annotate proxy --upstream` in
front of it, each in a subprocess.

- Page load: Debian's Chromium loads the page `--runs` times from each (alternating, one browser
  context per side so each keeps its warm HTTP cache) and reads the navigation entry's
  `loadEventEnd`: the dev server direct, without the overlay, against the proxy with the overlay.
  Twice: in front of `zensical serve`, and of `python -m http.server` serving the same built
  `site/` (a light server, where what the overlay adds shows most). Target: median ratio ≤ 1.10.
- Reload delay: two WebSocket clients on the page's URL, one direct and one through the proxy; the
  Markdown file is edited and each records when Zensical's reload message (the page's path) arrives.
  The difference is what the proxy adds. Target: median ≤ 20 ms.
- Static assets: Zensical's JavaScript bundle fetched `--runs` × 20 times over one keep-alive
  connection, direct and through the proxy: MB/s and the ratio.
- Ctrl+C (issue #27): `annotate proxy -- zensical serve` and `-- mkdocs serve` started, the page
  open in Chromium (Zensical's reload WebSocket, MkDocs's reload long poll held through the
  proxy), SIGINT: the seconds until the command has exited, its dev server stopped; against the
  same dev server alone, page open, stopped the same way (what it takes to stop by itself).
  Target: ≤ 1 s, no traceback. `--stop-only` runs this part alone. Run with
  `PYTHONPATH=<a checkout of main>` (from that folder) for the numbers before.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# benchmarks/mcp.py, first on sys.path, would shadow the `mcp` package annotate imports.
while str(HERE) in sys.path:
    sys.path.remove(str(HERE))

from playwright.sync_api import sync_playwright  # noqa: E402
from websockets.asyncio.client import connect  # noqa: E402

from annotate.devserver import free_port, wait_until_listening  # noqa: E402
from annotate.proxy import parse_upstream  # noqa: E402

sys.path.append(str(HERE))
from _common import CHROMIUM, CHROMIUM_ARGS, sentence  # noqa: E402
from _machine import describe  # noqa: E402

ZENSICAL = Path(sys.executable).parent / "zensical"
STOP_RUNS = 5
SEED = 15
PARAGRAPHS = 60


def make_project(root: Path) -> None:
    rng = random.Random(SEED)
    (root / "docs").mkdir(parents=True)
    # No web fonts: this machine has no network, and a font request left hanging would decide `load`.
    (root / "zensical.toml").write_text(
        '[project]\nsite_name = "Bench"\n\n[project.theme]\nfont = false\n'
    )
    body = "\n\n".join(" ".join(sentence(rng) for _ in range(4)) for _ in range(PARAGRAPHS))
    (root / "docs" / "index.md").write_text("# Home\n\n" + body + "\n")
    (root / "docs" / "page.md").write_text("# Page\n\n" + body + "\n")


def start_proxy(root: Path, upstream: int) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "annotate.cli", "proxy", "--port", "0", "--project", str(root),
         "--upstream", f"127.0.0.1:{upstream}"],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    line = proc.stdout.readline()  # type: ignore[union-attr]
    match = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
    if not match:
        proc.kill()
        raise SystemExit(f"annotate proxy did not start: {line!r}")
    return proc, int(match[1])


Timing = dict[str, list[float]]  # "load" (loadEventEnd), "html" (responseEnd): ms


def page_loads(direct: str, proxied: str, runs: int) -> tuple[Timing, Timing]:
    script = (
        "(() => { const n = performance.getEntriesByType('navigation')[0];"
        " return [n.loadEventEnd, n.responseEnd]; })()"
    )
    times: dict[str, Timing] = {direct: {"load": [], "html": []}, proxied: {"load": [], "html": []}}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        pages = {url: browser.new_context().new_page() for url in times}
        for url, page in pages.items():  # warm the caches
            for _ in range(2):
                page.goto(url, wait_until="load")
        for _ in range(runs):
            for url, page in pages.items():
                page.goto(url, wait_until="load")
                load, html = page.evaluate(script)
                times[url]["load"].append(load)
                times[url]["html"].append(html)
        if not pages[proxied].evaluate("!!window.annotateOverlay"):
            raise SystemExit("the overlay did not start through the proxy")
        browser.close()
    return times[direct], times[proxied]


def page_fetches(port: int, count: int) -> list[float]:
    """ms per `GET /` (the HTML page, asked as a browser asks) on one keep-alive connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Accept": "text/html", "Accept-Encoding": "gzip"}
    out = []
    for _ in range(count):
        started = time.perf_counter()
        conn.request("GET", "/", headers=headers)
        response = conn.getresponse()
        response.read()
        out.append((time.perf_counter() - started) * 1000)
        if response.status != 200:
            raise SystemExit(f"/: {response.status}")
    conn.close()
    return out


async def reload_delays(root: Path, direct: int, proxied: int, runs: int) -> list[float]:
    delays = []
    source = root / "docs" / "page.md"
    async with (
        connect(f"ws://127.0.0.1:{direct}/page/") as a,
        connect(f"ws://127.0.0.1:{proxied}/page/", origin=f"http://127.0.0.1:{proxied}") as b,  # type: ignore[arg-type]
    ):
        for i in range(runs):
            await asyncio.sleep(0.3)
            source.write_text(source.read_text() + f"\nEdit {i}.\n")
            arrived: dict[str, float] = {}

            async def until_page(
                ws: object, name: str, arrived: dict[str, float] = arrived
            ) -> None:
                while True:
                    message = await ws.recv()  # type: ignore[attr-defined]
                    if message == "/page/":
                        arrived[name] = time.perf_counter()
                        return

            await asyncio.wait_for(
                asyncio.gather(until_page(a, "direct"), until_page(b, "proxy")), 30
            )
            delays.append((arrived["proxy"] - arrived["direct"]) * 1000)
    return delays


def stop_times(generator: str, runs: int, *, proxied: bool) -> tuple[list[float], int]:
    """Seconds from SIGINT to the exit of `annotate proxy -- GENERATOR serve` (`proxied`) or of
    `GENERATOR serve` alone, with the page open in Chromium; how many runs printed a traceback."""
    times, tracebacks = [], 0
    program = str(Path(sys.executable).parent / generator)
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        root = Path(tmp)
        make_project(root)
        if generator == "mkdocs":
            (root / "zensical.toml").unlink()
            (root / "mkdocs.yml").write_text("site_name: Bench\n")
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for _ in range(runs):
            if proxied:
                command = [sys.executable, "-m", "annotate.cli", "proxy", "--port", "0",
                           "--project", str(root), "--", program, "serve"]  # fmt: skip
            else:
                port = free_port()
                command = [program, "serve", "-a", f"127.0.0.1:{port}"]
            proc = subprocess.Popen(
                command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=not proxied,
            )  # fmt: skip
            if proxied:
                for line in proc.stdout:  # type: ignore[union-attr]
                    match = re.search(r"Reviewing http://127\.0\.0\.1:(\d+)/", line)
                    if match:
                        port = int(match[1])
                        break
                else:
                    raise SystemExit(f"annotate proxy -- {generator} serve did not start")
            else:
                wait_until_listening(parse_upstream(str(port)), None, 60)
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{port}/", wait_until="load")
            time.sleep(1)  # the reload connection is open
            started = time.perf_counter()
            if proxied:
                proc.send_signal(signal.SIGINT)  # as the terminal's Ctrl+C
            else:
                os.killpg(proc.pid, signal.SIGINT)
            proc.wait(60)
            times.append(time.perf_counter() - started)
            _, stderr = proc.communicate()
            tracebacks += "Traceback" in stderr
            page.close()
        browser.close()
    return times, tracebacks


Stops = dict[str, tuple[tuple[list[float], int], tuple[list[float], int]]]


def stop_part() -> Stops:
    return {
        name: (
            stop_times(name, STOP_RUNS, proxied=False),
            stop_times(name, STOP_RUNS, proxied=True),
        )
        for name in ("zensical", "mkdocs")
    }


def print_stops(stops: Stops) -> None:
    print(f"Ctrl+C with the page open in Chromium, {STOP_RUNS} runs each (s from SIGINT to exit):")
    print()
    print(
        "| dev server | alone: median | annotate proxy -- …: median | max | proxy adds "
        "| runs with a traceback |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, ((alone, _), (times, tracebacks)) in stops.items():
        dm, pm = statistics.median(alone), statistics.median(times)
        print(
            f"| {name} serve | {dm:.2f} | {pm:.2f} | {max(times):.2f} | {pm - dm:.2f} "
            f"| {tracebacks} |"
        )
    print()
    print("Target: ≤ 1 s, no traceback.")


def throughput(port: int, path: str, count: int) -> tuple[float, int]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    size = 0
    started = time.perf_counter()
    for _ in range(count):
        conn.request("GET", path)
        response = conn.getresponse()
        size += len(response.read())
        if response.status != 200:
            raise SystemExit(f"{path}: {response.status}")
    elapsed = time.perf_counter() - started
    conn.close()
    return size / elapsed / 1e6, size // count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--stop-only", action="store_true", help="only the Ctrl+C part")
    args = parser.parse_args()
    if args.stop_only:
        print_stops(stop_part())
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_project(root)
        port = free_port()
        zensical = subprocess.Popen(
            [str(ZENSICAL), "serve", "-a", f"127.0.0.1:{port}"],
            cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        static_port = free_port()
        static = None
        proxies: list[subprocess.Popen[str]] = []
        try:
            wait_until_listening(parse_upstream(str(port)), zensical, 60)
            while not (root / "site" / "index.html").is_file():
                time.sleep(0.2)
            time.sleep(2)  # the first build
            static = subprocess.Popen(
                [sys.executable, "-m", "http.server", str(static_port), "--bind", "127.0.0.1",
                 "--directory", str(root / "site")],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            wait_until_listening(parse_upstream(str(static_port)), static, 30)
            loads = {}
            fetches = {}
            for name, upstream in (
                ("zensical serve", port),
                ("python -m http.server", static_port),
            ):
                proxy, proxied = start_proxy(root, upstream)
                proxies.append(proxy)
                loads[name] = page_loads(
                    f"http://127.0.0.1:{upstream}/", f"http://127.0.0.1:{proxied}/", args.runs
                )
                direct_ms, proxy_ms = [], []
                for _ in range(5):  # alternating rounds: a load spike hits both sides alike
                    direct_ms += page_fetches(upstream, args.runs * 4)
                    proxy_ms += page_fetches(proxied, args.runs * 4)
                fetches[name] = (direct_ms, proxy_ms)
                if upstream == port:
                    zensical_proxy = proxied
            delays = asyncio.run(reload_delays(root, port, zensical_proxy, max(5, args.runs // 2)))
            html = http.client.HTTPConnection("127.0.0.1", port)
            html.request("GET", "/")
            bundle = re.search(
                rb'src="\.?/?(assets/javascripts/bundle\.[^"]+\.js)"', html.getresponse().read()
            )
            asset = "/" + bundle[1].decode() if bundle else "/assets/stylesheets/modern/main.css"
            rates = []
            for _ in range(3):
                rates.append(
                    (
                        throughput(port, asset, args.runs * 20),
                        throughput(zensical_proxy, asset, args.runs * 20),
                    )
                )
        finally:
            for proxy in proxies:
                proxy.terminate()
                proxy.wait(10)
            for server in (static, zensical):
                if server is not None:
                    server.terminate()
                    server.wait(10)

    stops = {
        name: (
            stop_times(name, STOP_RUNS, proxied=False),
            stop_times(name, STOP_RUNS, proxied=True),
        )
        for name in ("zensical", "mkdocs")
    }

    print(describe())
    print()
    print(f"Page load (ms, warm cache, {args.runs} loads each, alternating; medians):")
    print()
    print(
        "| dev server | HTML received, direct | through the proxy | ratio "
        "| `load`, direct, no overlay | proxy + overlay | ratio |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, (direct, through) in loads.items():
        dh, ph = statistics.median(direct["html"]), statistics.median(through["html"])
        dm, pm = statistics.median(direct["load"]), statistics.median(through["load"])
        print(
            f"| {name} | {dh:.1f} | {ph:.1f} | {ph / dh:.2f} | {dm:.1f} | {pm:.1f} | {pm / dm:.2f} |"
        )
    print()
    print(
        f"The HTML page alone (`GET /`, {args.runs * 20} requests on one keep-alive connection "
        "per side, in 5 alternating rounds; ms):"
    )
    print()
    print("| dev server | direct median | proxy median | added | ratio |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, (direct_ms, proxy_ms) in fetches.items():
        dm, pm = statistics.median(direct_ms), statistics.median(proxy_ms)
        print(f"| {name} | {dm:.2f} | {pm:.2f} | {pm - dm:.2f} | {pm / dm:.2f} |")
    print()
    print("Target: ratio ≤ 1.10.")
    print()
    print(
        f"Reload message, delay added by the proxy over {len(delays)} edits: median "
        f"{statistics.median(delays):.2f} ms, min {min(delays):.2f}, max {max(delays):.2f} ms "
        "(target ≤ 20 ms)"
    )
    print()
    direct_rate = statistics.median(r[0][0] for r in rates)
    proxy_rate = statistics.median(r[1][0] for r in rates)
    print(
        f"Static asset `{asset}` ({rates[0][0][1]:,} bytes), {args.runs * 20} requests on one "
        "keep-alive connection, median of 3:"
    )
    print()
    print("| path | MB/s |")
    print("| --- | ---: |")
    print(f"| zensical serve, direct | {direct_rate:.1f} |")
    print(f"| through the proxy | {proxy_rate:.1f} |")
    print(f"| ratio | {proxy_rate / direct_rate:.2f} |")
    print()
    print_stops(stops)


if __name__ == "__main__":
    main()

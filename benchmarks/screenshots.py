"""The screenshot library (issue #30): size and fidelity of DOM-capture libraries on a Material page.

    npm pack html-to-image@1.11.13 modern-screenshot@4.7.0 @zumer/snapdom@3.1.1  # in LIBS
    for f in LIBS/*.tgz; do mkdir -p "${f%.tgz}" && tar xzf "$f" -C "${f%.tgz}"; done
    .venv/bin/python benchmarks/screenshots.py --libs LIBS [--runs 5]

A temp MkDocs (Material) project with one page (an admonition, a table, a code block, a paragraph
with bold, code and a link) is built and served; Chromium (device pixel ratio 1) loads each
library's build into the page and pictures each of the four elements with it, at scale 1 on the
page's white; Chromium's own screenshot of the element is the truth. Fidelity: the mean absolute
difference per pixel (RGB levels, 0-255) and the share of pixels off by more than 48, over the
overlapping area (captures may differ by a pixel in height: rounding). Time: median over `--runs`
captures of each element. Size: the build as shipped, raw and gzipped (level 9). The library loads
only when a screenshot is taken (the overlay's chunk `capture`), so its size is paid once, then.
"""

from __future__ import annotations

import argparse
import base64
import functools
import gzip
import http.server
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from _machine import describe
from playwright.sync_api import sync_playwright

# name: (build inside the unpacked package, the call that pictures `el` into a canvas)
LIBS = {
    "html-to-image 1.11.13": (
        "html-to-image-1.11.13/package/dist/html-to-image.js",
        "(el) => htmlToImage.toCanvas(el, {pixelRatio: 1, backgroundColor: '#fff'})",
    ),
    "modern-screenshot 4.7.0": (
        "modern-screenshot-4.7.0/package/dist/index.js",
        "(el) => modernScreenshot.domToCanvas(el, {scale: 1, backgroundColor: '#fff'})",
    ),
    "snapdom 3.1.1": (
        "zumer-snapdom-3.1.1/package/dist/snapdom.js",
        "(el) => snapdom.toCanvas(el, {scale: 1, dpr: 1, backgroundColor: '#fff'})",
    ),
}
SELECTORS = (".admonition", "article table", ".highlight", "article > p")
PAGE = """# Install the tool

Run the installer with **bold**, `inline code` and a [link](https://example.com) in the text.
Another sentence follows, long enough to wrap across the content column of a normal window.

!!! note "Before you start"
    You need Python 3.10 or later. The admonition has an icon, a title bar and a border.

| option | default | what |
| --- | --- | --- |
| `--db` | `.annotate/notes.db` | the store |
| `--port` | `8000` | where it listens |

```python
def hello(name: str) -> str:
    return f"Hello, {name}!"
```
"""
DIFF = """async ([a, b]) => {
  const load = (u) => new Promise((r) => { const i = new Image(); i.onload = () => r(i); i.src = u; });
  const [x, y] = await Promise.all([load(a), load(b)]);
  const w = Math.min(x.width, y.width), h = Math.min(x.height, y.height);
  const px = (img) => { const c = document.createElement('canvas'); c.width = w; c.height = h;
    const g = c.getContext('2d'); g.drawImage(img, 0, 0); return g.getImageData(0, 0, w, h).data; };
  const p = px(x), q = px(y); let sum = 0, off = 0;
  for (let i = 0; i < p.length; i += 4) {
    const d = (Math.abs(p[i] - q[i]) + Math.abs(p[i + 1] - q[i + 1]) + Math.abs(p[i + 2] - q[i + 2])) / 3;
    sum += d; if (d > 48) off++;
  }
  return [sum / (w * h), off / (w * h)];
}"""


def build_site(root: Path) -> Path:
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "index.md").write_text(PAGE)
    (root / "mkdocs.yml").write_text(
        "site_name: shots\ntheme:\n  name: material\n  font: false\n"
        "markdown_extensions: [admonition, tables, pymdownx.highlight, pymdownx.superfences]\n"
    )
    mkdocs = Path(sys.executable).parent / "mkdocs"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    subprocess.run([str(mkdocs), "build", "-q"], cwd=root, check=True, env=env)
    return root / "site"


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--libs", type=Path, required=True, help="the unpacked npm packages")
    parser.add_argument("--runs", type=int, default=5, help="captures per element (default 5)")
    args = parser.parse_args()
    print(describe())
    with tempfile.TemporaryDirectory() as tmp:
        site = build_site(Path(tmp) / "project")
        handler = functools.partial(Quiet, directory=str(site))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_port}/"
        print(
            "\n| library | raw bytes | gzip bytes | mean abs diff | pixels off | capture ms (median) |"
        )
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium")
            for name, (build, call) in LIBS.items():
                code = (args.libs / build).read_bytes()
                page = browser.new_page(viewport={"width": 1200, "height": 900})
                page.goto(url)
                page.wait_for_load_state("networkidle")
                page.add_script_tag(content=code.decode())
                means, offs, times = [], [], []
                for selector in SELECTORS:
                    element = page.locator(selector).first
                    element.scroll_into_view_if_needed()
                    truth = (
                        "data:image/png;base64," + base64.b64encode(element.screenshot()).decode()
                    )
                    got = ""
                    for _ in range(args.runs):
                        started = time.perf_counter()
                        got = page.evaluate(
                            f"(s) => ({call})(document.querySelector(s))"
                            ".then((c) => c.toDataURL('image/png'))",
                            selector,
                        )
                        times.append((time.perf_counter() - started) * 1000)
                    mean, off = page.evaluate(DIFF, [truth, got])
                    means.append(mean)
                    offs.append(off)
                page.close()
                print(
                    f"| {name} | {len(code):,} | {len(gzip.compress(code, 9)):,} | "
                    f"{statistics.mean(means):.1f} | {statistics.mean(offs) * 100:.1f} % | "
                    f"{statistics.median(times):.0f} |",
                    flush=True,
                )
            browser.close()
        server.shutdown()


if __name__ == "__main__":
    main()

"""The full review loop through `annotate proxy` (issue #15), in Chromium, in front of three real dev
servers started by the command itself (`annotate proxy -- CMD`): `zensical serve`, `mkdocs serve`
without the plugin, and `python -m http.server` (a plain static server, no reload).

The page has the overlay, the API answers same-origin, a note made in the browser has the right
file and lines, a Markdown edit reloads the page by itself through the proxy (Zensical's WebSocket,
MkDocs's long-poll), and an agent's edit (`address_annotation` after editing the `.md`) re-anchors
the note.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

import annotate

from .conftest import (
    Console,
    annotate_selection,
    highlighted,
    notes_in_store,
    open_page,
    wait_painted,
)

BIN = Path(sys.executable).parent
MARKDOWN = """# Proxy fixture

The first paragraph says hello to the reviewer.

## Second

A unique sentence about lighthouses and keepers stands here.

The last paragraph closes the page.
"""
STATIC_HTML = """<!doctype html>
<html><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>Proxy fixture</title></head>
<body><main>
<h1>Proxy fixture</h1>
<p>The first paragraph says hello to the reviewer.</p>
<h2>Second</h2>
<p>A unique sentence about {what} stands here.</p>
<p>The last paragraph closes the page.</p>
</main></body></html>
"""
QUOTE = "lighthouses and keepers"
LIVE = 10_000  # ms: a rebuild and reload on a busy machine


class DevProxy:
    """`annotate proxy --port 0 -- CMD` in a subprocess, in a fresh project."""

    def __init__(self, project: Path, command: list[str]) -> None:
        self.project = project
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "annotate.cli", "proxy", "--port", "0", "--timeout", "60",
             "--project", str(project), "--", *command],
            cwd=project, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "NO_MKDOCS_2_WARNING": "1"},
        )  # fmt: skip
        for line in self.proc.stdout:  # type: ignore[union-attr]
            match = re.search(r"Reviewing (http://127\.0\.0\.1:\d+/)", line)
            if match:
                self.url = match[1]
                return
        raise RuntimeError(f"annotate proxy did not start (exit {self.proc.wait()})")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(20)
        if self.proc.stdout:
            self.proc.stdout.close()


def project_for(kind: str, root: Path) -> tuple[Path, list[str]]:
    project = root / "project"
    (project / "docs").mkdir(parents=True)
    (project / "docs" / "index.md").write_text(MARKDOWN)
    # No web fonts: this machine has no network, and the page would log their failure.
    (project / "mkdocs.yml").write_text(
        "site_name: Proxy fixture\ntheme:\n  name: material\n  font: false\n"
    )
    if kind == "zensical":
        return project, [str(BIN / "zensical"), "serve"]
    if kind == "mkdocs":
        return project, [str(BIN / "mkdocs"), "serve"]
    (project / "site").mkdir()
    (project / "site" / "index.html").write_text(STATIC_HTML.format(what=QUOTE))
    return project, [
        sys.executable, "-m", "http.server", "{port}", "--bind", "127.0.0.1",
        "--directory", str(project / "site"),
    ]  # fmt: skip


@pytest.fixture(params=["zensical", "mkdocs", "static"])
def dev(request: pytest.FixtureRequest, tmp_path: Path, browser: Browser) -> Iterator[DevProxy]:
    project, command = project_for(request.param, tmp_path)
    proxy = DevProxy(project, command)
    proxy.kind = request.param  # type: ignore[attr-defined]
    yield proxy
    # Pages first: an open page would log its reload socket or long-poll being refused.
    for context in browser.contexts:
        context.close()
    proxy.stop()


def wait_for_text(page: Page, text: str) -> None:
    page.wait_for_function(
        "(text) => document.body.innerText.includes(text)", arg=text, timeout=LIVE
    )


def test_review_loop_through_the_proxy(page: Page, dev: DevProxy, console: Console) -> None:
    kind = dev.kind  # type: ignore[attr-defined]
    if kind == "zensical":
        # Zensical answers 404 while it rewrites the site, and a reload may land then; the
        # next reload message brings the page (the proxy passes the 404 on as it is).
        console.allow(r"status of 404 \(Not Found\)")
    open_page(page, dev.url)
    assert page.locator("#annotate-host").count() == 1

    # The API is same-origin: the overlay's token, no CORS.
    status = page.evaluate(
        """async () => {
          const cfg = JSON.parse(document.getElementById('annotate-config').textContent);
          const r = await fetch('/__annotate/api/summary', {headers: {'X-Annotate-Token': cfg.token}});
          return r.status;
        }"""
    )
    assert status == 200

    annotate_selection(page, QUOTE, "Name the keepers.")
    [note] = notes_in_store(dev.project)
    assert note.source is not None and note.source.lines == "docs/index.md:7"
    assert note.page_url == "/"

    source = dev.project / "docs" / "index.md"
    if kind == "static":
        page.reload()
        wait_painted(page)
    else:
        # The dev server rebuilds and the page reloads itself, through the proxy.
        page.evaluate("window.__before = true")
        source.write_text(MARKDOWN.replace("## Second\n", "A new paragraph first.\n\n## Second\n"))
        wait_for_text(page, "A new paragraph first.")
        assert page.evaluate("window.__before === undefined"), "the page was not reloaded"
        wait_painted(page)
        page.wait_for_function("() => CSS.highlights.get('annotate')?.size === 1", timeout=LIVE)
        assert highlighted(page) == [QUOTE]

    # The agent edits the Markdown, then marks the note addressed with the new text.
    edited = source.read_text().replace(QUOTE, "lighthouses and their keepers")
    source.write_text(edited)
    if kind == "static":
        (dev.project / "site" / "index.html").write_text(
            STATIC_HTML.format(what="lighthouses and their keepers")
        )
    with annotate.open(dev.project) as store:
        store.address_annotation(note.id, "lighthouses and their keepers")
    if kind == "static":
        page.reload()
    else:
        wait_for_text(page, "lighthouses and their keepers")
    wait_painted(page)
    page.wait_for_function(
        "() => CSS.highlights.get('annotate-addressed')?.size === 1", timeout=LIVE
    )
    assert highlighted(page, "annotate-addressed") == ["lighthouses and their keepers"]
    line = 7 if kind == "static" else 9
    deadline = time.monotonic() + LIVE / 1000
    while True:
        [note] = notes_in_store(dev.project, status="all")
        if note.source is not None and note.source.lines == f"docs/index.md:{line}":
            break
        assert time.monotonic() < deadline, note.source
        time.sleep(0.1)
    assert note.status == "addressed"

    # What loads on first use comes through the proxy too (issue #31): the panel's code, then
    # the screenshot's, which pictures the note's passage for the store (issue #30).
    page.get_by_role("button", name="Review panel").click()
    row = page.locator("#annotate-list li").filter(has_text="Name the keepers.")
    row.get_by_role("button", name="Screenshot").click()
    expect(page.locator("#annotate-host .toast").last).to_contain_text("Screenshot attached")
    loaded = page.evaluate(
        "() => performance.getEntriesByType('resource').map((e) => new URL(e.name))"
        ".filter((u) => u.pathname.startsWith('/__annotate/overlay/')).map((u) => u.origin + u.pathname)"
    )
    assert {
        f"{dev.url.rstrip('/')}/__annotate/overlay/{n}.js" for n in ("panel", "capture")
    } <= set(loaded)
    with annotate.open(dev.project) as store:
        assert list(store.screenshots.list()) == [note.id]

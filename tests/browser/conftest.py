"""The overlay in a real browser (issue #5): Debian's Chromium driven by Playwright, against the real
`annotate serve` app (uvicorn on a free loopback port) serving fixture sites, with a real SQLite
store in a temporary project.

One browser for the session, a fresh context (cookies, sessionStorage) per test; every test fails if
the page logged a console error or threw.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from playwright.sync_api import Browser, ConsoleMessage, Page, Playwright, sync_playwright

import annotate
from annotate.tokens import TokenFile
from annotate.web.app import create_app
from annotate.web.server import bind

SITES = Path(__file__).resolve().parent.parent / "fixtures" / "sites"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
MKDOCS = Path(sys.executable).parent / "mkdocs"


class Server:
    """`annotate serve SITE --project PROJECT` in a thread: the same wiring as
    `annotate.web.server.serve`, with a stop that also ends pending long-polls."""

    def __init__(
        self, project: Path, site: Path, *, read_only: bool = False, db: str | None = None
    ) -> None:
        self.project = project
        self.site = site
        self.read_only = read_only
        self.db = db  # another store than the project's file (a PostgreSQL URL)
        self.port = 0
        self._thread: threading.Thread | None = None

    def start(self) -> Server:
        self.store = annotate.open(self.project, db=self.db)
        sock = bind("127.0.0.1", self.port)
        self.port = sock.getsockname()[1]
        self.sock = sock
        app = create_app(
            self.store,
            token=TokenFile(self.project),
            read_only=self.read_only,
            site_dir=self.site,
        )
        self.feed = app.state.feed
        config = uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=1,
        )
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [sock]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the annotate server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._thread is None:
            return
        self.feed.close()
        self.server.should_exit = True
        self._thread.join(10)
        self._thread = None
        self.sock.close()
        self.store.close()

    def restart(self) -> None:
        self.stop()
        self.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @property
    def token(self) -> str:
        return TokenFile(self.project)()


@pytest.fixture(scope="session")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="session")
def browser(playwright: Playwright) -> Iterator[Browser]:
    b = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    yield b
    b.close()


def build_mkdocs(project: Path) -> None:
    """A real `mkdocs build` of the fixture project into its `site/`."""
    subprocess.run(
        [str(MKDOCS), "build", "-q", "-d", str(project / "site")],
        cwd=project,
        check=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
    )


@pytest.fixture(scope="session")
def material_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Material fixture project with its built site, made once per session."""
    project = tmp_path_factory.mktemp("material") / "project"
    shutil.copytree(SITES / "material", project)
    build_mkdocs(project)
    return project


def _serve(server: Server, browser: Browser) -> Iterator[Server]:
    server.start()
    yield server
    # Pages first: a page still open when the server goes would log its refused long-poll.
    for context in browser.contexts:
        context.close()
    server.stop()


@pytest.fixture
def plain_server(tmp_path: Path, browser: Browser) -> Iterator[Server]:
    """The plain HTML fixture site, its store in a fresh project folder."""
    project = tmp_path / "project"
    project.mkdir()
    shutil.copytree(SITES / "plain", project / "site")
    yield from _serve(Server(project, project / "site"), browser)


class MaterialServer(Server):
    def start(self) -> Server:
        super().start()
        self.fix_sitemap()
        return self

    def fix_sitemap(self) -> None:
        """Point the sitemap at this server's port, as `mkdocs serve` does with `site_url`:
        Material's instant navigation only follows links to the sitemap's origin."""
        sitemap = self.site / "sitemap.xml"
        sitemap.write_text(re.sub(r"http://127\.0\.0\.1(:\d+)?/", self.url, sitemap.read_text()))

    def rebuild(self) -> None:
        build_mkdocs(self.project)
        self.fix_sitemap()


@pytest.fixture
def material_server(
    material_build: Path, tmp_path: Path, browser: Browser
) -> Iterator[MaterialServer]:
    """A copy of the built Material project (so a test may edit and rebuild it)."""
    project = tmp_path / "project"
    shutil.copytree(material_build, project, ignore=shutil.ignore_patterns(".annotate"))
    yield from _serve(MaterialServer(project, project / "site"), browser)  # type: ignore[misc]


class Console:
    """Console errors and uncaught exceptions of one test's pages."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.allowed: list[re.Pattern[str]] = []

    def allow(self, pattern: str) -> None:
        """Tolerate a browser message the test provokes on purpose (a refused request's
        'Failed to load resource' line)."""
        self.allowed.append(re.compile(pattern))

    def on_console(self, msg: ConsoleMessage) -> None:
        if msg.type == "error":
            self.errors.append(f"console: {msg.text} ({msg.location.get('url', '')})")

    def on_error(self, error: Exception) -> None:
        self.errors.append(f"pageerror: {error}")

    def unexpected(self) -> list[str]:
        return [e for e in self.errors if not any(p.search(e) for p in self.allowed)]


@pytest.fixture
def console() -> Console:
    return Console()


@pytest.fixture
def page(browser: Browser, console: Console) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    context.set_default_timeout(5000)
    p = context.new_page()
    p.on("console", console.on_console)
    p.on("pageerror", console.on_error)
    yield p
    context.close()
    assert console.unexpected() == [], "the page logged errors"


# -- helpers shared by the tests ------------------------------------------------------------------


def open_page(page: Page, url: str) -> None:
    """Go to `url` and wait until the overlay has painted the page's notes."""
    page.goto(url)
    wait_painted(page)


def wait_painted(page: Page) -> None:
    page.wait_for_function(
        "() => performance.getEntriesByName('annotate:painted').length > 0", timeout=5000
    )


def select_text(page: Page, text: str, occurrence: int = 0) -> None:
    """Select `text` of the page with the mouse, as a reader does: press before its first
    character, drag to after its last."""
    box = page.evaluate(
        """async ([text, occurrence]) => {
          const root = document.querySelector('article.md-content__inner') ||
                       document.querySelector('main') || document.body;
          const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
          const nodes = []; let all = '';
          for (let n = walker.nextNode(); n; n = walker.nextNode()) { nodes.push([n, all.length]); all += n.data; }
          let at = -1;
          for (let i = 0; i <= occurrence; i++) at = all.indexOf(text, at + 1);
          if (at < 0) throw new Error('text not on the page: ' + text);
          const point = (pos) => {
            for (let i = nodes.length - 1; i >= 0; i--) if (nodes[i][1] <= pos) return [nodes[i][0], pos - nodes[i][1]];
          };
          const rect = (pos) => { const [n, o] = point(pos); const r = document.createRange();
            r.setStart(n, o); r.setEnd(n, o + 1); return r.getBoundingClientRect(); };
          // Scroll the text into view, and measure it once the page holds still there: Material's
          // instant navigation may still scroll the new page to its top after a scroll of ours.
          const frame = () => new Promise((done) => requestAnimationFrame(done));
          for (let tries = 0; ; tries++) {
            const first = rect(at);
            if (first.y < 0 || first.y > innerHeight - 100)
              window.scrollBy({top: first.y - 200, behavior: 'instant'});
            let y = -1, still = 0;
            while (still < 3) { await frame(); still = scrollY === y ? still + 1 : 0; y = scrollY; }
            const a = rect(at), b = rect(at + text.length - 1);
            if ((a.y >= 0 && b.bottom <= innerHeight) || tries === 10)
              return {x1: a.left + 1, y1: a.top + a.height / 2, x2: b.right - 1, y2: b.top + b.height / 2};
          }
        }""",
        [text, occurrence],
    )
    page.mouse.move(box["x1"], box["y1"])
    page.mouse.down()
    page.mouse.move((box["x1"] + box["x2"]) / 2, (box["y1"] + box["y2"]) / 2, steps=3)
    page.mouse.move(box["x2"], box["y2"], steps=3)
    page.mouse.up()


def highlighted(page: Page, name: str = "annotate") -> list[str]:
    """The text of every range painted in the highlight `name`, in document order."""
    result: list[str] = page.evaluate(
        """(name) => {
          const h = CSS.highlights.get(name);
          return h ? [...h].sort((a, b) => a.compareBoundaryPoints(Range.START_TO_START, b))
                       .map(r => r.toString()) : [];
        }""",
        name,
    )
    return result


def click_highlight(page: Page, text: str) -> None:
    """Click the middle of the painted highlight whose text is `text`."""
    point = page.evaluate(
        """(text) => {
          for (const r of CSS.highlights.get('annotate') || []) {
            if (r.toString() !== text) continue;
            const b = r.getClientRects()[0];
            return {x: b.left + b.width / 2, y: b.top + b.height / 2};
          }
          throw new Error('no highlight reads ' + text);
        }""",
        text,
    )
    page.mouse.click(point["x"], point["y"])


def annotate_selection(page: Page, text: str, note: str, *, occurrence: int = 0) -> None:
    """Select `text`, press Annotate, type the note, Save; wait until it is painted."""
    select_text(page, text, occurrence)
    page.get_by_role("button", name="Annotate").click()
    page.get_by_label("Note", exact=True).fill(note)
    page.get_by_role("button", name="Save").click()
    page.locator("#annotate-host [role=dialog]").wait_for(state="hidden")


def notes_in_store(project: Path, **filters: Any) -> list[annotate.Annotation]:
    with annotate.open(project) as store:
        return store.list_annotations(**filters)

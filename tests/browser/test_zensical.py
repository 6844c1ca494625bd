"""The overlay on a site built by Zensical (issue #15), served by the real `annotate serve site/`
started in the project folder (so the project, its `zensical.toml` and the Markdown are found):
Zensical's theme with instant navigation on, the palette toggle, code copy and code annotations;
a note made there has the right file and lines."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from .conftest import SITES, annotate_selection, highlighted, notes_in_store, open_page

ZENSICAL = Path(sys.executable).parent / "zensical"
ANNOTATE = Path(sys.executable).parent / "annotate"


@pytest.fixture(scope="module")
def zensical_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Zensical fixture project with its site built by a real `zensical build`."""
    project = tmp_path_factory.mktemp("zensical") / "project"
    shutil.copytree(SITES / "zensical", project)
    subprocess.run([str(ZENSICAL), "build"], cwd=project, check=True, capture_output=True)
    return project


class Served:
    def __init__(self, project: Path, url: str) -> None:
        self.project, self.url = project, url


@pytest.fixture
def zensical_site(zensical_build: Path, tmp_path: Path, browser: Browser) -> Iterator[Served]:
    """`annotate serve site/ --port 0` run in a copy of the project, as a user runs it."""
    project = tmp_path / "project"
    shutil.copytree(zensical_build, project)
    server = subprocess.Popen(
        [str(ANNOTATE), "serve", "site", "--port", "0"],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert found, line
        url = found.group()
        # Instant navigation follows only links to the sitemap's origin (`site_url`'s): point it
        # at this server, as a dev server does.
        sitemap = project / "site" / "sitemap.xml"
        sitemap.write_text(sitemap.read_text().replace("http://127.0.0.1/", url))
        yield Served(project, url)
    finally:
        for context in browser.contexts:
            context.close()
        server.terminate()
        server.wait(10)
        if server.stdout is not None:
            server.stdout.close()


def line_of(project: Path, file: str, needle: str) -> int:
    lines = (project / file).read_text().split("\n")
    found = [n for n, line in enumerate(lines, 1) if needle in line]
    assert len(found) == 1, found
    return found[0]


def test_notes_on_a_zensical_page_have_their_file_and_lines(
    page: Page, zensical_site: Served
) -> None:
    open_page(page, zensical_site.url + "guide/install/")
    annotate_selection(page, "a recent Python is on the path", "Which version?")
    page.locator("label", has_text="pipx").click()  # the second content tab
    annotate_selection(page, "an isolated environment of its own", "Say why.")
    assert highlighted(page) == [
        "a recent Python is on the path",
        "an isolated environment of its own",
    ]
    notes = {n.note: n for n in notes_in_store(zensical_site.project)}
    file = "docs/guide/install.md"
    for note, needle in (("Which version?", "a recent Python"), ("Say why.", "an isolated env")):
        source = notes[note].source
        assert source is not None, note
        line = line_of(zensical_site.project, file, needle)
        assert (source.path, source.line_start, source.line_end) == (file, line, line), note
    assert {n.page_url for n in notes.values()} == {"/guide/install/"}


def test_instant_navigation_on_zensical(page: Page, zensical_site: Served) -> None:
    open_page(page, zensical_site.url)
    annotate_selection(page, "says nothing in particular", "Home note.")
    page.evaluate("window.__sameDocument = true")
    page.locator("article").get_by_role("link", name="reference").click()
    page.wait_for_url("**/reference/")
    page.wait_for_function(
        "() => document.querySelector('article h1').textContent.includes('Reference')"
    )
    page.wait_for_function("() => !CSS.highlights.get('annotate')?.size")
    assert page.evaluate("window.__sameDocument") is True, "instant navigation reloaded the page"
    assert page.evaluate("document.querySelectorAll('#annotate-host').length") == 1
    annotate_selection(page, "who reads the rendered site", "Definition note.")
    assert highlighted(page) == ["who reads the rendered site"]
    page.go_back()
    page.wait_for_function(
        "() => document.querySelector('article h1').textContent.includes('Zensical fixture')"
    )
    page.wait_for_function("() => CSS.highlights.get('annotate')?.size === 1")
    assert highlighted(page) == ["says nothing in particular"]
    assert page.evaluate("window.__sameDocument") is True
    notes = {n.note: n for n in notes_in_store(zensical_site.project)}
    assert notes["Home note."].page_url == "/"
    assert notes["Definition note."].page_url == "/reference/"
    source = notes["Definition note."].source
    assert source is not None
    line = line_of(zensical_site.project, "docs/reference.md", "The person who reads")
    assert (source.path, source.line_start) == ("docs/reference.md", line)


def test_palette_toggle_keeps_the_overlay(page: Page, zensical_site: Served) -> None:
    open_page(page, zensical_site.url + "reference/")
    annotate_selection(page, "restart the review", "Keys note.")
    assert page.evaluate("document.body.dataset.mdColorScheme") == "default"
    page.get_by_title("Switch to dark mode").click()
    page.wait_for_function("() => document.body.dataset.mdColorScheme === 'slate'")
    assert highlighted(page) == ["restart the review"]
    assert page.evaluate("document.querySelectorAll('#annotate-host').length") == 1
    page.get_by_title("Switch to light mode").click()
    page.wait_for_function("() => document.body.dataset.mdColorScheme === 'default'")
    annotate_selection(page, "mentions the panel", "List note.")
    assert highlighted(page) == ["restart the review", "mentions the panel"]
    notes = {n.note: n for n in notes_in_store(zensical_site.project)}
    source = notes["Keys note."].source
    assert source is not None
    line = line_of(zensical_site.project, "docs/reference.md", "restart the review")
    assert (source.path, source.line_start, source.line_end) == ("docs/reference.md", line, line)


def test_code_copy_and_code_annotations(page: Page, zensical_site: Served) -> None:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    open_page(page, zensical_site.url + "guide/install/")
    # Zensical's script turned `# (1)!` into markers and moved the list into their tooltips.
    expect(page.locator(".md-annotation")).to_have_count(2)
    # The markers' text is gone from the page text. The annotation's own words may stay: the theme
    # keeps them in the marker's tooltip, rendered into the code block at a time of its choosing.
    assert "# (1)!" not in page.evaluate("annotateOverlay.pageText()")
    annotate_selection(page, "name: zensical", "Code note.")
    # Code copy copies the code, not the overlay, and the overlay's popup does not open.
    page.locator(".md-code__button[data-md-type=copy]").first.click()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith("site_name: My project") and "name: zensical" in copied
    expect(page.get_by_role("button", name="Annotate")).to_be_hidden()
    # A code annotation opens and shows its text; the highlight stays.
    page.locator(".md-annotation").nth(1).click()
    expect(page.locator(".md-tooltip2__inner, .md-tooltip__inner").last).to_contain_text(
        "Zensical's own theme"
    )
    assert highlighted(page) == ["name: zensical"]
    notes = notes_in_store(zensical_site.project)
    source = notes[0].source
    assert source is not None
    line = line_of(zensical_site.project, "docs/guide/install.md", "name: zensical")
    assert (source.path, source.line_start, source.line_end) == (
        "docs/guide/install.md",
        line,
        line,
    )

"""The whole review loop on the project's own docs under a real `mkdocs serve` (and `properdocs
serve`) with the plugin, in Chromium (issue #6 "Must show"): annotate → saving does not rebuild → the
agent (library calls) edits the Markdown → livereload → the highlight is on the edited text and the
source lines are right; Material's instant navigation keeps highlights per page.

Screenshots for the docs are written to `docs/img/` when `ANNOTATE_SCREENSHOTS=docs`, else to the
test's temporary folder (so every run still takes them).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

import annotate

from ..test_plugin_serve import DevServer
from .conftest import Console, annotate_selection, highlighted, select_text, wait_painted

ROOT = Path(__file__).resolve().parent.parent.parent
# Paragraphs of our own, appended to copies of two pages: the test must not depend on the wording
# of the docs, which change.
FIRST = "Reviewers keep their notes outside the docs, in a small database next to mkdocs.yml."
SECOND = "Every note names the Markdown file and the lines it points at."
QUOTE = "in a small database"
EDITED = "in a small SQLite database"
# Material loads Roboto from Google Fonts; the test machine may be offline.
FONTS = r"fonts\.googleapis\.com"


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.fixture
def docs_project(tmp_path: Path) -> Path:
    """A copy of the project's mkdocs.yml (plugin enabled) and docs/."""
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(ROOT / "mkdocs.yml", project / "mkdocs.yml")
    shutil.copytree(ROOT / "docs", project / "docs")
    for name, text in (("getting-started.md", FIRST), ("workflow.md", SECOND)):
        md = project / "docs" / name
        md.write_text(md.read_text().rstrip("\n") + f"\n\n## Reviewer notes\n\n{text}\n")
    return project


def serve(project: Path, command: str) -> Iterator[DevServer]:
    args = ("-f", "mkdocs.yml") if command == "properdocs" else ()
    server = DevServer(project, *args, command=command)
    yield server
    server.stop()


@pytest.fixture(params=["mkdocs", "properdocs"])
def dev(request: pytest.FixtureRequest, docs_project: Path) -> Iterator[DevServer]:
    yield from serve(docs_project, request.param)


@pytest.fixture
def mkdocs_dev(docs_project: Path) -> Iterator[DevServer]:
    yield from serve(docs_project, "mkdocs")


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    if os.environ.get("ANNOTATE_SCREENSHOTS") == "docs":
        folder = ROOT / "docs" / "img"
        folder.mkdir(exist_ok=True)
        return folder
    return tmp_path


def open_docs_page(page: Page, url: str) -> None:
    page.goto(url)
    wait_painted(page)


def test_annotate_edit_reload_follows(dev: DevServer, page: Page, console: Console) -> None:
    console.allow(FONTS)
    md = dev.project / "docs" / "getting-started.md"
    open_docs_page(page, dev.base + "/getting-started/")
    page.evaluate("window.__notReloaded = true")
    builds, epoch = dev.count("Building documentation"), dev.epoch()

    annotate_selection(page, QUOTE, "Say which database.")
    assert highlighted(page) == [QUOTE]
    with annotate.open(dev.project) as store:
        [note] = store.list_annotations()
    # The source path comes from the plugin (the page's src_uri), the lines from the Markdown.
    line = line_of(md, FIRST)
    assert note.page_url == "/getting-started/"
    assert (note.source.path, note.source.line_start, note.source.line_end) == (
        "docs/getting-started.md",
        line,
        line,
    )

    # Saving wrote the database only: no rebuild, no reload.
    page.wait_for_timeout(1500)
    assert dev.count("Building documentation") == builds
    assert dev.epoch() == epoch
    assert page.evaluate("window.__notReloaded") is True

    # The agent: library calls and a plain edit of the Markdown file, lines above and the quote.
    with annotate.open(dev.project) as store:
        store.set_in_progress(note.id)
        text = md.read_text().replace(FIRST, f"A new first line.\n\n{FIRST.replace(QUOTE, EDITED)}")
        md.write_text(text)
        store.update_annotation_target(note.id, EDITED)
        store.address_annotation(note.id)
        store.add_agent_reply(note.id, "Named SQLite.")

    # Livereload reloads the page; the overlay restores itself from the server.
    page.wait_for_function("() => window.__notReloaded === undefined", timeout=20000)
    wait_painted(page)
    expect(page.locator("article")).to_contain_text(EDITED)
    # Addressed notes are painted in their own highlight.
    page.wait_for_function(
        "(t) => [...(CSS.highlights.get('annotate-addressed') || [])].some(r => r + '' === t)",
        arg=EDITED,
    )
    assert highlighted(page, "annotate-addressed") == [EDITED]
    assert highlighted(page) == []
    with annotate.open(dev.project) as store:
        item = store.get_annotation(note.id)
    new_line = line_of(md, EDITED)
    assert new_line == line + 2
    assert (item.source.line_start, item.source.line_end) == (new_line, new_line)
    assert item.anchor_state == "anchored"
    assert item.status == "addressed"

    page.get_by_role("button", name="Review panel").click()
    entry = page.locator("#annotate-host li.item")
    expect(entry).to_have_count(1)
    expect(entry).to_contain_text("Named SQLite.")
    expect(entry.locator(".badge")).to_have_text("addressed")


def test_instant_navigation_keeps_highlights_per_page(
    mkdocs_dev: DevServer, page: Page, console: Console, shots: Path
) -> None:
    console.allow(FONTS)
    dev = mkdocs_dev
    page.set_viewport_size({"width": 1400, "height": 900})  # wide enough for Material's sidebar
    open_docs_page(page, dev.base + "/getting-started/")
    page.evaluate("window.__sameDocument = true")
    select_text(page, QUOTE)
    page.get_by_role("button", name="Annotate").click()
    page.get_by_label("Note", exact=True).fill("Say which database.")
    page.screenshot(path=str(shots / "popup.png"))
    page.get_by_role("button", name="Save").click()
    page.locator("#annotate-host [role=dialog]").wait_for(state="hidden")
    assert highlighted(page) == [QUOTE]

    # Material's instant navigation: the content is swapped, the document stays.
    page.locator(".md-sidebar--primary").get_by_role("link", name="Review workflow").click()
    page.wait_for_url("**/workflow/")
    expect(page.locator("article")).to_contain_text(SECOND)
    assert page.evaluate("window.__sameDocument") is True
    page.wait_for_function("() => !(CSS.highlights.get('annotate') || new Set()).size")
    annotate_selection(page, "the Markdown file", "Link to the data model.")
    assert highlighted(page) == ["the Markdown file"]

    page.go_back()
    page.wait_for_url("**/getting-started/")
    page.wait_for_function(
        f"() => [...(CSS.highlights.get('annotate') || [])].map(String).join() === {QUOTE!r}"
    )
    assert page.evaluate("window.__sameDocument") is True

    page.get_by_role("button", name="Review panel").click()
    page.get_by_role("tab", name="All pages (2)").click()
    expect(page.locator("#annotate-panel li.item")).to_have_count(2)
    page.screenshot(path=str(shots / "panel.png"))

    with annotate.open(dev.project) as store:
        sources = {a.page_url: a.source.path for a in store.list_annotations()}
    assert sources == {
        "/getting-started/": "docs/getting-started.md",
        "/workflow/": "docs/workflow.md",
    }

"""show_annotation in Chromium (issue #19): the agent's call scrolls the open page of the note to
it and flashes it; a page elsewhere stays still; the call answers how many views showed it."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from playwright.sync_api import Locator, Page, expect

import annotate

from ..test_plugin_serve import DevServer
from .conftest import SITES, Server, open_page, wait_painted

FAR = "The last paragraph sits far below the fold."

# Records the ring's first showing (its box and animation) in window.__ring, whenever it comes.
WATCH_RING = """() => {
  const ring = document.getElementById('annotate-host').shadowRoot.querySelector('.ring');
  window.__ring = null;
  new MutationObserver(() => {
    if (ring.hidden || window.__ring) return;
    const r = ring.getBoundingClientRect();
    window.__ring = {top: r.top, bottom: r.bottom, left: r.left, right: r.right,
                     animation: getComputedStyle(ring).animationName};
  }).observe(ring, {attributes: true, attributeFilter: ['hidden', 'style']});
}"""

PASSAGE_BOX = """(text) => {
  for (const r of CSS.highlights.get('annotate') || []) {
    if (r.toString() !== text) continue;
    const b = r.getBoundingClientRect();
    return {top: b.top, bottom: b.bottom, left: b.left, right: b.right};
  }
  return null;
}"""


def _far_note(server: Server) -> str:
    with annotate.open(server.project) as store:
        note = store.add_annotation(
            {
                "type": "text",
                "pageUrl": "/",
                "note": "Say where the fold is.",
                "selectedText": FAR,
                "quote": {"exact": FAR, "prefix": "", "suffix": ""},
            }
        )
        return note.id


def _show(server: Server, id: str) -> int:
    with annotate.open(server.project) as store:
        return int(store.show_annotation(id, wait=8))


def _box(locator: Locator) -> dict[str, float]:
    box = locator.bounding_box()
    assert box is not None
    return {
        "top": box["y"],
        "bottom": box["y"] + box["height"],
        "left": box["x"],
        "right": box["x"] + box["width"],
    }


def _inside(inner: dict[str, Any], outer: dict[str, Any]) -> bool:
    return (
        outer["top"] <= inner["top"]
        and inner["bottom"] <= outer["bottom"]
        and outer["left"] <= inner["left"]
        and inner["right"] <= outer["right"]
    )


def test_the_page_of_the_note_scrolls_to_it_and_flashes(page: Page, plain_server: Server) -> None:
    id = _far_note(plain_server)
    open_page(page, plain_server.url)
    elsewhere = page.context.new_page()
    open_page(elsewhere, plain_server.url + "other.html")
    for p in (page, elsewhere):
        p.evaluate(WATCH_RING)
    before = page.evaluate(PASSAGE_BOX, FAR)
    assert before["top"] > page.viewport_size["height"]  # below the fold  # type: ignore[index]

    assert _show(plain_server, id) == 1  # the page of the note; the other page does not count

    page.wait_for_function("() => window.__ring !== null")
    height = page.evaluate("innerHeight")
    passage = page.evaluate(PASSAGE_BOX, FAR)
    assert passage["top"] >= 0 and passage["bottom"] <= height  # scrolled into view
    ring = page.evaluate("window.__ring")
    assert _inside(passage, ring)  # the ring is around the passage
    assert ring["animation"] == "ring"
    # The note is the active one, as when the reviewer clicks it in the panel.
    assert page.evaluate("CSS.highlights.get('annotate-active').size") == 1
    # The page elsewhere neither scrolled nor flashed.
    assert elsewhere.evaluate("scrollY") == 0
    assert elsewhere.evaluate("window.__ring") is None


def test_a_page_note_made_after_loading_opens_in_the_panel_without_motion(
    page: Page, plain_server: Server
) -> None:
    page.emulate_media(reduced_motion="reduce")
    open_page(page, plain_server.url)
    page.evaluate(WATCH_RING)
    with annotate.open(plain_server.project) as store:
        # The agent makes the note and points at it at once: the page loads it first.
        note = store.add_page_note({"pageUrl": "/", "note": "Add a summary at the top."})
        assert int(store.show_annotation(note.id, wait=8)) == 1
    row = page.locator("#annotate-panel li.item", has_text="Add a summary at the top.")
    expect(row).to_be_visible()
    expect(row).to_have_class("item active")
    page.wait_for_function("() => window.__ring !== null")
    ring = page.evaluate("window.__ring")
    assert _inside(_box(row), ring)
    assert ring["animation"] == "none"  # prefers-reduced-motion: a steady ring


def test_a_resolved_note_is_shown_in_the_panel(page: Page, plain_server: Server) -> None:
    id = _far_note(plain_server)
    with annotate.open(plain_server.project) as store:
        store.accept(id)
    open_page(page, plain_server.url)
    wait_painted(page)
    with annotate.open(plain_server.project) as store:
        shown = store.show_annotation(id, wait=8)
    assert int(shown) == 1 and shown.why_not is not None
    # Resolved notes are not painted and the panel's default filter hides them: it shows all.
    row = page.locator("#annotate-panel li.item", has_text="Say where the fold is.")
    expect(row).to_be_visible()
    expect(page.locator("#annotate-filter")).to_have_value("all")
    assert page.evaluate("scrollY") == 0


def test_an_element_note_is_scrolled_to_and_ringed(page: Page, plain_server: Server) -> None:
    with annotate.open(plain_server.project) as store:
        note = store.add_annotation(
            {
                "type": "element",
                "pageUrl": "/",
                "note": "Make the callout stand out.",
                "elementSelector": {
                    "cssSelector": "aside.callout",
                    "xpath": "/html/body/main/aside",
                    "tagName": "aside",
                    "description": "The callout",
                },
            }
        )
    open_page(page, plain_server.url)
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    page.evaluate(WATCH_RING)
    callout = page.locator("aside.callout")
    expect(callout).not_to_be_in_viewport()
    with annotate.open(plain_server.project) as store:
        assert int(store.show_annotation(note.id, wait=8)) == 1
    expect(callout).to_be_in_viewport()
    page.wait_for_function("() => window.__ring !== null")
    assert _inside(_box(callout), page.evaluate("window.__ring"))


def test_mkdocs_serve_with_the_plugin(page: Page, tmp_path: Path) -> None:
    # The same under `mkdocs serve`: the API behind the dev server (annotate/devserver.py).
    project = tmp_path / "project"
    shutil.copytree(SITES / "material", project)
    config = project / "mkdocs.yml"
    config.write_text(config.read_text() + "plugins:\n  - annotate\n")
    far = "The final paragraph mentions lighthouses and their keepers."
    with annotate.open(project) as store:
        note = store.add_annotation(
            {
                "type": "text",
                "pageUrl": "/",
                "note": "Which lighthouses?",
                "selectedText": far,
                "quote": {"exact": far, "prefix": "", "suffix": ""},
            }
        )
    server = DevServer(project)
    try:
        page.set_viewport_size({"width": 1000, "height": 300})
        open_page(page, server.base + "/")
        elsewhere = page.context.new_page()
        open_page(elsewhere, server.base + "/guide/")
        page.evaluate(WATCH_RING)
        assert page.evaluate(PASSAGE_BOX, far)["top"] > 300
        with annotate.open(project) as store:
            assert int(store.show_annotation(note.id, wait=8)) == 1
        page.wait_for_function("() => window.__ring !== null")
        passage = page.evaluate(PASSAGE_BOX, far)
        assert passage["top"] >= 0 and passage["bottom"] <= 300
        assert _inside(passage, page.evaluate("window.__ring"))
        assert elsewhere.evaluate("scrollY") == 0
    finally:
        for p in page.context.pages:
            p.close()
        server.stop()

"""`show_annotation` reaches every open view of the note's page (issue #19): the review view in
the chat (host emulator, a real `annotate mcp` over stdio) and a Chromium page with the overlay
on `mkdocs serve` with the plugin, on the same store. The agent's call, through the same server
the view talks to, answers 2 views, and both scrolled the passage into view and flashed it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, Frame, Page

import annotate

from .chathost import HostServer, McpSession
from .conftest import SITES, Console, wait_painted
from .test_chat import FONTS, open_view, serve_at_dev_addr
from .test_show import PASSAGE_BOX, WATCH_RING, _inside

FAR = "The final paragraph mentions lighthouses and their keepers."
FILLER = 40  # paragraphs above it: far below the fold in both views


def _long_page(folder: Path) -> None:
    index = folder / "docs" / "index.md"
    text = index.read_text()
    filler = "".join(
        f"Paragraph {n} of the long part, there to push the last one far down.\n\n"
        for n in range(1, FILLER + 1)
    )
    index.write_text(text.replace("## A second heading", filler + "## A second heading"))


def _far_note(project: Path) -> str:
    with annotate.open(project) as store:
        return store.add_annotation(
            {
                "type": "text",
                "pageUrl": "/",
                "note": "Which lighthouses?",
                "selectedText": FAR,
                "quote": {"exact": FAR, "prefix": "", "suffix": ""},
            }
        ).id


def _shown(view: Page | Frame) -> dict[str, Any]:
    """Where the passage and the ring are once the ring showed, and the viewport's height."""
    view.wait_for_function("() => window.__ring !== null")
    return {
        "passage": view.evaluate(PASSAGE_BOX, FAR),
        "ring": view.evaluate("window.__ring"),
        "height": view.evaluate("innerHeight"),
        "scrollY": view.evaluate("scrollY"),
        "active": view.evaluate("CSS.highlights.get('annotate-active').size"),
    }


def test_show_annotation_scrolls_the_chat_view_and_the_browser(
    material_build: Path, tmp_path: Path, browser: Browser, console: Console
) -> None:
    console.allow(FONTS)
    folder = tmp_path / "served"
    shutil.copytree(SITES / "material", folder)
    _long_page(folder)
    served = serve_at_dev_addr(folder)
    id = _far_note(folder)
    session = McpSession(folder).start()
    host = HostServer(session)
    context = browser.new_context(viewport={"width": 1000, "height": 500})
    context.set_default_timeout(5000)
    try:
        chat, site = context.new_page(), context.new_page()
        for p in (chat, site):
            p.on("console", console.on_console)
            p.on("pageerror", console.on_error)
        site.goto(served.base + "/")
        wait_painted(site)
        frame = open_view(chat, host, session)
        # The view shows the served page: the same page text as the browser's.
        page_answer = session.call("chat_page", {"pageUrl": "/"})["structuredContent"]
        assert page_answer["origin"] == "served"
        views: list[Page | Frame] = [frame, site]
        for view in views:
            view.evaluate(WATCH_RING)
            assert view.evaluate("scrollY") == 0
            assert view.evaluate(PASSAGE_BOX, FAR)["top"] > view.evaluate("innerHeight")

        # The agent points at the note through the server the view talks to.
        result = session.call("show_annotation", {"id": id})
        assert not result.get("isError"), result
        answer = json.loads(result["content"][0]["text"])
        assert answer["views"] == 2, answer
        assert answer["pageUrl"] == "/"

        for view in views:
            shown = _shown(view)
            assert shown["scrollY"] > 0
            passage = shown["passage"]
            assert passage["top"] >= 0 and passage["bottom"] <= shown["height"]  # in view
            assert _inside(passage, shown["ring"])  # the ring is around the passage
            assert shown["ring"]["animation"] == "ring"
            assert shown["active"] == 1  # the note is the active one
    finally:
        context.close()
        host.stop()
        session.stop()
        served.stop()
    assert console.unexpected() == []

"""What must not break: API errors, foreign origins, read-only servers, shortcuts while typing,
rapid changes, the page's layout."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Route, expect

import annotate

from .conftest import (
    SITES,
    Console,
    Server,
    _serve,
    annotate_selection,
    click_highlight,
    highlighted,
    notes_in_store,
    open_page,
    select_text,
)


def test_api_500_keeps_the_ui_working(page: Page, plain_server: Server, console: Console) -> None:
    console.allow("status of 500")
    failed: list[str] = []

    def fail_once(route: Route) -> None:
        if route.request.method == "POST" and not failed:
            failed.append(route.request.url)
            route.fulfill(
                status=500,
                content_type="application/json",
                body=json.dumps({"error": "internal error", "code": "internal"}),
            )
        else:
            route.continue_()

    open_page(page, plain_server.url)
    page.route("**/__annotate/api/annotations", fail_once)
    select_text(page, "unique sentence")
    page.get_by_role("button", name="Annotate").click()
    page.get_by_label("Note", exact=True).fill("Survives a 500.")
    page.get_by_role("button", name="Save").click()
    toast = page.locator("#annotate-host .toast.error")
    expect(toast).to_have_text("Saving failed: internal error (500)")
    expect(toast).to_have_attribute("role", "alert")
    dialog = page.locator("#annotate-host [role=dialog]")
    expect(dialog).to_contain_text("Could not save: internal error (500)")
    expect(page.get_by_label("Note", exact=True)).to_have_value("Survives a 500.")
    assert notes_in_store(plain_server.project) == []

    page.get_by_role("button", name="Save").click()  # the second try reaches the server
    expect(dialog).to_be_hidden()
    assert [a.note for a in notes_in_store(plain_server.project)] == ["Survives a 500."]
    assert highlighted(page) == ["unique sentence"]
    assert failed == [plain_server.url + "__annotate/api/annotations"]


def test_a_failed_load_is_reported_and_recovers(
    page: Page, plain_server: Server, console: Console
) -> None:
    console.allow("status of 500")
    annotate_in_store(plain_server, "Loaded later.")
    page.route(
        "**/__annotate/api/anchor",
        lambda route: route.fulfill(
            status=500, content_type="application/json", body='{"error":"boom","code":"internal"}'
        ),
    )
    page.goto(plain_server.url)
    expect(page.locator("#annotate-host .toast.error")).to_have_text(
        "Loading notes failed: boom (500)"
    )
    page.unroute("**/__annotate/api/anchor")
    page.get_by_role("button", name="Review panel").click()  # opening the panel loads again
    expect(page.locator("#annotate-panel li.item")).to_contain_text("Loaded later.")
    page.wait_for_function("() => CSS.highlights.get('annotate').size === 1")


def annotate_in_store(server: Server, note: str) -> None:
    with annotate.open(server.project) as store:
        store.add_annotation(
            {
                "type": "text",
                "pageUrl": "/",
                "note": note,
                "selectedText": "unique sentence",
                "quote": {
                    "exact": "unique sentence",
                    "prefix": "A paragraph with a ",
                    "suffix": "",
                },
            }
        )


def test_foreign_origin_cannot_write(page: Page, plain_server: Server, console: Console) -> None:
    # The browser itself blocks the request (CORS, Private Network Access) and says so.
    console.allow("ERR_FAILED.*localhost|CORS policy|status of 401")
    # 1. A page of another origin that knows the token still cannot write: the API refuses it.
    other = f"http://localhost:{plain_server.port}/"
    page.route(
        "http://evil.localhost/",
        lambda route: route.fulfill(
            content_type="text/html", body="<html><body>evil</body></html>"
        ),
    )
    page.goto("http://evil.localhost/")
    result = page.evaluate(
        """async ([url, token]) => {
          try {
            const r = await fetch(url + '__annotate/api/page-notes', {method: 'POST',
              headers: {'Content-Type': 'text/plain', 'X-Annotate-Token': token},
              body: JSON.stringify({pageUrl: '/', note: 'evil'})});
            return r.status;
          } catch (e) { return 'blocked'; }
        }""",
        [other, plain_server.token],
    )
    assert result == "blocked"
    r = page.request.post(
        plain_server.url + "__annotate/api/page-notes",
        headers={"X-Annotate-Token": plain_server.token, "Origin": "http://evil.localhost"},
        data={"pageUrl": "/", "note": "evil"},
    )
    assert r.status == 403 and r.json()["code"] == "forbidden_origin"

    # 2. When the API refuses the overlay itself (here: the token was rotated while the page was
    # open), the reviewer reads why, and a reload fixes it.
    open_page(page, plain_server.url)
    (plain_server.project / ".annotate" / "token").write_text("rotated-" + "x" * 40 + "\n")
    page.get_by_role("button", name="Review panel").click()
    panel = page.locator("#annotate-panel")
    panel.get_by_role("button", name="Add page note").click()
    panel.get_by_label("Note", exact=True).fill("with a stale token")
    panel.get_by_role("button", name="Save").click()
    toast = page.locator("#annotate-host .toast.error", has_text="Saving")
    expect(toast).to_have_text(
        "Saving the page note failed: Wrong X-Annotate-Token: reload the page to get the new one (401)"
    )
    expect(panel.get_by_label("Note", exact=True)).to_have_value("with a stale token")
    with annotate.open(plain_server.project) as store:
        assert store.list_page_notes() == []
    page.reload()
    panel.get_by_role("button", name="Add page note").click()
    panel.get_by_label("Note", exact=True).fill("after the reload")
    panel.get_by_role("button", name="Save").click()
    expect(panel.locator("li.item")).to_contain_text("after the reload")
    with annotate.open(plain_server.project) as store:
        assert [n.note for n in store.list_page_notes()] == ["after the reload"]


@pytest.fixture
def read_only_server(tmp_path: Path, browser: Browser) -> Iterator[Server]:
    project = tmp_path / "project"
    project.mkdir()
    shutil.copytree(SITES / "plain", project / "site")
    with annotate.open(project) as store:
        store.add_annotation(
            {
                "type": "text",
                "pageUrl": "/",
                "note": "Seen read-only.",
                "selectedText": "unique sentence",
                "quote": {
                    "exact": "unique sentence",
                    "prefix": "A paragraph with a ",
                    "suffix": "",
                },
            }
        )
    yield from _serve(Server(project, project / "site", read_only=True), browser)


def test_read_only_hides_write_controls(page: Page, read_only_server: Server) -> None:
    open_page(page, read_only_server.url)
    assert highlighted(page) == ["unique sentence"]
    select_text(page, "Callout text")
    page.wait_for_timeout(100)
    expect(page.get_by_role("button", name="Annotate")).to_be_hidden()
    click_highlight(page, "unique sentence")
    page.wait_for_timeout(100)
    expect(page.locator("#annotate-host [role=dialog]")).to_be_hidden()
    page.get_by_role("button", name="Review panel").click()
    panel = page.locator("#annotate-panel")
    expect(panel.locator("li.item")).to_contain_text("Seen read-only.")
    expect(panel).to_contain_text("read-only")
    for name in ("Add page note", "Send to agent", "Reply", "Accept", "Delete", "Edit"):
        expect(panel.get_by_role("button", name=name)).to_have_count(0)
    expect(panel.get_by_role("button", name="Copy as Markdown")).to_be_visible()


def test_shortcuts_do_not_fire_while_typing(page: Page, material_server: Server) -> None:
    open_page(page, material_server.url)
    panel = page.locator("#annotate-panel")
    page.keyboard.press("Control+Shift+Period")
    expect(panel).to_be_visible()
    page.keyboard.press("Escape")
    expect(panel).to_be_hidden()
    expect(page.get_by_role("button", name="Review panel")).to_be_focused()

    # Typing in the page's own field (Material's search): no panel.
    page.locator("label.md-search__icon, .md-search__input").first.click()
    search = page.locator("input.md-search__input")
    expect(search).to_be_focused()
    search.press("Control+Shift+Period")
    page.wait_for_timeout(150)
    expect(panel).to_be_hidden()
    search.press("Escape")
    expect(page.locator("#__search")).not_to_be_checked()
    # Material's search overlay keeps covering the page until its closing transition ends.
    page.wait_for_function(
        "() => document.querySelector('.md-search__overlay').getBoundingClientRect().width === 0"
    )

    # Typing in the overlay's own fields: Material's single-key shortcuts (`.`/`n` = next page,
    # `s`/`f` = search) must not fire either.
    select_text(page, "fixture site")
    page.get_by_role("button", name="Annotate").click()
    note = page.get_by_label("Note", exact=True)
    note.press_sequentially("next. and search now sf", delay=5)
    note.press("Control+Shift+Period")
    expect(note).to_have_value("next. and search now sf")
    expect(panel).to_be_hidden()
    assert page.url == material_server.url
    expect(search).not_to_be_focused()
    note.press("Control+Enter")  # saves
    expect(page.locator("#annotate-host [role=dialog]")).to_be_hidden()
    assert [a.note for a in notes_in_store(material_server.project)] == ["next. and search now sf"]


def test_rapid_create_edit_delete_stays_consistent(page: Page, plain_server: Server) -> None:
    open_page(page, plain_server.url)
    quotes = ["unique sentence", "Callout text", "First item", "Second item", "far below"]
    for i, quote in enumerate(quotes):
        annotate_selection(page, quote, f"note {i}")
    page.get_by_role("button", name="Review panel").click()
    panel = page.locator("#annotate-panel")
    items = panel.locator("li.item")
    expect(items).to_have_count(5)
    # Edit two and delete two as fast as the UI allows.
    for i in (1, 3):
        click_highlight(page, quotes[i])
        page.get_by_label("Note", exact=True).fill(f"edited {i}")
        page.keyboard.press("Control+Enter")
        expect(page.locator("#annotate-host [role=dialog]")).to_be_hidden()
    for note in ("note 0", "note 4"):
        item = items.filter(has_text=note)
        item.get_by_role("button", name="Delete").click()
        item.get_by_role("button", name="Delete").click()
    expect(items).to_have_count(3)
    expect(page.get_by_role("tab", name="This page (3)")).to_be_visible()
    stored = sorted(a.note for a in notes_in_store(plain_server.project))
    assert stored == ["edited 1", "edited 3", "note 2"]
    assert sorted(highlighted(page)) == sorted(["Callout text", "First item", "Second item"])
    page.reload()
    expect(items).to_have_count(3)
    assert sorted(highlighted(page)) == sorted(["Callout text", "First item", "Second item"])


def test_no_layout_shift(page: Page, material_server: Server, console: Console) -> None:
    def layout() -> object:
        return page.evaluate(
            """() => [document.documentElement.scrollHeight, document.documentElement.scrollWidth,
                      ...[...document.querySelectorAll('article > *')].map(e => {
                        const r = e.getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; })]"""
        )

    console.allow("ERR_FAILED.*/__annotate/overlay/")
    page.route("**/__annotate/overlay/annotate.js", lambda route: route.abort())
    page.route("**/__annotate/overlay/annotate.css", lambda route: route.abort())
    page.goto(material_server.url)
    page.wait_for_load_state("load")
    without = layout()
    page.unroute("**/__annotate/overlay/annotate.js")
    page.unroute("**/__annotate/overlay/annotate.css")
    open_page(page, material_server.url)
    annotate_selection(page, "fixture site", "A highlight changes no layout either.")
    assert page.evaluate("document.querySelectorAll('mark, [data-annotate-id]').length") == 0
    assert layout() == without

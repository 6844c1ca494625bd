"""What the panel shows of the agent's side of the loop (issue #14): a passage deleted as the
reviewer asked, the buttons of the lanes."""

from __future__ import annotations

import sqlite3

from playwright.sync_api import Page, expect

import annotate

from .conftest import Server, highlighted, open_page

QUOTE = "unique sentence about lighthouses"


def test_deleted_as_asked_is_no_warning_and_has_no_highlight(
    page: Page, plain_server: Server
) -> None:
    with annotate.open(plain_server.project) as store:
        note = store.add_annotation(
            {
                "type": "text",
                "pageUrl": "/",
                "note": "Drop this sentence.",
                "intent": "delete",
                "selectedText": QUOTE,
                "quote": {"exact": QUOTE, "prefix": "A paragraph with a ", "suffix": " and"},
            }
        )
        store.address_annotation(note.id)
    # The state `address_annotation(id, deleted=True)` leaves (docs/data-model.md), written
    # directly: the text is still on this static page, so only the state keeps it unpainted.
    with sqlite3.connect(plain_server.project / ".annotate" / "annotations.db") as db:
        db.execute("UPDATE annotations SET anchor_state = 'removed' WHERE id = ?", (note.id,))

    open_page(page, plain_server.url)
    assert highlighted(page) == [] and highlighted(page, "annotate-addressed") == []
    page.get_by_role("button", name="Review panel").click()
    item = page.locator("#annotate-panel li.item")
    expect(item.locator(".removed")).to_have_text("deleted as asked")
    expect(item.locator(".orphan")).to_have_count(0)
    expect(item.locator(".flag")).to_have_count(0)
    expect(item.locator(".badge")).to_have_text("addressed")
    # Accept and Reopen stay: the reviewer still closes the loop.
    expect(item.get_by_role("button", name="Accept")).to_be_visible()
    expect(item.get_by_role("button", name="Reopen")).to_be_visible()


def test_each_open_note_has_ask_agent_now(page: Page, plain_server: Server) -> None:
    with annotate.open(plain_server.project) as store:
        for note in ("Open one.", "Resolved one."):
            created = store.add_annotation(
                {
                    "type": "text",
                    "pageUrl": "/",
                    "note": note,
                    "selectedText": QUOTE,
                    "quote": {"exact": QUOTE, "prefix": "", "suffix": ""},
                }
            )
        store.accept(created.id)
        store.add_page_note({"pageUrl": "/", "note": "A page note."})
    open_page(page, plain_server.url)
    page.get_by_role("button", name="Review panel").click()
    page.get_by_label("Status").select_option("all")
    items = page.locator("#annotate-panel li.item")
    expect(items).to_have_count(3)
    for note, count in (("Open one.", 1), ("A page note.", 1), ("Resolved one.", 0)):
        ask = items.filter(has_text=note).get_by_role("button", name="Ask agent now")
        expect(ask).to_have_count(count)

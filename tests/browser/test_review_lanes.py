"""What the panel shows of the agent's side of the loop (issue #14): a passage deleted as the
reviewer asked, Ask agent now, the Markdown change of an addressed note, a review that is done."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from playwright.sync_api import Page, Request, expect

import annotate

from .conftest import MaterialServer, Server, annotate_selection, highlighted, open_page

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
        # The text is still on this static page: only the state keeps it unpainted.
        store.address_annotation(note.id, deleted=True)

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


def reviews_posted(page: Page) -> list[Any]:
    bodies: list[Any] = []

    def on_request(request: Request) -> None:
        if request.method == "POST" and request.url.endswith("/__annotate/api/reviews"):
            bodies.append(request.post_data_json)

    page.on("request", on_request)
    return bodies


AGENT_ANSWERS = """
import sys, annotate
with annotate.open(sys.argv[1]) as store:
    store.add_agent_reply(sys.argv[2], "The lighthouse keepers were the Stevensons.")
"""


def test_ask_agent_now_sends_one_note_and_the_answer_shows_live(
    page: Page, plain_server: Server
) -> None:
    with annotate.open(plain_server.project) as store:
        first, second = (
            store.add_annotation(
                {
                    "type": "text",
                    "pageUrl": "/",
                    "note": note,
                    "selectedText": QUOTE,
                    "quote": {"exact": QUOTE, "prefix": "", "suffix": ""},
                }
            )
            for note in ("Collected for the batch.", "Who kept them?")
        )
    bodies = reviews_posted(page)
    open_page(page, plain_server.url)
    page.get_by_role("button", name="Review panel").click()
    item = page.locator("#annotate-panel li.item", has_text="Who kept them?")
    item.get_by_role("button", name="Ask agent now").click()
    expect(page.locator("#annotate-host .toast")).to_have_text("Sent 1 note to the agent (review)")
    assert bodies == [{"mode": "review", "ids": [second.id]}]
    with annotate.open(plain_server.project) as store:
        [review] = store.list_reviews()
        assert (review.mode, [a.id for a in review.annotations]) == ("review", [second.id])
        # The other note is still waiting for the batch.
        batch = store.create_review({"mode": "edit"})
        assert [a.id for a in batch.annotations] == [first.id]

    subprocess.run(
        [sys.executable, "-c", AGENT_ANSWERS, str(plain_server.project), second.id], check=True
    )
    expect(item.locator(".reply.agent")).to_contain_text("the Stevensons", timeout=10_000)


AGENT_ADDRESSES_ALL = """
import sys, annotate
with annotate.open(sys.argv[1]) as store:
    for note in store.list_annotations():
        store.address_annotation(note.id, message="Done.")
"""


def test_a_review_whose_notes_are_all_addressed_is_done(page: Page, plain_server: Server) -> None:
    open_page(page, plain_server.url)
    annotate_selection(page, QUOTE, "Shorter, please.")
    page.get_by_role("button", name="Review panel").click()
    page.get_by_role("button", name="Send to agent").click()
    status = page.locator("#annotate-panel .review-status")
    expect(status).to_contain_text("is waiting for the agent")
    subprocess.run(
        [sys.executable, "-c", AGENT_ADDRESSES_ALL, str(plain_server.project)], check=True
    )
    expect(status).to_contain_text(
        "is done: every note in it is addressed or resolved", timeout=10_000
    )


def test_an_addressed_note_shows_its_markdown_change(
    page: Page, material_server: MaterialServer
) -> None:
    project = material_server.project
    open_page(page, material_server.url)
    annotate_selection(page, "mentions lighthouses and their keepers", "Who kept them?")
    source = project / "docs" / "index.md"
    new = "mentions lighthouses and the people who kept them"
    # The excerpts are shown as text: a payload in the Markdown (a code span on the page) runs
    # nothing in the panel (issue #17).
    payload = "`<img src=x onerror=window.__xss=1>`"
    text = source.read_text().replace("mentions lighthouses and their keepers", f"{new} {payload}")
    source.write_text(text)
    with annotate.open(project) as store:
        [note] = store.list_annotations()
        store.address_annotation(note.id, new)
        note = store.get_annotation(note.id)
    assert note.original_source is not None and note.source is not None
    before, after = note.original_source.excerpt, note.source.excerpt
    assert before != after
    material_server.rebuild()
    page.reload()
    page.get_by_role("button", name="Review panel").click()
    diff = page.locator("#annotate-panel .diff")
    expect(diff).to_be_visible()
    # Read without its insertions it is the Markdown then; without its deletions, now.
    shown = diff.evaluate(
        """(el) => {
          const read = (skip) => [...el.childNodes].slice(1)
            .filter((n) => n.nodeName !== skip).map((n) => n.textContent).join('');
          return [read('INS'), read('DEL'), [...el.querySelectorAll('del')].map((n) => n.textContent),
                  [...el.querySelectorAll('ins')].map((n) => n.textContent)];
        }"""
    )
    assert shown[0] == before and shown[1] == after
    assert any("keepers" in d for d in shown[2]) and any("people" in i for i in shown[3])
    assert payload in shown[1] and page.evaluate("window.__xss") is None
    assert diff.locator("img").count() == 0

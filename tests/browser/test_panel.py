"""The review panel: tabs and counts, page notes per URL, the thread, accept / reopen, delete,
search and filter, source lines, orphans, Send to agent and Copy as Markdown."""

from __future__ import annotations

from playwright.sync_api import Page, expect

import annotate
from annotate.export import render

from .conftest import Server, annotate_selection, highlighted, notes_in_store, open_page
from .test_robustness import annotate_in_store


def panel(page: Page):
    return page.locator("#annotate-panel")


def open_panel(page: Page) -> None:
    page.get_by_role("button", name="Review panel").click()
    expect(panel(page)).to_be_visible()


def add_page_note(page: Page, text: str) -> None:
    panel(page).get_by_role("button", name="Add page note").click()
    panel(page).get_by_label("Note", exact=True).fill(text)
    panel(page).get_by_role("button", name="Save").click()
    expect(panel(page).get_by_label("Note", exact=True)).to_have_count(0)


def test_tabs_counts_and_page_note_scoping(page: Page, plain_server: Server) -> None:
    open_page(page, plain_server.url)
    annotate_selection(page, "unique sentence", "One.")
    annotate_selection(page, "Callout text", "Two.")
    open_panel(page)
    expect(page.get_by_role("tab", name="This page (2)")).to_have_attribute("aria-selected", "true")
    add_page_note(page, "The whole page is too long.")
    expect(page.get_by_role("tab", name="This page (3)")).to_be_visible()
    expect(page.get_by_role("tab", name="All pages (3)")).to_be_visible()

    page.goto(plain_server.url + "other.html")
    expect(panel(page)).to_be_visible()  # the panel stays open across pages
    expect(page.get_by_role("tab", name="This page (0)")).to_be_visible()
    expect(panel(page)).to_contain_text("No notes here yet.")
    add_page_note(page, "Harbour facts need a source.")
    expect(page.get_by_role("tab", name="This page (1)")).to_be_visible()
    expect(panel(page).locator("li.item")).to_have_count(1)
    expect(panel(page)).not_to_contain_text("too long")

    page.get_by_role("tab", name="All pages (4)").click()
    groups = panel(page).locator("h3")
    expect(groups).to_have_text(["Plain home /", "Plain other /other.html"])
    expect(panel(page).locator("li.item")).to_have_count(4)
    # No stray text (a "null" or "false" written for a part not shown) between the panel's parts.
    stray = panel(page).evaluate(
        "el => [...el.childNodes].filter(n => n.nodeType === 3).map(n => n.textContent)"
    )
    assert stray == []

    with annotate.open(plain_server.project) as store:
        notes = {n.page_url: n.note for n in store.list_page_notes()}
    assert notes == {
        "/": "The whole page is too long.",
        "/other.html": "Harbour facts need a source.",
    }

    # Clicking a note of another page goes there and shows it.
    panel(page).locator("li.item", has_text="One.").get_by_role(
        "button", name="Go to this note"
    ).click()
    page.wait_for_url(plain_server.url)
    expect(panel(page).locator("li.item.active")).to_contain_text("One.")
    assert highlighted(page, "annotate-active") == ["unique sentence"]


def test_edit_and_delete_page_note(page: Page, plain_server: Server) -> None:
    open_page(page, plain_server.url)
    open_panel(page)
    add_page_note(page, "Draft wording.")
    item = panel(page).locator("li.item")
    item.get_by_role("button", name="Edit").click()
    item.get_by_label("Note", exact=True).fill("Better wording.")
    item.get_by_role("button", name="Save").click()
    expect(item.locator(".note")).to_have_text("Better wording.")
    with annotate.open(plain_server.project) as store:
        assert [n.note for n in store.list_page_notes()] == ["Better wording."]
    item.get_by_role("button", name="Delete").click()
    expect(item).to_contain_text("Delete this note and its replies?")
    item.get_by_role("button", name="Cancel").click()
    item.get_by_role("button", name="Delete").click()
    item.get_by_role("button", name="Delete").click()
    expect(item).to_have_count(0)
    with annotate.open(plain_server.project) as store:
        assert store.list_page_notes() == []


def test_reply_accept_reopen(page: Page, plain_server: Server) -> None:
    open_page(page, plain_server.url)
    annotate_selection(page, "unique sentence", "Is this true?")
    [note] = notes_in_store(plain_server.project)
    with annotate.open(plain_server.project) as store:
        store.add_agent_reply(note.id, "Yes, checked against the source.")
        store.address_annotation(note.id)
    open_panel(page)
    item = panel(page).locator("li.item")
    expect(item.locator(".badge")).to_have_text("addressed")
    expect(item.locator(".reply.agent")).to_contain_text("Agent")
    expect(item.locator(".reply.agent")).to_contain_text("Yes, checked against the source.")

    item.get_by_role("button", name="Reply").click()
    item.get_by_label("Reply").fill("Thanks, but cite it.")
    item.get_by_role("button", name="Reply").click()
    expect(item.locator(".reply.reviewer")).to_contain_text("Thanks, but cite it.")

    item.get_by_role("button", name="Reopen").click()
    item.get_by_label("Follow-up note (optional)").fill("Add the citation please.")
    item.get_by_role("button", name="Reopen").click()
    expect(item.locator(".badge")).to_have_text("open")
    [note] = notes_in_store(plain_server.project)
    assert note.status == "open"
    assert [(r.role, r.message) for r in note.replies] == [
        ("agent", "Yes, checked against the source."),
        ("reviewer", "Thanks, but cite it."),
        ("reviewer", "Add the citation please."),
    ]

    item.get_by_role("button", name="Accept").click()
    # Resolved notes leave the default listing, but the status filter shows them.
    expect(item).to_have_count(0)
    assert highlighted(page) == []
    panel(page).get_by_label("Status").select_option("resolved")
    expect(item.locator(".badge")).to_have_text("resolved")
    expect(item.get_by_role("button", name="Accept")).to_have_count(0)
    assert notes_in_store(plain_server.project, include_resolved=True)[0].status == "resolved"


def test_search_and_status_filter(page: Page, plain_server: Server) -> None:
    open_page(page, plain_server.url)
    annotate_selection(page, "unique sentence", "About lighthouses.")
    annotate_selection(page, "Callout text", "About callouts.")
    notes = notes_in_store(plain_server.project)
    with annotate.open(plain_server.project) as store:
        store.set_in_progress(notes[1].id)
    open_panel(page)
    items = panel(page).locator("li.item")
    expect(items).to_have_count(2)
    panel(page).get_by_label("Search notes").fill("callout")
    expect(items).to_have_count(1)
    expect(items).to_contain_text("About callouts.")
    panel(page).get_by_label("Search notes").fill("")
    panel(page).get_by_label("Status").select_option("in_progress")
    expect(items).to_have_count(1)
    expect(items.locator(".badge")).to_have_text("in progress")
    panel(page).get_by_label("Status").select_option("open")
    expect(items).to_have_count(1)
    expect(items).to_contain_text("About lighthouses.")


def test_source_lines_on_a_mkdocs_site(page: Page, material_server: Server) -> None:
    open_page(page, material_server.url)
    annotate_selection(page, "The final paragraph mentions lighthouses", "Cite a source.")
    open_panel(page)
    expect(panel(page).locator(".source")).to_have_text("docs/index.md:19")
    [note] = notes_in_store(material_server.project)
    assert (note.source.path, note.source.line_start) == ("docs/index.md", 19)


def test_send_to_agent_and_picked_up(page: Page, plain_server: Server) -> None:
    open_page(page, plain_server.url)
    annotate_selection(page, "unique sentence", "Check this.")
    open_panel(page)
    send = panel(page).get_by_role("region", name="Send to agent")
    expect(send).to_contain_text("No review sent yet.")
    send.get_by_label("Mode").select_option("review")
    send.get_by_label("Message").fill("Just answer for now.")
    send.get_by_role("button", name="Send to agent").click()
    expect(page.locator("#annotate-host .toast")).to_contain_text("Sent 1 note to the agent")
    expect(send).to_contain_text("is waiting for the agent")
    with annotate.open(plain_server.project) as store:
        [review] = store.list_reviews()
        assert (review.mode, review.message) == ("review", "Just answer for now.")
        assert [a.note for a in review.annotations] == ["Check this."]
        store.claim_review()
    expect(send).to_contain_text("was picked up by the agent", timeout=2000)


def test_copy_as_markdown(page: Page, plain_server: Server) -> None:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    open_page(page, plain_server.url)
    annotate_selection(page, "unique sentence", "Markdown export check.")
    open_panel(page)
    add_page_note(page, "Page-level remark.")
    panel(page).get_by_role("button", name="Copy as Markdown").click()
    expect(page.locator("#annotate-host .toast")).to_have_text("Copied as Markdown")
    copied = page.evaluate("navigator.clipboard.readText()")
    with annotate.open(plain_server.project) as store:
        assert copied == render(store, "markdown")
    assert "Markdown export check." in copied and "unique sentence" in copied
    assert "Page-level remark." in copied


def test_focus_and_escape_in_the_panel(page: Page, plain_server: Server) -> None:
    open_page(page, plain_server.url)
    annotate_selection(page, "unique sentence", "Focus check.")
    page.keyboard.press("Control+Shift+Period")
    expect(page.get_by_role("tab", name="This page (1)")).to_be_focused()
    item = panel(page).locator("li.item")
    item.get_by_role("button", name="Reply").click()
    reply = item.get_by_label("Reply")
    expect(reply).to_be_focused()  # the form takes the focus
    reply.fill("typed, then abandoned")
    page.keyboard.press("Escape")  # closes the form, not the panel
    expect(reply).to_have_count(0)
    expect(panel(page)).to_be_visible()
    page.keyboard.press("Escape")  # now the panel
    expect(panel(page)).to_be_hidden()
    expect(page.get_by_role("button", name="Review panel")).to_be_focused()
    with annotate.open(plain_server.project) as store:
        assert store.list_annotations()[0].replies == ()


def test_every_note_of_the_site_is_fetched_only_for_the_all_pages_tab(
    page: Page, plain_server: Server
) -> None:
    site_wide: list[str] = []
    page.on(
        "request",
        lambda r: (
            site_wide.append(r.url)
            if "/api/annotations?" in r.url and "page=" not in r.url
            else None
        ),
    )
    open_page(page, plain_server.url)
    annotate_selection(page, "unique sentence", "One.")
    with annotate.open(plain_server.project) as store:
        store.add_page_note({"pageUrl": "/other.html", "note": "Elsewhere."})
    open_panel(page)
    # The count of the whole site comes from the summary: 2 notes, 1 on this page.
    expect(page.get_by_role("tab", name="All pages (2)")).to_be_visible()
    expect(page.get_by_role("tab", name="This page (1)")).to_be_visible()
    assert site_wide == []
    page.get_by_role("tab", name="All pages (2)").click()
    expect(panel(page).locator("li.item")).to_have_count(2)
    # Once, or twice when the change feed's news of the page note arrives after the click.
    assert 1 <= len(site_wide) <= 2


def test_a_long_list_is_drawn_a_hundred_notes_at_a_time(page: Page, plain_server: Server) -> None:
    # Thousands of notes drawn at once would block the page on every keystroke in the search.
    with annotate.open(plain_server.project) as store:
        for i in range(250):
            store.add_page_note({"pageUrl": f"/p{i:03}/", "note": f"Remark number {i:03}."})
    open_page(page, plain_server.url)
    open_panel(page)
    page.get_by_role("tab", name="All pages (250)").click()
    items = panel(page).locator("li.item")
    expect(items).to_have_count(100)
    expect(items.last).to_contain_text("Remark number 099.")
    panel(page).get_by_role("button", name="Show 100 more (150 not shown)").click()
    expect(items).to_have_count(200)
    more = panel(page).get_by_role("button", name="Show 50 more (50 not shown)")
    expect(more).to_be_focused()  # the focus stays on the button the reviewer pressed
    more.click()
    expect(items).to_have_count(250)
    expect(panel(page).locator("#annotate-more")).to_have_count(0)
    # The search looks through every note, drawn or not; a new search starts again at 100.
    panel(page).get_by_label("Search notes").fill("number 24")
    expect(items).to_have_count(10)
    expect(items.first).to_contain_text("Remark number 240.")
    panel(page).get_by_label("Search notes").fill("Remark")
    expect(items).to_have_count(100)


def test_a_live_reply_redraws_only_its_note(page: Page, plain_server: Server) -> None:
    """A reply arriving for one note while the reviewer types in another note's reply box: only the
    changed note's row is drawn again, so the typed text, the focus and the caret stay; a button
    held down in an unchanged row meanwhile still gets its click."""
    open_page(page, plain_server.url)
    annotate_selection(page, "unique sentence", "First.")
    annotate_selection(page, "unique sentence", "Second.")
    open_panel(page)
    first = panel(page).locator("li.item", has_text="First.")
    second = panel(page).locator("li.item", has_text="Second.")
    expect(second).to_be_visible()
    first.get_by_role("button", name="Reply").click()
    box = first.get_by_label("Reply")
    expect(box).to_be_focused()
    page.keyboard.type("half a thou")
    first.evaluate("li => { li.dataset.mark = 'kept'; }")
    [b] = [a for a in notes_in_store(plain_server.project) if a.note == "Second."]
    with annotate.open(plain_server.project) as store:
        store.add_agent_reply(b.id, "Reworded it.")
    expect(second).to_contain_text("Reworded it.")
    expect(box).to_be_focused()
    expect(first).to_have_attribute("data-mark", "kept")  # the same row: not drawn again
    page.keyboard.type("ght")
    expect(box).to_have_value("half a thought")

    # A press on First's Accept while Second changes again: the click is not lost.
    first.get_by_role("button", name="Cancel").click()
    accept = first.get_by_role("button", name="Accept")
    target = accept.bounding_box()
    assert target is not None
    page.mouse.move(target["x"] + target["width"] / 2, target["y"] + target["height"] / 2)
    page.mouse.down()
    with annotate.open(plain_server.project) as store:
        store.add_agent_reply(b.id, "And again.")
    expect(second).to_contain_text("And again.")
    page.mouse.up()
    expect(page.get_by_role("tab", name="This page (1)")).to_be_visible()
    # Accepted: resolved notes are not listed by default.
    assert [a.note for a in notes_in_store(plain_server.project)] == ["Second."]


def test_a_press_survives_a_live_update_that_adds_a_note(page: Page, plain_server: Server) -> None:
    """A note arriving lays the list out again around the rows that did not change: a button held
    down in one of them meanwhile still gets its click."""
    open_page(page, plain_server.url)
    annotate_selection(page, "unique sentence", "First.")
    open_panel(page)
    first = panel(page).locator("li.item", has_text="First.")
    reply = first.get_by_role("button", name="Reply")
    target = reply.bounding_box()
    assert target is not None
    page.mouse.move(target["x"] + target["width"] / 2, target["y"] + target["height"] / 2)
    page.mouse.down()
    annotate_in_store(plain_server, "Written by the agent meanwhile.")
    expect(panel(page)).to_contain_text("Written by the agent meanwhile.")
    page.mouse.up()
    expect(first.get_by_label("Reply")).to_be_focused()
    # Nothing the overlay declares is a global of the page: its sources share one closure.
    assert page.evaluate("[typeof S, typeof set, typeof h, typeof SHADOW_CSS]") == ["undefined"] * 4

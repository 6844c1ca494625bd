"""Text annotations: select → popup → save → highlight, across inline markup; persistence."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from .conftest import (
    Server,
    annotate_selection,
    click_highlight,
    highlighted,
    notes_in_store,
    open_page,
    select_text,
    wait_painted,
)


def test_text_across_inline_markup_survives_reload(page: Page, plain_server: Server) -> None:
    open_page(page, plain_server.url)
    quote = "with pip install annotate and then read the other page for config"
    annotate_selection(page, quote, "Say pipx instead.")

    [stored] = notes_in_store(plain_server.project)
    assert stored.type == "text"
    assert stored.selected_text == quote
    assert stored.note == "Say pipx instead."
    assert stored.page_url == "/"
    text = page.evaluate("annotateOverlay.pageText()")
    assert text[stored.position.start : stored.position.end] == quote
    assert stored.quote.prefix == text[max(0, stored.position.start - 32) : stored.position.start]
    assert len(stored.quote.suffix) == 32
    assert stored.quote.suffix == text[stored.position.end : stored.position.end + 32]
    assert highlighted(page) == [quote]

    page.reload()
    wait_painted(page)
    assert highlighted(page) == [quote]
    page.get_by_role("button", name="Review panel").click()
    item = page.locator("#annotate-host li.item")
    expect(item).to_have_count(1)
    expect(item).to_contain_text("Say pipx instead.")
    expect(item).to_contain_text(quote)
    expect(item.locator(".badge")).to_have_text("open")


def test_selection_across_list_items(page: Page, plain_server: Server) -> None:
    open_page(page, plain_server.url)
    annotate_selection(page, "apples\nSecond item", "Merge these two items.")
    [stored] = notes_in_store(plain_server.project)
    assert stored.selected_text == "apples\nSecond item"
    assert highlighted(page) == ["apples\nSecond item"]


def test_page_text_skips_overlay_and_outside_content(page: Page, plain_server: Server) -> None:
    open_page(page, plain_server.url)
    text = page.evaluate("annotateOverlay.pageText()")
    assert text.lstrip().startswith("Plain home")  # the <main>, not the <header>
    assert "Site header" not in text
    assert "Review panel" not in text and "Annotate" not in text


def test_material_page_text_skips_permalinks_and_copy_buttons(
    page: Page, material_server: Server
) -> None:
    open_page(page, material_server.url)
    page.locator(".md-clipboard, .md-code__nav").first.wait_for(state="attached")
    text = page.evaluate("annotateOverlay.pageText()")
    assert "¶" not in text
    assert "Fixture home" in text and 'print("hello from a code block")' in text
    assert "Annotate fixture" not in text  # the site name lives in the header, outside the article


def test_intents_and_suggestion(page: Page, plain_server: Server) -> None:
    open_page(page, plain_server.url)
    select_text(page, "lighthouses and their keepers")
    page.get_by_role("button", name="Annotate").click()
    suggestion = page.get_by_label("Suggestion")
    expect(suggestion).to_be_hidden()
    page.get_by_label("Intent").select_option("replace")
    expect(suggestion).to_be_visible()
    suggestion.fill("lighthouse keepers")
    page.get_by_label("Note", exact=True).fill("Shorter.")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("dialog")).to_be_hidden()
    [stored] = notes_in_store(plain_server.project)
    assert (stored.intent, stored.suggestion) == ("replace", "lighthouse keepers")

    # A delete intent needs no note.
    select_text(page, "Callout text")
    page.get_by_role("button", name="Annotate").click()
    page.get_by_label("Intent").select_option("delete")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("dialog")).to_be_hidden()
    stored = notes_in_store(plain_server.project)
    assert [(a.intent, a.selected_text) for a in stored][1] == ("delete", "Callout text")


def test_click_highlight_to_edit_and_delete(page: Page, plain_server: Server) -> None:
    open_page(page, plain_server.url)
    annotate_selection(page, "unique sentence about lighthouses", "First thought.")
    click_highlight(page, "unique sentence about lighthouses")
    dialog = page.get_by_role("dialog", name="Edit note")
    expect(dialog).to_be_visible()
    note = page.get_by_label("Note", exact=True)
    expect(note).to_have_value("First thought.")
    note.fill("Second thought.")
    page.get_by_role("button", name="Save").click()
    expect(dialog).to_be_hidden()
    assert [a.note for a in notes_in_store(plain_server.project)] == ["Second thought."]

    click_highlight(page, "unique sentence about lighthouses")
    dialog.get_by_role("button", name="Delete").click()
    dialog.get_by_role("button", name="Delete").click()  # the confirmation
    expect(dialog).to_be_hidden()
    assert notes_in_store(plain_server.project) == []
    assert highlighted(page) == []


def test_empty_comment_is_refused_with_a_message(page: Page, plain_server: Server) -> None:
    open_page(page, plain_server.url)
    select_text(page, "Callout text")
    page.get_by_role("button", name="Annotate").click()
    page.get_by_role("button", name="Save").click()
    dialog = page.get_by_role("dialog")
    expect(dialog.get_by_role("alert")).to_have_text("Write a note first.")
    expect(page.get_by_label("Note", exact=True)).to_be_focused()
    page.get_by_label("Intent").select_option("insert")
    page.get_by_role("button", name="Save").click()
    expect(dialog.get_by_role("alert")).to_have_text("Write the suggested text first.")
    expect(page.get_by_label("Suggestion")).to_be_focused()
    assert notes_in_store(plain_server.project) == []

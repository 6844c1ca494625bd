"""Element annotations (Alt+hover, Alt+click) and the popup's placement, dismissal and draft."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from .conftest import Server, notes_in_store, open_page, select_text, wait_painted


def center(page: Page, selector: str) -> tuple[float, float]:
    box = page.locator(selector).bounding_box()
    assert box is not None
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


def test_alt_hover_outlines_and_alt_click_annotates(page: Page, plain_server: Server) -> None:
    open_page(page, plain_server.url)
    outline = page.locator("#annotate-host .outline")
    x, y = center(page, "aside.callout")
    page.mouse.move(x, y)
    expect(outline).to_be_hidden()
    page.keyboard.down("Alt")
    page.mouse.move(x + 1, y + 1)
    expect(outline).to_be_visible()
    expect(outline).to_contain_text("p")  # the label names the element under the pointer
    page.mouse.click(x + 1, y + 1)
    page.keyboard.up("Alt")
    expect(outline).to_be_hidden()
    dialog = page.get_by_role("dialog", name="New note")
    expect(dialog).to_contain_text("Callout text")
    page.get_by_label("Note", exact=True).fill("Turn this into an admonition.")
    page.get_by_role("button", name="Save").click()
    expect(dialog).to_be_hidden()

    [stored] = notes_in_store(plain_server.project)
    assert stored.type == "element"
    sel = stored.element_selector
    assert sel.tag_name == "p"
    assert "Callout text" in sel.description
    assert sel.outer_html_preview.startswith("<p>Callout text")
    # The CSS selector and the XPath both name exactly the element that was clicked.
    assert page.evaluate(
        """([css, xp]) => {
          const all = document.querySelectorAll(css);
          const byXpath = document.evaluate(xp, document, null, 9, null).singleNodeValue;
          return all.length === 1 && all[0] === byXpath && all[0].parentElement.matches('aside.callout');
        }""",
        [sel.css_selector, sel.xpath],
    )

    page.reload()
    wait_painted(page)
    box = page.locator("#annotate-host .box")
    expect(box).to_have_count(1)
    target = page.locator("aside.callout p").bounding_box()
    painted = box.bounding_box()
    assert target and painted
    assert abs(painted["x"] - (target["x"] - 2)) < 1 and abs(painted["y"] - (target["y"] - 2)) < 1
    page.get_by_role("button", name="Review panel").click()
    item = page.locator("#annotate-host li.item")
    expect(item).to_contain_text("Turn this into an admonition.")
    expect(item.locator(".kind")).to_have_text("element")


def test_alt_click_on_a_link_does_not_follow_it(page: Page, plain_server: Server) -> None:
    open_page(page, plain_server.url)
    x, y = center(page, "#intro a")
    page.keyboard.down("Alt")
    page.mouse.move(x, y)
    page.mouse.click(x, y)
    page.keyboard.up("Alt")
    expect(page.get_by_role("dialog", name="New note")).to_contain_text("the other page")
    assert page.url == plain_server.url


def test_popup_stays_inside_the_viewport(page: Page, plain_server: Server) -> None:
    page.set_viewport_size({"width": 420, "height": 500})
    open_page(page, plain_server.url)
    # Scroll so the sentence sits at the very bottom of the viewport: the popup goes above it.
    page.evaluate(
        """() => { const r = document.querySelector('#bottom').getBoundingClientRect();
                   window.scrollBy(0, r.bottom - innerHeight + 4); }"""
    )
    select_text(page, "far below the fold")
    page.get_by_role("button", name="Annotate").click()
    dialog = page.get_by_role("dialog")
    box = dialog.bounding_box()
    quote = page.locator("#bottom").bounding_box()
    assert box and quote
    assert box["y"] >= 0 and box["y"] + box["height"] <= 500
    assert box["x"] >= 0 and box["x"] + box["width"] <= 420
    assert box["y"] + box["height"] <= quote["y"]  # above the selection, not over it


def test_popup_dismissal(page: Page, plain_server: Server) -> None:
    open_page(page, plain_server.url)
    dialog = page.get_by_role("dialog")
    adder = page.get_by_role("button", name="Annotate")

    # Escape closes the popup, focus goes back where it was.
    page.locator("#page-search").focus()
    select_text(page, "unique sentence")
    adder.click()
    expect(page.get_by_label("Note", exact=True)).to_be_focused()
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()

    # Cancel closes it.
    select_text(page, "unique sentence")
    adder.click()
    page.get_by_role("button", name="Cancel").click()
    expect(dialog).to_be_hidden()

    # A click elsewhere closes an empty popup, and a collapsed selection hides the adder.
    select_text(page, "unique sentence")
    expect(adder).to_be_visible()
    page.mouse.click(5, 300)
    expect(adder).to_be_hidden()
    select_text(page, "unique sentence")
    adder.click()
    page.mouse.click(5, 300)
    expect(dialog).to_be_hidden()

    # One holding a draft stays.
    select_text(page, "unique sentence")
    adder.click()
    page.get_by_label("Note", exact=True).fill("half a thought")
    page.mouse.click(5, 300)
    expect(dialog).to_be_visible()
    assert notes_in_store(plain_server.project) == []


def test_popup_draft_survives_a_reload(page: Page, plain_server: Server) -> None:
    open_page(page, plain_server.url)
    select_text(page, "lighthouses and their keepers")
    page.get_by_role("button", name="Annotate").click()
    page.get_by_label("Intent").select_option("replace")
    page.get_by_label("Suggestion").fill("keepers of lighthouses")
    page.get_by_label("Note", exact=True).fill("Reads better")
    page.reload()
    wait_painted(page)
    dialog = page.get_by_role("dialog", name="New note")
    expect(dialog).to_contain_text("lighthouses and their keepers")
    expect(page.get_by_label("Note", exact=True)).to_have_value("Reads better")
    expect(page.get_by_label("Suggestion")).to_have_value("keepers of lighthouses")
    expect(page.get_by_label("Intent")).to_have_value("replace")
    page.get_by_role("button", name="Save").click()
    expect(dialog).to_be_hidden()
    [stored] = notes_in_store(plain_server.project)
    assert (stored.selected_text, stored.suggestion) == (
        "lighthouses and their keepers",
        "keepers of lighthouses",
    )
    page.reload()
    wait_painted(page)
    expect(dialog).to_be_hidden()  # saved: no draft left behind

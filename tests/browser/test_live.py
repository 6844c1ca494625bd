"""Live updates from other processes, rebuilt pages, Material's instant navigation, restarts and
the palette."""

from __future__ import annotations

import subprocess
import sys

from playwright.sync_api import Page, expect

from .conftest import (
    Console,
    MaterialServer,
    Server,
    annotate_selection,
    highlighted,
    notes_in_store,
    open_page,
    wait_painted,
)
from .test_robustness import annotate_in_store

AGENT = """
import sys, annotate
with annotate.open(sys.argv[1]) as store:
    [note] = store.list_annotations()
    store.set_in_progress(note.id)
    store.add_agent_reply(note.id, "Done: reworded the sentence.")
    store.address_annotation(note.id)
"""


def test_agent_write_in_another_process_appears_live(page: Page, plain_server: Server) -> None:
    open_page(page, plain_server.url)
    annotate_selection(page, "unique sentence", "Reword this.")
    page.get_by_role("button", name="Review panel").click()
    item = page.locator("#annotate-panel li.item")
    expect(item.locator(".badge")).to_have_text("open")
    subprocess.run([sys.executable, "-c", AGENT, str(plain_server.project)], check=True)
    # Without reloading (docs/overlay.md, "Live updates"); the wait allows for a loaded machine.
    expect(item.locator(".badge")).to_have_text("addressed", timeout=10_000)
    expect(item.locator(".reply.agent")).to_contain_text("Done: reworded the sentence.")
    # Addressed notes are painted in their own colour.
    assert highlighted(page, "annotate-addressed") == ["unique sentence"]
    assert highlighted(page) == []


def test_rebuilt_page_reanchors_or_lists_orphans(
    page: Page, material_server: MaterialServer
) -> None:
    project = material_server.project
    open_page(page, material_server.url)
    annotate_selection(page, "mentions lighthouses and their keepers", "Too vague.")
    annotate_selection(page, "First list item about apples", "Pears?")
    assert highlighted(page) == [
        "First list item about apples",
        "mentions lighthouses and their keepers",
    ]

    source = project / "docs" / "index.md"
    text = source.read_text()
    text = text.replace("# Fixture home\n", "# Fixture home\n\nA brand new opening paragraph.\n")
    text = text.replace("- First list item about apples\n", "")
    text = text.replace(
        "mentions lighthouses and their keepers", "mentions lighthouses and the keepers"
    )
    source.write_text(text)
    material_server.rebuild()

    page.reload()
    wait_painted(page)
    assert highlighted(page) == ["mentions lighthouses and the keepers"]
    page.get_by_role("button", name="Review panel").click()
    orphan = page.locator("#annotate-panel li.item", has_text="Pears?")
    expect(orphan.locator(".orphan")).to_have_text("could not locate on this page")
    kept = page.locator("#annotate-panel li.item", has_text="Too vague.")
    expect(kept.locator(".orphan")).to_have_count(0)
    expect(kept.locator(".source")).to_have_text("docs/index.md:20")
    assert len(notes_in_store(project)) == 2  # nothing is dropped


def test_instant_navigation_between_pages(page: Page, material_server: Server) -> None:
    open_page(page, material_server.url)
    annotate_selection(page, "fixture site", "Home note.")
    page.evaluate("window.__sameDocument = true")
    page.locator("article").get_by_role("link", name="guide", exact=True).click()
    page.wait_for_url("**/guide/")
    page.wait_for_function(
        "() => document.querySelector('article h1').textContent.includes('Guide')"
    )
    wait_painted(page)
    assert page.evaluate("window.__sameDocument") is True, "instant navigation reloaded the page"
    assert page.evaluate("document.querySelectorAll('#annotate-host').length") == 1
    assert highlighted(page) == []
    annotate_selection(page, "install the tool with pipx", "Guide note.")
    assert highlighted(page) == ["install the tool with pipx"]
    page.get_by_role("button", name="Review panel").click()
    expect(page.get_by_role("tab", name="This page (1)")).to_be_visible()
    expect(page.locator("#annotate-panel li.item")).to_contain_text("Guide note.")

    page.go_back()
    page.wait_for_function(
        "() => document.querySelector('article h1').textContent.includes('Fixture')"
    )
    page.wait_for_function("() => CSS.highlights.get('annotate').size === 1")
    assert highlighted(page) == ["fixture site"]
    assert page.evaluate("window.__sameDocument") is True
    assert page.evaluate("document.querySelectorAll('#annotate-host').length") == 1
    expect(page.locator("#annotate-panel li.item")).to_contain_text("Home note.")
    assert {n.page_url for n in notes_in_store(material_server.project)} == {"/", "/guide/"}


def test_persists_across_server_restart(page: Page, plain_server: Server, console: Console) -> None:
    # The long-poll is refused while the server is down: expected, and the overlay retries.
    console.allow("ERR_CONNECTION_REFUSED|ERR_EMPTY_RESPONSE|ERR_CONNECTION_RESET")
    open_page(page, plain_server.url)
    annotate_selection(page, "unique sentence", "Keep me.")
    plain_server.restart()
    page.reload()
    wait_painted(page)
    assert highlighted(page) == ["unique sentence"]
    page.get_by_role("button", name="Review panel").click()
    expect(page.locator("#annotate-panel li.item")).to_contain_text("Keep me.")


def test_dark_palette(page: Page, material_server: Server) -> None:
    open_page(page, material_server.url)
    host = page.locator("#annotate-host")
    panel = page.locator("#annotate-panel")
    toggle = page.get_by_role("button", name="Review panel")
    expect(host).to_have_attribute("data-theme", "light")
    toggle.click()
    assert panel.evaluate("el => getComputedStyle(el).backgroundColor") == "rgb(255, 255, 255)"
    toggle.click()
    page.locator("label[title='Switch to dark mode']").click()
    expect(page.locator("body")).to_have_attribute("data-md-color-scheme", "slate")
    expect(host).to_have_attribute("data-theme", "dark")
    toggle.click()
    assert panel.evaluate("el => getComputedStyle(el).backgroundColor") == "rgb(31, 34, 43)"
    toggle.click()
    page.locator("label[title='Switch to light mode']").click()
    expect(host).to_have_attribute("data-theme", "light")


def test_prefers_color_scheme_without_material(page: Page, plain_server: Server) -> None:
    page.emulate_media(color_scheme="dark")
    open_page(page, plain_server.url)
    expect(page.locator("#annotate-host")).to_have_attribute("data-theme", "dark")
    page.emulate_media(color_scheme="light")
    expect(page.locator("#annotate-host")).to_have_attribute("data-theme", "light")


def test_a_live_update_while_a_button_is_pressed_does_not_swallow_the_click(
    page: Page, plain_server: Server
) -> None:
    # A live update re-renders the panel. Done between a button's mousedown and mouseup, it would
    # replace the pressed button, and the browser would send the click to no button at all.
    open_page(page, plain_server.url)
    annotate_selection(page, "unique sentence", "One.")
    toggle = page.get_by_role("button", name="Review panel")
    toggle.click()
    panel = page.locator("#annotate-panel")
    expect(page.get_by_role("tab", name="This page (1)")).to_be_visible()
    add = panel.get_by_role("button", name="Add page note")
    box = None
    while box is None:  # None while the panel happens to re-render (opening it loads again)
        box = add.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    annotate_in_store(plain_server, "Written by the agent meanwhile.")
    expect(toggle).to_have_text("✎2")  # the update has arrived while the button is held
    page.mouse.up()
    expect(panel.get_by_label("Note", exact=True)).to_be_visible()
    # The update held back during the press is shown once the click is done.
    expect(page.get_by_role("tab", name="This page (2)")).to_be_visible()
    expect(panel).to_contain_text("Written by the agent meanwhile.")
    expect(panel.get_by_label("Note", exact=True)).to_be_visible()  # and the form stays open

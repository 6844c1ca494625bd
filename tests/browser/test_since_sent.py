"""Issue #29 item 3 on docs pages: once the agent reports back, the panel shows, per file, what
changed since the review was sent (the Markdown kept with the review, not the note's lines)."""

from __future__ import annotations

from playwright.sync_api import Page, expect

import annotate

from .conftest import Server, open_page


def test_the_panel_shows_what_changed_since_the_review_was_sent(
    page: Page, material_server: Server
) -> None:
    md = material_server.project / "docs" / "index.md"
    before = "The final paragraph mentions lighthouses and their keepers."
    with annotate.open(material_server.project) as store:
        note = store.add_annotation(
            {
                "type": "text",
                "pageUrl": "/",
                "note": "Say what they are.",
                "selectedText": "mentions lighthouses",
                "quote": {
                    "exact": "mentions lighthouses",
                    "prefix": "paragraph ",
                    "suffix": " and",
                },
            }
        )
        store.create_review({"mode": "edit"})
        # The agent rewrites the note's passage and adds markup next to it.
        text = md.read_text()
        assert before in text
        md.write_text(
            text.replace("mentions lighthouses", "names stone towers").replace(
                "their keepers", "their <b>keepers</b>"
            )
        )
        store.address_annotation(note.id, "names stone towers")
    open_page(page, material_server.url)
    page.get_by_role("button", name="Review panel").click()
    since = page.locator("#annotate-panel section.since-sent")
    expect(since.locator("h3")).to_have_text("Changed since sent")
    expect(since.locator("summary")).to_have_text(["docs/index.md +10 −2 words"])
    since.locator("summary").click()
    expect(since.locator("pre del")).to_have_text(["mentions lighthouses"])
    expect(since.locator("pre ins")).to_have_text(["names stone towers", "<b>", "</b>"])
    # Markup in the Markdown stays text.
    expect(since.locator("pre b")).to_have_count(0)

"""The panel's word diff shows a replaced phrase whole, as `annotate get` does (issue #27 item 8):
`quick brown fox` → `slow red cat` is one deletion and one insertion, not three of each."""

from __future__ import annotations

from playwright.sync_api import Page, expect

import annotate
from annotate.diff import word_diff

from .conftest import Server, open_page


def test_a_replaced_phrase_reads_whole_in_the_panel(page: Page, material_server: Server) -> None:
    md = material_server.project / "docs" / "index.md"
    before = "The final paragraph mentions lighthouses and their keepers."
    after = "The final paragraph names old stone towers and their keepers."
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
        assert note.source is not None and note.source.excerpt == before
        md.write_text(md.read_text().replace(before, after))
        store.address_annotation(note.id, "names old stone towers")
    open_page(page, material_server.url)
    page.get_by_role("button", name="Review panel").click()
    diff = page.locator(f'#annotate-panel li.item[data-id="{note.id}"] .diff')
    expect(diff.locator("del")).to_have_text(["mentions lighthouses"])
    expect(diff.locator("ins")).to_have_text(["names old stone towers"])
    # The panel and the CLI say the same.
    assert word_diff(before, after) == (
        "The final paragraph [-mentions lighthouses-]{+names old stone towers+} and their keepers."
    )

"""A quote whose context would be cut inside an emoji is saved (issue #26): the overlay keeps 32
UTF-16 units of context, and a cut between the two halves of a character outside the BMP sent a
lone surrogate, which the server refuses (a tree of folders drawn with "📁" in mkdocstrings'
docs: HTTP 400, the note lost). The half at the cut is sent as U+FFFD."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, Request, expect

from .conftest import Server, open_page, select_text

ICONS = "📁" * 20  # 40 UTF-16 units
QUOTE = "Keep the folder icons apart"
# No whitespace around the paragraph: the page text is the paragraph's, offsets as written.
PAGE = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Icons</title>
<link rel="icon" href="data:,"></head>
<body><main><p>{ICONS}x{QUOTE}y{ICONS}</p></main></body></html>
"""


def test_a_context_cut_inside_an_emoji_keeps_whole_characters(
    page: Page, plain_server: Server
) -> None:
    (plain_server.site / "icons.html").write_text(PAGE, encoding="utf-8")
    bodies: list[Any] = []

    def on_request(request: Request) -> None:
        if request.method == "POST" and request.url.endswith("/__annotate/api/annotations"):
            bodies.append(request.post_data_json)

    page.on("request", on_request)
    open_page(page, plain_server.url + "icons.html")
    # 41 units before the quote and after it: 32 from either end falls on a low surrogate.
    start = 2 * len(ICONS) + 1
    cut = page.evaluate(
        "([a, b]) => { const t = document.querySelector('main').textContent;"
        " return [t.charCodeAt(a), t.charCodeAt(b)]; }",
        [start - 32, start + len(QUOTE) + 32],
    )
    assert all(0xDC00 <= unit <= 0xDFFF for unit in cut)
    select_text(page, QUOTE)
    page.get_by_role("button", name="Annotate").click()
    page.get_by_label("Note", exact=True).fill("Say what the icons mean.")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("dialog")).to_be_hidden()  # the server took the body
    quote = bodies[-1]["quote"]
    assert quote["exact"] == QUOTE
    # The half of an emoji at each cut is U+FFFD, whole characters otherwise.
    assert quote["prefix"] == "\ufffd" + "📁" * 15 + "x"
    assert quote["suffix"] == "y" + "📁" * 15 + "\ufffd"

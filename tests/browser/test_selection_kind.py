"""On create, the overlay tells the server which kind of text was selected and which occurrence
it is (issue #13, class 1; the create body's `inCode` and `occurrence`): the same words in a code
example and in its rendered result must not be confused."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, Request, expect

from .conftest import Server, open_page, select_text

SAME = "Keep the lantern lit."
PAGE = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Same words</title>
<link rel="icon" href="data:,"></head>
<body><main>
<h1>Same words</h1>
<p>The example shows the Markdown, then what it renders.</p>
<pre><code>{SAME}
{SAME}</code></pre>
<p>{SAME}</p>
<p>Inline, <code>{SAME}</code> in a sentence.</p>
<p>{SAME}</p>
</main></body></html>
"""


def test_create_body_names_the_kind_and_occurrence(page: Page, plain_server: Server) -> None:
    (plain_server.site / "same.html").write_text(PAGE)
    bodies: list[Any] = []

    def on_request(request: Request) -> None:
        if request.method == "POST" and request.url.endswith("/__annotate/api/annotations"):
            bodies.append(request.post_data_json)

    page.on("request", on_request)
    open_page(page, plain_server.url + "same.html")
    # On the page, in order: two in the code block, one paragraph, one inline code, one paragraph.
    expected = {4: (False, 1), 1: (True, 1), 3: (True, 2), 2: (False, 0), 0: (True, 0)}
    for nth, (in_code, occurrence) in expected.items():
        select_text(page, SAME, nth)
        page.get_by_role("button", name="Annotate").click()
        page.get_by_label("Note", exact=True).fill(f"Occurrence {nth} on the page.")
        page.get_by_role("button", name="Save").click()
        expect(page.get_by_role("dialog")).to_be_hidden()  # the server took the body
        body = bodies[-1]
        assert body["quote"]["exact"] == SAME
        assert (body["inCode"], body["occurrence"]) == (in_code, occurrence), nth
    assert len(bodies) == len(expected)

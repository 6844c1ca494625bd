"""The overlay's page text follows the DOM (issue #13, class 4): text a page script adds or
rewrites after load can be annotated, and the `anchor` request sends the text as it is now.

The fixture pages are written here, into the per-test copy of the plain site: one appends a
paragraph 0.6 s after load, one rewrites a code block the way Material's code annotations do
(`content.code.annotate`: the `# (1)!` marker replaced, the list's body moved into a tooltip)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from playwright.sync_api import Page, Request, expect

import annotate

from .conftest import (
    Server,
    annotate_selection,
    highlighted,
    notes_in_store,
    open_page,
    select_text,
    wait_painted,
)

LATE = "A paragraph a script adds after load, about harbours and their pilots."
LATE_PAGE = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Late text</title>
<link rel="icon" href="data:,"></head>
<body><main>
<h1>Late text</h1>
<p>A paragraph that is there from the start.</p>
<div id="late"></div>
</main>
<script>
// 0.6 s after load: after the overlay (a deferred script) has measured the page and sent it.
addEventListener("load", () => setTimeout(() => {{
  const p = document.createElement("p");
  p.textContent = "{LATE}";
  document.getElementById("late").append(p);
}}, 600));
</script>
</body></html>
"""

AFTER = "After the code block, a sentence about lanterns and their wicks."
CODE_PAGE = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Code annotations</title>
<link rel="icon" href="data:,"></head>
<body><main>
<h1>Code annotations</h1>
<pre><code>theme:
  features:
    - content.code.annotate # (1)!
</code></pre>
<ol class="annotations"><li>The annotation's body, moved into a tooltip after load.</li></ol>
<p>{AFTER}</p>
</main>
<script>
// What Material does for content.code.annotate; the test calls it once the overlay has painted.
window.rewrite = () => {{
  const code = document.querySelector("code");
  const text = code.firstChild;
  const rest = text.splitText(text.data.indexOf("# (1)!"));
  rest.data = rest.data.slice("# (1)!".length);
  const marker = document.createElement("span");
  marker.className = "md-annotation";
  const index = document.createElement("span");
  index.textContent = "1";
  const tip = document.createElement("span");
  tip.className = "md-tooltip";
  const list = document.querySelector("ol.annotations");
  tip.append(...list.firstElementChild.childNodes);
  marker.append(index, tip);
  code.insertBefore(marker, rest);
  list.remove();
}};
</script>
</body></html>
"""


def anchor_texts(page: Page) -> list[str]:
    """Collects the page text of every `anchor` request the page sends from now on."""
    texts: list[str] = []

    def on_request(request: Request) -> None:
        if request.method == "POST" and request.url.endswith("/__annotate/api/anchor"):
            body: Any = request.post_data_json
            texts.append(body["text"])

    page.on("request", on_request)
    return texts


def wait_until(page: Page, check: Callable[[], bool]) -> None:
    """Let the page run (and Playwright deliver its events) until `check()` holds."""
    deadline = time.monotonic() + 5
    while not check():
        assert time.monotonic() < deadline, "timed out"
        page.wait_for_timeout(50)


def test_text_added_after_load_can_be_annotated(page: Page, plain_server: Server) -> None:
    (plain_server.site / "late.html").write_text(LATE_PAGE)
    texts = anchor_texts(page)
    open_page(page, plain_server.url + "late.html")
    page.get_by_text("about harbours").wait_for()
    assert LATE in page.evaluate("annotateOverlay.pageText()")

    select_text(page, "about harbours and their pilots")
    page.get_by_role("button", name="Annotate").click()
    page.get_by_label("Note", exact=True).fill("Which harbours?")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("dialog")).to_be_hidden()
    [stored] = notes_in_store(plain_server.project)
    text = page.evaluate("annotateOverlay.pageText()")
    assert stored.selected_text == "about harbours and their pilots"
    assert text[stored.position.start : stored.position.end] == stored.selected_text
    assert stored.quote.prefix == text[stored.position.start - 32 : stored.position.start]
    assert highlighted(page) == ["about harbours and their pilots"]
    # The paragraph's arrival was sent to the server: the latest anchor request holds it.
    assert LATE in texts[-1]

    # On a reload the first anchor request usually predates the paragraph (could not locate)
    # and the one sent when it arrives finds the note again; on a loaded machine the paragraph
    # can be there before the first request (CI-flaky before). Either way the last one holds it.
    texts.clear()
    page.reload()
    wait_painted(page)
    page.wait_for_function("() => CSS.highlights.get('annotate').size === 1")
    assert highlighted(page) == ["about harbours and their pilots"]
    assert LATE in texts[-1]


def test_code_annotation_rewrite_reanchors_and_keeps_selections_right(
    page: Page, plain_server: Server
) -> None:
    (plain_server.site / "code.html").write_text(CODE_PAGE)
    texts = anchor_texts(page)
    open_page(page, plain_server.url + "code.html")
    before = page.evaluate("annotateOverlay.pageText()")
    assert "# (1)!" in before  # the first paint came before the rewrite
    # A note made on the text as it was first measured.
    start = before.index("a sentence about lanterns")
    with annotate.open(plain_server.project) as store:
        store.add_annotation(
            {
                "type": "text",
                "pageUrl": "/code.html",
                "note": "Made before the rewrite.",
                "selectedText": "a sentence about lanterns",
                "quote": {
                    "exact": "a sentence about lanterns",
                    "prefix": before[start - 32 : start],
                    "suffix": before[start + 25 : start + 57],
                },
                "position": {"start": start, "end": start + 25},
            }
        )
    texts.clear()
    page.reload()
    wait_painted(page)
    assert highlighted(page) == ["a sentence about lanterns"]
    assert texts == [before]
    page.evaluate("rewrite()")
    after = page.evaluate("annotateOverlay.pageText()")
    assert "# (1)!" not in after and "moved into a tooltip" in after and len(after) != len(before)
    # Located again in the text as it is now: the next anchor request sends it.
    wait_until(page, lambda: len(texts) == 2)
    assert texts[1] == after
    assert highlighted(page) == ["a sentence about lanterns"]

    # A selection made after the rewrite is measured in the text as it is now.
    annotate_selection(page, "and their wicks", "Wicks of what?")
    stored = {a.note: a for a in notes_in_store(plain_server.project)}["Wicks of what?"]
    assert stored.selected_text == "and their wicks"
    assert after[stored.position.start : stored.position.end] == "and their wicks"
    assert highlighted(page) == ["a sentence about lanterns", "and their wicks"]

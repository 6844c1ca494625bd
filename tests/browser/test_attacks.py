"""The overlay's part of the attack suite (issue #17): hostile text in every field a note can
carry is shown as text and runs nothing, and the overlay does not start inside another site's
frame (clickjacking of Accept, Delete or Send to agent)."""

from __future__ import annotations

from playwright.sync_api import Page, Route, expect

import annotate

from .conftest import Console, Server, open_page

# Each runs a script if it is ever parsed as HTML; every one of them sets window.__xss.
PAYLOAD = (
    "<img src=x onerror=window.__xss=1>"
    "<script>window.__xss=1</script>"
    "\"'><svg/onload=window.__xss=1>"
    "<iframe srcdoc='<script>parent.__xss=1</script>'></iframe>"
)
QUOTE = "unique sentence about lighthouses"
EVIL_PAGE = "/<svg/onload=window.__xss=1>/"  # a valid site path: no spaces, query or fragment


def hostile(field: str) -> str:
    return f"{field}: {PAYLOAD}"


def fill_store(server: Server) -> dict[str, str]:
    """Notes whose every free-text field holds a payload; returns field name -> its text."""
    shown: dict[str, str] = {}

    def put(field: str) -> str:
        shown[field] = hostile(field)
        return shown[field]

    with annotate.open(server.project) as store:
        text = store.add_annotation(
            {
                "type": "text",
                "pageUrl": "/",
                "pageTitle": put("pageTitle"),
                "note": put("note"),
                "intent": "replace",
                "suggestion": put("suggestion"),
                "selectedText": QUOTE,
                "quote": {"exact": QUOTE, "prefix": "A paragraph with a ", "suffix": " and"},
                "author": put("author"),
            }
        )
        store.add_reply(text.id, put("reply"), author=put("reply author"))
        store.add_agent_reply(text.id, put("agent reply"))
        store.address_annotation(text.id, put("replacedText"))
        element = store.add_annotation(
            {
                "type": "element",
                "pageUrl": "/",
                "note": put("element note"),
                "elementSelector": {
                    "cssSelector": "aside.callout",
                    "xpath": "/html/body/main/aside",
                    "tagName": "aside",
                    "description": put("description"),
                    "attributes": {"class": put("attribute")},
                    "outerHtmlPreview": PAYLOAD,
                },
            }
        )
        store.add_reply(element.id, put("element reply"))
        store.add_page_note(
            {"pageUrl": "/", "pageTitle": put("page note title"), "note": put("page note")}
        )
        # A quote that is itself a payload, on a page whose path is one.
        store.add_annotation(
            {
                "type": "text",
                "pageUrl": EVIL_PAGE,
                "pageTitle": put("other pageTitle"),
                "note": "On a hostile page.",
                "selectedText": put("selectedText"),
                "quote": {"exact": shown["selectedText"], "prefix": "", "suffix": ""},
            }
        )
        store.create_review({"mode": "edit", "message": put("review message")})
    return shown


def no_script_ran(page: Page) -> None:
    assert page.evaluate("window.__xss") is None
    injected = page.evaluate(
        """() => document.querySelector('#annotate-host').shadowRoot
                 .querySelectorAll('img, script, svg, iframe').length"""
    )
    assert injected == 0


def test_payloads_in_every_field_show_as_text(page: Page, plain_server: Server) -> None:
    shown = fill_store(plain_server)
    open_page(page, plain_server.url)
    panel = page.locator("#annotate-panel")
    page.get_by_role("button", name="Review panel").click()
    expect(panel.locator("li.item")).to_have_count(3)
    text = panel.inner_text()
    for field in ("note", "suggestion", "reply", "reply author", "agent reply", "replacedText"):
        assert shown[field] in text, field
    for field in ("element note", "description", "element reply", "page note"):
        assert shown[field] in text, field
    no_script_ran(page)

    # Every page's notes, grouped under their titles and (hostile) paths.
    page.get_by_role("tab", name="All pages").click()
    expect(panel.locator("li.item")).to_have_count(4)
    text = panel.inner_text()
    for field in ("pageTitle", "other pageTitle", "selectedText"):
        assert shown[field] in text, field
    expect(panel.locator("h3 code", has_text=EVIL_PAGE)).to_have_count(1)
    no_script_ran(page)

    # The edit popup previews the element's description as text.
    page.get_by_role("tab", name="This page").click()
    element = panel.locator("li.item", has_text=shown["element note"])
    element.get_by_role("button", name="Edit").click()
    dialog = page.get_by_role("dialog", name="Edit note")
    expect(dialog.locator(".preview")).to_contain_text(shown["description"][:120])
    no_script_ran(page)


def frame_page(page: Page, server: Server, top: str) -> None:
    """Serve the site's home page into a frame of `top`, without any framing headers a server
    may add (Content-Security-Policy frame-ancestors, X-Frame-Options): the overlay's own check
    is what is tested here."""

    def unguarded(route: Route) -> None:
        response = route.fetch()
        headers = {
            k: v
            for k, v in response.headers.items()
            if k.lower() not in ("content-security-policy", "x-frame-options")
        }
        route.fulfill(response=response, headers=headers)

    page.route(server.url, unguarded)
    page.goto(top)


def test_overlay_refuses_a_cross_origin_frame(
    page: Page, plain_server: Server, console: Console
) -> None:
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url) if "/__annotate/api/" in r.url else None)
    page.route(
        "http://evil.localhost/",
        lambda route: route.fulfill(
            content_type="text/html",
            body=f"<!doctype html><title>evil</title><iframe src='{plain_server.url}'></iframe>",
        ),
    )
    frame_page(page, plain_server, "http://evil.localhost/")
    frame = page.frame(url=plain_server.url)
    assert frame is not None
    frame.wait_for_load_state("load")
    frame.get_by_text("unique sentence about lighthouses").wait_for()
    assert frame.evaluate("typeof window.annotateOverlay") == "undefined"
    assert frame.locator("#annotate-host").count() == 0
    assert requests == []  # not even the notes were read


def test_overlay_runs_in_a_same_origin_frame(page: Page, plain_server: Server) -> None:
    (plain_server.site / "framed.html").write_text(
        "<!doctype html><title>framed</title><main><p>A page that frames the home page.</p>"
        "<iframe src='/' width=800 height=400></iframe></main>"
    )
    frame_page(page, plain_server, plain_server.url + "framed.html")
    frame = page.frame(url=plain_server.url)
    assert frame is not None
    frame.wait_for_function("() => performance.getEntriesByName('annotate:painted').length > 0")
    assert frame.locator("#annotate-host").count() == 1

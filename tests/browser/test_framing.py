"""Clickjacking (issue #17 item 7): another site cannot show a page with the overlay inside a frame
of its own; a page of the same site still can."""

from __future__ import annotations

import time

from playwright.sync_api import Frame, Page

from .conftest import Console, Server


def framed(page: Page, server: Server, outer_host: str) -> Frame:
    """Open a page of the site at `outer_host` whose content is a frame of the site's home page at
    127.0.0.1; the frame once settled. Both names are loopback: `localhost` is another origin,
    and a real one (a page the browser fetched, not one a test faked, which Chromium's private
    network rules would block for other reasons)."""
    home = f"http://127.0.0.1:{server.port}/"
    (server.site / "framing.html").write_text(
        '<html><head><link rel="icon" href="data:,"></head><body>'
        f'<iframe id="f" src="{home}" width="900" height="600"></iframe></body></html>'
    )
    page.goto(f"http://{outer_host}:{server.port}/framing.html")
    handle = page.locator("#f").element_handle()
    frame = handle.content_frame() if handle else None
    assert frame is not None
    deadline = time.monotonic() + 5
    while frame.url == "about:blank" and time.monotonic() < deadline:
        time.sleep(0.05)
    frame.wait_for_load_state()
    return frame


def overlay_runs(frame: Frame) -> bool:
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        if frame.evaluate("() => !!document.getElementById('annotate-host')"):
            return True
        time.sleep(0.1)
    return False


def test_another_site_cannot_frame_a_page_with_the_overlay(
    page: Page, plain_server: Server, console: Console
) -> None:
    # Chromium reports the refusal on the console: that is the behaviour under test.
    console.allow("Refused to (frame|display)|frame-ancestors|X-Frame-Options")
    frame = framed(page, plain_server, "localhost")
    assert frame.url == "chrome-error://chromewebdata/"  # an error page stands in its place
    assert not overlay_runs(frame)


def test_a_page_of_the_same_site_may_frame_one(page: Page, plain_server: Server) -> None:
    frame = framed(page, plain_server, "127.0.0.1")
    assert frame.url == f"http://127.0.0.1:{plain_server.port}/"
    assert overlay_runs(frame)

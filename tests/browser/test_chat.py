"""The review view in the agent's chat (issue #19, items 1-3; docs/chat.md), in Chromium under the
host emulator of tests/browser/chathost.py: the view's HTML from `resources/read` of a real
`annotate mcp` over stdio, framed with `sandbox="allow-scripts"` and `srcdoc` under the strictest
CSP, its tool calls forwarded to that server."""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Frame, FrameLocator, Page, Request, expect

import annotate

from ..test_plugin_serve import DevServer, free_port
from .chathost import (
    FULL_CAPS,
    NO_CONTEXT_CAPS,
    HostServer,
    McpSession,
    build_bundle,
)
from .conftest import SITES, Console, select_text, wait_painted

QUOTE = "mentions lighthouses"
LINE = "The final paragraph mentions lighthouses and their keepers."
OTHER = "Second list item about oranges"
FONTS = r"fonts\.googleapis\.com"


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def set_dev_addr(project: Path, port: int, plugin: bool = False) -> None:
    """Where the project's review server would listen: a port of this test's, so that no other
    server on the machine is taken for it."""
    config = project / "mkdocs.yml"
    text = config.read_text() + f"dev_addr: 127.0.0.1:{port}\n"
    if plugin:
        text += "plugins:\n  - annotate\n"
    config.write_text(text)


@pytest.fixture
def project(material_build: Path, tmp_path: Path) -> Path:
    """The built Material fixture project; no review server runs for it."""
    folder = tmp_path / "project"
    shutil.copytree(material_build, folder, ignore=shutil.ignore_patterns(".annotate"))
    set_dev_addr(folder, free_port())
    return folder


@pytest.fixture
def mcp(project: Path) -> Iterator[McpSession]:
    session = McpSession(project).start()
    yield session
    session.stop()


@pytest.fixture
def host(mcp: McpSession, browser: Browser) -> Iterator[HostServer]:
    server = HostServer(mcp)
    yield server
    for context in browser.contexts:  # the view's pending feed call ends with its page
        context.close()
    server.stop()


class InFrame:
    """What `select_text` needs (evaluate, mouse) for a page inside the host's frame at (0, 0)."""

    def __init__(self, page: Page, frame: Frame) -> None:
        self.mouse = page.mouse
        self.frame = frame

    def evaluate(self, script: str, arg: Any = None) -> Any:
        return self.frame.evaluate(script, arg)


def open_view(
    page: Page,
    host: HostServer,
    mcp: McpSession,
    *,
    caps: dict[str, Any] = FULL_CAPS,
    page_url: str = "/",
    official: bool = False,
) -> Frame:
    """The agent calls open_review; the host reads the view and shows it with the tool's result.
    Returns the view's frame once the overlay has painted the page's notes."""
    result = mcp.call("open_review", {"pageUrl": page_url})
    assert not result.get("isError"), result
    page.goto(host.url)
    page.evaluate(
        "(setup) => hostStart(setup)",
        {
            "html": mcp.view_html(),
            "caps": caps,
            "input": {"pageUrl": page_url},
            "result": result,
            "context": {"theme": "light", "displayMode": "inline"},
            "official": official,
        },
    )
    page.wait_for_function("() => document.querySelector('iframe') && frames.length === 1")
    frame = page.main_frame.child_frames[0]
    wait_painted(frame)  # type: ignore[arg-type]
    return frame


def annotate_in_view(page: Page, frame: Frame, text: str, note: str) -> None:
    view = page.frame_locator("iframe")
    select_text(InFrame(page, frame), text)  # type: ignore[arg-type]
    view.get_by_role("button", name="Annotate").click()
    view.get_by_label("Note", exact=True).fill(note)
    view.get_by_role("button", name="Save").click()
    view.locator("#annotate-host [role=dialog]").wait_for(state="hidden")


def recorded(page: Page, what: str) -> list[Any]:
    found: list[Any] = page.evaluate(f"() => window.recorded.{what}")
    return found


def open_panel(view: FrameLocator) -> None:
    view.get_by_role("button", name="Review panel").click()


def test_a_selection_in_the_view_is_a_note_with_its_file_and_lines(
    page: Page, host: HostServer, mcp: McpSession, project: Path
) -> None:
    requests: list[Request] = []
    page.on("request", lambda r: requests.append(r))
    frame = open_view(page, host, mcp)
    # The page as readers see it: the built page's content, Material's article.
    assert frame.locator("#annotate-page article.md-content__inner h1").inner_text() == (
        "Fixture home"
    )
    annotate_in_view(page, frame, QUOTE, "Name the lighthouse.")
    with annotate.open(project) as store:
        [note] = store.list_annotations()
    line = line_of(project / "docs" / "index.md", LINE)
    assert note.page_url == "/"
    assert note.selected_text == QUOTE
    assert note.source is not None
    assert (note.source.path, note.source.line_start, note.source.line_end) == (
        "docs/index.md",
        line,
        line,
    )
    assert note.anchor_state == "anchored"
    # Painted in the view as in the browser.
    expect(frame.locator("body")).to_be_visible()
    texts = frame.evaluate("() => [...CSS.highlights.get('annotate')].map(String)")
    assert texts == [QUOTE]
    # Every read and write went through tools/call; the view asked the network for nothing.
    assert [r.url for r in requests if r.frame != page.main_frame] == []
    assert {"chat_page", "chat_api"} <= set(recorded(page, "calls"))


def test_the_frame_cannot_reach_the_network(
    page: Page, host: HostServer, mcp: McpSession, console: Console
) -> None:
    # The emulator's CSP is in force: a fetch from the view, to the host's own server, fails.
    console.allow("Content Security Policy|Refused to connect|Failed to fetch")
    frame = open_view(page, host, mcp)
    answer = frame.evaluate(
        "(url) => fetch(url).then(() => 'reached', () => 'refused')",
        host.url,
    )
    assert answer == "refused"


def test_the_feed_waits_in_each_call(page: Page, host: HostServer, mcp: McpSession) -> None:
    # An idle view keeps one change-feed call open (up to 8 s), not a stream of short ones.
    open_view(page, host, mcp)
    before = len(recorded(page, "calls"))
    page.wait_for_timeout(3000)
    assert len(recorded(page, "calls")) - before <= 1


def test_the_view_follows_links_takes_page_notes_and_the_hosts_theme(
    page: Page, host: HostServer, mcp: McpSession, project: Path
) -> None:
    result = mcp.call("open_review", {"pageUrl": "/"})
    page.goto(host.url)
    page.evaluate(
        "(setup) => hostStart(setup)",
        {
            "html": mcp.view_html(),
            "caps": FULL_CAPS,
            "input": {"pageUrl": "/"},
            "result": result,
            "context": {"theme": "dark"},
        },
    )
    page.wait_for_function("() => frames.length === 1")
    frame = page.main_frame.child_frames[0]
    wait_painted(frame)  # type: ignore[arg-type]
    view = page.frame_locator("iframe")
    expect(view.locator("#annotate-host")).to_have_attribute("data-theme", "dark")
    # A link to another page of the site opens it in the view, and the overlay follows.
    view.locator("#annotate-page a", has_text="guide").first.click()
    expect(view.locator("#annotate-chat-bar .path")).to_have_text("docs/guide.md")
    open_panel(view)
    view.get_by_role("button", name="Add page note").click()
    view.locator("#annotate-panel textarea").fill("Split this page.")
    view.locator("#annotate-panel .form").get_by_role("button", name="Save").click()
    expect(view.locator("#annotate-panel li.item .note")).to_have_text("Split this page.")
    with annotate.open(project) as store:
        [note] = store.list_page_notes()
    assert (note.page_url, note.note) == ("/guide/", "Split this page.")
    view.locator("#annotate-panel li.item").get_by_role("button", name="Accept").click()
    expect(view.locator("#annotate-panel li.item")).to_have_count(0)
    with annotate.open(project) as store:
        assert store.get_page_note(note.id).status == "resolved"
    assert recorded(page, "links") == []


def test_send_to_agent_posts_one_message_naming_the_review(
    page: Page, host: HostServer, mcp: McpSession, project: Path
) -> None:
    frame = open_view(page, host, mcp)
    annotate_in_view(page, frame, QUOTE, "Name the lighthouse.")
    annotate_in_view(page, frame, OTHER, "Say why oranges.")
    view = page.frame_locator("iframe")
    open_panel(view)
    view.get_by_label("Mode").select_option("review")
    view.get_by_role("button", name="Send to agent").click()
    page.wait_for_function("() => window.recorded.messages.length > 0")
    with annotate.open(project) as store:
        [review] = store.list_reviews()
    assert review.mode == "review"
    assert len(review.annotations) == 2
    [message] = recorded(page, "messages")
    assert message["role"] == "user"
    [content] = message["content"]
    assert content["type"] == "text"
    assert review.id in content["text"] and "2 notes" in content["text"]
    assert "wait_for_review" in content["text"]
    assert recorded(page, "contexts") == []


@pytest.mark.parametrize("context", [True, False], ids=["updateModelContext", "message only"])
def test_ask_agent_now_sends_one_note(
    context: bool, page: Page, host: HostServer, mcp: McpSession, project: Path
) -> None:
    frame = open_view(page, host, mcp, caps=FULL_CAPS if context else NO_CONTEXT_CAPS)
    annotate_in_view(page, frame, QUOTE, "Which lighthouse?")
    annotate_in_view(page, frame, OTHER, "Keep oranges.")
    view = page.frame_locator("iframe")
    open_panel(view)
    row = view.locator("#annotate-panel li.item").filter(has_text="Which lighthouse?")
    row.get_by_role("button", name="Ask agent now").click()
    lane = "contexts" if context else "messages"
    page.wait_for_function(f"() => window.recorded.{lane}.length > 0")
    with annotate.open(project) as store:
        [review] = store.list_reviews()
        asked = next(a for a in store.list_annotations() if a.note == "Which lighthouse?")
    assert review.mode == "review"
    assert [a.id for a in review.annotations] == [asked.id]
    [sent] = recorded(page, lane)
    text = sent["content"][0]["text"]
    assert asked.id in text and "Which lighthouse?" in text and "docs/index.md:" in text
    # The other lane stayed quiet: one note, one way.
    assert recorded(page, "messages" if context else "contexts") == []


def test_the_official_appbridge_hosts_the_view(
    page: Page, mcp: McpSession, project: Path, tmp_path: Path, browser: Browser
) -> None:
    # @modelcontextprotocol/ext-apps' own host side, bundled now from npm (scripts/test).
    host = HostServer(mcp, build_bundle(tmp_path / "appbridge.js"))
    try:
        frame = open_view(page, host, mcp, official=True)
        annotate_in_view(page, frame, QUOTE, "Name the lighthouse.")
        with annotate.open(project) as store:
            [note] = store.list_annotations()
        assert note.source is not None and note.source.path == "docs/index.md"
        view = page.frame_locator("iframe")
        open_panel(view)
        row = view.locator("#annotate-panel li.item")
        row.get_by_role("button", name="Ask agent now").click()
        page.wait_for_function("() => window.recorded.contexts.length > 0")
        assert note.id in recorded(page, "contexts")[0]["content"][0]["text"]
        view.get_by_role("button", name="Send to agent").click()  # nothing open left: a message
        assert recorded(page, "sizes"), "the view reports its size"
    finally:
        for context in browser.contexts:
            context.close()
        host.stop()


# -- the view and the browser overlay on `mkdocs serve`, live ---------------------------------


def serve_at_dev_addr(folder: Path) -> DevServer:
    """A real `mkdocs serve` of `folder` with the plugin, at the `dev_addr` its config now names
    (where `open_review` looks for a review server)."""
    port = free_port()
    set_dev_addr(folder, port, plugin=True)
    import tests.test_plugin_serve as plugin_serve

    chosen, plugin_serve.free_port = plugin_serve.free_port, lambda: port  # type: ignore[assignment]
    try:
        return DevServer(folder)
    finally:
        plugin_serve.free_port = chosen  # type: ignore[assignment]


@pytest.fixture
def served(material_build: Path, tmp_path: Path) -> Iterator[DevServer]:
    """The Material fixture with the plugin under a real `mkdocs serve` at its `dev_addr`."""
    folder = tmp_path / "served"
    shutil.copytree(SITES / "material", folder)
    server = serve_at_dev_addr(folder)
    yield server
    server.stop()


def test_notes_travel_live_between_the_view_and_the_browser(
    served: DevServer, browser: Browser, console: Console
) -> None:
    console.allow(FONTS)
    session = McpSession(served.project).start()
    host = HostServer(session)
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    context.set_default_timeout(5000)
    try:
        chat, site = context.new_page(), context.new_page()
        for p in (chat, site):
            p.on("console", console.on_console)
            p.on("pageerror", console.on_error)
        site.goto(served.base + "/")
        wait_painted(site)
        frame = open_view(chat, host, session)
        # The served page's content (the view says where it came from in its tool's answer).
        page_answer = session.call("chat_page", {"pageUrl": "/"})["structuredContent"]
        assert page_answer["origin"] == "served"
        assert page_answer["url"] == served.base + "/"
        annotate_in_view(chat, frame, QUOTE, "Name the lighthouse.")
        # The browser overlay on mkdocs serve shows it through its change feed: within 2 s.
        site.wait_for_function(
            "(t) => [...(CSS.highlights.get('annotate') || [])].some(r => r + '' === t)",
            arg=QUOTE,
            timeout=2000,
        )
        # A reply made there shows in the view, also within 2 s.
        site.get_by_role("button", name="Review panel").click()
        site.locator("#annotate-panel li.item").get_by_role("button", name="Reply").click()
        site.locator("#annotate-panel textarea").fill("The one on the cape.")
        site.locator("#annotate-panel .form").get_by_role("button", name="Reply").click()
        view = chat.frame_locator("iframe")
        open_panel(view)
        expect(view.locator("#annotate-panel .reply .msg")).to_have_text(
            "The one on the cape.", timeout=2000
        )
    finally:
        context.close()
        host.stop()
        session.stop()
    assert console.unexpected() == []


def test_view_screenshot(
    page: Page, host: HostServer, mcp: McpSession, project: Path, tmp_path: Path
) -> None:
    """The screenshot of docs/chat.md (written to docs/img/ when ANNOTATE_SCREENSHOTS=docs)."""
    with annotate.open(project) as store:
        note = store.add_annotation(
            {
                "type": "text",
                "pageUrl": "/",
                "note": "Which lighthouse? Name it.",
                "selectedText": QUOTE,
                "quote": {"exact": QUOTE, "prefix": "The final paragraph ", "suffix": " and"},
            }
        )
        store.add_agent_reply(note.id, "The one on the cape; I will name it.")
    page.set_viewport_size({"width": 1000, "height": 640})
    frame = open_view(page, host, mcp)
    view = page.frame_locator("iframe")
    open_panel(view)
    expect(view.locator("#annotate-panel li.item .reply")).to_have_count(1)
    frame.evaluate("() => document.querySelector('#annotate-page h2').scrollIntoView()")
    docs = os.environ.get("ANNOTATE_SCREENSHOTS") == "docs"
    folder = Path(__file__).resolve().parent.parent.parent / "docs" / "img" if docs else tmp_path
    page.screenshot(path=str(folder / "chat-view.png"))


# -- issue #27: the view without a host, `annotate chat` --------------------------------------


@pytest.fixture
def chat_tab(project: Path, browser: Browser) -> Iterator[str]:
    """`annotate chat --no-browser` as a user runs it; its URL."""
    annotate_cmd = Path(sys.executable).parent / "annotate"
    proc = subprocess.Popen(
        [str(annotate_cmd), "chat", "--project", str(project), "--no-browser"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    url = re.search(r"http://127\.0\.0\.1:\d+/", line)
    assert url, (line, proc.stderr.read() if proc.poll() is not None else "")
    yield url[0]
    for context in browser.contexts:  # the view's pending feed call ends with its page
        context.close()
    proc.terminate()
    try:
        _, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    assert "Traceback" not in err, err


def host_log(page: Page) -> list[tuple[str, str]]:
    found = page.evaluate(
        "() => window.hostLog.map((e) => [e.direction, e.message.method || 'answer'])"
    )
    return [tuple(x) for x in found]


def test_annotate_chat_shows_the_view_in_a_tab_with_the_host_messages(
    page: Page, chat_tab: str, project: Path
) -> None:
    page.goto(chat_tab)
    page.wait_for_function("() => document.querySelector('iframe') && frames.length === 1")
    frame = page.main_frame.child_frames[0]
    wait_painted(frame)  # type: ignore[arg-type]
    assert frame.locator("#annotate-page article.md-content__inner h1").inner_text() == (
        "Fixture home"
    )
    annotate_in_view(page, frame, QUOTE, "Name the lighthouse.")
    with annotate.open(project) as store:
        [note] = store.list_annotations()
    assert note.source is not None and note.source.path == "docs/index.md"
    view = page.frame_locator("iframe")
    open_panel(view)
    view.get_by_role("button", name="Send to agent").click()
    page.wait_for_function("() => window.hostLog.some((e) => e.message.method === 'ui/message')")
    log = host_log(page)
    # The handshake, the tool's input and result, and the view's calls through the host.
    assert log.index(("view → host", "ui/initialize")) < log.index(("host → view", "answer"))
    assert ("view → host", "ui/notifications/initialized") in log
    assert ("host → view", "ui/notifications/tool-result") in log
    assert ("view → host", "tools/call") in log
    # Shown beside the view, the message a chat would post highlighted.
    message = page.locator("#log li.message")
    expect(message).to_have_count(1)
    with annotate.open(project) as store:
        [review] = store.list_reviews()
    expect(message).to_contain_text(review.id)
    expect(page.locator("#log li").first).to_contain_text("open_review")  # the agent's call
    expect(page.locator("#log li", has_text="view → host ui/initialize")).to_have_count(1)


def test_annotate_chat_answers_only_its_own_page(chat_tab: str) -> None:
    """A page elsewhere cannot call the tools: the secret header and the loopback Host."""
    port = int(chat_tab.rsplit(":", 1)[1].strip("/"))
    body = json.dumps({"method": "tools/call", "params": {"name": "summary", "arguments": {}}})

    def post(headers: dict[str, str]) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("POST", "/call", body=body, headers=headers)
        r = conn.getresponse()
        out = r.status, r.read()
        conn.close()
        return out

    status, data = post({"Content-Type": "application/json"})
    assert status == 403 and json.loads(data)["code"] == "forbidden"
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/")
    page = conn.getresponse().read().decode()
    conn.close()
    secret = json.loads(re.search(r'id="annotate-chat-config">(.*?)</script>', page)[1])["secret"]
    status, data = post({"X-Annotate-Chat": secret, "Host": f"evil.example:{port}"})
    assert status == 403 and json.loads(data)["code"] == "forbidden_host"
    status, data = post({"X-Annotate-Chat": secret})
    assert status == 200 and "openItems" in json.loads(data)["content"][0]["text"]

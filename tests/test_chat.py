"""The review view in the agent's chat (issue #19, items 1-3; docs/chat.md) through the real MCP
server and the SDK's client: the tools and their `_meta.ui`, the view's resource, the page it
shows, the REST calls it tunnels, and the text a host without MCP Apps gets."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client import advertise
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID

import annotate
from annotate import chat
from annotate.chatview import RESOURCE_URI, view_html
from annotate.compose import build_server
from annotate.errors import ValidationError

from .browser.conftest import Server
from .conftest import text_note, write_project
from .test_plugin_serve import free_port

INSTALL_MD = "# Install\n\nRun pip install mkdocs-annotate in a shell.\n"
APPS = [advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})]
ARTICLE = (
    '<article class="md-content__inner md-typeset"><h1>Install</h1>'
    "<p>Run pip install mkdocs-annotate in a shell.</p></article>"
)
BUILT = (
    "<!doctype html><html><head><title>Install - test</title>"
    "<script>var inHead = 1;</script></head><body><nav><a href='/'>Home</a></nav>"
    f'<div class="md-content">{ARTICLE}</div>'
    '<script type="application/json" id="annotate-config">{"token": "secret"}</script>'
    "</body></html>"
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project whose review server would listen on a port nobody uses."""
    write_project(tmp_path, INSTALL_MD)
    (tmp_path / "mkdocs.yml").write_text(f"site_name: test\ndev_addr: 127.0.0.1:{free_port()}\n")
    return tmp_path


@pytest.fixture
def built(project: Path) -> Path:
    page = project / "site" / "guide" / "install" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text(BUILT)
    return project


@pytest.fixture
def running(built: Path) -> Iterator[Server]:
    """`annotate serve site/` at the project's `dev_addr`."""
    server = Server(built, built / "site")
    server.port = free_port()
    (built / "mkdocs.yml").write_text(f"site_name: test\ndev_addr: 127.0.0.1:{server.port}\n")
    server.start()
    yield server
    server.stop()


async def call(
    project: Path, tool: str, args: dict[str, Any], *, apps: bool = True
) -> dict[str, Any]:
    async with Client(build_server(project), extensions=APPS if apps else None) as client:
        result = await client.call_tool(tool, args)
    dumped: dict[str, Any] = result.model_dump(by_alias=True, exclude_none=True, mode="json")
    return dumped


def text_of(result: dict[str, Any]) -> str:
    return "\n".join(c["text"] for c in result["content"])


# -- the tools and the resource ------------------------------------------------------------------


@pytest.mark.anyio
async def test_open_review_names_the_view_and_the_view_calls_app_only_tools(
    project: Path,
) -> None:
    async with Client(build_server(project), extensions=APPS) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        resources = (await client.list_resources()).resources
        read = await client.read_resource(RESOURCE_URI)
    assert tools["open_review"].meta == {"ui": {"resourceUri": RESOURCE_URI}}
    for name in ("chat_page", "chat_api"):
        assert tools[name].meta == {"ui": {"resourceUri": RESOURCE_URI, "visibility": ["app"]}}
    [resource] = [r for r in resources if str(r.uri) == RESOURCE_URI]
    assert resource.mime_type == APP_MIME_TYPE
    [contents] = read.contents
    assert contents.mime_type == APP_MIME_TYPE
    # No domains declared: the host's default, no network at all. Copy as Markdown asks for the
    # clipboard.
    assert contents.meta == {"ui": {"permissions": {"clipboardWrite": {}}, "prefersBorder": True}}
    assert contents.text == view_html()  # type: ignore[union-attr]


def test_the_view_is_one_self_contained_document() -> None:
    html = view_html()
    assert html.startswith("<!doctype html>") and html.rstrip().endswith("</html>")
    assert len(re.findall(r"<script\b", html)) == 1
    # Nothing loads from anywhere, nothing uses the network or storage that a frame lacks.
    for needle in ("<script src", "<link", "@import", "url(", "fetch(", "localStorage", "cookie"):
        assert needle not in html, needle
    # The overlay's own code is in it (its popup, panel, feed), with api() swapped.
    for needle in ("Annotate", "Send to agent", "Ask agent now", "chat_api", "ui/initialize"):
        assert needle in html, needle
    assert "Cannot reach the annotate server" in html
    # The script cannot end early: no `</` inside it.
    script = html[html.index("<script>") + 8 : html.rindex("</script>")]
    assert "</" not in script


# -- what a host without MCP Apps gets -----------------------------------------------------------


@pytest.mark.anyio
async def test_without_apps_and_without_a_server_the_text_says_what_to_run(
    project: Path,
) -> None:
    with annotate.open(project) as store:
        store.add_annotation(text_note())
    result = await call(project, "open_review", {"pageUrl": "/guide/install"}, apps=False)
    text = text_of(result)
    assert "No review server runs" in text
    assert "mkdocs serve" in text and "annotate serve" in text
    assert "1 note open on this page, 1 note on the site" in text
    assert result["structuredContent"]["url"] is None
    assert result["structuredContent"]["path"] == "docs/guide/install.md"


@pytest.mark.anyio
async def test_without_apps_the_text_gives_the_page_on_the_running_server(
    running: Server,
) -> None:
    with annotate.open(running.project) as store:
        store.add_annotation(text_note())
        store.add_page_note({"pageUrl": "/", "note": "Elsewhere."})
    result = await call(
        running.project, "open_review", {"path": "docs/guide/install.md"}, apps=False
    )
    text = text_of(result)
    url = f"http://127.0.0.1:{running.port}/guide/install/"
    assert url in text
    assert "1 note open on this page, 2 notes on the site" in text
    assert result["structuredContent"]["url"] == url
    # With MCP Apps, the model's text is short: the page itself goes to the view.
    shown = await call(running.project, "open_review", {"pageUrl": "/guide/install/"})
    assert "review view" in text_of(shown) and "<" not in text_of(shown)


@pytest.mark.anyio
async def test_open_review_refuses_a_path_outside_the_project(project: Path) -> None:
    result = await call(project, "open_review", {"path": "../secret.md"})
    assert result["isError"] is True
    assert "is outside the project" in text_of(result)
    result = await call(project, "open_review", {"path": "docs/picture.png"})
    assert result["isError"] is True
    assert "path must be a Markdown file in the docs folder" in text_of(result)


@pytest.mark.anyio
async def test_open_review_opens_any_markdown_file_of_the_project(project: Path) -> None:
    """Issue #29: a Markdown file outside the docs gets a page of its own in the view, rendered
    with raw HTML off, and notes on it carry its file and lines."""
    (project / "PLAN.md").write_text("# Plan\n\nShip it <b>now</b>.\n")
    opened = await call(project, "open_review", {"path": "PLAN.md"})
    assert opened["isError"] is False, text_of(opened)
    assert opened["structuredContent"]["path"] == "PLAN.md"
    assert opened["structuredContent"]["pageUrl"] == "/_annotate_files/PLAN.md/"
    with annotate.open(project) as store:
        shown = chat.page_view(store, "/_annotate_files/PLAN.md/")
        assert "<h1>Plan</h1>" in shown.html and "&lt;b&gt;now&lt;/b&gt;" in shown.html
        made = store.add_annotation(
            text_note(
                pageUrl="/_annotate_files/PLAN.md/",
                selectedText="Ship it",
                quote={"exact": "Ship it", "suffix": " <b>now"},
            )
        )
        assert made.source is not None and made.source.lines == "PLAN.md:3"


# -- the page the view shows ---------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("tool", ["open_review", "chat_page"])
async def test_a_page_that_does_not_exist_is_an_error(project: Path, tool: str) -> None:
    result = await call(project, tool, {"pageUrl": "/nope/"})
    assert result["isError"] is True
    assert text_of(result).startswith("No page /nope/ in this project")


def test_the_content_root_is_the_overlays_without_scripts() -> None:
    assert chat.content_root(BUILT) == ARTICLE
    nested = "<body><main><p>a</p><main><p>b</p></main><p>c</p></main><p>out</p></body>"
    assert chat.content_root(nested) == "<main><p>a</p><main><p>b</p></main><p>c</p></main>"
    role = '<body><div role="main"><p>in</p></div><p>out</p></body>'
    assert chat.content_root(role) == '<div role="main"><p>in</p></div>'
    body = '<html><body><p>x</p><script>alert(1)</script><script type="application/json" id="annotate-config">{"token": "t"}</script></body></html>'
    assert chat.content_root(body) == "<main><p>x</p></main>"


def test_the_page_comes_built_else_rendered_from_its_markdown(project: Path) -> None:
    with annotate.open(project) as store:
        rendered = chat.page_view(store, "/guide/install/")
        assert rendered.origin == "markdown"
        assert rendered.title == "Install"
        assert "<p>Run pip install mkdocs-annotate in a shell.</p>" in rendered.html
        page = project / "site" / "guide" / "install" / "index.html"
        page.parent.mkdir(parents=True)
        page.write_text(BUILT)
        built = chat.page_view(store, path="docs/guide/install.md")
    assert (built.origin, built.page_url, built.path, built.title) == (
        "built",
        "/guide/install/",
        "docs/guide/install.md",
        "Install - test",
    )
    assert built.html == ARTICLE
    assert "secret" not in built.html


def test_the_page_comes_from_the_running_server(running: Server) -> None:
    with annotate.open(running.project) as store:
        served = chat.page_view(store, "/guide/install/")
    assert served.origin == "served"
    assert served.url == f"http://127.0.0.1:{running.port}/guide/install/"
    assert served.html == ARTICLE  # the overlay's tags and the token stay out


@pytest.mark.parametrize(
    ("path", "url"),
    [
        ("docs/index.md", "/"),
        ("docs/guide/index.md", "/guide/"),
        ("docs/guide/README.md", "/guide/"),
        ("docs/guide/install.md", "/guide/install/"),
        ("./docs/guide/install.md", "/guide/install/"),
    ],
)
def test_a_markdown_path_names_its_page(project: Path, path: str, url: str) -> None:
    file = project / path
    if not file.exists():
        file.write_text("# A page\n")
    with annotate.open(project) as store:
        assert chat.page_view(store, path=path).page_url == url


@pytest.mark.parametrize("path", ["README.md", "docs/x.txt", "/etc/passwd.md", "site/a.md"])
def test_a_path_outside_the_docs_is_refused(project: Path, path: str) -> None:
    with annotate.open(project) as store, pytest.raises(ValidationError):
        chat.page_view(store, path=path)


def test_a_dev_addr_elsewhere_is_never_asked(tmp_path: Path) -> None:
    (tmp_path / "mkdocs.yml").write_text("site_name: t\ndev_addr: 10.1.2.3:9000\n")
    assert chat._dev_addr(tmp_path) == chat.DEFAULT_DEV_ADDR
    (tmp_path / "mkdocs.yml").write_text("site_name: t\ndev_addr: 0.0.0.0:9001\n")
    assert chat._dev_addr(tmp_path) == "127.0.0.1:9001"


# -- the view's REST calls -----------------------------------------------------------------------


@pytest.mark.anyio
async def test_chat_api_runs_the_routes(project: Path) -> None:
    async with Client(build_server(project), extensions=APPS) as client:
        created = await client.call_tool(
            "chat_api", {"method": "POST", "path": "annotations", "body": text_note()}
        )
        listed = await client.call_tool(
            "chat_api", {"method": "GET", "path": "annotations?page=/guide/install/"}
        )
        missing = await client.call_tool("chat_api", {"method": "GET", "path": "annotations/a_0"})
        reviewed = await client.call_tool(
            "chat_api", {"method": "POST", "path": "reviews", "body": {"mode": "edit"}}
        )
    assert created.structured_content is not None
    assert created.structured_content["status"] == 201
    note = created.structured_content["body"]
    assert note["source"]["path"] == "docs/guide/install.md"
    assert listed.structured_content is not None
    assert [a["id"] for a in listed.structured_content["body"]["annotations"]] == [note["id"]]
    # An API error is the route's answer, as the overlay expects it; not a tool error.
    assert missing.is_error is False and missing.structured_content is not None
    assert missing.structured_content["status"] == 404
    assert missing.structured_content["body"]["code"] == "not_found"
    assert reviewed.structured_content is not None
    review = reviewed.structured_content["body"]
    message = reviewed.structured_content["message"]
    assert review["id"] in message and "1 note," in message and "`edit`" in message


@pytest.mark.anyio
@pytest.mark.parametrize(
    "path", ["/__annotate/health", "../health", "http://example.com/", "a//b", "x\\y", "a b"]
)
async def test_chat_api_calls_only_api_routes(project: Path, path: str) -> None:
    result = await call(project, "chat_api", {"method": "GET", "path": path})
    assert result["isError"] is True
    assert "path must be a route under /__annotate/api/" in text_of(result)


@pytest.mark.anyio
@pytest.mark.parametrize("tool", ["chat_page", "chat_api"])
async def test_the_views_tools_refuse_a_client_without_apps(project: Path, tool: str) -> None:
    # Such a client lists them to its model: chat_api could accept or delete the reviewer's notes.
    args = {"method": "GET", "path": "summary"} if tool == "chat_api" else {}
    result = await call(project, tool, args, apps=False)
    assert result["isError"] is True
    assert text_of(result).startswith(f"{tool} serves the review view that open_review shows")


def test_the_lanes_messages() -> None:
    note = {
        "id": "a_1",
        "pageUrl": "/guide/",
        "note": "Which one?",
        "selectedText": "the tool",
        "source": {"path": "docs/guide.md", "lineStart": 3, "lineEnd": 4},
    }
    asked = chat.review_message(
        {"id": "rv_1", "mode": "review", "annotations": [note], "pageNotes": []}, ask=True
    )
    assert 'a_1 on /guide/ (docs/guide.md:3-4), on "the tool": "Which one?"' in asked
    assert "Edit no file" in asked and "get_context a_1" in asked
    sent = chat.review_message(
        {"id": "rv_2", "mode": "edit", "message": "All of it", "annotations": [note, note]}
    )
    assert 'review rv_2 from the review view: 2 notes, mode `edit`, message "All of it"' in sent
    assert "wait_for_review" in sent

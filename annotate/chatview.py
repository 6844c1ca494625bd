"""The review view inside the agent's chat: an MCP App (extension `io.modelcontextprotocol/ui`)
served with the `mcp` SDK's own `mcp.server.apps` (docs/chat.md).

`open_review` (for the model) names one `ui://` HTML resource: the browser overlay itself
(`overlay/src/`, joined as `annotate.web.static.join_overlay` joins it) with its one network
function, `api()` (overlay/src/api.js), swapped for overlay/app/api.js, which sends each REST call
as a `tools/call` of the app-only tool `chat_api` through the host. `chat_api` runs the call
through the web app's own routes in this process (an ASGI call, no HTTP, only
`/__annotate/api/` paths), so the view's popup, panel, page notes, highlights and change feed are
the overlay's, and each call is the route's one library call. `chat_page` (app-only) hands the
view the page's content (annotate/chat.py): page HTML never reaches the model's text.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
import rjsmin
from mcp.server.apps import Apps, ResourcePermissions, client_supports_apps
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field
from starlette.types import ASGIApp, Message

from . import __version__, chat
from .errors import AnnotateError
from .mcp_http import bearer
from .mcp_tools import TABLE
from .store import Store
from .validation import refuse_surrogates
from .web.static import (
    OVERLAY_CHUNKS,
    OVERLAY_SOURCES,
    SHADOW_CSS,
    chunk_preamble,
    find_overlay_dir,
    inline_chunks,
    minify_css,
)

__all__ = ["APP_ONLY", "POLL_S", "RESOURCE_URI", "TOOLS", "WebApp", "build_apps", "view_html"]

RESOURCE_URI = "ui://annotate/review.html"
# The view's rows of the tools' table (annotate/mcp_tools.py); the app-only ones are listed only to
# clients that render MCP Apps (annotate/mcp_server.py): the view calls them.
TOOLS = tuple(t.name for t in TABLE if t.call is None)
APP_ONLY = tuple(t.name for t in TABLE if t.app_only)
# The view's change feed waits this long in one `chat_api` call at most: each wait is a tool call
# through the host, and hosts time out long ones.
POLL_S = 8.0
API = "/__annotate/api/"
METHODS = ("GET", "POST", "PATCH", "DELETE")
# The view's files in overlay/app/: the bridge to the host first, the overlay's replacement of
# api.js, and the view's start.
APP_API = "api.js"
APP_SCRIPTS = ("bridge.js", "view.js")
APP_CSS = "view.css"

# The view's tools answer only clients that render MCP Apps: a client that does not also lists
# them to its model, and chat_api can do what the reviewer does (accept, delete).
VIEW_ONLY = (
    "{tool} serves the review view that open_review shows in clients that render MCP Apps; this "
    "client does not. Use the other tools."
)
# The web app the view's REST calls go to, over a store: with this project token, or in team mode
# (None), where each caller's bearer token names them (annotate/compose.py's `view_app`).
WebApp = Callable[[Store, str | None], ASGIApp]
READ = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)


def _text(text: str, *, error: bool = False, data: Any = None) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=data, is_error=error
    )


# -- the view -------------------------------------------------------------------------------------


def view_html(overlay: Path | None = None) -> str:
    """The view: one self-contained HTML document, everything inline (no request leaves it)."""
    root = overlay or find_overlay_dir()
    if root is None:
        raise RuntimeError("The overlay's sources (overlay/) are missing from this installation")
    return _view(tuple((p, p.stat().st_mtime_ns) for p in _sources(root)))


def _sources(root: Path) -> list[Path]:
    app = root / "app"
    return [
        root / "src" / SHADOW_CSS,
        *(app / APP_API if name == "api.js" else root / "src" / name for name in OVERLAY_SOURCES),
        *(app / name for name in APP_SCRIPTS),
        app / APP_CSS,
        root / "annotate.css",
        # What the browser overlay loads on first use is inline here: the view makes no request.
        *(root / "src" / n for names in OVERLAY_CHUNKS.values() for n in names),
    ]


@lru_cache(maxsize=2)
def _view(key: tuple[tuple[Path, int], ...]) -> str:
    """The view made from the files `_sources` lists (their modification times: the cache key)."""
    shadow, *rest = [p for p, _ in key]
    overlay = rest[: len(OVERLAY_SOURCES)]
    bridge, view = rest[len(OVERLAY_SOURCES) : len(OVERLAY_SOURCES) + 2]
    at = len(OVERLAY_SOURCES) + 2
    view_css, page_css = rest[at : at + 2]
    # The overlay in a function: `top` and `location` are the view's (its frame has an opaque
    # origin and shows one page of the site), `bridge` the host connection overlay/app/api.js
    # talks through. Everything else is the browser overlay's code, unchanged.
    body = "\n".join(p.read_text("utf-8") for p in overlay)
    script = (
        '(() => {\n"use strict";\n'
        + bridge.read_text("utf-8")
        + "\nfunction overlay(top, location, bridge) {\n"
        + f"const SHADOW_CSS = {json.dumps(minify_css(shadow.read_text('utf-8')))};\n"
        + "\n".join(chunk_preamble(shadow.parent, inline_chunks(shadow.parent)))
        + "\n"
        + body
        + "\n}\n"
        + view.read_text("utf-8")
        + f"\nview({json.dumps({'version': __version__})});\n}})();\n"
    )
    script = rjsmin.jsmin(script, keep_bang_comments=True).replace("</", "<\\/")
    css = minify_css(view_css.read_text("utf-8")) + minify_css(page_css.read_text("utf-8"))
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>Review</title><style>{css}</style></head>"
        '<body><header id="annotate-chat-bar"><span class="title">Loading the page…</span>'
        '<code class="path"></code></header><div id="annotate-page"></div>'
        f"<script>{script}</script></body></html>\n"
    )


# -- the REST calls of the view, through the web app's routes ------------------------------------


class Tunnel:
    """The web app of one store, called in this process: the view's REST calls reach the same
    route handlers (and library calls) as the browser overlay's.

    A team server's caller (annotate/mcp_http.py) calls in their own name: their bearer token goes
    to a team-mode app of the store, whose routes record them and refuse what their role may not
    do (an agent accepting), as on the team server itself. `web_app` makes either app."""

    def __init__(self, store: Store, web_app: WebApp) -> None:
        self.store = store
        self.web_app = web_app
        self.token = secrets.token_urlsafe(24)
        self.app: ASGIApp = web_app(store, self.token)
        self._team: ASGIApp | None = None

    async def call(
        self, method: str, path: str, body: Any, bearer: str | None = None
    ) -> tuple[int, Any]:
        """(status, JSON answer or text) of `method /__annotate/api/<path>`, as the person whose
        personal token `bearer` is when given."""
        target, _, query = path.partition("?")
        raw = b"" if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
        app = self.app
        credential = (b"x-annotate-token", self.token.encode())
        if bearer is not None:
            if self._team is None:
                self._team = self.web_app(self.store, None)
            app, credential = self._team, (b"authorization", f"Bearer {bearer}".encode())
        headers = [
            (b"host", b"127.0.0.1"),
            credential,
            (b"content-length", str(len(raw)).encode()),
        ]
        if body is not None:
            headers.append((b"content-type", b"application/json"))
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": API + target,
            "raw_path": (API + target).encode(),
            "query_string": query.encode(),
            "root_path": "",
            "headers": headers,
            "client": ("127.0.0.1", 0),
            "server": ("127.0.0.1", 80),
        }
        sent = False
        status = 500
        chunks: list[bytes] = []
        media = ""

        async def receive() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": raw, "more_body": False}
            # Asked again only to see whether the client left (the change feed's long-poll,
            # annotate/web/feed.py): it stays until the answer is sent.
            await anyio.sleep_forever()
            raise AssertionError("unreachable")

        async def send(message: Message) -> None:
            nonlocal status, media
            if message["type"] == "http.response.start":
                status = message["status"]
                for name, value in message.get("headers", []):
                    if name.lower() == b"content-type":
                        media = value.decode("latin-1")
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await app(scope, receive, send)
        text = b"".join(chunks).decode("utf-8", "replace")
        if status == 204 or not text:
            return status, None
        return status, json.loads(text) if "json" in media else text


def _check_path(path: str) -> str:
    """A path under the API (`annotations?page=/`), never another server or another route."""
    refuse_surrogates(path, "path")
    bare = path.split("?", 1)[0]
    if (
        not bare
        or bare.startswith("/")
        or "\\" in bare
        or ".." in bare.split("/")
        or "//" in bare
        or ":" in bare
        or any(c in bare for c in "#%\x00\r\n ")
    ):
        raise ValueError(f"path must be a route under {API} such as `annotations`, got {path!r}")
    return path


# -- the tools ------------------------------------------------------------------------------------


def build_apps(get_store: Callable[[], Store], web_app: WebApp) -> Apps:
    """The MCP Apps extension of `annotate mcp`: `open_review`, its view, and the view's
    app-only tools, on the store `get_store()` opens; the view's REST calls go to the app
    `web_app` makes."""
    apps = Apps()
    tunnels: dict[int, Tunnel] = {}

    def tunnel() -> Tunnel:
        store = get_store()
        if id(store) not in tunnels:
            tunnels.clear()
            tunnels[id(store)] = Tunnel(store, web_app)
        return tunnels[id(store)]

    apps.add_html_resource(
        RESOURCE_URI,
        view_html(),
        name="review",
        title="Review the page",
        description="The rendered page with its review notes: select text to leave a note.",
        # The panel's Copy as Markdown, where the host grants it (else the overlay says so).
        permissions=ResourcePermissions(clipboard_write={}),
        prefers_border=True,
    )

    @apps.tool(
        resource_uri=RESOURCE_URI,
        name="open_review",
        title="Open the page for review",
        description=(
            "Show a page of the site in the chat for review: the reviewer selects text and "
            "leaves notes (with their Markdown lines), then Send to agent posts a message. "
            "`pageUrl` (e.g. `/guide/install/`) or `path` (e.g. `docs/guide/install.md`); the "
            "home page by default. Where no view is shown: the page's URL on a review server."
        ),
        annotations=READ,
    )
    def open_review(
        ctx: Context,
        pageUrl: Annotated[
            str | None, Field(description='The page, e.g. "/guide/install/"')
        ] = None,
        path: Annotated[
            str | None,
            Field(description='Or its Markdown file, e.g. "docs/guide/install.md"'),
        ] = None,
    ) -> CallToolResult:
        try:
            opening = chat.open_review(get_store(), pageUrl, path)
        except AnnotateError as e:
            return _text(str(e), error=True)
        return _text(opening.text(view=client_supports_apps(ctx)), data=opening.to_dict())

    @apps.tool(
        resource_uri=RESOURCE_URI,
        visibility=["app"],
        name="chat_page",
        description="The review view's page: its content HTML and where it came from.",
        annotations=READ,
    )
    def chat_page(
        ctx: Context,
        pageUrl: Annotated[str | None, Field(description="The page")] = None,
        path: Annotated[str | None, Field(description="Or its Markdown file")] = None,
    ) -> CallToolResult:
        if not client_supports_apps(ctx):
            return _text(VIEW_ONLY.format(tool="chat_page"), error=True)
        try:
            page = chat.page_view(get_store(), pageUrl, path)
        except AnnotateError as e:
            return _text(str(e), error=True)
        return _text(f"{page.page_url}: {len(page.html)} characters", data=page.to_dict())

    @apps.tool(
        resource_uri=RESOURCE_URI,
        visibility=["app"],
        name="chat_api",
        description=(
            "The review view's REST calls (docs/http-api.md) through the web app's routes: "
            f"`method` and `path` under {API} (`annotations?page=/`), `body` as JSON. Answers "
            "{status, body}; Send to agent and Ask agent now also give `message`, what the view "
            "posts into the conversation."
        ),
        annotations=WRITE,
    )
    async def chat_api(
        ctx: Context,
        method: Annotated[Literal["GET", "POST", "PATCH", "DELETE"], Field(description="Method")],
        path: Annotated[str, Field(description="The route under /__annotate/api/")],
        body: Annotated[Any, Field(description="The JSON body")] = None,
    ) -> CallToolResult:
        if not client_supports_apps(ctx):
            return _text(VIEW_ONLY.format(tool="chat_api"), error=True)
        try:
            _check_path(path)
            status, answer = await tunnel().call(method, path, body, bearer(ctx))
        except (AnnotateError, ValueError) as e:
            return _text(str(e), error=True)
        data: dict[str, Any] = {"status": status, "body": answer}
        if method == "POST" and path == "reviews" and status == 201:
            ask = isinstance(body, dict) and isinstance(body.get("ids"), list)
            data["message"] = chat.review_message(answer, ask=ask)
        return _text(f"{method} {path.split('?', 1)[0]}: {status}", data=data)

    return apps

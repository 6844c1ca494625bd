"""`annotate chat`: the review view in a plain browser tab, with the host's messages shown.

A host that renders MCP Apps (docs/chat.md) is not always at hand. This serves, on a loopback
port, a page that is such a host (overlay/host/): it frames the view that `open_review` names,
exactly as a chat would, and lists every message the view and the host exchange. The view's
`tools/call` and `resources/read` reach the real MCP server (`compose.build_server` of the
project), through the `mcp` SDK's client announcing MCP Apps, in this process.

Only the page this process served may call: every `POST call` carries the page's secret in a
header (a page elsewhere cannot set it without a CORS preflight, which is never granted), and the
`Host` must be the loopback address it listens on (a rebound DNS name is refused).
"""

from __future__ import annotations

import contextlib
import json
import secrets
import threading
import webbrowser
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import uvicorn
from mcp import Client
from mcp.client import advertise
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from . import __version__
from .chatview import RESOURCE_URI
from .compose import build_server
from .errors import AnnotateError
from .web.responses import JsonResponse, error_response
from .web.server import bind
from .web.static import find_overlay_dir

__all__ = ["HEADER", "create_app", "run"]

HEADER = "x-annotate-chat"
METHODS = ("tools/call", "resources/read")
BODY_LIMIT = 1024 * 1024
APPS = [advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})]


def _files() -> Path:
    root = find_overlay_dir()
    if root is None or not (root / "host" / "host.js").is_file():
        raise AnnotateError(
            "The chat host's files (overlay/host/) are missing from this installation"
        )
    return root / "host"


def create_app(
    project: str | Path | None = None,
    *,
    page_url: str | None = None,
    path: str | None = None,
    secret: str | None = None,
) -> Starlette:
    """The host page (`/`), its script (`/host.js`) and `POST /call`, on the project's store.

    The page opens `page_url` (or the Markdown file `path`; the home page by default)."""
    folder = _files()
    secret = secret or secrets.token_urlsafe(24)
    server = build_server(project)
    state: dict[str, Client] = {}
    config = {
        "secret": secret,
        "resource": RESOURCE_URI,
        "pageUrl": page_url,
        "path": path,
        "version": __version__,
    }

    def allowed_host(request: Request) -> bool:
        host = request.headers.get("host", "")
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        return name in ("127.0.0.1", "localhost", "[::1]")

    async def page(request: Request) -> Response:
        if not allowed_host(request):
            return error_response(403, "forbidden_host", "This page answers on loopback only")
        # In a JSON script element: every `<`, `>` and `&` escaped, so no value can end it.
        data = json.dumps(config)
        for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
            data = data.replace(char, escape)
        html = (folder / "host.html").read_text("utf-8")
        html = html.replace("{{css}}", (folder / "host.css").read_text("utf-8"))
        return HTMLResponse(
            html.replace("{{config}}", data),
            headers={"Cache-Control": "no-store", "X-Frame-Options": "DENY"},
        )

    async def script(request: Request) -> Response:
        return Response(
            (folder / "host.js").read_text("utf-8"),
            media_type="text/javascript",
            headers={"Cache-Control": "no-store"},
        )

    async def call(request: Request) -> Response:
        if not allowed_host(request):
            return error_response(403, "forbidden_host", "This page answers on loopback only")
        if not secrets.compare_digest(request.headers.get(HEADER, ""), secret):
            return error_response(403, "forbidden", "Only the page `annotate chat` served may call")
        body = await request.body()
        if len(body) > BODY_LIMIT:
            return error_response(413, "too_large", "Request body is larger than 1 MB")
        try:
            data = json.loads(body)
            method, params = data["method"], data["params"]
            if method not in METHODS or not isinstance(params, dict):
                raise ValueError(method)
        except (ValueError, KeyError, TypeError):
            return error_response(
                400, "invalid", "Body must be {method: tools/call or resources/read, params}"
            )
        client = state["client"]
        try:
            if method == "tools/call":
                result: Any = await client.call_tool(
                    params.get("name", ""), params.get("arguments")
                )
            else:
                result = await client.read_resource(str(params.get("uri", "")))
        except MCPError as e:
            return error_response(400, "mcp_error", e.error.message)
        return JsonResponse(result.model_dump(by_alias=True, exclude_none=True, mode="json"))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with Client(server, extensions=APPS) as client:
            state["client"] = client
            yield

    return Starlette(
        routes=[
            Route("/", page),
            Route("/host.js", script),
            Route("/call", call, methods=["POST"]),
        ],
        lifespan=lifespan,
    )


def run(
    project: str | Path | None = None,
    *,
    page_url: str | None = None,
    path: str | None = None,
    port: int = 0,
    open_browser: bool = True,
) -> None:
    """Serve the host page on 127.0.0.1:`port` (a free one for 0) until Ctrl+C; print its URL."""
    app = create_app(project, page_url=page_url, path=path)
    sock = bind("127.0.0.1", port)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    print(f"The review view with its host messages: {url}  (Ctrl+C stops)", flush=True)
    if open_browser:
        threading.Timer(0.5, webbrowser.open, (url,)).start()
    config = uvicorn.Config(app, log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])

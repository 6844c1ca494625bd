"""The MCP Apps host emulator of the chat view's tests (docs/chat.md): Chromium shows
tests/browser/chathost/host.html, which frames the view as the strictest hosts do; the view's
calls reach a real `annotate mcp` over stdio through the SDK's client.

`McpSession` runs the SDK client on an event loop of its own (a thread), so the test's
Playwright calls and the view's long-running `chat_api` calls do not wait for each other.
`HostServer` serves the host page and its `POST /call`, which forwards a `tools/call` or
`resources/read` to that session.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import uvicorn
from mcp import Client, StdioServerParameters
from mcp.client import advertise
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from annotate.chatview import RESOURCE_URI
from annotate.web.server import bind

HERE = Path(__file__).resolve().parent / "chathost"
ROOT = HERE.parent.parent.parent
ANNOTATE = Path(sys.executable).parent / "annotate"
# The official host side of MCP Apps, from npm (scripts/test installs it into .tools/apps/).
APPS_TOOLS = ROOT / ".tools" / "apps"
EXT_APPS = APPS_TOOLS / "node_modules" / "@modelcontextprotocol" / "ext-apps"
ESBUILD = APPS_TOOLS / "node_modules" / ".bin" / "esbuild"
BUNDLE_ENTRY = (
    'import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";\n'
    "window.ExtApps = { AppBridge, PostMessageTransport };\n"
)
# What a host that renders MCP Apps tells the server (mcp.server.apps.client_supports_apps).
APPS = advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})
FULL_CAPS: dict[str, Any] = {
    "serverTools": {},
    "message": {"text": {}},
    "updateModelContext": {"text": {}},
    "openLinks": {},
}
NO_CONTEXT_CAPS = {k: v for k, v in FULL_CAPS.items() if k != "updateModelContext"}


class McpSession:
    """`annotate mcp --project P` over stdio, the SDK's client on its own event loop."""

    def __init__(self, project: Path, *, apps: bool = True) -> None:
        self.project = project
        self.apps = apps
        self.loop = asyncio.new_event_loop()
        self._ready: Future[Client] = Future()
        self._stop: asyncio.Event | None = None
        self._pending: set[Future[dict[str, Any]]] = set()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def start(self) -> McpSession:
        self._thread.start()
        self._main = asyncio.run_coroutine_threadsafe(self._run(), self.loop)
        self.client = self._ready.result(timeout=30)
        return self

    async def _run(self) -> None:
        self._stop = asyncio.Event()
        params = StdioServerParameters(
            command=str(ANNOTATE), args=["mcp", "--project", str(self.project)]
        )
        try:
            async with Client(params, extensions=[APPS] if self.apps else None) as client:
                self._ready.set_result(client)
                await self._stop.wait()
        except BaseException as e:
            if not self._ready.done():
                self._ready.set_exception(e)
            raise

    def cancel(self) -> None:
        """Cancel the calls forwarded for a view: its change-feed call waits up to 8 s."""
        for future in list(self._pending):
            self.loop.call_soon_threadsafe(future.cancel)

    def stop(self) -> None:
        self.cancel()
        if self._stop is not None:
            self.loop.call_soon_threadsafe(self._stop.set)
        try:
            self._main.result(timeout=15)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(5)
            self.loop.close()

    async def _request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "tools/call":
            result: Any = await self.client.call_tool(params["name"], params.get("arguments"))
        elif method == "resources/read":
            result = await self.client.read_resource(params["uri"])
        else:
            raise ValueError(f"the emulator forwards no {method}")
        dumped: dict[str, Any] = result.model_dump(by_alias=True, exclude_none=True, mode="json")
        return dumped

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """From the test's thread."""
        return asyncio.run_coroutine_threadsafe(self._request(method, params), self.loop).result(
            timeout=30
        )

    async def forward(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """From another event loop (the host server's)."""
        future = asyncio.run_coroutine_threadsafe(self._request(method, params), self.loop)
        self._pending.add(future)
        future.add_done_callback(self._pending.discard)
        return await asyncio.wrap_future(future)

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.request("tools/call", {"name": name, "arguments": arguments or {}})

    def view_html(self) -> str:
        [contents] = self.request("resources/read", {"uri": RESOURCE_URI})["contents"]
        assert contents["mimeType"] == APP_MIME_TYPE
        html: str = contents["text"]
        return html


def build_bundle(out: Path) -> Path:
    """The official AppBridge of @modelcontextprotocol/ext-apps as one IIFE (esbuild), made in
    the test setup from the npm packages scripts/test installs."""
    if not ESBUILD.is_file() or not EXT_APPS.is_dir():
        raise AssertionError(
            f"npm's @modelcontextprotocol/ext-apps and esbuild are missing from {APPS_TOOLS}: "
            "run scripts/test, which installs them"
        )
    subprocess.run(
        [str(ESBUILD), "--bundle", "--format=iife", "--platform=browser", f"--outfile={out}"],
        input=BUNDLE_ENTRY,
        text=True,
        check=True,
        capture_output=True,
        env={"NODE_PATH": str(APPS_TOOLS / "node_modules"), "PATH": "/usr/bin:/bin"},
    )
    return out


class HostServer:
    """The host page and its `POST /call` on a free loopback port (uvicorn in a thread)."""

    def __init__(self, session: McpSession, bundle: Path | None = None) -> None:
        self.session = session
        self.bundle = bundle

        async def host_page(request: Request) -> Response:
            tag = '<script src="/appbridge.js"></script>' if self.bundle else ""
            return HTMLResponse((HERE / "host.html").read_text().replace("{{bundle}}", tag))

        async def script(request: Request) -> Response:
            return FileResponse(HERE / "host.js", media_type="text/javascript")

        async def appbridge(request: Request) -> Response:
            assert self.bundle is not None
            return FileResponse(self.bundle, media_type="text/javascript")

        async def call(request: Request) -> Response:
            data = json.loads(await request.body())
            try:
                return JSONResponse(await self.session.forward(data["method"], data["params"]))
            except asyncio.CancelledError:  # the forwarded call, cancelled by stop(): not this task
                return JSONResponse({"error": "the host stopped"}, 503)

        app = Starlette(
            routes=[
                Route("/host.html", host_page),
                Route("/host.js", script),
                Route("/appbridge.js", appbridge),
                Route("/call", call, methods=["POST"]),
            ]
        )
        self.sock = bind("127.0.0.1", 0)
        self.port = self.sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the host emulator's server did not start")
            time.sleep(0.01)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/host.html"

    def stop(self) -> None:
        self.session.cancel()  # the view's pending call would hold the server's shutdown
        self.server.should_exit = True
        self._thread.join(10)
        self.sock.close()

"""The MCP tools over Streamable HTTP at `/__annotate/mcp` of a real `annotate serve` (uvicorn in a
subprocess on a free loopback port), called with the `mcp` SDK's Streamable HTTP client: the same
answers as `annotate mcp` over stdio, a bearer token or 401, and the app's Host and Origin checks.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

import annotate
from annotate.chatview import APP_ONLY
from annotate.mcp_server import TOOLS

from . import serving
from .conftest import element_note, text_note
from .serving import ANNOTATE

pytestmark = pytest.mark.anyio
# anyio imports its subprocess module on first use; pytest rewrites it (anyio is a pytest plugin),
# and CPython 3.11's parser fails with a SystemError when that happens deep in a stack of async
# context managers (the stdio client opened inside the HTTP one). Imported here, at the top.
_ = anyio.open_process

INSTALL_MD = "# Install\n\nRun pip install mkdocs-annotate in a shell.\n"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Served:
    """`annotate serve` in a subprocess: the team server."""

    def __init__(self, proc: subprocess.Popen[str], host: str, port: int, project: Path) -> None:
        self.proc, self.host, self.port, self.project = proc, host, port, project

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/"

    @property
    def mcp_url(self) -> str:
        return f"{self.url}__annotate/mcp"

    @property
    def token(self) -> str:
        return (self.project / ".annotate" / "token").read_text().strip()

    @contextlib.asynccontextmanager
    async def client(self, token: str | None = None) -> AsyncIterator[Client]:
        headers = {"Authorization": f"Bearer {token or self.token}"}
        async with create_mcp_http_client(headers=headers) as http:
            transport = streamable_http_client(self.mcp_url, http_client=http)
            async with Client(transport, read_timeout_seconds=30) as client:
                yield client

    def raw(
        self, method: str, path: str, headers: dict[str, str], body: bytes = b""
    ) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
        conn.request(method, path, body=body or None, headers=headers)
        r = conn.getresponse()
        out = r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        conn.close()
        return out

    def post_api(self, path: str, body: Any) -> tuple[int, Any]:
        headers = {"X-Annotate-Token": self.token, "Content-Type": "application/json"}
        status, _, data = self.raw(
            "POST", f"/__annotate/api/{path}", headers, json.dumps(body).encode()
        )
        return status, json.loads(data)


def make_project(root: Path, markdown: str = INSTALL_MD) -> Path:
    (root / "docs" / "guide").mkdir(parents=True)
    (root / "mkdocs.yml").write_text("site_name: test\n")
    (root / "docs" / "guide" / "install.md").write_text(markdown)
    return root


def start_server(project: Path, site: Path, *extra: str) -> Served:
    (site / "guide").mkdir(parents=True, exist_ok=True)
    (site / "guide" / "index.html").write_text("<html><body><p>Run pip</p></body></html>")
    return Served(*serving.start(project, site, *extra), project)


def stop_server(served: Served) -> str:
    """Stop it; its stderr (which must hold no traceback)."""
    return serving.stop(served.proc)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    server = start_server(make_project(tmp_path / "project"), tmp_path / "site")
    yield server
    err = stop_server(server)
    assert "Traceback" not in err, err


def _text(result: Any) -> str:
    assert len(result.content) >= 1
    return str(result.content[0].text)


async def test_the_tools_over_http_answer_as_over_stdio(served: Served) -> None:
    with annotate.open(served.project) as store:
        a = store.add_annotation(text_note())
        e = store.add_annotation(element_note())
        n = store.add_page_note({"pageUrl": "/guide/install/", "note": "Whole page"})

    async with served.client() as client:
        assert {t.name for t in (await client.list_tools()).tools} == set(TOOLS) - set(APP_ONLY)
        assert client.server_info is not None and client.server_info.name == "mkdocs-annotate"

        async def ok(name: str, **args: Any) -> Any:
            result = await client.call_tool(name, args)
            assert not result.is_error, _text(result)
            text = _text(result)
            return text if name in ("get_export", "get_context") else json.loads(text)

        listed = await ok("list_annotations", pageUrl="/guide/install/")
        assert [x["id"] for x in listed] == [a.id, e.id]
        assert listed[0]["source"]["path"] == "docs/guide/install.md"
        assert listed[0]["source"]["lineStart"] == 3
        assert [x["id"] for x in await ok("list_page_notes")] == [n.id]
        got = await ok("get_annotation", id=a.id)
        assert got["note"] == "Mention pipx as well."
        context = await ok("get_context", id=a.id, lines=1)
        assert context.endswith("> 3 | Run pip install mkdocs-annotate in a shell.")
        assert (await ok("set_in_progress", id=a.id))["status"] == "in_progress"
        replied = await ok("add_agent_reply", id=a.id, message="On it")
        assert replied["replies"][-1] == {**replied["replies"][-1], "role": "agent"}
        done = await ok("address_annotation", id=a.id, message="Added pipx")
        assert done["status"] == "addressed"

        missing = await client.call_tool("get_annotation", {"id": "a_nope"})
        assert missing.is_error and _text(missing) == 'Annotation with ID "a_nope" not found'

    # Written through HTTP, seen by the store (and so by the overlay, the CLI, annotate mcp).
    with annotate.open(served.project) as store:
        item = store.get_annotation(a.id)
        assert item.status == "addressed"
        assert [(r.role, r.message) for r in item.replies] == [
            ("agent", "On it"),
            ("agent", "Added pipx"),
        ]

    # The same answers as annotate mcp over stdio gives for the same store.
    from mcp import StdioServerParameters

    params = StdioServerParameters(
        command=ANNOTATE, args=["mcp", "--project", str(served.project)], cwd=str(served.project)
    )
    async with Client(params, read_timeout_seconds=30) as local, served.client() as remote:
        for name, args in [
            ("list_annotations", {"status": "all"}),
            ("get_annotation", {"id": e.id}),
            ("get_context", {"id": a.id}),
            ("summary", {}),
            ("get_export", {}),
            ("get_annotation", {"id": "bad id"}),
        ]:
            here, there = await local.call_tool(name, args), await remote.call_tool(name, args)
            assert there.content == here.content, name
            assert there.is_error == here.is_error


async def test_wait_for_review_over_http(served: Served) -> None:
    status, _ = served.post_api("annotations", text_note())
    assert status == 201

    async def send_later() -> None:
        await anyio.sleep(1)
        await anyio.to_thread.run_sync(
            served.post_api, "reviews", {"mode": "edit", "message": "Go"}
        )

    async with served.client() as client, anyio.create_task_group() as tg:
        tg.start_soon(send_later)
        with anyio.fail_after(15):
            result = await client.call_tool("wait_for_review", {"timeout_s": 20})
        taken = json.loads(_text(result))
        assert taken["review"]["message"] == "Go"
        assert taken["review"]["notes"][0]["at"] == "docs/guide/install.md:3"


def test_no_token_or_a_wrong_one_is_401_json(served: Served) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    base = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    for headers, message in [
        (base, "Missing bearer token: send Authorization: Bearer <token>"),
        ({**base, "Authorization": "Bearer nope-not-the-token"}, "Wrong or revoked bearer token"),
        ({**base, "Authorization": "Basic dXNlcjpwdw=="}, "Missing bearer token"),
        # The project token in the web API's header is not a bearer token.
        ({**base, "X-Annotate-Token": served.token}, "Missing bearer token"),
    ]:
        status, head, data = served.raw("POST", "/__annotate/mcp", headers, body)
        assert status == 401
        assert head["content-type"].startswith("application/json")
        assert head["www-authenticate"].startswith("Bearer")
        answer = json.loads(data)
        assert answer["code"] == "unauthorized"
        assert answer["error"].startswith(message)
    # Nothing about the token is sent back.
    assert served.token.encode() not in data


async def test_the_sdk_client_with_a_wrong_token_is_refused(served: Served) -> None:
    with pytest.raises(BaseException):  # noqa: B017 - the SDK raises its transport's error
        async with served.client("x" * 43) as client:
            await client.list_tools()


def test_host_and_origin_are_checked_as_for_the_api(served: Served) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    good = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {served.token}",
    }
    status, _, data = served.raw(
        "POST", "/__annotate/mcp", {**good, "Host": f"evil.example:{served.port}"}, body
    )
    assert status == 403 and json.loads(data)["code"] == "forbidden_host"
    status, _, data = served.raw(
        "POST", "/__annotate/mcp", {**good, "Origin": "http://evil.example"}, body
    )
    assert status == 403 and json.loads(data)["code"] == "forbidden_origin"
    # A loopback name the SDK's own check does not list (`*.localhost`, RFC 6761) is ours to
    # accept (the SDK would answer 421), with its own origin.
    name = f"review.localhost:{served.port}"
    status, _, data = served.raw(
        "POST", "/__annotate/mcp", {**good, "Host": name, "Origin": f"http://{name}"}, body
    )
    assert status == 200, data
    assert b"list_annotations" in data


def test_bodies_over_1_mb_are_refused(served: Served) -> None:
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {served.token}",
    }
    big = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
         "params": {"name": "add_agent_reply", "arguments": {"id": "a_x", "message": "x" * 1_100_000}}}
    ).encode()  # fmt: skip
    status, head, data = served.raw("POST", "/__annotate/mcp", headers, big)
    assert status == 413
    assert head["content-type"].startswith("application/json")
    assert json.loads(data) == {
        "error": "Request body is larger than the limit of 1 MB",
        "code": "too_large",
    }


def test_a_public_host_given_to_serve_is_accepted(tmp_path: Path) -> None:
    """The SDK alone would refuse any Host but loopback (421): a team server is reached by its
    public name, which `--host` allows (the app's Host check)."""
    server = start_server(
        make_project(tmp_path / "project"), tmp_path / "site", "--host", "0.0.0.0"
    )
    try:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {server.token}",
        }
        import socket

        name = socket.gethostname().lower()
        status, _, data = server.raw(
            "POST", "/__annotate/mcp", {**headers, "Host": f"{name}:{server.port}"}, body
        )
        assert status == 200, data
        assert b"list_annotations" in data
    finally:
        assert "Traceback" not in stop_server(server)


def test_read_only_serves_no_mcp(tmp_path: Path) -> None:
    server = start_server(make_project(tmp_path / "project"), tmp_path / "site", "--read-only")
    try:
        headers = {"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"}
        status, _, data = server.raw("POST", "/__annotate/mcp", headers, b"{}")
        # No such route: the site's files, which take GET only.
        assert status == 405 and b"jsonrpc" not in data
    finally:
        stop_server(server)


# -- a team server's verify: personal tokens with roles ------------------------------------------


@dataclass(frozen=True)
class Person:
    """What `annotate.identity.Person` holds: a name and a role."""

    name: str
    role: str


PEOPLE = {
    "agent-token-0123456789abcdef": Person("ci-agent", "agent"),
    "lead-token-0123456789abcdef": Person("lead", "maintainer"),
    "ana-token-0123456789abcdef": Person("ana", "reviewer"),
}


@contextlib.contextmanager
def run_app(app: Any) -> Iterator[str]:
    """`app` on uvicorn (lifespan on) in a thread, on a free loopback port; its base URL."""
    import uvicorn

    from annotate.web.server import bind

    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, lifespan="on", log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(200):
        if server.started:
            break
        time.sleep(0.05)
    assert server.started
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@contextlib.asynccontextmanager
async def bearer_client(url: str, token: str) -> AsyncIterator[Client]:
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        transport = streamable_http_client(f"{url}__annotate/mcp", http_client=http)
        async with Client(transport, read_timeout_seconds=30) as client:
            yield client


async def test_team_tokens_agents_and_maintainers_only(tmp_path: Path) -> None:
    from annotate.compose import create_app

    project = make_project(tmp_path / "project")
    with annotate.open(project) as store:
        a = store.add_annotation(text_note())
        app = create_app(store, token="project-token-0123456789", mcp=PEOPLE.get)
        with run_app(app) as url:
            for token in ("agent-token-0123456789abcdef", "lead-token-0123456789abcdef"):
                async with bearer_client(url, token) as client:
                    got = await client.call_tool("get_annotation", {"id": a.id})
                    assert json.loads(_text(got))["id"] == a.id

            def post(token: str) -> tuple[int, Any]:
                conn = http.client.HTTPConnection(*url[7:-1].split(":"), timeout=10)
                headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
                conn.request("POST", "/__annotate/mcp", body=b"{}", headers=headers)
                r = conn.getresponse()
                out = r.status, json.loads(r.read())
                conn.close()
                return out

            status, answer = await anyio.to_thread.run_sync(post, "ana-token-0123456789abcdef")
            assert (status, answer["code"]) == (403, "forbidden")
            assert answer["error"] == (
                "ana is a reviewer: only agent and maintainer tokens may use the MCP tools"
            )
            # The project token means nothing to a team server's verify.
            status, answer = await anyio.to_thread.run_sync(post, "project-token-0123456789")
            assert (status, answer["code"]) == (401, "unauthorized")


def test_bodies_are_parsed_as_strictly_as_the_api(served: Served) -> None:
    """Issue #32: the SDK's parser takes the last of two keys; the endpoint refuses, as the REST
    API does, and nothing is run or stored."""
    store = annotate.open(served.project)
    note = store.add_annotation(text_note())
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {served.token}",
    }
    call = (
        '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_annotation",'
        '"name":"add_agent_reply","arguments":{"id":"' + note.id + '","message":"forged"}}}'
    )
    bodies = {
        "the key 'name' appears twice": call,
        "NaN is not valid JSON": '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":NaN}}',
        "not UTF-8": b'{"jsonrpc":"2.0","id":1,"method":"tools/list","x":"\xff"}',
    }
    for why, body in bodies.items():
        raw = body if isinstance(body, bytes) else body.encode()
        status, _, data = served.raw("POST", "/__annotate/mcp", headers, raw)
        assert status == 400, (why, data)
        answer = json.loads(data)
        assert answer["jsonrpc"] == "2.0" and answer["id"] is None
        assert answer["error"]["code"] == -32700 and why in answer["error"]["message"]
    assert store.get_annotation(note.id).replies == ()
    store.close()


async def test_coerced_arguments_are_refused_over_http(served: Served) -> None:
    store = annotate.open(served.project)
    note = store.add_annotation(text_note())
    async with served.client() as client:
        result = await client.call_tool("address_annotation", {"id": note.id, "deleted": "yes"})
    assert result.is_error
    assert _text(result).startswith("Invalid arguments for address_annotation: deleted: ")
    assert store.get_annotation(note.id).status == "open"
    store.close()

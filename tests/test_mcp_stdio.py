"""The installed `annotate mcp` over stdio, as an agent runs it (issue #7).

The SDK's client starts `.venv/bin/annotate mcp` as a subprocess. A review posted through the web
API of an `annotate serve` subprocess — a third process — releases a pending `wait_for_review`
within a second. A raw session checks that nothing but JSON-RPC reaches stdout.
"""

from __future__ import annotations

import http.client
import json
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

import annotate
from annotate.chatview import APP_ONLY
from annotate.mcp_server import TOOLS

from . import serving
from .conftest import element_note, text_note
from .serving import ANNOTATE

pytestmark = pytest.mark.anyio

INSTALL_MD = "# Install\n\nRun pip install mkdocs-annotate in a shell.\n"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "docs" / "guide").mkdir(parents=True)
    (root / "mkdocs.yml").write_text("site_name: test\n")
    (root / "docs" / "guide" / "install.md").write_text(INSTALL_MD)
    return root


def stdio(project: Path, *extra: str) -> Client:
    params = StdioServerParameters(
        command=ANNOTATE, args=["mcp", "--project", str(project), *extra], cwd=str(project)
    )
    return Client(params, read_timeout_seconds=30)


class Web:
    """`annotate serve` in a subprocess: the reviewer's side."""

    def __init__(self, proc: subprocess.Popen[str], host: str, port: int, project: Path) -> None:
        self.proc, self.host, self.port, self.project = proc, host, port, project

    def post(self, path: str, body: Any) -> tuple[int, Any]:
        token = (self.project / ".annotate" / "token").read_text().strip()
        conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
        headers = {"X-Annotate-Token": token, "Content-Type": "application/json"}
        conn.request("POST", f"/__annotate/api/{path}", body=json.dumps(body), headers=headers)
        r = conn.getresponse()
        out = r.status, json.loads(r.read())
        conn.close()
        return out


@pytest.fixture
def web(project: Path, tmp_path: Path) -> Iterator[Web]:
    site = tmp_path / "site"
    (site / "guide").mkdir(parents=True)
    (site / "guide" / "index.html").write_text("<html><body><p>Run pip</p></body></html>")
    proc, host, port = serving.start(project, site)
    yield Web(proc, host, port, project)
    serving.stop(proc)


def _text(result: Any) -> str:
    assert len(result.content) == 1
    return result.content[0].text


async def test_every_tool_over_stdio(project: Path) -> None:
    async with stdio(project) as client:
        assert {t.name for t in (await client.list_tools()).tools} == set(TOOLS) - set(APP_ONLY)
        assert client.server_info.name == "mkdocs-annotate"

        # The store is created by the server on first use.
        listed = await client.call_tool("list_annotations", {})
        assert not listed.is_error and json.loads(_text(listed)) == []

    # Notes made by another process (the dev server, the CLI) are seen at once.
    from annotate import open as open_store

    with open_store(project) as store:
        a = store.add_annotation(text_note())
        e = store.add_annotation(element_note())
        n = store.add_page_note({"pageUrl": "/guide/install/", "note": "Whole page"})
        review = store.create_review({"mode": "edit", "message": "Go"})

    async with stdio(project) as client:

        async def ok(name: str, **args: Any) -> Any:
            result = await client.call_tool(name, args)
            assert not result.is_error, _text(result)
            text = _text(result)
            return text if name in ("get_export", "get_context") else json.loads(text)

        async def error(name: str, **args: Any) -> str:
            result = await client.call_tool(name, args)
            assert result.is_error
            return _text(result)

        listed = await ok("list_annotations", pageUrl="/guide/install/", status="open")
        assert [x["id"] for x in listed] == [a.id, e.id]
        assert listed[0]["source"]["path"] == "docs/guide/install.md"
        assert listed[0]["source"]["lineStart"] == 3
        assert listed[0]["anchorState"] == "anchored"
        assert [x["id"] for x in await ok("list_page_notes")] == [n.id]
        assert (await ok("get_annotation", id=a.id))["id"] == a.id
        assert "Mention pipx as well." in await ok("get_export")
        assert (await ok("summary"))["openItems"] == 3
        context = await ok("get_context", id=a.id, lines=1)
        assert context.endswith("  2 |\n> 3 | Run pip install mkdocs-annotate in a shell.")
        assert (await ok("set_in_progress", id=a.id))["status"] == "in_progress"
        target = await ok("update_annotation_target", id=a.id, replacedText="pip install it")
        assert target["replacedText"] == "pip install it"
        assert (await ok("address_annotation", id=a.id))["status"] == "addressed"
        assert (await ok("add_agent_reply", id=a.id, message="Done"))["replies"][0]["role"] == (
            "agent"
        )
        assert [r["id"] for r in await ok("list_reviews", pendingOnly=True)] == [review.id]
        assert (await ok("get_review", id=review.id))["message"] == "Go"
        taken = await ok("wait_for_review", timeout_s=5)
        assert taken["review"]["id"] == review.id

        # Every error text of the reference, as isError.
        assert await error("get_annotation", id="a_nope") == 'Annotation with ID "a_nope" not found'
        assert await error("add_agent_reply", id=a.id, message=" ") == (
            "Reply message must not be empty"
        )
        assert await error("address_annotation", id=a.id, replacedText="") == (
            "replacedText must not be empty"
        )
        assert await error("address_annotation", id=e.id, replacedText="x") == (
            "not a text annotation"
        )
        assert (
            await error("set_in_progress", id="a_nope") == 'Annotation with ID "a_nope" not found'
        )
        assert await error("update_annotation_target", id="a_nope", replacedText="x") == (
            'Annotation with ID "a_nope" not found'
        )
        assert "id" in await error("get_annotation")


async def test_wait_for_review_released_by_the_web_api(project: Path, web: Web) -> None:
    status, created = web.post("annotations", text_note())
    assert status == 201, created
    posted: dict[str, Any] = {}

    def send_to_agent() -> None:
        time.sleep(1.5)
        posted["at"] = time.monotonic()
        posted["status"], posted["body"] = web.post("reviews", {"mode": "edit", "message": "Go"})

    async with stdio(project) as client:
        await client.list_tools()  # the server is up
        sender = threading.Thread(target=send_to_agent)
        started = time.monotonic()
        sender.start()
        result = await client.call_tool("wait_for_review", {"timeout_s": 30})
        woke = time.monotonic()
        sender.join()
    assert posted["status"] == 201, posted["body"]
    assert woke - started >= 1.5  # it waited …
    assert woke - posted["at"] < 1.0  # … and woke within a second of Send to agent
    assert not result.is_error
    got = json.loads(_text(result))
    assert got["review"]["id"] == posted["body"]["id"]
    assert got["review"]["mode"] == "edit" and got["review"]["message"] == "Go"
    assert [a["id"] for a in got["review"]["notes"]] == [created["id"]]
    assert got["review"]["notes"][0]["at"].startswith("docs/guide/install.md:")
    assert got["instructions"].startswith("Edit mode:")


async def test_no_review_yet_over_stdio(project: Path) -> None:
    async with stdio(project) as client:
        with anyio.fail_after(10):
            result = await client.call_tool("wait_for_review", {"timeout_s": 1})
    assert not result.is_error
    assert json.loads(_text(result))["instructions"].startswith(
        "No review yet: the reviewer has not pressed Send to agent within 1 s."
    )


# A raw client's `initialize`, the first line of every session written by hand.
HELLO: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}


def test_nothing_but_protocol_on_stdout(project: Path) -> None:
    """Every line on stdout is a JSON-RPC message, errors and a corrupt store included."""
    requests = [
        HELLO,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "get_annotation", "arguments": {"id": "a_nope"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "get_context", "arguments": {"lines": "many"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": {"name": "get_export", "arguments": {}},
        },
    ]
    db = project / ".annotate" / "corrupt.db"
    db.parent.mkdir()
    db.write_text("not a database")
    for extra in ([], ["--db", str(db)]):
        answers = _raw_session(
            [ANNOTATE, "mcp", "--project", str(project), *extra], requests, expect=5
        )
        assert all(set(a) <= {"jsonrpc", "id", "result", "error"} for a in answers)
        by_id = {a["id"]: a for a in answers}
        assert set(by_id) == {1, 2, 3, 4, 5}
        assert by_id[1]["result"]["serverInfo"]["name"] == "mkdocs-annotate"
        assert by_id[3]["result"]["isError"] is True
        assert by_id[4]["result"]["isError"] is True
        text = by_id[3]["result"]["content"][0]["text"]
        if extra:
            assert text == f"{db} is not a readable annotation database (not an SQLite database)"
            assert by_id[5]["result"]["isError"] is True
        else:
            assert text == 'Annotation with ID "a_nope" not found'
            assert by_id[5]["result"].get("isError") in (None, False)


def _raw_session(
    command: list[str], requests: list[dict[str, Any] | str], expect: int
) -> list[Any]:
    """Send the requests (a string as the line itself), read stdout until `expect` answers came,
    then close stdin."""
    proc = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    lines: list[str] = []

    def read() -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            lines.append(line)
            if sum('"id"' in x for x in lines) >= expect:
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    for r in requests:
        proc.stdin.write((r if isinstance(r, str) else json.dumps(r)) + "\n")  # type: ignore[union-attr]
    proc.stdin.flush()  # type: ignore[union-attr]
    reader.join(30)
    proc.stdin.close()  # type: ignore[union-attr]
    try:
        assert proc.wait(10) == 0, proc.stderr.read()  # type: ignore[union-attr]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        rest = proc.stdout.read()  # type: ignore[union-attr]
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
    return [json.loads(line) for line in [*lines, *rest.splitlines()] if line.strip()]


def test_a_key_twice_is_refused_not_the_last_one_run(project: Path) -> None:
    """Issue #32: the SDK's parser runs the last of two `name`s; the REST API's refuses."""
    store = annotate.open(project)
    note = store.add_page_note({"pageUrl": "/", "note": "Keep it."})
    store.close()
    forged = (
        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_annotation",'
        '"name":"add_agent_reply","arguments":{"id":"' + note.id + '","message":"forged"}}}'
    )
    nan = '{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":NaN}}'
    requests = [HELLO, {"jsonrpc": "2.0", "method": "notifications/initialized"}, forged, nan]
    answers = _raw_session([ANNOTATE, "mcp", "--project", str(project)], requests, expect=3)
    by_id = {a["id"]: a for a in answers}
    assert by_id[2]["error"] == {
        "code": -32700,
        "message": "Parse error: the key 'name' appears twice in one object",
    }
    assert by_id[3]["error"]["message"] == "Parse error: NaN is not valid JSON"
    with annotate.open(project) as store:
        assert store.get_annotation(note.id).replies == ()

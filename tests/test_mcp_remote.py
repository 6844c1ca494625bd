"""`annotate mcp --remote URL --token-file F` over stdio (the SDK's stdio client spawning the real CLI)
against a real `annotate serve`: every answer from the team server, `source` and `get_context` from
the agent's own checkout, and one-line errors for a bad URL, an unreachable server, a refused token
and a token file others can read.
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

import annotate
from annotate.chatview import APP_ONLY
from annotate.mcp_server import SELECTIONS, TOOLS

from .conftest import element_note, text_note
from .test_mcp_http import ANNOTATE, INSTALL_MD, Served, make_project, start_server, stop_server

pytestmark = pytest.mark.anyio
_ = anyio.open_process  # see tests/test_mcp_http.py

# The agent's checkout: a line inserted above the quoted one (line 3 on the server, 5 here).
LOCAL_MD = "# Install\n\nA new first paragraph.\n\nRun pip install mkdocs-annotate in a shell.\n"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    server = start_server(make_project(tmp_path / "server"), tmp_path / "site")
    yield server
    err = stop_server(server)
    assert "Traceback" not in err, err


def token_file(tmp_path: Path, token: str, mode: int = 0o600) -> Path:
    path = tmp_path / f"token-{mode:o}"
    path.write_text(token + "\n")
    path.chmod(mode)
    return path


@asynccontextmanager
async def remote(url: str, tokens: Path, checkout: Path) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=ANNOTATE,
        args=["mcp", "--remote", url, "--token-file", str(tokens), "--project", str(checkout)],
        cwd=str(checkout),
    )
    async with Client(params, read_timeout_seconds=40) as client:
        yield client


def _text(result: Any) -> str:
    return str(result.content[0].text)


async def test_answers_from_the_server_lines_from_the_checkout(
    served: Served, tmp_path: Path
) -> None:
    with annotate.open(served.project) as store:
        a = store.add_annotation(text_note())
        e = store.add_annotation(element_note())
        n = store.add_page_note({"pageUrl": "/guide/install/", "note": "Whole page"})
    checkout = make_project(tmp_path / "checkout")
    tokens = token_file(tmp_path, served.token)

    async with remote(served.url, tokens, checkout) as agent, served.client() as direct:
        assert {t.name for t in (await agent.list_tools()).tools} == set(TOOLS) - set(APP_ONLY)
        # The checkout is the server's: every answer is the server's, byte for byte.
        for name, args in [
            ("list_annotations", {}),
            ("list_page_notes", {}),
            ("get_annotation", {"id": a.id}),
            ("get_annotation", {"id": e.id}),
            ("get_annotation", {"id": n.id}),
            ("get_context", {"id": a.id, "lines": 2}),
            ("get_context", {"id": n.id}),
            ("summary", {}),
            ("get_annotation", {"id": "a_nope"}),
            ("list_annotations", {"limit": 0}),
            ("get_context", {"id": a.id, "lines": -1}),
            ("get_context", {}),
            ("get_context", {"id": "a_nope"}),
        ]:
            here, there = await agent.call_tool(name, args), await direct.call_tool(name, args)
            assert here.content == there.content, name
            assert here.is_error == there.is_error

        # The agent inserts a line above the quote in its checkout: its lines move at once.
        (checkout / "docs" / "guide" / "install.md").write_text(LOCAL_MD)
        listed = json.loads(_text(await agent.call_tool("list_annotations", {})))
        assert listed[0]["id"] == a.id
        assert listed[0]["source"]["lineStart"] == 5
        assert listed[0]["anchorState"] == "anchored"
        server_side = json.loads(_text(await direct.call_tool("get_annotation", {"id": a.id})))
        assert server_side["source"]["lineStart"] == 3  # the team server's build is unchanged
        context = _text(await agent.call_tool("get_context", {"id": a.id, "lines": 1}))
        assert context.endswith("  4 |\n> 5 | Run pip install mkdocs-annotate in a shell.")
        assert "docs/guide/install.md:5" in context

        # The lifecycle goes to the server; each answer carries the local lines.
        started = json.loads(_text(await agent.call_tool("set_in_progress", {"id": a.id})))
        assert (started["status"], started["source"]["lineStart"]) == ("in_progress", 5)
        replied = await agent.call_tool("add_agent_reply", {"id": a.id, "message": "On it"})
        assert json.loads(_text(replied))["replies"][-1]["message"] == "On it"
        local = LOCAL_MD.replace("pip install mkdocs-annotate", "pipx install mkdocs-annotate")
        (checkout / "docs" / "guide" / "install.md").write_text(local)
        done = await agent.call_tool(
            "address_annotation",
            {"id": a.id, "replacedText": "pipx install mkdocs-annotate", "message": "pipx"},
        )
        addressed = json.loads(_text(done))
        assert addressed["status"] == "addressed"
        assert addressed["source"]["lineStart"] == 5  # found by its replacement, here
        assert addressed["anchorState"] == "anchored"

        error = await agent.call_tool("add_agent_reply", {"id": a.id, "message": " "})
        assert error.is_error and _text(error) == "Reply message must not be empty"

        prompt = await agent.get_prompt("address-note", {"id": a.id})
        assert a.id in str(prompt.messages[0].content)

    with annotate.open(served.project) as store:
        item = store.get_annotation(a.id)
        assert item.status == "addressed"
        assert [r.message for r in item.replies] == ["On it", "pipx"]


async def test_selections_travel_in_meta_and_the_answer_stays_the_same(
    served: Served, tmp_path: Path
) -> None:
    """Where a quote was selected (`inCode`, `occurrence`) is in no answer: the bridge asks for it
    in a call's `_meta` and gets it in the result's, and its own answer to the agent is the
    server's plain answer, byte for byte, `_meta` and all (no token more for the model)."""
    with annotate.open(served.project) as store:
        a = store.add_annotation(text_note(inCode=False, occurrence=1)).id
        b = store.add_annotation(text_note()).id  # made by a client that reported neither
        e = store.add_annotation(element_note()).id
    checkout = make_project(tmp_path / "checkout")
    tokens = token_file(tmp_path, served.token)
    ask: Any = {SELECTIONS: True}

    def whole(result: Any) -> str:
        return json.dumps(result.model_dump(by_alias=True, exclude_none=True))

    async with remote(served.url, tokens, checkout) as agent, served.client() as direct:
        for name, args, selected in [
            ("get_annotation", {"id": a}, {a: {"inCode": False, "occurrence": 1}}),
            ("get_annotation", {"id": b}, {}),
            ("get_annotation", {"id": e}, {}),
            ("list_annotations", {}, {a: {"inCode": False, "occurrence": 1}}),
        ]:
            plain = await direct.call_tool(name, args)
            asked = await direct.call_tool(name, args, meta=ask)
            assert asked.content == plain.content
            assert asked.meta is not None and asked.meta[SELECTIONS] == selected
            assert SELECTIONS not in (plain.meta or {})
            here = await agent.call_tool(name, args)
            assert whole(here) == whole(plain), name
        # An error, and a tool that holds no annotation, carry none.
        missing = await direct.call_tool("get_annotation", {"id": "a_nope"}, meta=ask)
        assert missing.is_error and SELECTIONS not in (missing.meta or {})
        counted = await direct.call_tool("summary", {}, meta=ask)
        assert counted.meta is not None and counted.meta[SELECTIONS] == {}


async def test_wait_for_review_through_the_remote(served: Served, tmp_path: Path) -> None:
    status, created = served.post_api("annotations", text_note())
    assert status == 201
    checkout = make_project(tmp_path / "checkout", LOCAL_MD)
    tokens = token_file(tmp_path, served.token)
    progress: list[float] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    async with remote(served.url, tokens, checkout) as agent:
        # Nothing sent: after the server's first progress notification (10 s), the timeout.
        waited = await agent.call_tool(
            "wait_for_review", {"timeout_s": 11}, progress_callback=on_progress
        )
        assert json.loads(_text(waited))["review"] is None
        assert progress == [10.0]

        async def send_later() -> None:
            await anyio.sleep(1)
            await anyio.to_thread.run_sync(
                served.post_api, "reviews", {"mode": "edit", "message": "Go"}
            )

        async with anyio.create_task_group() as tg:
            tg.start_soon(send_later)
            with anyio.fail_after(20):
                result = await agent.call_tool("wait_for_review", {"timeout_s": 15})
        taken = json.loads(_text(result))
        assert taken["review"]["message"] == "Go"
        # The note's lines in the agent's checkout, not the server's line 3.
        assert taken["review"]["notes"][0]["at"] == "docs/guide/install.md:5"
        review = json.loads(
            _text(await agent.call_tool("get_review", {"id": taken["review"]["id"]}))
        )
        assert review["notes"][0]["at"] == "docs/guide/install.md:5"
        assert review["notes"][0]["id"] == created["id"]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_errors_are_one_line(served: Served, tmp_path: Path) -> None:
    checkout = make_project(tmp_path / "checkout", INSTALL_MD)
    good = token_file(tmp_path, served.token)
    port = _closed_port()
    cases = [
        (served.url, token_file(tmp_path, "w" * 43, 0o400), "refused the token"),
        (f"http://127.0.0.1:{port}/", good, "Cannot reach the team server at"),
        ("ftp://example.com/", good, "is not a server URL"),
        ("not a url", good, "is not a server URL"),
        (served.url, token_file(tmp_path, served.token, 0o644), "readable by other users"),
        (served.url, tmp_path / "missing", "Cannot read the token file"),
        (f"{served.url}nothing/here/", good, "No MCP endpoint"),
    ]
    for url, tokens, message in cases:
        async with remote(url, tokens, checkout) as agent:
            # Listing works without the server: the tools are annotate mcp's.
            assert {t.name for t in (await agent.list_tools()).tools} == set(TOOLS) - set(APP_ONLY)
            for name, args in [("list_annotations", {}), ("get_context", {"id": "a_x"})]:
                result = await agent.call_tool(name, args)
                assert result.is_error, (url, name)
                text = _text(result)
                assert message in text, text
                assert "\n" not in text and "Traceback" not in text
                assert served.token not in text


def test_the_cli_refuses_half_a_remote(tmp_path: Path) -> None:
    import subprocess

    for args, message in [
        (["--token-file", "f"], "--token-file is only used with --remote URL"),
        (["--remote", "http://127.0.0.1:1/"], "--remote needs --token-file F"),
        (["--remote", "http://x/", "--token-file", "f", "--db", "x.db"], "--db names a local"),
    ]:
        done = subprocess.run(
            [ANNOTATE, "mcp", *args], capture_output=True, text=True, cwd=tmp_path, timeout=30
        )
        assert done.returncode == 1
        assert done.stderr.startswith("Error: ") and message in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1


async def test_a_kept_connection_recovers(tmp_path: Path) -> None:
    """The connection is kept between calls: a rotated token, a stopped server and a restarted one
    each give the next call its one-line answer, and the call after them works again."""
    port = _closed_port()
    project = make_project(tmp_path / "server")
    server = start_server(project, tmp_path / "site", "--port", str(port))
    checkout = make_project(tmp_path / "checkout", LOCAL_MD)
    tokens = token_file(tmp_path, server.token)
    try:
        async with remote(server.url, tokens, checkout) as agent:

            async def summary() -> tuple[bool, str]:
                result = await agent.call_tool("summary", {})
                return bool(result.is_error), _text(result)

            assert (await summary())[0] is False
            import subprocess

            subprocess.run(
                [ANNOTATE, "token", "--rotate", "--project", str(project)],
                check=True,
                capture_output=True,
            )
            error, text = await summary()
            assert error and "refused the token" in text
            tokens.write_text(server.token + "\n")  # the new token, read on the next call
            assert (await summary())[0] is False

            assert "Traceback" not in stop_server(server)
            error, text = await summary()
            assert error and text.startswith("Cannot reach the team server at"), text

            server = start_server(project, tmp_path / "site", "--port", str(port))
            assert (await summary())[0] is False
            listed = await agent.call_tool("list_annotations", {})
            assert not listed.is_error and json.loads(_text(listed)) == []
    finally:
        if server.proc.poll() is None:
            stop_server(server)


async def test_a_cancelled_wait_claims_no_review(served: Served, tmp_path: Path) -> None:
    """An agent that gives up waiting (its call cancelled) leaves the next review for the next
    wait: the cancellation reaches the team server through the bridge."""
    checkout = make_project(tmp_path / "checkout")
    tokens = token_file(tmp_path, served.token)
    status, _ = served.post_api("annotations", text_note())
    assert status == 201
    async with remote(served.url, tokens, checkout) as agent:
        with anyio.move_on_after(2):
            await agent.call_tool("wait_for_review", {"timeout_s": 30})
        await anyio.sleep(1)  # the cancellation travels: agent -> bridge -> server
        status, review = await anyio.to_thread.run_sync(
            served.post_api, "reviews", {"mode": "edit", "message": "Go"}
        )
        assert status == 201
        await anyio.sleep(1.5)  # a wait still running on the server would take it now
        listed = json.loads(_text(await agent.call_tool("list_reviews", {"pendingOnly": True})))
        assert [r["id"] for r in listed] == [review["id"]]
        taken = json.loads(_text(await agent.call_tool("wait_for_review", {"timeout_s": 5})))
        assert taken["review"]["id"] == review["id"]


async def test_outside_a_project_each_call_says_so(served: Served, tmp_path: Path) -> None:
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir()
    tokens = token_file(tmp_path, served.token)
    params = StdioServerParameters(
        command=ANNOTATE,
        args=["mcp", "--remote", served.url, "--token-file", str(tokens)],
        cwd=str(nowhere),
    )
    async with Client(params, read_timeout_seconds=40) as agent:
        assert {t.name for t in (await agent.list_tools()).tools} == set(TOOLS) - set(APP_ONLY)
        result = await agent.call_tool("list_annotations", {})
        assert result.is_error
        assert "--project" in _text(result) and "\n" not in _text(result)

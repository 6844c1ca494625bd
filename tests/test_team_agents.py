"""Agents on a team server, end to end (docs/team.md, "Remote agents"): `annotate serve SITE --team`
in a subprocess, personal tokens made by `annotate token add`, the `mcp` SDK's Streamable HTTP
client and `annotate mcp --remote` spawned by its stdio client; on SQLite and on PostgreSQL.

An agent's replies and status changes record its name; a reviewer's token is refused the MCP
tools (403), a revoked or missing token gets 401; an agent cannot accept through REST either.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client import advertise
from mcp.client.streamable_http import streamable_http_client
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID
from mcp.shared._httpx_utils import create_mcp_http_client

import annotate
from annotate.store import project_db_path

from .conftest import text_note
from .test_mcp_http import ANNOTATE, bearer_client
from .test_mcp_remote import LOCAL_MD, remote, token_file
from .test_team_server import Running, _project, _serve

pytestmark = pytest.mark.anyio
_ = anyio.open_process  # see tests/test_mcp_http.py
BACKENDS = ("sqlite", "postgresql")
MCP = "/__annotate/mcp"
API = "/__annotate/api"
# A client that renders MCP Apps: the chat view's tools answer only those (docs/chat.md).
APPS = [advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def cli(project: Path, db: str | None, *args: str) -> str:
    """`annotate ARGS --project P [--db URL]`, as a maintainer runs it; its stdout."""
    done = subprocess.run(
        [sys.executable, "-m", "annotate.cli", *args, "--project", str(project),
         *(["--db", db] if db else [])],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


@dataclass
class Team:
    """A team server with three people's tokens and one open note."""

    server: Running
    store: annotate.Store
    project: Path
    db: str | None
    tokens: dict[str, str]
    note: str

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.port}/"

    def post(self, path: str, token: str | None, body: Any) -> tuple[int, Any]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        status, _, answer = self.server.request("POST", path, body, headers=headers)
        return status, answer

    def changes(self) -> int:
        return len(self.store.changes(0)[0])

    def authors(self) -> dict[str, str | None]:
        """Each change of the note: action -> the author the feed's table recorded."""
        with self.store._tx(write=False) as conn:  # both backends answer this query alike
            rows = conn.execute(
                "SELECT action, author FROM changes WHERE item_id = ? ORDER BY seq", (self.note,)
            ).fetchall()
        return {r[0]: r[1] for r in rows}


@pytest.fixture
def team(tmp_path: Path, db_url: str | None) -> Iterator[Team]:
    project, site = _project(tmp_path)
    tokens = {}
    for name, role in (("ci-agent", "agent"), ("ana", "reviewer"), ("lead", "maintainer")):
        made = json.loads(cli(project, db_url, "token", "add", name, "--role", role, "--json"))
        tokens[name] = made["token"]
    store = annotate.open(project, db=db_url)
    note = store.add_annotation(text_note(pageUrl="/guide/install/"), by=None)
    server = _serve(project, site, "--team", *(["--db", db_url] if db_url else []))
    yield Team(server, store, project, db_url, tokens, note.id)
    store.close()
    out = server.stop()
    assert "Traceback" not in out, out
    assert all(t not in out for t in tokens.values())  # never a token in the log


def _text(result: Any) -> str:
    return str(result.content[0].text)


async def test_an_agent_token_lists_replies_and_addresses_in_its_name(team: Team) -> None:
    async with bearer_client(team.url, team.tokens["ci-agent"]) as client:
        listed = json.loads(_text(await client.call_tool("list_annotations", {})))
        assert [a["id"] for a in listed] == [team.note]
        for tool, args in (
            ("set_in_progress", {"id": team.note}),
            ("add_agent_reply", {"id": team.note, "message": "Looking at it."}),
            ("update_annotation_target", {"id": team.note, "replacedText": "pipx install it"}),
            ("address_annotation", {"id": team.note, "message": "Now says pipx."}),
        ):
            result = await client.call_tool(tool, args)
            assert not result.is_error, (tool, _text(result))
        answer = json.loads(_text(result))
    assert answer["status"] == "addressed"
    replies = [(r["role"], r["author"], r["message"]) for r in answer["replies"]]
    assert replies == [
        ("agent", "ci-agent", "Looking at it."),
        ("agent", "ci-agent", "Now says pipx."),
    ]
    # The feed names the agent as the author of each change it made.
    assert team.authors() == {
        "created": None,  # made through the library, by nobody in particular
        "in_progress": "ci-agent",
        "agent_reply": "ci-agent",
        "target_updated": "ci-agent",
        "addressed": "ci-agent",
    }
    # An agent run on a maintainer's token answers as an agent, in the maintainer's name.
    async with bearer_client(team.url, team.tokens["lead"]) as client:
        result = await client.call_tool("add_agent_reply", {"id": team.note, "message": "Ok."})
    reply = json.loads(_text(result))["replies"][-1]
    assert (reply["role"], reply["author"], reply["message"]) == ("agent", "lead", "Ok.")


async def test_reviewer_revoked_and_missing_tokens_are_refused(team: Team) -> None:
    before = team.changes()
    hello = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    status, answer = await anyio.to_thread.run_sync(team.post, MCP, team.tokens["ana"], hello)
    assert (status, answer) == (
        403,
        {
            "error": "ana is a reviewer: only agent and maintainer tokens may use the MCP tools",
            "code": "forbidden",
        },
    )
    status, answer = await anyio.to_thread.run_sync(team.post, MCP, None, hello)
    assert (status, answer["code"]) == (401, "unauthorized")
    # The maintainer revokes the agent's token: its next request is refused at once.
    async with bearer_client(team.url, team.tokens["ci-agent"]) as client:
        assert not (await client.call_tool("summary", {})).is_error
    cli(team.project, team.db, "token", "revoke", "ci-agent")
    status, answer = await anyio.to_thread.run_sync(team.post, MCP, team.tokens["ci-agent"], hello)
    assert (status, answer["code"]) == (401, "unauthorized")
    assert team.changes() == before


def test_an_agent_cannot_accept_through_rest(team: Team) -> None:
    before = team.changes()
    path = f"{API}/annotations/{team.note}/status"
    status, answer = team.post(path, team.tokens["ci-agent"], {"action": "accept"})
    assert (status, answer) == (
        403,
        {
            "error": "Agents cannot accept annotation "
            f'"{team.note}": a reviewer or a maintainer accepts the work',
            "code": "forbidden",
        },
    )
    assert team.store.get_annotation(team.note).status == "open"
    assert team.changes() == before
    # The maintainer can.
    status, answer = team.post(path, team.tokens["lead"], {"action": "accept"})
    assert (status, answer["status"]) == (200, "resolved")


async def test_annotate_mcp_remote_with_an_agent_token(team: Team, tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    (checkout / "docs" / "guide").mkdir(parents=True)
    (checkout / "mkdocs.yml").write_text("site_name: test\n")
    (checkout / "docs" / "guide" / "install.md").write_text(LOCAL_MD)
    tokens = token_file(tmp_path, team.tokens["ci-agent"])
    async with remote(team.url, tokens, checkout) as client:
        result = await client.call_tool(
            "add_agent_reply", {"id": team.note, "message": "From my checkout."}
        )
    assert not result.is_error, _text(result)
    reply = json.loads(_text(result))["replies"][-1]
    assert (reply["role"], reply["author"], reply["message"]) == (
        "agent",
        "ci-agent",
        "From my checkout.",
    )
    stored = team.store.get_annotation(team.note).replies[-1]
    assert (stored.author, stored.message) == ("ci-agent", "From my checkout.")


async def test_the_chat_views_rest_calls_are_the_agents(team: Team) -> None:
    """The review view's `chat_api` runs REST routes in this process: on a team server, in the
    caller's name, so an agent cannot accept through it either."""
    headers = {"Authorization": f"Bearer {team.tokens['ci-agent']}"}
    async with create_mcp_http_client(headers=headers) as http:
        transport = streamable_http_client(f"{team.url}__annotate/mcp", http_client=http)
        async with Client(transport, read_timeout_seconds=30, extensions=APPS) as client:

            async def rest(path: str, body: Any) -> Any:
                args = {"method": "POST", "path": path, "body": body}
                result = await client.call_tool("chat_api", args)
                assert not result.is_error, _text(result)
                return result.structured_content

            before = team.changes()
            refused = await rest(f"annotations/{team.note}/status", {"action": "accept"})
            assert refused["status"] == 403
            assert refused["body"]["code"] == "forbidden"
            assert team.store.get_annotation(team.note).status == "open"
            assert team.changes() == before
            replied = await rest(f"annotations/{team.note}/replies", {"message": "Seen."})
    assert replied["status"] == 201, replied
    reply = replied["body"]["replies"][-1]
    assert (reply["role"], reply["author"]) == ("agent", "ci-agent")


async def test_behind_the_sso_proxy_the_mcp_endpoint_takes_the_bearer_only(tmp_path: Path) -> None:
    """The recipe in docs/team.md lets `/__annotate/mcp` skip oauth2-proxy's sign-in: there the
    identity header (even from the trusted proxy) is not enough, and the bearer token's person,
    not the header's, is who calls."""
    project, site = _project(tmp_path)
    made = json.loads(cli(project, None, "token", "add", "ci-agent", "--role", "agent", "--json"))
    with annotate.open(project) as store:
        note = store.add_annotation(text_note()).id
    server = _serve(project, site, "--identity-header", "X-Forwarded-Email",
                    "--maintainer", "lead@example.com")  # fmt: skip
    try:
        lead = {"X-Forwarded-Email": "lead@example.com"}
        hello = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        status, _, answer = await anyio.to_thread.run_sync(
            lambda: server.request("POST", MCP, hello, headers=lead)
        )
        assert (status, answer["code"]) == (401, "unauthorized")
        headers = {**lead, "Authorization": f"Bearer {made['token']}"}
        async with create_mcp_http_client(headers=headers) as http:
            url = f"http://127.0.0.1:{server.port}{MCP}"
            async with Client(streamable_http_client(url, http_client=http)) as client:
                result = await client.call_tool("add_agent_reply", {"id": note, "message": "Hi."})
        reply = json.loads(_text(result))["replies"][-1]
        assert (reply["role"], reply["author"]) == ("agent", "ci-agent")
    finally:
        out = server.stop()
    assert "Traceback" not in out, out


# The team server's Markdown: a command in prose (line 3) and in a code block (line 6); a page
# that does not hold it yet; a page the agent deleted (not in its checkout).
SERVER_MD = (
    "# Install\n\nRun pip install mkdocs-annotate in a shell.\n\n"
    "```console\npip install mkdocs-annotate\n```\n"
)
# The agent's checkout: two paragraphs on top move the prose copy to line 7, the code copy to 10
# (line 6, where the server saw the code copy, is now next to the prose one); the other page got
# the command twice, under two headings (lines 5 and 9), with the same text around it.
CHECKOUT_MD = "# Install\n\nA new first paragraph.\n\nAnother one.\n\n" + SERVER_MD[11:]
TWICE_MD = "# Twice\n\n## Linux\n\n{0}\n\n## Windows\n\n{0}\n".format(
    "Run pip install mkdocs-annotate in a shell."
)
# A note's `path:lines` in a line of the Markdown export, and its id.
EXPORTED_AT = re.compile(r" — `([^`]+)` \(id: `([^`]+)`\)$")


def _write_pages(root: Path, pages: dict[str, str]) -> None:
    (root / "docs" / "guide").mkdir(parents=True, exist_ok=True)
    (root / "mkdocs.yml").write_text("site_name: test\n")
    for name, markdown in pages.items():
        (root / "docs" / "guide" / name).write_text(markdown)


def _at(item: dict[str, Any]) -> str:
    source = item["source"]
    start, end = source["lineStart"], source["lineEnd"]
    return f"{source['path']}:{start}" + ("" if start == end else f"-{end}")


async def test_remote_answers_locate_every_note_in_the_checkout(team: Team, tmp_path: Path) -> None:
    """Through `annotate mcp --remote`, after the agent's edit moved the lines: `get_export`'s
    `path:lines` and `summary`'s anchor counts agree with `get_annotation`, all from the
    checkout; where the page said a quote was selected (`inCode`, `occurrence`: in no answer)
    picks the right copy of a repeated quote; and these answers are those of `annotate mcp`
    on the same store and checkout."""
    _write_pages(
        team.project,
        {
            "install.md": SERVER_MD,
            "twice.md": "# Twice\n\nComing soon.\n",
            "gone.md": "# Gone\n\nRun pip install mkdocs-annotate in a shell.\n",
        },
    )
    bare = {"exact": "pip install mkdocs-annotate", "prefix": "", "suffix": ""}
    store = team.store
    code = store.add_annotation(text_note(quote=bare, inCode=True, occurrence=0)).id
    prose = store.add_annotation(text_note(inCode=False, occurrence=0)).id
    twice = text_note(pageUrl="/guide/twice/", pageTitle="Twice", inCode=False, occurrence=1)
    second = store.add_annotation(twice).id
    gone = store.add_annotation(text_note(pageUrl="/guide/gone/", pageTitle="Gone")).id
    done = store.add_annotation(text_note(quote=bare, note="Done already.")).id
    store.accept(done)  # resolved: in neither the export nor the anchor counts
    page = store.add_page_note({"pageUrl": "/guide/install/", "note": "Whole page"}).id
    store.add_reply(page, "Which part?", role="agent")
    ids = [team.note, code, prose, second, gone]
    assert store.get_annotation(code).source.line_start == 6  # type: ignore[union-attr]
    assert store.get_annotation(second).source is None  # not on the server's page yet

    checkout = tmp_path / "checkout"
    _write_pages(checkout, {"install.md": CHECKOUT_MD, "twice.md": TWICE_MD})
    tokens = token_file(tmp_path, team.tokens["ci-agent"])
    async with remote(team.url, tokens, checkout) as agent:
        got = {}
        for id in ids:
            got[id] = json.loads(_text(await agent.call_tool("get_annotation", {"id": id})))
        listed = json.loads(_text(await agent.call_tool("list_annotations", {})))
        exported = _text(await agent.call_tool("get_export", {}))
        summary = _text(await agent.call_tool("summary", {}))
        # No note was made on this branch: the server's counts and the checkout's say so.
        other = _text(await agent.call_tool("summary", {"branch": "feature/x"}))
        context = _text(await agent.call_tool("get_context", {"id": second, "lines": 0}))

    # The copy the reviewer selected: the code block's, not the prose one now nearer line 6;
    # the second of two alike, not the first.
    assert _at(got[code]) == "docs/guide/install.md:10"
    assert _at(got[prose]) == "docs/guide/install.md:7"
    assert _at(got[second]) == "docs/guide/twice.md:9"
    assert context.endswith("> 9 | Run pip install mkdocs-annotate in a shell.")
    assert {id: a["anchorState"] for id, a in got.items()} == {
        **dict.fromkeys(ids, "anchored"),
        gone: "orphaned",  # anchored on the server, whose docs still have the page
    }
    assert {a["id"]: a for a in listed} == got
    # The export names each note at the lines get_annotation gives.
    where = {m[2]: m[1] for line in exported.splitlines() if (m := EXPORTED_AT.search(line))}
    assert where == {id: _at(a) for id, a in got.items()}
    assert "Whole page" in exported and "Which part?" in exported and "Done already" not in exported
    counts = json.loads(summary)["anchorStates"]
    assert counts == {"anchored": 4, "stale": 0, "orphaned": 1, "removed": 0}
    assert counts == {**counts, **Counter(a["anchorState"] for a in listed)}
    assert json.loads(other)["anchorStates"] == dict.fromkeys(counts, 0)

    # `annotate mcp` on the same store, reading the same checkout, answers alike. Last: it
    # writes the lines it finds into the store the server reads.
    db = team.db or str(project_db_path(team.project))
    params = StdioServerParameters(
        command=ANNOTATE, args=["mcp", "--project", str(checkout), "--db", db], cwd=str(checkout)
    )
    async with Client(params, read_timeout_seconds=40) as local:
        here = {}
        for id in ids:
            here[id] = json.loads(_text(await local.call_tool("get_annotation", {"id": id})))
        local_export = _text(await local.call_tool("get_export", {}))
        local_summary = _text(await local.call_tool("summary", {}))
        local_other = _text(await local.call_tool("summary", {"branch": "feature/x"}))
    assert {id: (a["source"], a["anchorState"]) for id, a in here.items()} == {
        id: (a["source"], a["anchorState"]) for id, a in got.items()
    }
    # Byte for byte, but for the minute of the export.
    assert exported.split("\n", 2)[2] == local_export.split("\n", 2)[2]
    assert summary == local_summary
    assert other == local_other


async def test_revoking_an_agent_ends_its_open_wait_for_review(team: Team) -> None:
    """Issue #32: an agent whose token is revoked while its `wait_for_review` is open takes no
    review: the wait ends with the refusal, the review stays for a live agent."""
    made: list[str] = []

    async def revoke_then_send(progress: float, total: float | None, message: str | None) -> None:
        # The first progress report: the wait is open on the server.
        if not made:
            await anyio.to_thread.run_sync(
                cli, team.project, team.db, "token", "revoke", "ci-agent"
            )
            made.append(team.store.create_review({"message": "After the revocation."}).id)

    async with bearer_client(team.url, team.tokens["ci-agent"]) as client:
        result = await client.call_tool(
            "wait_for_review", {"timeout_s": 60}, progress_callback=revoke_then_send
        )
    # Before the fix: the revoked agent took the review and its notes.
    assert result.is_error and _text(result) == "Unknown or revoked token"
    assert len(made) == 1 and team.store.get_review(made[0]).picked_up_at is None


async def test_the_chat_views_open_change_feed_poll_ends_at_revocation(team: Team) -> None:
    """Issue #32: the view's change feed waits inside a `chat_api` call; revoking the token
    meanwhile gets its answer refused (401), not the change made after the revocation."""
    headers = {"Authorization": f"Bearer {team.tokens['ci-agent']}"}
    cursor = team.store.changes(0)[1]

    async def revoke_then_write() -> None:
        await anyio.sleep(1.5)  # the poll is open by then (it waits up to 8 s for a change)
        await anyio.to_thread.run_sync(cli, team.project, team.db, "token", "revoke", "ci-agent")
        team.store.add_page_note({"pageUrl": "/guide/install/", "note": "After the revocation."})

    async with create_mcp_http_client(headers=headers) as http:
        transport = streamable_http_client(f"{team.url}__annotate/mcp", http_client=http)
        async with Client(transport, read_timeout_seconds=30, extensions=APPS) as client:
            await client.list_tools()  # now: the client checks answers against them, and after
            # the revocation it may not list them any more
            args = {"method": "GET", "path": f"changes?since={cursor}&timeout=8"}
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(revoke_then_write)
                result = await client.call_tool("chat_api", args)
    # Before the fix: 200 with the new page note's event.
    assert not result.is_error, _text(result)
    assert result.structured_content == {
        "status": 401,
        "body": {"error": "Unknown or revoked token", "code": "unauthorized"},
    }

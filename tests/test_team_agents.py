"""Agents on a team server, end to end (docs/team.md, "Remote agents"): `annotate serve SITE --team`
in a subprocess, personal tokens made by `annotate token add`, the `mcp` SDK's Streamable HTTP
client and `annotate mcp --remote` spawned by its stdio client; on SQLite and on PostgreSQL.

An agent's replies and status changes record its name; a reviewer's token is refused the MCP
tools (403), a revoked or missing token gets 401; an agent cannot accept through REST either.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client import advertise
from mcp.client.streamable_http import streamable_http_client
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID
from mcp.shared._httpx_utils import create_mcp_http_client

import annotate

from .conftest import text_note
from .test_mcp_http import bearer_client
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

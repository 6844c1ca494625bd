"""One verb, one call: every MCP tool, CLI command and REST route makes one library call.

The tables below pin that call for each surface. A recorder wraps every public `Store` method
and the library functions the surfaces call besides (export, import, context, agent setup,
tokens, the Stop hook) and notes the outermost call only: what a library function calls in turn
is its own business. The wrapped call still goes through to a real store in a real project, and
the surface must answer without an error.
"""

from __future__ import annotations

import functools
import inspect
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from mcp import Client
from mcp.client import advertise
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID
from starlette.routing import Route
from starlette.testclient import TestClient

import annotate
from annotate import (
    agent_setup,
    chat,
    compose,
    context,
    export,
    hook,
    importing,
    inline,
    plangate,
    tokens,
)
from annotate.cli import cli
from annotate.compose import build_server
from annotate.export import render
from annotate.mcp_server import TOOLS
from annotate.plans import Plans
from annotate.reviews import Reviews
from annotate.screenshots import Screenshots
from annotate.store import Store
from annotate.web import create_app

from .conftest import text_note, write_project

INSTALL_MD = "# Install\n\nRun pip install mkdocs-annotate in a shell.\n"
TOKEN = "test-token-0123456789abcdef"
API = "/__annotate/api"
ONE = "{id:str}"

# The library functions outside `Store` that a surface may call.
FUNCTIONS: dict[str, tuple[Any, str]] = {
    "export.render": (export, "render"),
    "importing.import_file": (importing, "import_file"),
    "importing.import_data": (importing, "import_data"),
    "context.get_context": (context, "get_context"),
    "agent_setup.install": (agent_setup, "install"),
    "agent_setup.uninstall": (agent_setup, "uninstall"),
    "tokens.read_token": (tokens, "read_token"),
    "tokens.rotate_token": (tokens, "rotate_token"),
    "hook.stop": (hook, "stop"),
    "inline.export_inline": (inline, "export_inline"),
    "inline.import_inline": (inline, "import_inline"),
    "chat.open_review": (chat, "open_review"),
    "chat.page_view": (chat, "page_view"),
    "plangate.review_text": (plangate, "review_text"),
    "plangate.review_file": (plangate, "review_file"),
    "Plans.list": (Plans, "list"),
    "Plans.get": (Plans, "get"),
}

# MCP tool -> (arguments, the one library function it calls). `{a}` is an open annotation,
# `{rv}` a review sent to the agent.
MCP: dict[str, tuple[dict[str, Any], str]] = {
    "list_annotations": ({}, "Store.list_annotations"),
    "list_page_notes": ({}, "Store.list_page_notes"),
    "get_annotation": ({"id": "{a}"}, "Store.get_annotation"),
    "get_export": ({}, "export.render"),
    "address_annotation": ({"id": "{a}", "message": "Done."}, "Store.address_annotation"),
    "set_in_progress": ({"id": "{a}"}, "Store.set_in_progress"),
    "add_agent_reply": ({"id": "{a}", "message": "Done."}, "Store.add_agent_reply"),
    "update_annotation_target": (
        {"id": "{a}", "replacedText": "pipx install mkdocs-annotate"},
        "Store.update_annotation_target",
    ),
    "get_context": ({"id": "{a}"}, "context.get_context"),
    "wait_for_review": ({"timeout_s": 0}, "Store.wait_for_review"),
    "summary": ({}, "Store.summary"),
    "list_reviews": ({}, "Store.list_reviews"),
    "get_review": ({"id": "{rv}"}, "Store.get_review"),
    "show_annotation": ({"id": "{a}"}, "Store.show_annotation"),
    "get_screenshot": ({"id": "{a}"}, "Screenshots.get"),
    # The review view in the chat (annotate/chatview.py): chat_api runs one REST route.
    "open_review": ({"pageUrl": "/guide/install/"}, "chat.open_review"),
    "chat_page": ({"pageUrl": "/guide/install/"}, "chat.page_view"),
    "chat_api": ({"method": "GET", "path": "summary"}, "Store.summary"),
    # Puts the plan up and waits: no verdict within 0 s is an answer, not an error (issue #29).
    "request_review": ({"markdown": "Do it.\n", "timeout_s": 0}, "plangate.review_text"),
}

# CLI command -> (arguments, standard input, the library functions it calls, in order). `{b}` is
# an addressed annotation, `{file}` a JSON export of the store. `annotate list` shows both kinds
# of note, so it lists annotations and page notes, through the same filter.
HOOK_INPUT = json.dumps({"session_id": "s1", "stop_hook_active": False})
PLAN_INPUT = json.dumps(
    {"session_id": "s1", "tool_name": "ExitPlanMode", "tool_input": {"plan": "# Plan\n\nDo it.\n"}}
)
# Commands that end with exit 1 when no verdict came in time: `annotate open` (issue #29).
NO_VERDICT = {"open"}
CLI: dict[str, tuple[list[str], str | None, tuple[str, ...]]] = {
    "list": ([], None, ("Store.list_annotations", "Store.list_page_notes")),
    "get": (["{a}"], None, ("Store.get_annotation",)),
    "start": (["{a}"], None, ("Store.set_in_progress",)),
    "address": (["{a}", "-m", "Done."], None, ("Store.address_annotation",)),
    "target": (["{a}", "pipx install"], None, ("Store.update_annotation_target",)),
    "reply": (["{a}", "Done."], None, ("Store.add_reply",)),
    "accept": (["{a}"], None, ("Store.accept",)),
    "reopen": (["{b}"], None, ("Store.reopen",)),
    "delete": (["{a}"], None, ("Store.delete",)),
    "notes": ([], None, ("Store.list_page_notes",)),
    "summary": ([], None, ("Store.summary",)),
    "history": (["{b}"], None, ("Store.history",)),
    "export": ([], None, ("export.render",)),
    "import": (["{file}"], None, ("importing.import_file",)),
    "purge": (["--resolved"], None, ("Store.purge_resolved",)),
    "context": (["{a}"], None, ("context.get_context",)),
    "wait": (["--timeout", "0"], None, ("Store.wait_for_review",)),
    "reviews": ([], None, ("Store.list_reviews",)),
    "review": (["{rv}"], None, ("Store.get_review",)),
    "send": ([], None, ("Store.create_review",)),
    "show": (["{a}", "--wait", "0"], None, ("Store.show_annotation",)),
    "screenshot": (["{a}", "--out", "{project}/shot.webp"], None, ("Screenshots.get",)),
    "setup": (["--command", "annotate"], None, ("agent_setup.install",)),
    "token": ([], None, ("tokens.read_token",)),
    "token add": (["ada"], None, ("Store.add_token",)),
    "token list": ([], None, ("Store.list_tokens",)),
    "token revoke": (["bob"], None, ("Store.revoke_token",)),
    "hook stop": ([], HOOK_INPUT, ("hook.stop",)),
    "hook plan": (
        ["--timeout", "0", "--no-browser"],
        PLAN_INPUT,
        ("plangate.review_text",),
    ),
    "open": (
        ["docs/guide/install.md", "--timeout", "0", "--no-browser"],
        None,
        ("plangate.review_file",),
    ),
    "plans": ([], None, ("Plans.list",)),
    "plans list": ([], None, ("Plans.list",)),
    "plans show": (["{pl}"], None, ("Plans.get",)),
}
# Flags that make a command another verb: (command and flags) -> its library calls.
CLI_FLAGS: dict[str, tuple[list[str], tuple[str, ...]]] = {
    "export --inline": (["--page", "/guide/install/"], ("inline.export_inline",)),
    "review --changes": (["{rv}"], ("Reviews.changes",)),
    "import --inline": (["--strip"], ("inline.import_inline",)),
}
# Commands that run a host whose every call is pinned above and below: `annotate mcp` runs the MCP
# server (its tools), `annotate serve` the web app (its routes).
HOSTS = {"mcp": build_server, "chat": build_server, "serve": create_app, "proxy": create_app}
# Commands pinned where their host is emulated: `annotate pr push` and `pr pull` call
# `pullrequests.push` and `pullrequests.pull` (tests/test_pullrequests.py).
ELSEWHERE = {"pr push", "pr pull"}

# REST route -> (body, the library functions it calls). The status route's actions are four calls.
# The anchor route answers from `text_selector_rows` and, once its answer is sent, prepares the
# page's Markdown for the reviewer's first note (`prepare_page`).
ANCHOR = {
    "pageUrl": "/guide/install/",
    "text": "Install Run pip install mkdocs-annotate in a shell.",
}
# A note's screenshot (issue #30): a WebP file, sent as the body itself.
SHOT = (Path(__file__).parent / "fixtures" / "screenshots" / "simple-lossy.webp").read_bytes()
REST: dict[tuple[str, str], tuple[dict[str, Any] | bytes | None, tuple[str, ...]]] = {
    ("GET", "/annotations"): (None, ("Store.list_annotations",)),
    ("POST", "/annotations"): (text_note(), ("Store.add_annotation",)),
    ("GET", "/annotations/{a}"): (None, ("Store.get_annotation",)),
    ("PATCH", "/annotations/{a}"): ({"note": "Shorter."}, ("Store.edit_annotation",)),
    ("DELETE", "/annotations/{a}"): (None, ("Store.delete",)),
    ("POST", "/annotations/{a}/replies"): ({"message": "Why?"}, ("Store.add_reply",)),
    ("POST", "/annotations/{a}/status start"): ({"action": "start"}, ("Store.set_in_progress",)),
    ("POST", "/annotations/{a}/status address"): (
        {"action": "address"},
        ("Store.address_annotation",),
    ),
    ("POST", "/annotations/{a}/status accept"): ({"action": "accept"}, ("Store.accept",)),
    ("POST", "/annotations/{b}/status reopen"): ({"action": "reopen"}, ("Store.reopen",)),
    ("GET", "/annotations/{b}/history"): (None, ("Store.history",)),
    ("GET", "/page-notes"): (None, ("Store.list_page_notes",)),
    ("POST", "/page-notes"): ({"pageUrl": "/", "note": "More."}, ("Store.add_page_note",)),
    ("GET", "/page-notes/{n}"): (None, ("Store.get_page_note",)),
    ("PATCH", "/page-notes/{n}"): ({"note": "Less."}, ("Store.edit_page_note",)),
    ("DELETE", "/page-notes/{n}"): (None, ("Store.delete",)),
    ("POST", "/page-notes/{n}/replies"): ({"message": "Why?"}, ("Store.add_reply",)),
    ("POST", "/page-notes/{n}/status start"): ({"action": "start"}, ("Store.set_in_progress",)),
    ("POST", "/page-notes/{n}/status address"): (
        {"action": "address"},
        ("Store.address_annotation",),
    ),
    ("POST", "/page-notes/{n}/status accept"): ({"action": "accept"}, ("Store.accept",)),
    ("POST", "/page-notes/{m}/status reopen"): ({"action": "reopen"}, ("Store.reopen",)),
    ("GET", "/page-notes/{m}/history"): (None, ("Store.history",)),
    ("GET", "/reviews"): (None, ("Store.list_reviews",)),
    ("POST", "/reviews"): ({"mode": "edit"}, ("Store.create_review",)),
    ("GET", "/reviews/{rv}"): (None, ("Store.get_review",)),
    ("GET", "/reviews/{rv}/changes"): (None, ("Reviews.changes",)),
    ("POST", "/anchor"): (ANCHOR, ("Store.text_selector_rows", "Store.prepare_page")),
    ("GET", "/export"): (None, ("export.render",)),
    ("GET", "/changes?since=0"): (None, ("Store.changes",)),
    ("GET", "/summary"): (None, ("Store.summary",)),
    ("POST", "/shown"): ({"seq": "#{sh}", "viewer": "v1"}, ("Store.acknowledge_show",)),
    ("GET", "/screenshots"): (None, ("Screenshots.list",)),
    ("GET", "/annotations/{a}/screenshot"): (None, ("Screenshots.get",)),
    ("PUT", "/annotations/{a}/screenshot"): (SHOT, ("Screenshots.attach",)),
    ("DELETE", "/annotations/{a}/screenshot"): (None, ("Screenshots.delete",)),
    ("GET", "/page-notes/{n}/screenshot"): (None, ("Screenshots.get",)),
    ("PUT", "/page-notes/{n}/screenshot"): (SHOT, ("Screenshots.attach",)),
    ("DELETE", "/page-notes/{n}/screenshot"): (None, ("Screenshots.delete",)),
}


class Recorder:
    """Wraps library functions; notes each outermost call by name, then makes it."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self._depth = threading.local()

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def recorded(*args: Any, **kwargs: Any) -> Any:
            depth = getattr(self._depth, "n", 0)
            if depth == 0:
                self.calls.append(name)
            self._depth.n = depth + 1
            try:
                return fn(*args, **kwargs)
            finally:
                self._depth.n = depth

        return recorded


@pytest.fixture
def made(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A project with an open annotation `a`, an addressed one `b`, an open page note `n`, an
    addressed one `m`, a review `rv` sent to the agent, `file`, a JSON export, and `sh`, the
    change number of a show_annotation of `a`."""
    write_project(tmp_path, INSTALL_MD)
    with annotate.open(tmp_path) as store:
        b = store.add_annotation(text_note()).id
        m = store.add_page_note({"pageUrl": "/guide/install/", "note": "Split it."}).id
        rv = store.create_review({"mode": "edit"}).id
        for id in (b, m):
            store.address_annotation(id)
        a = store.add_annotation(text_note(note="Mention pipx.")).id
        n = store.add_page_note({"pageUrl": "/", "note": "Too long."}).id
        store.add_token("bob")
        file = tmp_path / "export.json"
        file.write_text(render(store, "json"))
        store.show_annotation(a, wait=0)
        sh = str(store.changes(0)[1])
        pl = store.plans.submit("agent:Plan", "# Plan\n\nDo it.\n").plan_id
        store.screenshots.attach(a, SHOT)
        store.screenshots.attach(n, SHOT)
    yield {
        "a": a,
        "b": b,
        "n": n,
        "m": m,
        "rv": rv,
        "sh": sh,
        "pl": pl,
        "file": str(file),
        "project": str(tmp_path),
    }


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    found = Recorder()
    for name, value in vars(Store).items():
        # `close` ends a handle (the tests' own `with`), it is no verb.
        if not name.startswith("_") and name != "close" and inspect.isfunction(value):
            monkeypatch.setattr(Store, name, found.wrap(f"Store.{name}", value))
    for name, value in vars(Screenshots).items():  # store.screenshots (issue #30)
        if not name.startswith("_") and inspect.isfunction(value):
            monkeypatch.setattr(Screenshots, name, found.wrap(f"Screenshots.{name}", value))
    # store.reviews.changes (issue #29 item 3); the rest of Reviews is reached through Store.
    monkeypatch.setattr(Reviews, "changes", found.wrap("Reviews.changes", Reviews.changes))
    for name, (module, attr) in FUNCTIONS.items():
        monkeypatch.setattr(module, attr, found.wrap(name, getattr(module, attr)))
    return found


def _fill(value: Any, made: dict[str, str]) -> Any:
    if isinstance(value, str) and value.startswith("#"):  # a number
        return int(value[1:].format(**made))
    if isinstance(value, str):
        return value.format(**made)
    if isinstance(value, dict):
        return {k: _fill(v, made) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, made) for v in value]
    return value


# -- MCP ----------------------------------------------------------------------------------------


def test_every_mcp_tool_is_pinned() -> None:
    assert set(MCP) == set(TOOLS)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
@pytest.mark.parametrize("tool", sorted(MCP))
async def test_mcp_tool_makes_one_call(tool: str, made: dict[str, str], recorder: Recorder) -> None:
    args, expected = MCP[tool]
    # As a host that renders MCP Apps: the chat view's tools answer only those (docs/chat.md).
    apps = advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})
    async with Client(build_server(made["project"]), extensions=[apps]) as client:
        result = await client.call_tool(tool, _fill(args, made))
    assert not result.is_error, result.content
    assert recorder.calls == [expected]


# -- CLI ----------------------------------------------------------------------------------------


def _commands(group: click.Group, prefix: str = "") -> set[str]:
    names: set[str] = set()
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            names |= _commands(command, f"{prefix}{name} ")
            if command.invoke_without_command:  # `annotate token` is a command of its own
                names.add(prefix + name)
        else:
            names.add(prefix + name)
    return names


def test_every_cli_command_is_pinned() -> None:
    assert _commands(cli) == set(CLI) | set(HOSTS) | ELSEWHERE


@pytest.mark.parametrize("command", sorted(CLI))
def test_cli_command_makes_one_call(
    command: str, made: dict[str, str], recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    args, stdin, expected = CLI[command]
    monkeypatch.chdir(made["project"])
    monkeypatch.setenv("HOME", made["project"])  # `annotate setup` writes nothing outside it
    argv = [*command.split(), *_fill(args, made)]
    if command != "hook stop":
        argv += ["--project", made["project"]]
    result = CliRunner().invoke(cli, argv, input=stdin)
    assert result.exit_code == (1 if command in NO_VERDICT else 0), result.output
    assert tuple(recorder.calls) == expected


@pytest.mark.parametrize("command", sorted(CLI_FLAGS))
def test_cli_flag_makes_one_call(
    command: str, made: dict[str, str], recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    args, expected = CLI_FLAGS[command]
    monkeypatch.chdir(made["project"])
    argv = [*command.split(), *_fill(args, made), "--project", made["project"]]
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 0, result.output
    assert tuple(recorder.calls) == expected


def test_the_hosts_run_what_is_pinned() -> None:
    # `annotate mcp`, `annotate serve` and `annotate proxy` make no call of their own: they start
    # these (the proxy serves `create_app` in front of a dev server).
    source = {name: inspect.getsource(cli.commands[name].callback) for name in HOSTS}
    assert "from .compose import run" in source["mcp"]
    # `annotate mcp --remote` serves the same tools, each answered by the team server's
    # `/__annotate/mcp`, which is `build_server` on the web app's store.
    assert "from .mcp_remote import run_remote" in source["mcp"]
    assert "build_server(store=store)" in inspect.getsource(compose.create_app)
    assert "from .web.server import serve as run" in source["serve"]
    assert "from .devserver import run" in source["proxy"]
    # `annotate chat` hosts the same tools for a view in a browser tab (annotate/chathost.py).
    from annotate import chathost

    assert "from .chathost import run" in source["chat"]
    assert "server = build_server(project)" in inspect.getsource(chathost.create_app)


# -- REST ---------------------------------------------------------------------------------------


def test_every_api_route_is_pinned(made: dict[str, str]) -> None:
    with annotate.open(made["project"]) as store:
        app = create_app(store, token=TOKEN)
    routes = {
        (method, route.path.removeprefix(API))
        for route in app.routes
        if isinstance(route, Route) and route.path.startswith(API)
        for method in route.methods or ()
        if method != "HEAD"
    }
    pinned = set()
    for method, path in REST:
        path = path.split("?")[0].split(" ")[0]
        for name in ("{a}", "{b}", "{n}", "{m}", "{rv}"):
            path = path.replace(name, ONE)
        pinned.add((method, path))
    assert pinned == routes


@pytest.mark.parametrize("route", sorted(REST), ids=lambda r: f"{r[0]} {r[1]}")
def test_api_route_makes_one_call(
    route: tuple[str, str], made: dict[str, str], recorder: Recorder
) -> None:
    method, path = route
    body, expected = REST[route]
    url = API + _fill(path.split(" ")[0], made)
    with annotate.open(made["project"]) as store:
        app = create_app(store, token=TOKEN, changes_timeout=0.1)
        with TestClient(
            app, base_url="http://127.0.0.1:8000", headers={"X-Annotate-Token": TOKEN}
        ) as client:
            if isinstance(body, bytes):
                headers = {"Content-Type": "image/webp"}
                response = client.request(method, url, content=body, headers=headers)
            else:
                response = client.request(method, url, json=_fill(body, made))
    assert response.status_code < 300, response.text
    assert tuple(recorder.calls) == expected


def test_the_review_page_makes_one_call(made: dict[str, str], recorder: Recorder) -> None:
    with annotate.open(made["project"]) as store:
        app = create_app(store, token=TOKEN)
        with TestClient(app, base_url="http://127.0.0.1:8000") as client:
            response = client.get("/__annotate/")
    assert response.status_code == 200
    assert recorder.calls == ["Store.all_items"]


def test_an_empty_page_listing_also_asks_for_a_hint(
    made: dict[str, str], recorder: Recorder
) -> None:
    # The one exception: a listing of a page without notes says which pages have some.
    result = CliRunner().invoke(cli, ["list", "--page", "/nothing/", "--project", made["project"]])
    assert result.exit_code == 0, result.output
    assert recorder.calls == ["Store.list_annotations", "Store.list_page_notes", "Store.page_hint"]

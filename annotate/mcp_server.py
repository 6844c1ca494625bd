"""`annotate mcp`'s tools and prompts (docs/mcp.md), with the official `mcp` SDK; served over stdio
(`serve_stdio`, run by annotate/compose.py) and HTTP (annotate/mcp_http.py).

The tools are the table of annotate/mcp_tools.py. A drop-in for astro-inline-review's MCP server:
the same eight tools,
parameters and error texts, results as JSON text (compact; indented as it sends them with
`pretty`), plus `get_context`,
`wait_for_review`, `summary` and the reviews, and two prompts that walk an agent through a review
or one note. Each tool is one library call. Library errors come
back as `isError: true` with the library's message exactly (the SDK's `ToolError` would prefix
"Error executing tool …", and an agent written for the reference knows the bare texts); bad
arguments get the SDK's validation message. Nothing but protocol goes to stdout.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
import anyio.to_thread
import mcp_types
import pydantic
from mcp.server.apps import Apps, client_supports_apps
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp.types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    TextContent,
)
from pydantic import Field

from . import __version__
from . import store as store_module
from .agents import (
    intents,
    note_walkthrough,
    order_of_work,
    review_walkthrough,
)
from .errors import AnnotateError, ValidationError
from .hook import WORK, unfinished
from .mcp_http import PARSE_ERROR, strict_problem
from .mcp_tools import MAX_LIST, TABLE, Stores, ToolServer, text_result
from .models import Annotation, PageNote, Review
from .validation import SURROGATE, refuse_surrogates
from .visible import HIDDEN, visible, visible_json

__all__ = ["MAX_LIST", "PROMPTS", "SELECTIONS", "TOOLS", "build_server", "serve_stdio"]

# Every tool, in the order they are listed (the table: annotate/mcp_tools.py).
TOOLS = tuple(t.name for t in TABLE)
PROMPTS = ("address-review", "address-note")
# Asked for in a tool call's `_meta` by `annotate mcp --remote` (annotate/mcp_remote.py): the
# result's `_meta` then holds, under this key, `Store.selections` of the text annotations in the
# answer ({id: {inCode?, occurrence?}}, input-only fields), so the bridge locates them in its
# checkout as a store would. The content, what the agent's model reads, is the same.
SELECTIONS = "mkdocs-annotate/selections"
INSTRUCTIONS = f"""\
Review notes that a docs author left on the rendered MkDocs site of this project. Each annotation
points at a Markdown file and lines (`source`); `anchorState` says how reliably (`anchored`, or
`stale`/`orphaned`: the text was rewritten or the file is gone, so check before acting).
Start with `summary` or `list_annotations`. For each note: {order_of_work()}.
{intents()}
`wait_for_review` waits for the reviewer to press "Send to agent"; a review's mode is `edit` (apply
the changes) or `review` (answer, change nothing yet). The prompts `address-review` and
`address-note` walk through a review or one note. Replies are always allowed; a resolved note is
the reviewer's and refuses every other change."""


def _left(review: Review) -> list[Annotation | PageNote]:
    """The review's notes still to work on."""
    notes: list[Annotation | PageNote] = [*review.annotations, *review.page_notes]
    return [n for n in notes if n.status in WORK]


def build_server(
    project: str | Path | None = None,
    db: str | Path | None = None,
    *,
    store: store_module.Store | None = None,
    pretty: bool = False,
    view: Callable[[Callable[[], store_module.Store]], Apps] | None = None,
) -> MCPServer:
    """The MCP server for the store of `project` (found upwards from the current folder when
    None), or of the database file `db`, or the open `store` (the web app's, annotate/mcp_http.py).
    Answers are compact JSON, indented with `pretty`. `view`: the MCP Apps extension of the
    review view in the chat on the store it is given (annotate/compose.py puts
    `chatview.build_apps` there)."""
    stores = Stores(project, db, store)
    server = ToolServer(
        stores,
        pretty=pretty,
        name="mkdocs-annotate",
        title="mkdocs-annotate review notes",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        extensions=[] if view is None else [view(stores.get)],
    )

    for tool in TABLE:
        if tool.call is not None:
            server.tool(tool.name, description=tool.description, annotations=tool.annotations)(
                tool.call
            )

    # -- prompts (issue #14, item 14): clients show them as slash commands ------------------

    def prompt_text(fn: Callable[[store_module.Store], str]) -> str:
        try:
            # Notes' hidden characters as escapes, as in tool answers (`_visible`).
            return visible(fn(stores.get()))
        except AnnotateError as e:
            # A prompt has no `isError` result: the library's message as a JSON-RPC error.
            raise MCPError(code=INVALID_PARAMS, message=str(e)) from None

    @server.prompt(
        name="address-review",
        title="Address the review",
        description="Work through the current review (the notes the author sent with Send to "
        "agent) note by note, as its mode and each note's intent ask.",
    )
    def address_review(
        reviewId: Annotated[
            str | None,
            Field(description="A review ID (default: the one in progress, else the one waiting)"),
        ] = None,
    ) -> str:
        def text(s: store_module.Store) -> str:
            if reviewId:
                review = s.get_review(reviewId)
                return review_walkthrough(
                    review, _left(review), taken=review.picked_up_at is not None
                )
            taken = unfinished(s)
            if taken:
                return review_walkthrough(*taken[-1], taken=True)
            waiting = s.list_reviews(pending_only=True)
            if waiting:
                review = waiting[0]
                return review_walkthrough(review, _left(review), taken=False)
            return review_walkthrough(None, [], taken=False)

        return prompt_text(text)

    @server.prompt(
        name="address-note",
        title="Address one note",
        description="Work on one review note by its ID: what it asks, and the calls that settle it.",
    )
    def address_note(
        id: Annotated[str, Field(description="The annotation or page note ID, e.g. a_3f9c01ab22")],
    ) -> str:
        return prompt_text(lambda s: note_walkthrough(s.get_annotation(id)))

    _wrap_handlers(server, stores)
    return server


def _wrap_handlers(server: MCPServer, stores: Stores) -> None:
    """The SDK's `tools/list` and `tools/call`, with what this server adds around them.

    `tools/list`: app-only tools (`_meta.ui.visibility: ["app"]`, the chat view's) only for a
    client that announced MCP Apps; input schemas without pydantic's titles and `null` branches
    (issue #27: a terminal agent pays for the list in every session). `tools/call`: arguments
    checked strictly (`"yes"` is no boolean, `true` no integer: issue #32), hidden characters of
    the answer's text shown as escapes, as the CLI shows them (annotate/visible.py), and
    `SELECTIONS` in `_meta` when asked for.
    """
    for info in server._tool_manager.list_tools():
        info.parameters = _lean_schema(info.parameters)
    lowlevel = server._lowlevel_server
    listing = lowlevel.get_request_handler("tools/list")
    entry = lowlevel.get_request_handler("tools/call")
    if listing is None or entry is None:  # pragma: no cover - MCPServer registers both
        return
    list_handler, handler = listing.handler, entry.handler

    async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> Any:
        result = await list_handler(ctx, params)
        if client_supports_apps(ctx) or not isinstance(result, ListToolsResult):
            return result
        tools = [t for t in result.tools if not _app_only(t)]
        return result.model_copy(update={"tools": tools})

    async def call_tool(ctx: ServerRequestContext[Any], params: CallToolRequestParams) -> Any:
        refused = _strict_arguments(server, params)
        if refused is not None:
            return refused
        result = await handler(ctx, params)
        if not isinstance(result, CallToolResult):
            return result
        result = _visible(result)
        if not (params.meta or {}).get(SELECTIONS):
            return result
        first = result.content[0] if result.content else None
        if result.is_error or not isinstance(first, TextContent):
            return result
        ids = _text_ids(first.text)
        try:
            found = await anyio.to_thread.run_sync(stores.get().selections, ids) if ids else {}
        except AnnotateError:
            return result  # the answer stands; the bridge locates without them
        return result.model_copy(update={"meta": {**(result.meta or {}), SELECTIONS: found}})

    lowlevel.add_request_handler("tools/list", listing.params_type, list_tools)
    lowlevel.add_request_handler("tools/call", CallToolRequestParams, call_tool)


def _app_only(tool: mcp_types.Tool) -> bool:
    ui = (tool.meta or {}).get("ui")
    return isinstance(ui, dict) and ui.get("visibility") == ["app"]


def _lean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's input schema as pydantic writes it, less what tells a model nothing: `title`s
    (the property's name again) and an optional parameter's `null` branch and `default: null`
    (leaving it out says the same)."""
    lean = {k: v for k, v in schema.items() if k != "title"}
    props = lean.get("properties")
    if isinstance(props, dict):
        lean["properties"] = {name: _lean_property(p) for name, p in props.items()}
    return lean


def _lean_property(prop: dict[str, Any]) -> dict[str, Any]:
    lean = {k: v for k, v in prop.items() if k != "title"}
    branches = lean.get("anyOf")
    if isinstance(branches, list) and lean.get("default", ...) is None:
        kept = [b for b in branches if b != {"type": "null"}]
        if len(kept) == 1 and isinstance(kept[0], dict):
            del lean["anyOf"], lean["default"]
            lean = {**kept[0], **lean}
    return lean


def _strict_arguments(server: MCPServer, params: CallToolRequestParams) -> CallToolResult | None:
    """The refusal of arguments the SDK would coerce (pydantic's lax mode: `"yes"` → true,
    `true` → 1, `"5"` → 5), else None. Checked as sent, before the SDK parses strings as JSON."""
    tool = server._tool_manager.get_tool(params.name)
    if tool is None:
        return None
    try:
        tool.fn_metadata.arg_model.model_validate(params.arguments or {}, strict=True)
    except pydantic.ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
            for err in e.errors(include_url=False)
        )
        return text_result(f"Invalid arguments for {params.name}: {problems}", error=True)
    return None


def _visible(result: CallToolResult) -> CallToolResult:
    """`result` with the hidden characters of its text blocks spelled out (annotate/visible.py):
    ESC, C1 controls and bidi overrides from a note reach the agent's terminal and its model as
    escapes. JSON answers keep their meaning (`\\u001b` inside strings)."""
    blocks = result.content
    if not any(isinstance(b, TextContent) and HIDDEN.search(b.text) for b in blocks):
        return result
    shown: list[Any] = []
    for block in blocks:
        if isinstance(block, TextContent) and HIDDEN.search(block.text):
            text = block.text
            block = block.model_copy(
                update={"text": visible_json(text) if _is_json(text) else visible(text)}
            )
        shown.append(block)
    return result.model_copy(update={"content": shown})


def _is_json(text: str) -> bool:
    if text[:1] not in "[{":
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _text_ids(answer: str) -> list[str]:
    """The ids of the text annotations in an answer's JSON (one item or a list of them)."""
    try:
        data = json.loads(answer)
    except ValueError:
        return []
    items = data if isinstance(data, list) else [data]
    return [
        i["id"]
        for i in items
        if isinstance(i, dict) and i.get("type") == "text" and isinstance(i.get("id"), str)
    ]


async def serve_stdio(server: MCPServer) -> None:
    """Serve `server` over stdio until the client closes (`annotate mcp`, `annotate mcp --remote`)."""
    # As MCPServer.run_stdio_async, with stdin read through _Stdin. The SDK types `stdin` as
    # anyio.AsyncFile[str] but only iterates its lines (`async for`), which _Stdin does.
    stdin = _Stdin(io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    async with stdio_server(stdin=stdin) as (read_stream, write_stream):  # type: ignore[arg-type]
        stdin.reply = write_stream.send
        lowlevel = server._lowlevel_server
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


class _Stdin:
    """The lines of stdin for the SDK's stdio transport, less the requests it could not answer.

    JSON allows a lone surrogate escape (`"\\ud800"`); the SDK's parser refuses such a line and
    drops it without a word, so the agent waited until its own timeout (issue #17). Such a
    request is answered here with the library's validation message: a tool call as an `isError`
    result, any other request as a JSON-RPC "invalid params" error. A line the REST API's parser
    refuses (a key twice, `NaN`: issue #32) is answered with a JSON-RPC parse error, as over HTTP
    (annotate/mcp_http.py), where the SDK would run the last of two keys.
    """

    def __init__(self, lines: io.TextIOWrapper) -> None:
        self.lines = anyio.wrap_file(lines)
        self.reply: Callable[[SessionMessage], Awaitable[None]] | None = None

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self.lines:
            answer = _surrogate_answer(line)
            if answer is None:
                answer = _strict_answer(line)
            if answer is None:
                yield line
            elif self.reply is not None and answer is not False:
                await self.reply(SessionMessage(answer))


def _strict_answer(line: str) -> mcp_types.JSONRPCMessage | Literal[False] | None:
    """A parse error for a line the REST API's parser refuses; False for a notification (no
    answer); None for a line it takes, or one the SDK's own parser refuses (it answers those)."""
    if not line.strip():
        return None
    problem = strict_problem(line.encode("utf-8", "surrogatepass"))
    if problem is None:
        return None
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return None
    id = message.get("id") if isinstance(message, dict) else None
    if not isinstance(id, (int, str)) or isinstance(id, bool):
        return False
    error = mcp_types.ErrorData(code=PARSE_ERROR, message=f"Parse error: {problem}")
    return mcp_types.JSONRPCError(jsonrpc="2.0", id=id, error=error)


def _surrogate_answer(line: str) -> mcp_types.JSONRPCMessage | Literal[False] | None:
    """The answer to a JSON-RPC line whose strings hold a lone surrogate; False when it needs
    none (a notification), None when the line holds no lone surrogate."""
    if "\\u" not in line:
        return None
    try:
        message = json.loads(line)
    except ValueError:
        return None
    found = _first_surrogate(message, "")
    if found is None:
        return None
    if not isinstance(message, dict) or "method" not in message:
        return False
    id = message.get("id")
    if not isinstance(id, (int, str)) or (isinstance(id, str) and SURROGATE.search(id)):
        return False  # a notification, or an id we could not echo
    field, value = found
    text = f"{field} must be valid Unicode text"
    try:
        refuse_surrogates(value, field.removeprefix("params.arguments.") or "params")
    except ValidationError as e:
        text = e.message
    if message.get("method") == "tools/call":
        result = text_result(text, error=True).model_dump(by_alias=True, exclude_none=True)
        return mcp_types.JSONRPCResponse(jsonrpc="2.0", id=id, result=result)
    error = mcp_types.ErrorData(code=mcp_types.INVALID_PARAMS, message=text)
    return mcp_types.JSONRPCError(jsonrpc="2.0", id=id, error=error)


def _first_surrogate(value: Any, path: str) -> tuple[str, str] | None:
    """(where, string) of the first string or key holding a lone surrogate."""
    if isinstance(value, str):
        return (path, value) if SURROGATE.search(value) else None
    items: Any = ()
    if isinstance(value, dict):
        for key in value:
            if SURROGATE.search(key):
                return (path, key)
        items = ((f"{path}.{k}" if path else k, v) for k, v in value.items())
    elif isinstance(value, list):
        items = ((f"{path}[{i}]", v) for i, v in enumerate(value))
    for where, item in items:
        found = _first_surrogate(item, where)
        if found is not None:
            return found
    return None

"""`annotate mcp`: the MCP server over stdio (docs/mcp.md), with the official `mcp` SDK.

A drop-in for astro-inline-review's MCP server: the same eight tools,
parameters and error texts, results as indented JSON text as it sends them, plus `get_context`,
`wait_for_review`, `summary` and the reviews, and two prompts that walk an agent through a review
or one note. Each tool is one library call. Library errors come
back as `isError: true` with the library's message exactly (the SDK's `ToolError` would prefix
"Error executing tool …", and an agent written for the reference knows the bare texts); bad
arguments get the SDK's validation message. Nothing but protocol goes to stdout.
"""

from __future__ import annotations

import functools
import io
import json
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
import anyio.to_thread
import mcp_types
import pydantic_core
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp.types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    TextContent,
    ToolAnnotations,
)
from pydantic import Field

from . import __version__, chatview, export
from . import context as context_module
from . import store as store_module
from .agents import (
    DEFAULT_WAIT_S,
    MAX_WAIT_S,
    intents,
    mode_instructions,
    no_review,
    note_walkthrough,
    order_of_work,
    review_walkthrough,
)
from .context import DEFAULT_LINES, MAX_LINES
from .errors import AnnotateError, ValidationError
from .hook import WORK, unfinished
from .mcp_http import bearer as _bearer
from .mcp_http import person as _person
from .models import Annotation, PageNote, Review, lean_item
from .validation import SURROGATE, refuse_surrogates

__all__ = ["PROMPTS", "TOOLS", "build_server", "run"]

TOOLS = (
    "list_annotations",
    "list_page_notes",
    "get_annotation",
    "get_export",
    "address_annotation",
    "set_in_progress",
    "add_agent_reply",
    "update_annotation_target",
    "get_context",
    "wait_for_review",
    "summary",
    "list_reviews",
    "get_review",
    "show_annotation",
    *chatview.TOOLS,  # the review view in the chat (MCP Apps): annotate/chatview.py
)
PROMPTS = ("address-review", "address-note")
PROGRESS_EVERY_S = 10.0
# Asked for in a tool call's `_meta` by `annotate mcp --remote` (annotate/mcp_remote.py): the
# result's `_meta` then holds, under this key, `Store.selections` of the text annotations in the
# answer ({id: {inCode?, occurrence?}}, input-only fields), so the bridge locates them in its
# checkout as a store would. The content, what the agent's model reads, is the same.
SELECTIONS = "mkdocs-annotate/selections"
# A page of list_annotations: an agent's context holds ~50 annotations of indented JSON (~70 kB)
# comfortably; Claude Code cuts tool output at 25k tokens by default.
DEFAULT_LIST = 50
MAX_LIST = 10_000
MORE = (
    "Showing annotations {first}–{last}; more match. Call list_annotations again with "
    "offset={next}, or narrow the list with pageUrl or status."
)

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

Id = Annotated[str, Field(description="The annotation ID (or page note ID), e.g. `a_3f9c01ab22`")]
PageUrl = Annotated[
    str | None, Field(description='Filter by page URL path (e.g. "/about/"); all pages if omitted')
]
Branch = Annotated[
    str | None,
    Field(
        max_length=200,
        description="Only notes made on a build of this branch (their `build.branch`)",
    ),
]
Status = Annotated[
    Literal["open", "in_progress", "addressed", "resolved", "all"] | None,
    Field(
        description="Filter by status; `all` includes resolved ones. Default: every status but "
        "`resolved`"
    ),
]

READ = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)


class _Stores:
    """Opens the store on first use, so a missing or corrupt file is a tool error, not a crash."""

    def __init__(
        self,
        project: str | Path | None,
        db: str | Path | None,
        store: store_module.Store | None = None,
    ) -> None:
        self.project = project
        self.db = db
        self._store = store
        self._lock = threading.Lock()

    def get(self) -> store_module.Store:
        with self._lock:
            if self._store is None:
                # The agent's checkout is the build it reads (annotate/build.py): notes made on
                # an older commit of its branch are located in its Markdown and say so.
                self._store = store_module.open(self.project, db=self.db or None, build="auto")
            return self._store


def _result(text: str, *, error: bool = False) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=error)


def _json(data: Any) -> str:
    # json.dumps(data, indent=2, ensure_ascii=False), byte for byte; pydantic-core's encoder is
    # faster than the stdlib's, which falls back to pure Python when indenting (benchmarks/mcp.py).
    return pydantic_core.to_json(data, indent=2).decode()


def _item(item: Annotation | PageNote, store: store_module.Store) -> dict[str, Any]:
    """An annotation or page note as agents get it: absent optional fields left out, as the
    reference does (issue #14), and its build when it is not the one the agent reads."""
    return lean_item(item, store.build)


def _items(
    items: list[Annotation] | list[PageNote], store: store_module.Store
) -> list[dict[str, Any]]:
    served = store.build
    return [lean_item(i, served) for i in items]


def _left(review: Review) -> list[Annotation | PageNote]:
    """The review's notes still to work on."""
    notes: list[Annotation | PageNote] = [*review.annotations, *review.page_notes]
    return [n for n in notes if n.status in WORK]


def _review(review: Review | None, timeout_s: float) -> dict[str, Any]:
    if review is None:
        return {"review": None, "instructions": no_review(timeout_s)}
    return {"review": review.brief(), "instructions": mode_instructions(review.mode)}


def build_server(
    project: str | Path | None = None,
    db: str | Path | None = None,
    *,
    store: store_module.Store | None = None,
) -> MCPServer:
    """The MCP server for the store of `project` (found upwards from the current folder when
    None), or of the database file `db`, or the open `store` (the web app's, annotate/mcp_http.py)."""
    stores = _Stores(project, db, store)
    server = MCPServer(
        name="mkdocs-annotate",
        title="mkdocs-annotate review notes",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        extensions=[chatview.build_apps(stores.get)],
    )

    def call(
        fn: Callable[[store_module.Store], Any], *, text: bool = False, raw: bool = False
    ) -> CallToolResult:
        try:
            out = fn(stores.get())
        except AnnotateError as e:
            # `public`: a PostgreSQL store's address stays in the log (issue #32).
            return _result(e.public, error=True)
        return out if raw else _result(out if text else _json(out))

    def tool(description: str, annotations: ToolAnnotations = WRITE) -> Callable[[Any], Any]:
        return server.tool(description=description, annotations=annotations)

    @tool(
        "List review annotations, optionally filtered by page URL and status. Returns a JSON array "
        "of annotation objects: id, type (`text` or `element`), pageUrl, pageTitle, note, status "
        "(`open`, `in_progress`, `addressed`, `resolved`), intent (what the note asks: "
        "`comment`, `delete`, `replace` or `insert`) and suggestion, selectedText "
        "and quote (text annotations), elementSelector (element annotations), replacedText, "
        "replies, timestamps, and `source` {path, lineStart, lineEnd, excerpt}: the Markdown "
        "file (relative to the project) and 1-based lines the note points at, absent when it "
        "cannot be located, with `anchorState` (`anchored`, `stale`: the text was rewritten, "
        "`orphaned`: the file is gone, `removed`: deleted as asked). `build` {branch, commit, "
        "anchoredOn?}: the build it was made on, and the newer one it was re-anchored on. "
        "Absent fields are left out. Resolved annotations are left out unless asked for. At "
        "most `limit` (50) are returned; when more match, a second text block says how to get "
        "the next ones (`offset`). "
        f"Order of work for each: {order_of_work()}. {intents()}",
        READ,
    )
    def list_annotations(
        pageUrl: PageUrl = None,
        status: Status = None,
        limit: Annotated[
            int,
            Field(ge=1, le=MAX_LIST, description="At most this many annotations (default 50)"),
        ] = DEFAULT_LIST,
        offset: Annotated[
            int, Field(ge=0, description="Skip this many first (for the next page)")
        ] = 0,
        branch: Branch = None,
    ) -> CallToolResult:
        def page(s: store_module.Store) -> CallToolResult:
            found = s.list_annotations(
                pageUrl, status, limit=limit + 1, offset=offset, branch=branch
            )
            result = _result(_json(_items(found[:limit], s)))
            # Second blocks keep the first one the reference's plain JSON array.
            if len(found) > limit:
                result.content.append(TextContent(type="text", text=MORE.format(
                    first=offset + 1, last=offset + limit, next=offset + limit)))  # fmt: skip
            _hint(s, result, pageUrl, found)
            return result

        return call(page, raw=True)

    @tool(
        "List page notes: general comments about a whole page, not tied to text or an element. "
        "Returns a JSON array of {id, pageUrl, pageTitle, note, status, replies, createdAt, "
        "updatedAt, …}. Page notes take the same lifecycle tools as annotations "
        "(set_in_progress, address_annotation, add_agent_reply) with their id.",
        READ,
    )
    def list_page_notes(
        pageUrl: PageUrl = None, status: Status = None, branch: Branch = None
    ) -> CallToolResult:
        def notes(s: store_module.Store) -> CallToolResult:
            found = s.list_page_notes(pageUrl, status, branch=branch)
            result = _result(_json(_items(found, s)))
            _hint(s, result, pageUrl, found)
            return result

        return call(notes, raw=True)

    @tool(
        "Get a single annotation (or page note) by ID with full detail: note, quote or element, "
        'source lines, anchorState, replies. Error: `Annotation with ID "..." not found`.',
        READ,
    )
    def get_annotation(id: Id) -> CallToolResult:
        return call(lambda s: _item(s.get_annotation(id), s))

    @tool(
        "Get a Markdown export of all annotations and page notes, grouped by page URL, with "
        "`🔧 [Addressed]` and `⏳ [In Progress]` marks, agent replies inline and the Markdown "
        "`path:lines` of each note. A quick overview of everything before working.",
        READ,
    )
    def get_export() -> CallToolResult:
        return call(lambda s: export.render(s, "markdown"), text=True)

    @tool(
        "Mark an annotation (or page note) as addressed by the agent: status `addressed` (you "
        "acted on it, or answered it; the reviewer will Accept or Reopen it). The last call for a "
        "note, after set_in_progress and your edit, and it can record everything at once: "
        "`replacedText`, the text that now stands where the quote was (text annotations only; as "
        "the rendered page shows it, not Markdown: it is compared with the page's text, so the "
        "note is found again); `message`, your reply (stored with the status, so the reviewer "
        "sees both together; what add_agent_reply would add); `deleted: true` when the note asked "
        "for a deletion (intent `delete`) and you deleted the quoted text (the note then shows "
        "as deleted as asked and is not located again). A question gets its answer in `message` "
        "and no edit. update_annotation_target then add_agent_reply, around this call, still do "
        'the same in separate calls. Errors: `Annotation with ID "..." not found`, '
        "`replacedText must not be empty`, `not a text annotation`, and a resolved note refuses "
        "(reopen first).",
    )
    def address_annotation(
        ctx: Context,
        id: Annotated[str, Field(description="The annotation ID to mark as addressed")],
        replacedText: Annotated[
            str | None,
            Field(
                description="The new text that replaced the original annotated text (text "
                "annotations only)"
            ),
        ] = None,
        message: Annotated[
            str | None,
            Field(
                description="A reply (role agent) saying what you did, stored with the status in "
                "one step: no add_agent_reply needed"
            ),
        ] = None,
        deleted: Annotated[
            bool,
            Field(
                description="You deleted the annotated text as asked (intent delete): the note "
                "becomes `removed` and is not looked for again"
            ),
        ] = False,
    ) -> CallToolResult:
        return call(
            lambda s: _item(
                s.address_annotation(
                    id, replacedText, message=message, deleted=deleted, by=_person(ctx)
                ),
                s,
            )
        )

    @tool(
        "Signal that you are about to start working on an annotation: status `in_progress`, so "
        "the reviewer's page shows a working indicator while you edit and the site reloads. Call "
        "this first, before editing the Markdown; then update_annotation_target, "
        "address_annotation, add_agent_reply. Allowed from open, in_progress (no change) or "
        'addressed (rework). Errors: `Annotation with ID "..." not found`; a resolved note '
        "refuses (reopen first).",
    )
    def set_in_progress(
        ctx: Context,
        id: Annotated[str, Field(description="The annotation ID to mark as in-progress")],
    ) -> CallToolResult:
        return call(lambda s: _item(s.set_in_progress(id, by=_person(ctx)), s))

    @tool(
        "Add a reply (role `agent`) to an annotation's thread, explaining what you did, answering "
        "a question, or asking one. Always allowed, whatever the status. Keep it short and about "
        "this note; cross-cutting questions belong in the main conversation. When you also "
        "address the note, address_annotation's `message` does both in one call. Errors: "
        '`Annotation with ID "..." not found`, `Reply message must not be empty`.',
    )
    def add_agent_reply(
        ctx: Context,
        id: Annotated[str, Field(description="The annotation ID to reply to")],
        message: Annotated[str, Field(description="The reply: what was done, or your answer")],
    ) -> CallToolResult:
        return call(lambda s: _item(s.add_agent_reply(id, message, by=_person(ctx)), s))

    @tool(
        "Record the text that now stands where the annotated text was, after you edited the "
        "Markdown, so the note is re-located on the page and in the source: the text as the "
        "rendered page shows it, not Markdown (no backticks or `**`). Text annotations only. "
        "Call it after the edit and before address_annotation (or give `replacedText` to "
        "address_annotation instead: one call). Returns the annotation "
        'with `replacedText` and its new `source`. Errors: `Annotation with ID "..." not '
        "found`, `replacedText must not be empty`, `not a text annotation`; a resolved note "
        "refuses (reopen first).",
    )
    def update_annotation_target(
        ctx: Context,
        id: Annotated[str, Field(description="The annotation ID to update")],
        replacedText: Annotated[
            str,
            Field(
                description="The new text that replaced the original selected text, as the "
                "page shows it (rendered text, not Markdown)"
            ),
        ],
    ) -> CallToolResult:
        return call(
            lambda s: _item(s.update_annotation_target(id, replacedText, by=_person(ctx)), s)
        )

    @tool(
        "The note with the current Markdown around it, as plain text: what its intent asks, its "
        "note, suggestion, quote and replies, then the lines numbered (`>` marks the lines it "
        "points at). Read it before editing. A `warning:` line explains a stale, orphaned or "
        "removed anchor, or why there are no lines (element annotations and page notes show the "
        'top of the page\'s file). Error: `Annotation with ID "..." not found`.',
        READ,
    )
    def get_context(
        id: Id,
        lines: Annotated[
            int,
            Field(ge=0, le=MAX_LINES, description="Lines of Markdown to show before and after"),
        ] = DEFAULT_LINES,
    ) -> CallToolResult:
        return call(lambda s: context_module.get_context(s, id, lines).text(), text=True)

    @tool(
        'Wait for the reviewer to press "Send to agent" in the browser, and take that review. '
        "Returns at once with a review no agent has picked up yet, else blocks until one is sent "
        "(from any process) or `timeout_s` passes. Returns {review: {id, mode, message, notes: "
        "[{id, kind, intent, note, suggestion, at (path:lines), quote, …}], total, next?}, "
        "instructions}; get_context gives a note's details, get_review(id, offset=next) the "
        "rest of a long review. Mode `edit`: "
        "apply the changes, for each note " + order_of_work() + ". Mode `review`: answer each "
        "note (address_annotation with `message`), editing no file. " + intents() + " After the "
        'timeout: {review: null, instructions: "No review yet…"}; call it again to keep waiting.',
        WRITE,
    )
    async def wait_for_review(
        ctx: Context,
        timeout_s: Annotated[
            float, Field(ge=0, le=MAX_WAIT_S, description="Seconds to wait at most")
        ] = DEFAULT_WAIT_S,
    ) -> CallToolResult:
        stop = threading.Event()
        claim = functools.partial(
            call,
            # The caller's token is checked at each poll and in the claim: revoking it ends the
            # wait (issue #32).
            lambda s: _review(
                s.wait_for_review(timeout_s, stop=stop, token=_bearer(ctx)), timeout_s
            ),
        )
        result: list[CallToolResult] = []

        async def progress() -> None:
            # Clients that reset their request timeout on progress keep waiting.
            waited = 0.0
            while True:
                await anyio.sleep(PROGRESS_EVERY_S)
                waited += PROGRESS_EVERY_S
                await ctx.report_progress(waited, timeout_s, "Waiting for Send to agent")

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(progress)
                result.append(await anyio.to_thread.run_sync(claim, abandon_on_cancel=True))
                tg.cancel_scope.cancel()
        finally:
            stop.set()  # a cancelled call must not claim a review nobody will read
        return result[0]

    @tool(
        "Counts of notes by status and anchor state, pages with notes, and reviews sent but not "
        "picked up yet: is there work? {annotations, pageNotes, anchorStates, pages, "
        "pendingReviews, openItems}. `openItems` counts open and in-progress notes. `branch`: "
        "only notes made on a build of that branch, and the reviews holding one.",
        READ,
    )
    def summary(branch: Branch = None) -> CallToolResult:
        def counts(s: store_module.Store) -> dict[str, Any]:
            found = s.summary(branch=branch)
            return {**found.to_dict(), "openItems": found.open_items}

        return call(counts)

    @tool(
        'Reviews ("Send to agent" batches), oldest first: {id, mode, message, status '
        "(`pending`, `picked_up` or `done`), notes (how many), waiting (still open or in "
        "progress), …}. `pendingOnly` keeps those no agent has picked up; wait_for_review takes "
        "them.",
        READ,
    )
    def list_reviews(
        pendingOnly: Annotated[
            bool, Field(description="Only reviews no agent has picked up yet")
        ] = False,
    ) -> CallToolResult:
        return call(lambda s: [r.outline() for r in s.list_reviews(pending_only=pendingOnly)])

    @tool(
        "One review by ID with its mode, message and notes, compact as wait_for_review gives "
        "them; `offset` skips notes (the `next` of a long review). "
        'Error: `Review with ID "..." not found`.',
        READ,
    )
    def get_review(
        id: Annotated[str, Field(description="The review ID, e.g. `rv_3f9c01ab22`")],
        offset: Annotated[
            int, Field(ge=0, description="Skip this many notes (the `next` of the last answer)")
        ] = 0,
    ) -> CallToolResult:
        return call(lambda s: s.get_review(id).brief(offset))

    @tool(
        'Point the reviewer at a note ("look here", e.g. after an edit): every open view of its '
        "page (browser pages with the overlay, the review view in this chat) scrolls to the "
        "note's passage and flashes it; a page note opens in the view's panel. Waits about 1.5 s "
        "for the views to answer. Returns {id, pageUrl, views}: how many views showed it (0: no "
        "view of that page is open), with `noPassage` when the views show the note in their panel "
        "instead (resolved, deleted as asked, or its quote rewritten). Changes no data. "
        'Error: `Annotation with ID "..." not found`.',
    )
    async def show_annotation(id: Id) -> CallToolResult:
        # In a thread: a view in this chat acknowledges through this same server meanwhile.
        return await anyio.to_thread.run_sync(
            functools.partial(call, lambda s: s.show_annotation(id).to_dict())
        )

    # -- prompts (issue #14, item 14): clients show them as slash commands ------------------

    def prompt_text(fn: Callable[[store_module.Store], str]) -> str:
        try:
            return fn(stores.get())
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

    _answer_selections(server, stores)
    return server


def _answer_selections(server: MCPServer, stores: _Stores) -> None:
    """Tool calls that ask for `SELECTIONS` in their `_meta` get them in the result's `_meta`."""
    lowlevel = server._lowlevel_server
    entry = lowlevel.get_request_handler("tools/call")
    if entry is None:  # pragma: no cover - MCPServer registers it on construction
        return
    handler = entry.handler

    async def call_tool(ctx: ServerRequestContext[Any], params: CallToolRequestParams) -> Any:
        result = await handler(ctx, params)
        if not (params.meta or {}).get(SELECTIONS) or not isinstance(result, CallToolResult):
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

    lowlevel.add_request_handler("tools/call", CallToolRequestParams, call_tool)


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


def _hint(
    s: store_module.Store, result: CallToolResult, page_url: str | None, found: list[Any]
) -> None:
    """An empty listing of a page with no notes at all says so, naming the closest pages."""
    if page_url is not None and not found:
        hint = s.page_hint(page_url)
        if hint:
            result.content.append(TextContent(type="text", text=hint))


def run(project: str | Path | None = None, db: str | Path | None = None) -> None:
    """Serve the MCP tools over stdio until the client closes the connection."""
    anyio.run(_serve_stdio, build_server(project, db))


async def _serve_stdio(server: MCPServer) -> None:
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
    result, any other request as a JSON-RPC "invalid params" error.
    """

    def __init__(self, lines: io.TextIOWrapper) -> None:
        self.lines = anyio.wrap_file(lines)
        self.reply: Callable[[SessionMessage], Awaitable[None]] | None = None

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self.lines:
            answer = _surrogate_answer(line)
            if answer is None:
                yield line
            elif self.reply is not None and answer is not False:
                await self.reply(SessionMessage(answer))


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
        result = _result(text, error=True).model_dump(by_alias=True, exclude_none=True)
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

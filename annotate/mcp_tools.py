"""The MCP tools (docs/mcp.md): one table, `TABLE`, of module-level functions, each one library call.

`annotate/mcp_server.py` registers the table's functions on its server; `annotate/chatview.py`
serves the rows it names (the review view in the chat); `annotate/mcp_remote.py` reads from the
rows which answers hold notes it locates again in the agent's checkout (`answers`). A tool reaches
its store through its `ctx`: the `ToolServer` it runs on.
"""

from __future__ import annotations

import base64
import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
import anyio.to_thread
import pydantic_core
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, ImageContent, TextContent, ToolAnnotations
from pydantic import Field

from . import context as context_module
from . import export
from . import store as store_module
from .agents import DEFAULT_WAIT_S, MAX_WAIT_S, intents, mode_instructions, no_review, order_of_work
from .backends import DEFAULT_DIR
from .context import DEFAULT_LINES, MAX_LINES
from .errors import AnnotateError
from .mcp_http import bearer, person
from .models import Annotation, PageNote, Review, lean_item
from .screenshots import MEDIA_TYPE

__all__ = [
    "MAX_LIST",
    "TABLE",
    "Stores",
    "Tool",
    "ToolServer",
    "answering",
    "text_result",
    "to_json",
]

PROGRESS_EVERY_S = 10.0
# A page of list_annotations: an agent's context holds ~50 annotations of indented JSON (~70 kB)
# comfortably; Claude Code cuts tool output at 25k tokens by default.
DEFAULT_LIST = 50
MAX_LIST = 10_000
MORE = (
    "Showing annotations {first}–{last}; more match. Call list_annotations again with "
    "offset={next}, or narrow the list with pageUrl or status."
)

Id = Annotated[str, Field(description="e.g. a_3f9c01ab22")]
PageUrl = Annotated[str | None, Field(description='e.g. "/about/"')]
Branch = Annotated[str | None, Field(max_length=200, description="Made on this branch")]
Status = Annotated[
    Literal["open", "in_progress", "addressed", "resolved", "all"] | None,
    Field(description="Default: all but resolved"),
]

READ = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)


class Stores:
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


def text_result(text: str, *, error: bool = False) -> CallToolResult:
    """A tool's answer: one text block, an `isError` one with `error`."""
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=error)


def to_json(data: Any, *, pretty: bool = False) -> str:
    """Compact JSON (issue #27: an agent pays for every space it reads), indented when asked
    (`annotate mcp --pretty`). pydantic-core's encoder writes what json.dumps(ensure_ascii=False)
    does, faster (benchmarks/mcp.py)."""
    return pydantic_core.to_json(data, indent=2 if pretty else None).decode()


def _item(item: Annotation | PageNote, store: store_module.Store) -> dict[str, Any]:
    """An annotation or page note as agents get it: absent optional fields left out, as the
    reference does (issue #14), and its build when it is not the one the agent reads."""
    return lean_item(item, store.build)


def _items(
    items: list[Annotation] | list[PageNote], store: store_module.Store
) -> list[dict[str, Any]]:
    served = store.build
    return [lean_item(i, served) for i in items]


def _review(review: Review | None, timeout_s: float) -> dict[str, Any]:
    if review is None:
        return {"review": None, "instructions": no_review(timeout_s)}
    return {"review": review.brief(), "instructions": mode_instructions(review.mode)}


def _hint(
    s: store_module.Store, result: CallToolResult, page_url: str | None, found: list[Any]
) -> None:
    """An empty listing of a page with no notes at all says so, naming the closest pages."""
    if page_url is not None and not found:
        hint = s.page_hint(page_url)
        if hint:
            result.content.append(TextContent(type="text", text=hint))


class ToolServer(MCPServer[Any]):
    """An MCP server with what its tools reach through `ctx.mcp_server`: the store, and how
    answers are written (`pretty`: indented JSON)."""

    def __init__(self, stores: Stores, *, pretty: bool = False, **options: Any) -> None:
        super().__init__(**options)
        self.stores = stores
        self.pretty = pretty


def _server(ctx: Context) -> ToolServer:
    server = ctx.mcp_server
    if not isinstance(server, ToolServer):  # pragma: no cover - build_server makes one
        raise TypeError("the annotate tools run on a ToolServer")
    return server


def _dump(ctx: Context, data: Any) -> str:
    return to_json(data, pretty=_server(ctx).pretty)


def _call(
    ctx: Context,
    fn: Callable[[store_module.Store], Any],
    *,
    text: bool = False,
    raw: bool = False,
) -> CallToolResult:
    """`fn` on the tool's store, as the tool's answer: JSON (`text`: as it is; `raw`: a
    result already); a library error as an `isError` result."""
    try:
        out = fn(_server(ctx).stores.get())
    except AnnotateError as e:
        # `public`: a PostgreSQL store's address stays in the log (issue #32).
        return text_result(e.public, error=True)
    return out if raw else text_result(out if text else _dump(ctx, out))


# -- the tools ------------------------------------------------------------------------------------


def list_annotations(
    ctx: Context,
    pageUrl: PageUrl = None,
    status: Status = None,
    limit: Annotated[int, Field(ge=1, le=MAX_LIST)] = DEFAULT_LIST,
    offset: Annotated[int, Field(ge=0)] = 0,
    branch: Branch = None,
) -> CallToolResult:
    def page(s: store_module.Store) -> CallToolResult:
        found = s.list_annotations(pageUrl, status, limit=limit + 1, offset=offset, branch=branch)
        result = text_result(_dump(ctx, _items(found[:limit], s)))
        # Second blocks keep the first one the reference's plain JSON array.
        if len(found) > limit:
            result.content.append(TextContent(type="text", text=MORE.format(
                first=offset + 1, last=offset + limit, next=offset + limit)))  # fmt: skip
        _hint(s, result, pageUrl, found)
        return result

    return _call(ctx, page, raw=True)


def list_page_notes(
    ctx: Context, pageUrl: PageUrl = None, status: Status = None, branch: Branch = None
) -> CallToolResult:
    def notes(s: store_module.Store) -> CallToolResult:
        found = s.list_page_notes(pageUrl, status, branch=branch)
        result = text_result(_dump(ctx, _items(found, s)))
        _hint(s, result, pageUrl, found)
        return result

    return _call(ctx, notes, raw=True)


def get_annotation(ctx: Context, id: Id) -> CallToolResult:
    return _call(ctx, lambda s: _item(s.get_annotation(id), s))


def get_screenshot(
    ctx: Context,
    id: Id,
    format: Annotated[
        Literal["image", "path"],
        Field(description="image, or path: a file to open"),
    ] = "image",
) -> CallToolResult:
    def shot(s: store_module.Store) -> CallToolResult:
        got = s.screenshots.get(id)
        data = got.to_dict()
        if format == "path":
            # Beside the store, never in docs_dir: a file the agent can open, made again on ask.
            folder = s.project_dir / DEFAULT_DIR / "screenshots"
            folder.mkdir(parents=True, exist_ok=True)
            target = folder / f"{id}.webp"
            target.write_bytes(got.data)
            return text_result(_dump(ctx, {**data, "path": str(target)}))
        picture = base64.b64encode(got.data).decode("ascii")
        result = text_result(_dump(ctx, data))
        result.content.append(ImageContent(type="image", data=picture, mime_type=MEDIA_TYPE))
        return result

    return _call(ctx, shot, raw=True)


def get_export(ctx: Context) -> CallToolResult:
    return _call(ctx, lambda s: export.render(s, "markdown"), text=True)


def address_annotation(
    ctx: Context,
    id: Id,
    replacedText: Annotated[str | None, Field(description="The text now in its place")] = None,
    message: Annotated[str | None, Field(description="Your reply")] = None,
    deleted: Annotated[bool, Field(description="You deleted the quoted text")] = False,
) -> CallToolResult:
    return _call(
        ctx,
        lambda s: _item(
            s.address_annotation(
                id, replacedText, message=message, deleted=deleted, by=person(ctx)
            ),
            s,
        ),
    )


def set_in_progress(ctx: Context, id: Id) -> CallToolResult:
    return _call(ctx, lambda s: _item(s.set_in_progress(id, by=person(ctx)), s))


def add_agent_reply(
    ctx: Context, id: Id, message: Annotated[str, Field(description="The reply")]
) -> CallToolResult:
    return _call(ctx, lambda s: _item(s.add_agent_reply(id, message, by=person(ctx)), s))


def update_annotation_target(
    ctx: Context, id: Id, replacedText: Annotated[str, Field(description="The new text")]
) -> CallToolResult:
    return _call(
        ctx, lambda s: _item(s.update_annotation_target(id, replacedText, by=person(ctx)), s)
    )


def get_context(
    ctx: Context,
    id: Id,
    lines: Annotated[
        int, Field(ge=0, le=MAX_LINES, description="Lines shown before and after")
    ] = DEFAULT_LINES,
) -> CallToolResult:
    return _call(ctx, lambda s: context_module.get_context(s, id, lines).text(), text=True)


async def wait_for_review(
    ctx: Context,
    timeout_s: Annotated[float, Field(ge=0, le=MAX_WAIT_S)] = DEFAULT_WAIT_S,
) -> CallToolResult:
    stop = threading.Event()
    claim = functools.partial(
        _call,
        ctx,
        # The caller's token is checked at each poll and in the claim: revoking it ends the
        # wait (issue #32).
        lambda s: _review(s.wait_for_review(timeout_s, stop=stop, token=bearer(ctx)), timeout_s),
    )
    # A cancelled call must not claim a review nobody will read.
    return await _waiting(ctx, claim, stop, timeout_s, "Waiting for Send to agent")


async def _waiting(
    ctx: Context,
    call: Callable[[], CallToolResult],
    stop: threading.Event,
    timeout_s: float,
    what: str,
) -> CallToolResult:
    """Run `call` (a wait of up to `timeout_s`) in a thread, reporting progress meanwhile;
    `stop` is set when it ends or the call is cancelled."""
    result: list[CallToolResult] = []

    async def progress() -> None:
        # Clients that reset their request timeout on progress keep waiting.
        waited = 0.0
        while True:
            await anyio.sleep(PROGRESS_EVERY_S)
            waited += PROGRESS_EVERY_S
            await ctx.report_progress(waited, timeout_s, what)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(progress)
            result.append(await anyio.to_thread.run_sync(call, abandon_on_cancel=True))
            tg.cancel_scope.cancel()
    finally:
        stop.set()
    return result[0]


def _put_up(
    s: store_module.Store,
    path: str | None,
    markdown: str | None,
    timeout_s: float,
    stop: threading.Event,
) -> dict[str, Any]:
    """request_review's one library call: the document put up as the next revision of its plan,
    and the wait for the verdict."""
    import sys

    from . import plangate
    from .errors import ValidationError

    if (path is None) == (markdown is None):
        raise ValidationError("Give either path (a Markdown file) or markdown (the text)", "path")

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)  # stdout is the MCP transport

    if path is not None:
        # An agent names files from the project's folder, wherever the server was started.
        outcome = plangate.review_file(
            s, path, base=s.project_dir, timeout_s=timeout_s, say=say, stop=stop
        )
    else:
        # Revisions of one plan share its title (its first `# ` heading): each is diffed
        # against the last one reviewed.
        title = plangate.first_heading(str(markdown)) or "plan"
        outcome = plangate.review_text(
            s, f"agent:{title[:200]}", str(markdown), timeout_s=timeout_s, say=say, stop=stop
        )
    answer = outcome.to_dict()
    if outcome.decided:
        answer["instructions"] = plangate.changes_message(outcome)
    else:
        answer["instructions"] = (
            f"No decision within {timeout_s:g} s. The reviewer was shown {outcome.url}; call "
            "request_review again with the same document to keep waiting."
        )
    return answer


async def request_review(
    ctx: Context,
    path: str | None = None,
    markdown: str | None = None,
    timeout_s: Annotated[float, Field(ge=0, le=MAX_WAIT_S)] = DEFAULT_WAIT_S,
) -> CallToolResult:
    stop = threading.Event()
    ask = functools.partial(_call, ctx, lambda s: _put_up(s, path, markdown, timeout_s, stop))
    # A cancelled call stops serving the page.
    return await _waiting(ctx, ask, stop, timeout_s, "Waiting for the reviewer's verdict")


def summary(ctx: Context, branch: Branch = None) -> CallToolResult:
    def counts(s: store_module.Store) -> dict[str, Any]:
        found = s.summary(branch=branch)
        return {**found.to_dict(), "openItems": found.open_items}

    return _call(ctx, counts)


def list_reviews(
    ctx: Context,
    pendingOnly: Annotated[bool, Field(description="Only those not picked up yet")] = False,
) -> CallToolResult:
    return _call(ctx, lambda s: [r.outline() for r in s.list_reviews(pending_only=pendingOnly)])


def get_review(
    ctx: Context,
    id: Annotated[str, Field(description="e.g. rv_3f9c01ab22")],
    offset: Annotated[int, Field(ge=0)] = 0,
) -> CallToolResult:
    return _call(ctx, lambda s: s.get_review(id).brief(offset))


async def show_annotation(ctx: Context, id: Id) -> CallToolResult:
    # In a thread: a view in this chat acknowledges through this same server meanwhile.
    return await anyio.to_thread.run_sync(
        functools.partial(_call, ctx, lambda s: s.show_annotation(id).to_dict())
    )


# -- the table ------------------------------------------------------------------------------------

# What a tool's answer holds (annotate/mcp_remote.py locates these again in the agent's checkout):
# one note, a list of annotations (and their selections), of page notes, or a review.
Answers = Literal["note", "notes", "page notes", "review"]


@dataclass(frozen=True)
class Tool:
    """One MCP tool: its name, its one library call (None: served by the review view in the chat,
    annotate/chatview.py), what its answer holds, its description and hints."""

    name: str
    call: Callable[..., Any] | None
    answers: Answers | None = None
    description: str = ""
    annotations: ToolAnnotations | None = None
    # Listed only to clients that render MCP Apps: the view calls it (annotate/chatview.py).
    app_only: bool = False


TABLE: tuple[Tool, ...] = (
    Tool(
        "list_annotations",
        list_annotations,
        "notes",
        "List annotations (text and element notes) as a JSON array: id, type, pageUrl, note, "
        "status, intent, suggestion, quote, elementSelector, replacedText, replies, `source` "
        "{path, lineStart, lineEnd, excerpt} (the Markdown file and 1-based lines it points at), "
        "anchorState (`anchored`; `stale`: text rewritten, `orphaned`: file gone: check before "
        "acting; `removed`: deleted as asked), build. Absent fields are left out, and resolved "
        "notes unless `status` asks for them. At most `limit`; a second text block then names the next "
        f"`offset`. For each note: {order_of_work()}. {intents()}",
        READ,
    ),
    Tool(
        "list_page_notes",
        list_page_notes,
        "page notes",
        "List page notes (about a whole page): a JSON array of {id, pageUrl, note, status, "
        "replies, source {path}, …}. They take the same lifecycle tools as annotations.",
        READ,
    ),
    Tool(
        "get_annotation",
        get_annotation,
        "note",
        "One annotation or page note by ID, as list_annotations gives them.",
        READ,
    ),
    Tool(
        "get_screenshot",
        get_screenshot,
        None,
        "A note's screenshot (WebP), or with format=path a file. Images cost tokens: ask "
        "only when needed.",
        READ,
    ),
    Tool(
        "get_export",
        get_export,
        None,
        "All notes as Markdown, grouped by page, with status marks, replies and each note's "
        "`path:lines`: an overview.",
        READ,
    ),
    Tool(
        "address_annotation",
        address_annotation,
        "note",
        "Mark a note addressed (acted on or answered; the reviewer then accepts or reopens it). "
        "The last call for a note, recording at once: `replacedText`, the text now in the "
        "quote's place (text annotations; as the rendered page shows it, not Markdown, so the "
        "note is found again); `message`, your reply; `deleted: true` when the note asked for a "
        "deletion and you deleted the quoted text. A question gets its answer in `message` and "
        "no edit. A resolved note refuses (reopen first).",
        WRITE,
    ),
    Tool(
        "set_in_progress",
        set_in_progress,
        "note",
        "Status `in_progress`: the reviewer's page shows you working. Call it before editing. "
        "A resolved note refuses (reopen first).",
        WRITE,
    ),
    Tool(
        "add_agent_reply",
        add_agent_reply,
        "note",
        "Add a reply (role agent) to a note's thread, whatever its status: what you did, an "
        "answer or a question about this note (address_annotation's `message` when you also "
        "address it).",
        WRITE,
    ),
    Tool(
        "update_annotation_target",
        update_annotation_target,
        "note",
        "Record the text now where the quote was (as the page shows it, not Markdown), so the "
        "note is located again; text annotations only (address_annotation's `replacedText` does "
        "it in the same call).",
        WRITE,
    ),
    Tool(
        "get_context",
        get_context,
        None,
        "A note with its Markdown around it, as text: what it asks, its note, quote and "
        "replies, then numbered lines (`>` marks its lines; a `warning:` line explains a stale, "
        "orphaned or removed anchor). Read it before editing.",
        READ,
    ),
    Tool(
        "wait_for_review",
        wait_for_review,
        "review",
        'Wait for the reviewer to press "Send to agent" and take that review: at once if one is '
        "waiting, else when one is sent or `timeout_s` passes. Returns {review: {id, mode, "
        "message, decision?, notes: [{id, kind, intent, note, suggestion, at (path:lines), quote, …}], "
        "total, next?}, instructions}. Mode `edit`: apply the changes. Mode `review`: answer "
        "each note (address_annotation with `message`), edit no file. A long review continues "
        "with get_review(id, offset=next). After the timeout: {review: null}; call again to "
        "keep waiting.",
        WRITE,
    ),
    Tool(
        "request_review",
        request_review,
        None,
        "Have a Markdown plan or file (`path` or `markdown`) reviewed first; waits like "
        "wait_for_review. Returns {decision (null: call again), message, notes, url}.",
        WRITE,
    ),
    Tool(
        "summary",
        summary,
        None,
        "Is there work? Counts by status and anchor state, pages with notes, reviews not picked "
        "up yet, and `openItems` (open and in progress).",
        READ,
    ),
    Tool(
        "list_reviews",
        list_reviews,
        None,
        'Reviews ("Send to agent" batches), oldest first: {id, mode, message, status, notes, '
        "waiting, …}.",
        READ,
    ),
    Tool(
        "get_review",
        get_review,
        "review",
        "One review by ID, as wait_for_review gives it; `offset` skips notes.",
        READ,
    ),
    Tool(
        "show_annotation",
        show_annotation,
        None,
        "Point the reviewer at a note: every open view of its page scrolls to it and flashes it "
        "(waits ~1.5 s). Returns {id, pageUrl, views} (0: no view open). Changes no data.",
        WRITE,
    ),
    # The review view in the chat (MCP Apps): annotate/chatview.py.
    Tool("open_review", None),
    Tool("chat_page", None, app_only=True),
    Tool("chat_api", None, app_only=True),
)


def answering(*kinds: Answers) -> frozenset[str]:
    """The names of the tools whose answers hold `kinds`."""
    return frozenset(t.name for t in TABLE if t.answers in kinds)

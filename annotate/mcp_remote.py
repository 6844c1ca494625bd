"""`annotate mcp --remote URL --token-file F`: the MCP tools over stdio, answered by a team server
(docs/remote-agents.md).

For agents that start their MCP servers as commands. The tools, their descriptions and schemas
are those of `annotate mcp` (`compose.build_server`); each call goes to the team server's
`/__annotate/mcp` (annotate/mcp_http.py) through the `mcp` SDK's Streamable HTTP client, with the
token of F as bearer. What depends on the Markdown is computed here, from the agent's own checkout
(`--project`, the files it edits), as `annotate mcp` does from its project:

- an annotation's `source` and `anchorState` in every answer that holds annotations, located
  again in the local file by `reconcile.plan` (its replacement, else its quote), so a line the agent
  inserted moves the lines at once, before the team server's build knows of it. Where the quote
  was selected (`inCode`, `occurrence`, in no answer) comes from the server in the result's
  `_meta` (`mcp_server.SELECTIONS`), asked for in the call's and left out of the answer passed on;
- the `at` of each note of a review (`wait_for_review`, `get_review`), from those notes;
- `get_context`: the note from the server, the lines from the local file (`context.get_context`);
- `get_export` and `summary`'s `anchorStates`: over the notes the server lists, located here
  (`export.to_markdown`, `Summary.count_anchor_states`).

A bad URL, an unreachable server or a refused token is an `isError` result with one line saying
which; `wait_for_review` passes the server's progress notifications on, so clients that reset
their timeout on progress keep waiting.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

import anyio
import anyio.abc
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    GetPromptRequestParams,
    GetPromptResult,
    RequestParamsMeta,
    TextContent,
)

from . import build as builds
from . import context as context_module
from . import export, reconcile
from .agents import DEFAULT_WAIT_S, MAX_WAIT_S
from .compose import build_server
from .errors import AnnotateError
from .fields import ANNOTATION, PAGE_NOTE, REPLY, SELECTION
from .mcp_http import MCP_PATH
from .mcp_server import MAX_LIST, SELECTIONS, serve_stdio
from .mcp_tools import answering, text_result, to_json
from .models import Annotation, PageNote, Reply, Summary, lean_item
from .store import decode_annotation, decode_page_note, decode_reply

__all__ = ["Remote", "build_remote_server", "run_remote"]

# Answers that are one item, or a list of items, whose `source` is located again here; answers
# that may hold text annotations, whose calls ask the server for the notes' selections; reviews,
# whose notes' `at` is. From the tools' table (annotate/mcp_tools.py).
ONE_ITEM = answering("note")
ITEM_LISTS = answering("notes", "page notes")
SELECTED = answering("note", "notes")
REVIEWS = answering("review")
# A call's `_meta` asking for the selections (mcp_server.SELECTIONS). A key among the extra items
# RequestParamsMeta allows (PEP 728), which mypy does not model yet: hence the cast.
ASK_SELECTIONS = cast(RequestParamsMeta, {SELECTIONS: True})
# Seconds a call may take beyond what it asks for (wait_for_review's `timeout_s`).
CALL_TIMEOUT_S = 60.0
# The largest answer read from the team server (a list of 10,000 notes is about 20 MB).
MAX_ANSWER_BYTES = 64 * 1024 * 1024
TOKEN_FILE_MAX = 64 * 1024


class RemoteError(Exception):
    """A call that could not reach an answer: its message is the one line the agent reads."""


# (JSON key, column) of the fields that are one column each, from the field table.
_PLAIN_NOTE = tuple((f.key, f.col) for f in PAGE_NOTE.answer if f.plain)
_ORIGINAL = {"originalSource": "source"}
_PLAIN_REPLY = tuple((f.key, f.col) for f in REPLY.answer)


# Per text annotation id, where it was selected on its page: `Store.selections` of the team
# server, sent in a result's `_meta` when a call asks for them (mcp_server.SELECTIONS).
Selections = dict[str, dict[str, Any]]


class _Row(dict[str, Any]):
    """A store row rebuilt from an answer: a column the answer does not carry reads as None."""

    def __missing__(self, key: str) -> None:
        return None


def _columns(data: dict[str, Any]) -> _Row:
    """The store row of an annotation's JSON, from the field table (annotate/fields.py); the
    file a note was located in is its `source` (lean_item leaves `originalSource` out while it
    equals `source`)."""
    row = _Row(ANNOTATION.columns(data, fallback=_ORIGINAL, leave=frozenset({"build"})))
    row["source_file"] = row["source_path"]
    return row


def _replies(data: dict[str, Any]) -> tuple[Reply, ...]:
    return tuple(
        decode_reply(_Row({col: r.get(key) for key, col in _PLAIN_REPLY}))
        for r in data.get("replies") or ()
    )


class Checkout:
    """The agent's own checkout (`--project`): where a note's lines are in its Markdown now."""

    def __init__(self, project: str | Path) -> None:
        self.project_dir = Path(project).resolve()
        # Page URL → Markdown file, as the server's answers name them (its build registered
        # them): the first guess for a page whose file the local mkdocs.yml rules do not find.
        self._pages: dict[str, str] = {}
        # Note id → (what its place depends on, where it is): a note the server did not change
        # in a file not changed here is not looked for again (a listing asks for the same notes
        # call after call).
        self._located: dict[str, tuple[tuple[Any, ...], dict[str, Any] | None]] = {}
        # The checkout's branch and commit (annotate/build.py): the export names notes made on
        # another build, as `annotate mcp` run here would.
        self.build = builds.Current(self.project_dir)

    def _locator(self) -> reconcile.Locator:
        return reconcile.Locator(self.project_dir, registered=self._pages.get)

    def page_file(self, page_url: str) -> str | None:
        return self._locator().page_file(page_url)

    def _moves(
        self, answer: list[dict[str, Any]], selections: Selections
    ) -> list[dict[str, Any] | None]:
        """Per item of an answer's JSON, the columns that change where it is as the local files
        say (None: where the server says). Located again by `reconcile.plan` (its replacement,
        else its quote, the copy of it its `selections` name; an element by its `src`, `href`
        or text), as `annotate mcp` locates a note whose file changed; one pass, so each file is
        read once."""
        locator = self._locator()
        rows: list[_Row] = []
        keys: dict[str, tuple[Any, ...]] = {}
        for data in answer:
            path = (data.get("source") or {}).get("path")
            if path and data.get("pageUrl"):
                self._pages.setdefault(data["pageUrl"], path)
            if "type" not in data or data.get("anchorState") == "removed":
                continue
            row = _columns(data)
            picked = selections.get(row["id"]) or {}
            row.update({f.col: picked.get(f.key) for f in SELECTION})
            local = path or locator.page_file(row["page_url"])
            key = (
                tuple(row[f.col] for f in SELECTION),
                data.get("updatedAt"),
                path,
                row["source_line_start"],
                row["anchor_state"],
                local,
                locator.mtime(local) if local else None,
            )
            cached = self._located.get(row["id"])
            if cached is None or cached[0] != key:
                rows.append(row)
                keys[row["id"]] = key
        planned = reconcile.plan(rows, locator, force=True)
        for row in rows:
            update = planned.get(row["id"], {})
            moved = update if reconcile.changed(row, update) else None
            self._located[row["id"]] = (keys[row["id"]], moved)
        return [self._located[d["id"]][1] if d.get("id") in self._located else None for d in answer]

    def items(
        self, answer: list[dict[str, Any]], selections: Selections | None = None
    ) -> list[Annotation | PageNote]:
        """The items of an answer's JSON, each annotation where the local files say it is."""
        out: list[Annotation | PageNote] = []
        for data, moved in zip(answer, self._moves(answer, selections or {}), strict=True):
            if "type" not in data:
                path = (data.get("source") or {}).get("path")
                note = _Row({col: data.get(key) for key, col in _PLAIN_NOTE})
                out.append(decode_page_note(note, _replies(data), path))
            else:
                out.append(decode_annotation(_Row(_columns(data), **(moved or {})), _replies(data)))
        return out

    def item(
        self, data: dict[str, Any], selections: Selections | None = None
    ) -> Annotation | PageNote:
        return self.items([data], selections)[0]

    def answers(
        self, answer: list[dict[str, Any]], selections: Selections | None = None
    ) -> list[dict[str, Any]]:
        """Items' JSON as `annotate mcp` on this checkout answers them: the server's, but for
        the notes whose lines differ here."""
        out = []
        for data, moved in zip(answer, self._moves(answer, selections or {}), strict=True):
            if moved is None:
                out.append(data)
                continue
            row = _Row(_columns(data), **moved)
            lean = lean_item(decode_annotation(row, _replies(data)))
            if "originalSource" not in data:
                # The server's lines are the original ones: they differ from the local ones
                # only by the local edits, which are no change the reviewer saw.
                lean.pop("originalSource", None)
            out.append(lean)
        return out


class _Note:
    """One note for `context.get_context`, which reads it as from a store."""

    def __init__(self, checkout: Checkout, data: dict[str, Any], selections: Selections) -> None:
        self.project_dir = checkout.project_dir
        self.page_file = checkout.page_file
        self._item = checkout.item(data, selections)

    def get_annotation(self, id: str) -> Annotation | PageNote:
        return self._item


# -- the team server --------------------------------------------------------------------------


def endpoint(url: str) -> str:
    """The MCP endpoint of a team server's base URL (or the endpoint itself); RemoteError when
    `url` is no http(s) URL."""
    parts = urlsplit(url.strip())
    # The URL as shown in a message: never a password given in it (issue #32).
    shown = _hide_userinfo(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RemoteError(
            f"--remote {shown!r} is not a server URL: give the team server's base URL, e.g. "
            "https://review.example.com/"
        )
    if parts.username or parts.password or parts.query or parts.fragment:
        raise RemoteError(
            f"--remote {shown!r}: give the base URL without user, query or fragment (the token "
            "comes from --token-file)"
        )
    path = parts.path.rstrip("/")
    if not path.endswith(MCP_PATH):
        path += MCP_PATH
    return f"{parts.scheme}://{parts.netloc}{path}"


def _hide_userinfo(url: str) -> str:
    """`url` with whatever stands before an `@` of its authority replaced by `***`."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    authority, slash, tail = rest.partition("/")
    if "@" in authority:
        authority = "***@" + authority.rpartition("@")[2]
    return f"{scheme}{sep}{authority}{slash}{tail}"


def read_token_file(path: str | os.PathLike[str]) -> str:
    """The bearer token in file `path` (its first line); RemoteError when it is missing, empty,
    not a regular file (a FIFO would block the call forever), or readable by other users (a token
    is a password: the file must be 0600, as ssh asks of a key)."""
    file = Path(path)
    try:
        # Non-blocking open, then a look at what was opened: a FIFO or a device is refused
        # before any read (issue #32); only the first TOKEN_FILE_MAX bytes are read.
        fd = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise RemoteError(f"The token file {file} is not a regular file")
            data = os.read(fd, TOKEN_FILE_MAX)
        finally:
            os.close(fd)
    except OSError as e:
        raise RemoteError(f"Cannot read the token file {file}: {e.strerror or e}") from None
    text = data.decode("utf-8", errors="replace")
    if os.name == "posix" and st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise RemoteError(
            f"The token file {file} is readable by other users (mode "
            f"{stat.S_IMODE(st.st_mode):o}): run chmod 600 {file}"
        )
    token = text.strip().splitlines()[0].strip() if text.strip() else ""
    if not token:
        raise RemoteError(f"The token file {file} is empty")
    return token


class AnswerTooLarge(httpx2.ReadError):
    """The team server's answer went over MAX_ANSWER_BYTES."""


class _CappedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream) -> None:
        self.inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0
        async for chunk in self.inner:
            size += len(chunk)
            if size > MAX_ANSWER_BYTES:
                raise AnswerTooLarge(
                    f"an answer larger than {MAX_ANSWER_BYTES // (1024 * 1024)} MB"
                )
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


class _Capped(httpx2.AsyncBaseTransport):
    """A transport whose answers' bodies stop at MAX_ANSWER_BYTES (`AnswerTooLarge`)."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        stream = response.stream
        assert isinstance(stream, httpx2.AsyncByteStream)
        response.stream = _CappedStream(stream)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def _leaves(error: BaseException) -> Iterable[BaseException]:
    inner = getattr(error, "exceptions", None)  # an exception group (Python 3.11+, anyio)
    if isinstance(inner, tuple) and inner:
        for each in inner:
            yield from _leaves(each)
    else:
        yield error


class Remote:
    """Tool calls on the team server over one kept MCP connection (one pooled HTTP client).

    The endpoint is stateless, so a connection holds nothing a call needs: a call that fails
    drops it, and the next call connects again. `running()` keeps the connection in a task of
    its own; outside it, each call connects for itself.
    """

    def __init__(self, url: str, token_file: str | os.PathLike[str]) -> None:
        self.url = url
        self.token_file = token_file
        self._http: httpx2.AsyncClient | None = None
        self._tasks: anyio.abc.TaskGroup | None = None
        self._live: Client | None = None
        # Made in `running()`: anyio's primitives belong to an event loop.
        self._drop: anyio.Event | None = None
        self._lock: anyio.Lock | None = None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Remote]:
        try:
            async with anyio.create_task_group() as tasks:
                self._tasks, self._lock = tasks, anyio.Lock()
                try:
                    yield self
                finally:
                    tasks.cancel_scope.cancel()
                    self._tasks = self._live = self._lock = None
        finally:
            if self._http is not None:
                await self._http.aclose()

    def _client(self) -> httpx2.AsyncClient:
        if self._http is None:
            # The SDK's client (`create_mcp_http_client`: its timeouts), every answer read with
            # a size limit: a hostile or broken server could otherwise fill the agent's memory
            # (200 MB took 1.3 GB, issue #32).
            self._http = httpx2.AsyncClient(
                timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
                transport=_Capped(httpx2.AsyncHTTPTransport()),
            )
        # Read on every call: a token replaced in the file is used at once.
        self._http.headers["Authorization"] = f"Bearer {read_token_file(self.token_file)}"
        return self._http

    def _connection(self, target: str) -> Client:
        return Client(streamable_http_client(target, http_client=self._client()))

    async def _keep(self, target: str, *, task_status: anyio.abc.TaskStatus[Client]) -> None:
        """Hold a connection open until it is dropped; a failure after it opened ends it
        quietly (the call that saw it reports it)."""
        drop = self._drop = anyio.Event()
        opened = False
        try:
            async with self._connection(target) as client:
                opened = True
                task_status.started(client)
                await drop.wait()
        except Exception:
            if not opened:
                raise
        finally:
            self._live = None

    @contextlib.asynccontextmanager
    async def _session(self) -> AsyncIterator[Client]:
        """A connection to the team server; RemoteError when there is none, or when a call on
        it fails for want of the server (then it is dropped)."""
        target = endpoint(self.url)
        try:
            if self._tasks is None or self._lock is None:
                async with self._connection(target) as client:
                    yield client
                return
            async with self._lock:
                if self._live is None:
                    self._live = await self._tasks.start(self._keep, target)
                client = self._live
            yield client
        except RemoteError:
            raise
        except Exception as e:
            large = [leaf for leaf in _leaves(e) if isinstance(leaf, AnswerTooLarge)]
            reason = (
                f"The team server at {self.url} sent {large[0]}: not read further"
                if large
                else await self._diagnose(target, e)
            )
            if reason is None and isinstance(e, MCPError):
                raise  # the server's own answer (a prompt's error): the connection is fine
            if self._drop is not None:
                self._drop.set()
            raise RemoteError(reason or self._failed(e)) from None

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        timeout_s: float = CALL_TIMEOUT_S,
        progress: ProgressFnT | None = None,
        selections: bool = False,
    ) -> CallToolResult:
        """The team server's answer to one tool call; RemoteError when there is none.
        `selections`: ask for the text annotations' selections too (`_selections` reads them)."""
        meta = ASK_SELECTIONS if selections else None
        try:
            async with self._session() as client:
                return await client.call_tool(
                    name,
                    arguments,
                    read_timeout_seconds=timeout_s,
                    progress_callback=progress,
                    meta=meta,
                )
        except MCPError as e:
            raise RemoteError(f"The team server at {self.url} refused the call: {e}") from None

    async def prompt(self, name: str, arguments: dict[str, str] | None) -> GetPromptResult:
        """The team server's prompt; MCPError as it sent it, RemoteError when none came."""
        async with self._session() as client:
            return await client.get_prompt(name, arguments)

    def _failed(self, error: BaseException) -> str:
        leaf = next(iter(_leaves(error)))
        return f"The call to the team server at {self.url} failed: {leaf or type(leaf).__name__}"

    async def _diagnose(self, target: str, error: BaseException) -> str | None:
        """One line for a call that failed: why, asked of the server with one plain request;
        None when the server is there and takes the token."""
        try:
            response = await self._client().post(
                target, content=b"{}", headers={"Content-Type": "application/json"}
            )
        except httpx2.HTTPError as e:
            why = str(e) or type(e).__name__
            return f"Cannot reach the team server at {self.url}: {why}"
        said = ""
        try:
            body = response.json()
            said = body.get("error", "") if isinstance(body, dict) else ""
        except ValueError:
            pass
        status = response.status_code
        if status == 401:
            return (
                f"The team server at {self.url} refused the token of {self.token_file} (401"
                f"{': ' + said if said else ''}); ask for a new agent token"
            )
        if status in (404, 405):
            return (
                f"No MCP endpoint at {target} ({status}): is {self.url} the base URL of an "
                "annotate serve?"
            )
        if status >= 300 and status not in (400, 406):
            return f"The team server at {self.url} answered {status}{': ' + said if said else ''}"
        return None


# -- the local server --------------------------------------------------------------------------


def _texts(result: CallToolResult) -> list[str]:
    return [c.text for c in result.content if isinstance(c, TextContent)]


def _with_first(result: CallToolResult, text: str) -> CallToolResult:
    first = TextContent(type="text", text=text)
    return result.model_copy(update={"content": [first, *result.content[1:]]})


def _selections(result: CallToolResult) -> Selections:
    found = (result.meta or {}).get(SELECTIONS)
    return found if isinstance(found, dict) else {}


def _answered(result: CallToolResult) -> CallToolResult:
    """`result` as the agent gets it: without the selections asked for the bridge."""
    if not result.meta or SELECTIONS not in result.meta:
        return result
    rest = {k: v for k, v in result.meta.items() if k != SELECTIONS}
    return result.model_copy(update={"meta": rest or None})


async def _listed(
    remote: Remote, name: str, arguments: dict[str, Any] | None = None
) -> tuple[list[dict[str, Any]], Selections]:
    """Every item the listing tool `name` gives for `arguments` (list_annotations page after
    page), and their selections; RemoteError with the server's message when it refuses."""
    items: list[dict[str, Any]] = []
    selections: Selections = {}
    paged = name == "list_annotations"
    while True:
        asked = dict(arguments or {})
        if paged:
            asked.update(limit=MAX_LIST, offset=len(items))
        result = await remote.call(name, asked, selections=paged)
        if result.is_error:
            raise RemoteError(" ".join(_texts(result)))
        found = json.loads(_texts(result)[0])
        items += found
        selections.update(_selections(result))
        if not paged or len(found) < MAX_LIST:
            return items, selections


async def _relocated(
    name: str, result: CallToolResult, checkout: Checkout, remote: Remote
) -> CallToolResult:
    """`result` with the notes' lines as the local checkout has them."""
    if result.is_error or not result.content or not isinstance(result.content[0], TextContent):
        return result
    data = json.loads(result.content[0].text)
    if name in ONE_ITEM:
        return _with_first(result, to_json(checkout.answers([data], _selections(result))[0]))
    if name in ITEM_LISTS:
        return _with_first(result, to_json(checkout.answers(data, _selections(result))))
    if name not in REVIEWS:
        return result
    review = data.get("review", data) if name == "wait_for_review" else data
    if not isinstance(review, dict) or not review.get("notes"):
        return result
    # A note's `at` comes from its lines: fetch the notes in full (one listing) and brief them.
    listed, selections = await _listed(remote, "list_annotations", {"status": "all"})
    wanted = {n["id"] for n in review["notes"]}
    full = [d for d in listed if d["id"] in wanted]
    briefs = {item.id: item.brief() for item in checkout.items(full, selections)}
    review["notes"] = [briefs.get(n["id"], n) for n in review["notes"]]
    return _with_first(result, to_json(data))


async def _export(remote: Remote, checkout: Checkout, arguments: dict[str, Any]) -> CallToolResult:
    """get_export from the local Markdown: the notes the export shows (all but the resolved
    ones) from the server, each where the local files say, written by `export.to_markdown` on
    the checkout's build (as `annotate mcp` in the checkout would)."""
    listed, selections = await _listed(remote, "list_annotations")
    notes, _ = await _listed(remote, "list_page_notes")
    annotations = [a for a in checkout.items(listed, selections) if isinstance(a, Annotation)]
    pages = [n for n in checkout.items(notes) if isinstance(n, PageNote)]
    return text_result(export.to_markdown(annotations, pages, current=checkout.build()))


async def _summary(remote: Remote, checkout: Checkout, arguments: dict[str, Any]) -> CallToolResult:
    """summary with the anchor states of the local Markdown: the server's counts, but for
    `anchorStates`, counted over the notes not resolved (of the `branch` asked for) as the
    local files locate them."""
    result = await remote.call("summary", arguments)
    if result.is_error:
        return result
    data = json.loads(_texts(result)[0])
    branch = arguments.get("branch")
    listed, selections = await _listed(
        remote, "list_annotations", {"branch": branch} if branch else None
    )
    here = [a for a in checkout.items(listed, selections) if isinstance(a, Annotation)]
    data["anchorStates"] = Summary.count_anchor_states(here)
    return _with_first(result, to_json(data))


# Tools answered here from the server's notes (the others: the server's answer, relocated).
OWN: dict[str, Callable[[Remote, Checkout, dict[str, Any]], Awaitable[CallToolResult]]] = {
    "get_export": _export,
    "summary": _summary,
}


def build_remote_server(
    url: str,
    token_file: str | os.PathLike[str],
    project: str | Path | None,
    *,
    problem: str | None = None,
) -> tuple[MCPServer, Remote]:
    """The stdio server of `annotate mcp --remote`: `annotate mcp`'s tools and prompts, each
    answered by the team server at `url`; `source`, `get_context`, `get_export` and `summary`'s
    anchor states from `project`'s files. `problem`: why there is no project (every tool call
    answers it)."""
    server = build_server(project)
    lowlevel = server._lowlevel_server
    remote = Remote(url, token_file)
    checkout = Checkout(project or ".")

    async def call_tool(
        ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult:
        if problem is not None:
            return text_result(problem, error=True)
        name, arguments = params.name, dict(params.arguments or {})
        timeout_s = CALL_TIMEOUT_S
        if name == "wait_for_review":
            wait = arguments.get("timeout_s", DEFAULT_WAIT_S)
            timeout_s += float(wait) if isinstance(wait, (int, float)) else MAX_WAIT_S

        async def progress(progress: float, total: float | None, message: str | None) -> None:
            # The server's progress, passed on (a no-op when the agent asked for none).
            await ctx.session.report_progress(progress, total, message)

        try:
            if name == "get_context":
                return _answered(await _context(arguments, remote, checkout))
            if name in OWN:
                try:
                    return await OWN[name](remote, checkout, arguments)
                except (ValueError, KeyError, TypeError, AttributeError, IndexError):
                    # Listings not shaped as this version reads them (a newer server?): the
                    # server's own answer.
                    return _answered(await remote.call(name, arguments))
            result = await remote.call(
                name, arguments, timeout_s=timeout_s, progress=progress, selections=name in SELECTED
            )
        except RemoteError as e:
            return text_result(str(e), error=True)
        try:
            return _answered(await _relocated(name, result, checkout, remote))
        except (RemoteError, ValueError, KeyError, TypeError, AttributeError):
            # An answer not shaped as this version writes them (a newer server?): as it came.
            return _answered(result)

    async def get_prompt(
        ctx: ServerRequestContext[Any], params: GetPromptRequestParams
    ) -> GetPromptResult:
        if problem is not None:
            raise MCPError(code=INVALID_PARAMS, message=problem)
        try:
            return await remote.prompt(params.name, params.arguments)
        except RemoteError as e:
            raise MCPError(code=INTERNAL_ERROR, message=str(e)) from None

    lowlevel.add_request_handler("tools/call", CallToolRequestParams, call_tool)
    lowlevel.add_request_handler("prompts/get", GetPromptRequestParams, get_prompt)
    return server, remote


async def _context(arguments: dict[str, Any], remote: Remote, checkout: Checkout) -> CallToolResult:
    """get_context from the local Markdown: the note from the server, the lines from here."""
    id, lines = arguments.get("id"), arguments.get("lines", context_module.DEFAULT_LINES)
    valid = isinstance(lines, int) and not isinstance(lines, bool)
    if not isinstance(id, str) or not valid or not 0 <= lines <= context_module.MAX_LINES:
        # The server refuses them with the SDK's own message, as annotate mcp does.
        return await remote.call("get_context", arguments)
    found = await remote.call("get_annotation", {"id": id}, selections=True)
    if found.is_error:
        return found
    note = _Note(checkout, json.loads(_texts(found)[0]), _selections(found))
    try:
        return text_result(context_module.get_context(note, id, lines).text())
    except AnnotateError as e:
        return text_result(str(e), error=True)


def run_remote(
    url: str,
    token_file: str | os.PathLike[str],
    project: str | Path | None,
    *,
    problem: str | None = None,
) -> None:
    """Serve the tools over stdio, answered by the team server, until the client closes."""
    server, remote = build_remote_server(url, token_file, project, problem=problem)

    async def main() -> None:
        async with remote.running():
            await serve_stdio(server)

    anyio.run(main)

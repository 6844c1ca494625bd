"""The Starlette app: the REST API (docs/http-api.md) under `/__annotate/api/`, the review page, the overlay
files and, for `annotate serve`, a static site with the overlay injected.

Each route translates one HTTP request into one library call, the same call the CLI command and the
MCP tool make (tests/test_one_call.py pins it); library errors become `{error, code}` with their
`http_status`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from .. import __version__, export, strictjson, urls
from .. import build as builds
from .. import validation as validate
from ..anchoring.pagecache import Anchors
from ..backends import DEFAULT_DIR
from ..errors import AnnotateError, AnnotationNotFound, ValidationError
from ..identity import Person
from ..models import Annotation
from ..store import Store, new_id
from . import review_page
from . import signin as team_module
from .feed import DEFAULT_INTERVAL, DEFAULT_TIMEOUT, ChangeFeed
from .openapi import openapi
from .responses import (
    API_HEADERS,
    BAD_JSON,
    INVALID,
    METHOD_NOT_ALLOWED,
    NOT_FOUND,
    HttpError,
    JsonResponse,
    error_response,
    json_bytes_response,
)
from .security import SIGNIN_PATH, CatchAll, Guard, in_thread
from .signin import Settings
from .static import OverlayFiles, SiteFiles, find_overlay_dir, overlay_snippet

__all__ = ["Endpoint", "create_app"]

log = logging.getLogger("annotate.web")

API = "/__annotate/api"
TRUE = ("true", "1", "yes")
FALSE = ("false", "0", "no")
# A `\uD800`-style escape may hold a lone surrogate, which SQLite cannot store as UTF-8.
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abAB]|\\u[dD][c-fC-F]")
STATUS_ACTIONS = ("start", "address", "accept", "reopen")


class Endpoint(Protocol):
    """An ASGI endpoint served beside the API at its `path`, with a lifespan the app's server
    runs: the MCP tools over HTTP (annotate/mcp_http.py), mounted by annotate/compose.py."""

    @property
    def path(self) -> str: ...

    @property
    def methods(self) -> tuple[str, ...]: ...

    def lifespan(self) -> contextlib.AbstractAsyncContextManager[None]: ...

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None: ...


# -- request helpers ----------------------------------------------------------------------------


async def _json_body(request: Request) -> dict[str, Any]:
    """The body as a JSON object, or 400 `invalid_json` / `invalid`.

    Only UTF-8 (RFC 8259 §8.1): `json.loads` would guess UTF-16 or UTF-32 from a body's bytes, and
    decode a lone surrogate's bytes (`\\xed\\xa0\\x80`) into a string SQLite cannot store (issue #17).
    """
    raw = await request.body()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise HttpError(
            400,
            BAD_JSON,
            "Request body must be UTF-8 (UTF-16, UTF-32 and encoded surrogates are refused): "
            f"the byte 0x{raw[e.start]:02x} at offset {e.start} is not valid UTF-8",
        ) from None
    if "\x00" in text[:4] or text.startswith("\ufeff"):
        # ASCII in UTF-16 or UTF-32 is valid UTF-8 with NUL bytes between the characters.
        raise HttpError(
            400,
            BAD_JSON,
            "Request body must be UTF-8 JSON without a byte order mark; this one looks like "
            "UTF-16 or UTF-32",
        )
    try:
        data = strictjson.loads(text)
        if b"\\u" in raw and SURROGATE_ESCAPE.search(raw):  # most bodies hold no \u at all
            json.dumps(data, ensure_ascii=False).encode("utf-8")
    except strictjson.TooDeep:
        raise HttpError(400, BAD_JSON, "Request body is nested too deeply") from None
    except UnicodeError:
        raise HttpError(
            400, BAD_JSON, "Request body holds an unpaired surrogate (\\ud800-\\udfff)"
        ) from None
    except ValueError as e:
        raise HttpError(400, BAD_JSON, f"Request body is not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise HttpError(400, INVALID, "Request body must be a JSON object")
    return data


def _fields(data: Mapping[str, Any], allowed: tuple[str, ...], what: str) -> None:
    validate.refuse_unknown(data, frozenset(allowed), what)


def _allow(request: Request, *names: str) -> None:
    """Refuse query parameters the route does not know: a typo must not widen a listing."""
    unknown = sorted(set(request.query_params) - set(names))
    if unknown:
        known = f"; this route takes {', '.join(names)}" if names else "; this route takes none"
        raise ValidationError(f"Unknown query parameter {unknown[0]!r}{known}", unknown[0])


def _page(request: Request) -> str | None:
    # Any way of writing the page (`/guide`, a full URL, …): the store brings it to its form;
    # what names no page at all is refused here, under this parameter's name.
    value = request.query_params.get("page")
    if value is None:
        return None
    if not value.strip():
        raise ValidationError("page must not be blank", "page")
    validate.page_url(urls.clean(value), "page")
    return value


def _bool(request: Request, name: str, default: bool = False) -> bool:
    value = request.query_params.get(name)
    if value is None:
        return default
    if value.lower() in TRUE:
        return True
    if value.lower() in FALSE:
        return False
    raise ValidationError(f"{name} must be true or false, got {value!r}", name)


def _list(request: Request, name: str) -> list[str] | None:
    """A repeatable parameter that may also be a comma list: `?status=open&status=addressed`
    or `?status=open,addressed`."""
    values = [v.strip() for raw in request.query_params.getlist(name) for v in raw.split(",")]
    if "" in values:
        raise ValidationError(f"{name} must not be empty", name)
    return values or None


def _int(request: Request, name: str) -> int | None:
    value = request.query_params.get(name)
    if value is None:
        return None
    if not value.isascii() or not value.isdigit() or len(value) > 18:
        raise ValidationError(f"{name} must be a whole number ≥ 0, got {value!r}", name)
    return int(value)


def _seconds(request: Request, name: str, maximum: float) -> float:
    value = request.query_params.get(name)
    if value is None:
        return maximum
    try:
        seconds = float(value)
    except ValueError:
        seconds = float("nan")
    if not 0 <= seconds <= 25:
        raise ValidationError(
            f"{name} must be a number of seconds from 0 to 25, got {value!r}", name
        )
    return min(seconds, maximum)


def _statuses(request: Request) -> str | list[str] | None:
    values = _list(request, "status")
    if values and "all" in values:
        return "all"
    return values


def _kind(request: Request) -> str | None:
    # page-notes/{id}/… routes act on page notes only; annotation routes take either id, as the
    # store's lifecycle methods do.
    return "page_note" if request.url.path.startswith(f"{API}/page-notes/") else None


def _by(request: Request) -> Person | None:
    """The person asking (team mode, annotate/web/security.py), None in single-user mode."""
    person: Person | None = getattr(request.state, "person", None)
    return person


def _created(data: dict[str, Any], url: str) -> JsonResponse:
    return JsonResponse(data, 201, {"Location": url})


# -- the app ------------------------------------------------------------------------------------


class Api:
    """The route handlers, bound to one store."""

    def __init__(self, store: Store, feed: ChangeFeed) -> None:
        self.store = store
        self.feed = feed
        self.anchors = Anchors(store)

    # annotations

    async def list_annotations(self, request: Request) -> Response:
        _allow(request, "page", "status", "type", "anchorState", "includeResolved", "branch")
        page = _page(request)
        status = _statuses(request)
        kind = request.query_params.get("type")
        anchor = _list(request, "anchorState")
        resolved = _bool(request, "includeResolved")
        items = await in_thread(
            functools.partial(
                self.store.list_annotations,
                page,
                status,
                type=kind,
                anchor_state=anchor,
                include_resolved=resolved,
                branch=request.query_params.get("branch"),
                as_json=True,
            )
        )
        return json_bytes_response(f'{{"annotations":{items}}}'.encode())

    async def create_annotation(self, request: Request) -> Response:
        _allow(request)
        data = await _json_body(request)
        item = await in_thread(functools.partial(self.store.add_annotation, data, by=_by(request)))
        return _created(item.to_dict(), f"{API}/annotations/{item.id}")

    async def get_annotation(self, request: Request) -> Response:
        _allow(request)
        id = request.path_params["id"]
        item = await in_thread(self.store.get_annotation, id)
        if not isinstance(item, Annotation):
            raise AnnotationNotFound(id)  # a page note's route is page-notes/{id}
        return JsonResponse(item.to_dict())

    async def edit_annotation(self, request: Request) -> Response:
        _allow(request)
        data = await _json_body(request)
        item = await in_thread(
            functools.partial(
                self.store.edit_annotation, request.path_params["id"], data, by=_by(request)
            )
        )
        return JsonResponse(item.to_dict())

    async def delete_annotation(self, request: Request) -> Response:
        _allow(request)
        await in_thread(
            functools.partial(
                self.store.delete, request.path_params["id"], kind="annotation", by=_by(request)
            )
        )
        return Response(status_code=204)

    # lifecycle: annotations and page notes alike

    async def reply(self, request: Request) -> Response:
        _allow(request)
        data = await _json_body(request)
        _fields(data, ("message", "role", "author"), "reply")
        id = request.path_params["id"]
        role = data.get("role", "reviewer")

        item = await in_thread(
            functools.partial(
                self.store.add_reply,
                id,
                data.get("message", ""),  # missing or empty: the same EmptyReply
                role=role,
                author=data.get("author"),
                kind=_kind(request),
                by=_by(request),
            )
        )
        return JsonResponse(item.to_dict(), 201)

    async def status(self, request: Request) -> Response:
        _allow(request)
        data = await _json_body(request)
        _fields(data, ("action", "replacedText", "note", "message", "deleted"), "status change")
        action = data.get("action")
        if action not in STATUS_ACTIONS:
            raise ValidationError(
                f"action must be one of {', '.join(STATUS_ACTIONS)}, got {action!r}", "action"
            )
        for name in ("replacedText", "message", "deleted"):
            if name in data and action != "address":
                raise ValidationError(f"{name} is only used with action 'address'", name)
        if "note" in data and action != "reopen":
            raise ValidationError("note is only used with action 'reopen'", "note")
        id = request.path_params["id"]

        kind = _kind(request)
        by = _by(request)
        if action == "start":
            call = functools.partial(self.store.set_in_progress, id, kind=kind, by=by)
        elif action == "address":
            call = functools.partial(
                self.store.address_annotation,
                id,
                data.get("replacedText"),
                message=data.get("message"),
                deleted=data.get("deleted", False),
                kind=kind,
                by=by,
            )
        elif action == "accept":
            call = functools.partial(self.store.accept, id, kind=kind, by=by)
        else:
            call = functools.partial(self.store.reopen, id, data.get("note"), kind=kind, by=by)
        item = await in_thread(call)
        return JsonResponse(item.to_dict())

    # page notes

    async def list_page_notes(self, request: Request) -> Response:
        _allow(request, "page", "status", "includeResolved", "branch")
        page = _page(request)
        status = _statuses(request)
        resolved = _bool(request, "includeResolved")
        items = await in_thread(
            functools.partial(
                self.store.list_page_notes,
                page,
                status,
                include_resolved=resolved,
                branch=request.query_params.get("branch"),
            )
        )
        return JsonResponse({"pageNotes": [n.to_dict() for n in items]})

    async def create_page_note(self, request: Request) -> Response:
        _allow(request)
        data = await _json_body(request)
        item = await in_thread(functools.partial(self.store.add_page_note, data, by=_by(request)))
        return _created(item.to_dict(), f"{API}/page-notes/{item.id}")

    async def get_page_note(self, request: Request) -> Response:
        _allow(request)
        item = await in_thread(self.store.get_page_note, request.path_params["id"])
        return JsonResponse(item.to_dict())

    async def edit_page_note(self, request: Request) -> Response:
        _allow(request)
        data = await _json_body(request)
        item = await in_thread(
            functools.partial(
                self.store.edit_page_note, request.path_params["id"], data, by=_by(request)
            )
        )
        return JsonResponse(item.to_dict())

    async def delete_page_note(self, request: Request) -> Response:
        _allow(request)
        await in_thread(
            functools.partial(
                self.store.delete, request.path_params["id"], kind="page_note", by=_by(request)
            )
        )
        return Response(status_code=204)

    # reviews

    async def list_reviews(self, request: Request) -> Response:
        _allow(request, "pending")
        pending = _bool(request, "pending")
        items = await in_thread(self.store.list_reviews, pending_only=pending)
        return JsonResponse({"reviews": [r.to_dict() for r in items]})

    async def create_review(self, request: Request) -> Response:
        _allow(request)
        data = await _json_body(request)
        review = await in_thread(functools.partial(self.store.create_review, data, by=_by(request)))
        return _created(review.to_dict(), f"{API}/reviews/{review.id}")

    async def get_review(self, request: Request) -> Response:
        _allow(request)
        review = await in_thread(self.store.get_review, request.path_params["id"])
        return JsonResponse(review.to_dict())

    async def review_changes(self, request: Request) -> Response:
        _allow(request)
        got = await in_thread(self.store.reviews.changes, request.path_params["id"])
        return JsonResponse(got)

    # reading

    async def anchor(self, request: Request) -> Response:
        _allow(request)
        data = await _json_body(request)
        _fields(data, ("pageUrl", "text", "includeResolved"), "anchor request")
        page_url = validate.page_url(data.get("pageUrl"))
        text = data.get("text")
        if not isinstance(text, str):
            raise ValidationError("text must be a string: the page's content text", "text")
        resolved = data.get("includeResolved", False)
        if not isinstance(resolved, bool):
            raise ValidationError("includeResolved must be true or false", "includeResolved")

        answer, same = await in_thread(self.anchors.locate, page_url, text, resolved)
        # After the answer: the Markdown parsed (again, if it left the cache) for the first note,
        # a new text indexed by lines for its next version; a reload skips it (`Anchors.due`).
        due = self.anchors.due(page_url, same)
        return json_bytes_response(answer, BackgroundTask(self._prepare, page_url) if due else None)

    def _prepare(self, page_url: str) -> None:
        self.anchors.catch_up(page_url)
        try:
            self.store.prepare_page(page_url)
        except (AnnotateError, OSError) as e:  # a convenience: the next write reports real errors
            log.debug("could not prepare %s: %s", page_url, e)

    async def export(self, request: Request) -> Response:
        _allow(request, "format", "includeResolved")
        fmt = request.query_params.get("format", "markdown")
        include = (
            None
            if "includeResolved" not in request.query_params
            else _bool(request, "includeResolved")
        )
        text = await in_thread(
            functools.partial(export.render, self.store, fmt, include_resolved=include)
        )
        media = {
            "markdown": "text/markdown; charset=utf-8",
            "json": "application/json",
            "w3c": 'application/ld+json; profile="http://www.w3.org/ns/anno.jsonld"',
        }[fmt]
        return Response(text, media_type=media, headers=API_HEADERS)

    async def changes(self, request: Request) -> Response:
        _allow(request, "since", "timeout")
        since = _int(request, "since")
        timeout = _seconds(request, "timeout", self.feed.timeout)
        if since is None:
            _, cursor = await in_thread(self.store.changes, 0, 0)
            return JsonResponse({"events": [], "cursor": cursor})
        events, cursor = await in_thread(self.store.changes, since)
        if not events and timeout > 0:
            await self.feed.wait(cursor, timeout, request)
            events, cursor = await in_thread(self.store.changes, since)
        return JsonResponse({"events": events, "cursor": cursor})

    async def shown(self, request: Request) -> Response:
        # A view showed the note of a show_annotation (issue #19, docs/http-api.md).
        _allow(request)
        data = await _json_body(request)
        _fields(data, ("seq", "viewer", "pageUrl"), "acknowledgement")
        viewer = data.get("viewer", new_id("v"))  # no id: a view that counts each time
        counted = await in_thread(
            self.store.acknowledge_show, data.get("seq"), viewer, data.get("pageUrl")
        )
        return JsonResponse({"seq": data.get("seq"), "counted": counted})

    async def summary(self, request: Request) -> Response:
        _allow(request, "branch")
        summary = await in_thread(
            functools.partial(self.store.summary, branch=request.query_params.get("branch"))
        )
        return JsonResponse(summary.to_dict())

    async def history(self, request: Request) -> Response:
        _allow(request)
        entries = await in_thread(
            functools.partial(self.store.history, request.path_params["id"], kind=_kind(request))
        )
        return JsonResponse({"history": [e.to_dict() for e in entries]})

    # screenshots (issue #30): a note's WebP image, sent and answered as the image itself

    async def get_screenshot(self, request: Request) -> Response:
        _allow(request)
        shot = await in_thread(
            functools.partial(
                self.store.screenshots.get, request.path_params["id"], kind=_kind(request)
            )
        )
        # Untrusted bytes: never sniffed as anything but the image it says it is, nor cached.
        return Response(
            shot.data,
            media_type="image/webp",
            headers={"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"},
        )

    async def put_screenshot(self, request: Request) -> Response:
        _allow(request)
        shot = await in_thread(
            functools.partial(
                self.store.screenshots.attach,
                request.path_params["id"],
                await request.body(),
                kind=_kind(request),
                by=_by(request),
            )
        )
        return JsonResponse(shot.to_dict())

    async def delete_screenshot(self, request: Request) -> Response:
        _allow(request)
        await in_thread(
            functools.partial(
                self.store.screenshots.delete,
                request.path_params["id"],
                kind=_kind(request),
                by=_by(request),
            )
        )
        return Response(status_code=204)

    async def list_screenshots(self, request: Request) -> Response:
        _allow(request)
        shots = await in_thread(self.store.screenshots.list)
        return JsonResponse({"screenshots": [s.to_dict() for s in shots.values()]})


def _api_routes(api: Api) -> list[Route]:
    """One route per path taking all of its methods, so that a 405 names them all in `Allow`."""
    one = "/{id:str}"
    table: dict[str, dict[str, Callable[[Request], Awaitable[Response]]]] = {
        "/annotations": {"GET": api.list_annotations, "POST": api.create_annotation},
        f"/annotations{one}": {
            "GET": api.get_annotation,
            "PATCH": api.edit_annotation,
            "DELETE": api.delete_annotation,
        },
        f"/annotations{one}/replies": {"POST": api.reply},
        f"/annotations{one}/status": {"POST": api.status},
        f"/annotations{one}/history": {"GET": api.history},
        "/page-notes": {"GET": api.list_page_notes, "POST": api.create_page_note},
        f"/page-notes{one}": {
            "GET": api.get_page_note,
            "PATCH": api.edit_page_note,
            "DELETE": api.delete_page_note,
        },
        f"/page-notes{one}/replies": {"POST": api.reply},
        f"/page-notes{one}/status": {"POST": api.status},
        f"/page-notes{one}/history": {"GET": api.history},
        "/reviews": {"GET": api.list_reviews, "POST": api.create_review},
        f"/reviews{one}": {"GET": api.get_review},
        f"/reviews{one}/changes": {"GET": api.review_changes},
        "/anchor": {"POST": api.anchor},
        "/export": {"GET": api.export},
        "/changes": {"GET": api.changes},
        "/shown": {"POST": api.shown},
        "/summary": {"GET": api.summary},
        "/screenshots": {"GET": api.list_screenshots},
    }
    for kind in ("/annotations", "/page-notes"):
        table[f"{kind}{one}/screenshot"] = {
            "GET": api.get_screenshot,
            "PUT": api.put_screenshot,
            "DELETE": api.delete_screenshot,
        }
    return [
        Route(f"{API}{path}", _by_method(handlers), methods=list(handlers))
        for path, handlers in table.items()
    ]


def _by_method(
    handlers: Mapping[str, Callable[[Request], Awaitable[Response]]],
) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        method = "GET" if request.method == "HEAD" else request.method
        return await handlers[method](request)

    return endpoint


def _methods_at(routes: list[Route]) -> Callable[[str], frozenset[str] | None]:
    """The methods the API route at a path takes (None: no such route), for `Guard`."""

    def methods(path: str) -> frozenset[str] | None:
        for route in routes:
            if route.path_regex.match(path):
                return frozenset(route.methods or ())
        return None

    return methods


def create_app(
    store: Store,
    *,
    token: str | Callable[[], str] | None = None,
    read_only: bool = False,
    site_dir: str | Path | None = None,
    allowed_hosts: list[str] | tuple[str, ...] | None = None,
    page_sources: Mapping[str, str] | Callable[[], Mapping[str, str]] | None = None,
    changes_timeout: float = DEFAULT_TIMEOUT,
    poll_interval: float = DEFAULT_INTERVAL,
    team: Settings | None = None,
    endpoint: Endpoint | None = None,
) -> Starlette:
    """The whole web surface of one store, everything under `/__annotate/` (docs/http-api.md).

    `token`: the project token (or a callable returning the current one, e.g. `tokens.TokenFile`);
    every API request must carry it in `X-Annotate-Token`. `read_only`: refuse every write with 405.
    `site_dir`: also serve this built site, with the overlay injected into its HTML.
    `allowed_hosts`: `Host` names accepted besides loopback (the `--host` the user chose).
    `page_sources`: page URL → Markdown path (relative to the project), recorded with
    `Store.register_pages`. `changes_timeout`, `poll_interval`: the change feed's long-poll.
    `team`: team mode (annotate/web/signin.py, docs/team.md): every request is a person's, and the
    project token (then not needed) is not used.
    `endpoint`: also serve it at its path (the MCP tools over HTTP: `annotate.compose.create_app`
    with `mcp=`); its server must run the app's lifespan.
    """
    if team is not None:
        token = "-"  # never compared: the Guard identifies people instead
    elif token is None:
        raise ValueError("create_app needs a token, or team settings")
    fixed = token
    current_token: Callable[[], str] = fixed if callable(fixed) else (lambda: fixed)
    if not current_token():
        raise ValueError("create_app needs a non-empty token")
    if store.build_source is None:
        # Notes made through the API record the build being served (annotate/build.py).
        store.build_source = builds.Current(store.project_dir)
    if page_sources is not None:
        store.register_pages(dict(page_sources() if callable(page_sources) else page_sources))
    feed = ChangeFeed(store, timeout=changes_timeout, interval=poll_interval)
    api = Api(store, feed)
    spec = openapi(__version__)

    async def health(request: Request) -> Response:
        return JsonResponse({"ok": True, "version": __version__})

    async def openapi_json(request: Request) -> Response:
        return JsonResponse(spec)

    async def review(request: Request) -> Response:
        filters = review_page.Filters.from_query(
            {k: request.query_params.getlist(k) for k in request.query_params}
        )

        def call() -> str:
            annotations, notes = store.all_items(include_resolved=True)
            return review_page.render(
                annotations, notes, filters, read_only=read_only, current=store.build
            )

        return HTMLResponse(
            await in_thread(call),
            headers={
                "Content-Security-Policy": review_page.CSP,
                "X-Content-Type-Options": "nosniff",
                "Referrer-Policy": "no-referrer",
                "Cache-Control": "no-store",
            },
        )

    async def to_review(request: Request) -> Response:
        return RedirectResponse("/__annotate/", status_code=301)

    api_routes = _api_routes(api)
    routes = [
        Route("/__annotate", to_review, methods=["GET"]),
        Route("/__annotate/", review, methods=["GET"]),
        Route("/__annotate/health", health, methods=["GET"]),
        Route("/__annotate/openapi.json", openapi_json, methods=["GET"]),
        Route(
            "/__annotate/overlay/{path:path}",
            OverlayFiles(find_overlay_dir()).handle,
            methods=["GET"],
        ),
        *api_routes,
    ]
    if team is not None:
        settings = team

        async def signin(request: Request) -> Response:
            return await team_module.signin(request, store, settings)

        async def signout(request: Request) -> Response:
            return await team_module.signout(request, settings)

        routes += [
            Route(SIGNIN_PATH, signin, methods=["GET", "POST"]),
            Route("/__annotate/signout", signout, methods=["POST"]),
        ]

    def snippet(request: Request) -> str:
        if team is not None:
            # The person's name and role instead of a token: the browser holds its sign-in
            # cookie (or passes the SSO proxy), which the page never sees.
            person = _by(request)
            return overlay_snippet(
                "",
                read_only=read_only,
                version=__version__,
                person=person.to_dict() if person else None,
            )
        # The token may be rotated while serving: each page gets the current one.
        return overlay_snippet(current_token(), read_only=read_only, version=__version__)

    lifespan = None
    if endpoint is not None:
        served = endpoint
        routes.append(Route(served.path, served, methods=list(served.methods)))

        @contextlib.asynccontextmanager
        async def lifespan(app: Starlette) -> AsyncIterator[None]:
            async with served.lifespan():
                yield

    if site_dir is not None:
        site = SiteFiles(
            Path(site_dir),
            snippet,
            hidden=[store.path.parent if store.path else store.project_dir / DEFAULT_DIR],
        )
        routes.append(Route("/{path:path}", site.handle, methods=["GET"]))

    async def annotate_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, AnnotateError)
        if exc.http_status >= 500:
            log.error("%s %s: %s", request.method, request.url.path, exc)
        return error_response(exc.http_status, exc.code, exc.public)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HttpError)
        return error_response(exc.status, exc.code, exc.message, exc.headers)

    async def starlette_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 405:
            message = f"Method {request.method} is not allowed on {request.url.path}"
            return error_response(405, METHOD_NOT_ALLOWED, message, exc.headers)
        if exc.status_code == 404:
            return error_response(404, NOT_FOUND, f"No route {request.url.path}")
        return error_response(exc.status_code, "http_error", str(exc.detail), exc.headers)

    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        middleware=[
            Middleware(CatchAll),
            Middleware(
                Guard,
                token=current_token,
                read_only=read_only,
                # The public URL's host is this server's too (team mode, behind a proxy).
                allowed_hosts=[
                    *(allowed_hosts or ()),
                    *([team.public_host] if team and team.public_host else []),
                ],
                methods=_methods_at(api_routes),
                identify=None if team is None else team_module.identify(team, store),
                allowed_origins=[team.public_origin] if team and team.public_origin else [],
            ),
        ],
        exception_handlers={
            AnnotateError: annotate_error,
            HttpError: http_error,
            HTTPException: starlette_error,
        },
    )
    app.state.feed = feed  # `annotate serve` closes it on Ctrl+C, ending pending long-polls
    return app

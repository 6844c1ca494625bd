"""The OpenAPI 3.1 description served at `/__annotate/openapi.json`, written by hand.

It is the contract the schemathesis test checks the app against (tests/test_web_schema.py): every
answer, errors included, must match it, and every request it calls valid must be accepted (issue
#17). So the request schemas state the rules of annotate/validation.py, not just the field types:
limits, site paths, blank and NUL-free text, and which fields each intent, kind and action takes.
The one rule JSON Schema cannot state is `position.end >= position.start`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import validation as v
from ..build import MAX_NAME as MAX_BUILD_NAME
from ..fields import ANNOTATION, COMPOSITES, PAGE_NOTE, REPLY, Composite, Field, Part, Table
from ..models import ANCHOR_STATES, DECISIONS, INTENTS, REVIEW_MODES, REVIEW_STATUSES, STATUSES

__all__ = ["openapi"]

ID_PATTERN = v.ID_PATTERN.pattern
# annotate/validation.py `page_url`: "/" then no second "/", no "..", query, fragment, backslash,
# space or control character.
SITE_PATH = r"^/(?!/)(?!.*/\.\.(?:/|$))[^?#\\\s\u0000-\u001f]*$"
# `validation.text`: never a NUL; `allow_empty=False`: at least one character that is not a space
# as Python reads it: JavaScript's `\s` leaves out U+001C–U+001F and U+0085, which `str.strip`
# removes (tests/test_web_schema.py generated a lone U+001D).
NO_NUL = r"^[^\u0000]*$"
FILLED = r"^[^\u0000]*[^\s\u0000\u001c-\u001f\u0085][^\u0000]*$"
VIEWER = r"^[A-Za-z0-9_-]{1,64}$"  # annotate/store.py VIEWER
MAX_CURSOR = 10**18 - 1  # `since` has at most 18 digits (annotate/web/app.py `_int`)
ERRORS = {
    400: "Invalid input: a body that is not UTF-8 JSON (`invalid_json`) or a field breaking a rule (`invalid`); the message names the field.",
    401: "Missing or wrong `X-Annotate-Token` (`unauthorized`); in team mode, no person or an "
    "unknown or revoked token.",
    403: "Foreign `Origin` (`forbidden_origin`) or a `Host` that is not loopback (`forbidden_host`); "
    "in team mode, what the person's role does not allow or an untrusted identity header "
    "(`forbidden`).",
    404: "No item with this id, or no such route (`not_found`).",
    405: "A method the route does not take (`method_not_allowed`, with `Allow`) or a write on a "
    "read-only server (`read_only`).",
    409: "A status change the lifecycle does not allow (`invalid_transition`).",
    413: "Request body over the limit: 1 MB, 8 MB for `anchor` (`too_large`).",
    415: "Request body that is not `application/json` (`unsupported_media_type`).",
    503: "The database is busy with another process's write; retry (`store_busy`).",
}
READ_ERRORS = (400, 401, 403, 503)
WRITE_ERRORS = (400, 401, 403, 405, 413, 415, 503)


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def _string(limit: int | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "string", **extra}
    if limit is not None:
        out["maxLength"] = limit
    return out


def _object(
    properties: dict[str, Any], required: list[str] | None = None, *, closed: bool = True
) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    if closed:
        out["additionalProperties"] = False
    return out


def _text(limit: int, *, filled: bool = False, nullable: bool = False) -> dict[str, Any]:
    """A string a client sends: within `limit`, no NUL, and not blank when `filled`."""
    out = _string(limit, pattern=FILLED if filled else NO_NUL)
    return _nullable(out) if nullable else out


def _when(
    condition: dict[str, Any], then: dict[str, Any], otherwise: dict[str, Any]
) -> dict[str, Any]:
    return {"if": condition, "then": then, "else": otherwise}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _body(schema: dict[str, Any], description: str = "") -> dict[str, Any]:
    return {
        "required": True,
        "description": description,
        "content": {"application/json": {"schema": schema}},
    }


def _op(
    summary: str,
    responses: dict[int, dict[str, Any]],
    errors: tuple[int, ...],
    *,
    params: list[dict[str, Any]] | None = None,
    body: dict[str, Any] | None = None,
    description: str = "",
    secure: bool = True,
) -> dict[str, Any]:
    out: dict[str, Any] = {"summary": summary, "responses": {}}
    if description:
        out["description"] = description
    if params:
        out["parameters"] = params
    if body:
        out["requestBody"] = body
    for status, response in responses.items():
        out["responses"][str(status)] = response
    for status in errors:
        out["responses"][str(status)] = _json(_ref("Error"), ERRORS[status])
    if not secure:
        out["security"] = []
    return out


def _query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    param: dict[str, Any] = {
        "name": name,
        "in": "query",
        "required": False,
        "description": description,
        "schema": schema,
    }
    if schema.get("type") == "array":
        param["style"] = "form"
        param["explode"] = True
    return param


ID_PARAM = {
    "name": "id",
    "in": "path",
    "required": True,
    "description": "The item's id.",
    "schema": {"type": "string", "pattern": ID_PATTERN},
}
PAGE = _query(
    "page",
    _string(v.MAX_PAGE_URL, pattern=SITE_PATH),
    "Only this page, a site path such as `/guide/`.",
)
STATUS = _query(
    "status",
    {"type": "array", "items": {"type": "string", "enum": [*STATUSES, "all"]}},
    "Only these statuses: repeat it, or give a comma list; `all` for every status. "
    "Default: everything but `resolved`.",
)
BRANCH = _query(
    "branch",
    # No NUL: a filter with one is refused (annotate/web/security.py), on PostgreSQL as on SQLite.
    _string(MAX_BUILD_NAME, minLength=1, pattern=NO_NUL),
    "Only notes made on a build of this branch (their `build.branch`).",
)
INCLUDE_RESOLVED = _query(
    "includeResolved", {"type": "boolean"}, "Include resolved items (default false)."
)
# Fields the store sets: accepted in a create body (a client may send back what it got) and ignored.
SERVER_SET: dict[str, Any] = {name: {} for name in sorted(v.SERVER_SET)}


TIMESTAMP = _string(description="ISO 8601 UTC, e.g. `2026-11-21T10:30:00.123Z`.")


def _value(f: Field, composites: dict[str, Any]) -> dict[str, Any]:
    """The schema of a field's value in an answer (annotate/fields.py)."""
    if f.type == "list":
        return {"type": "array", "items": composites[f.ref]}
    if f.type == "object":
        schema = composites[f.ref]
    elif f.type == "timestamp":
        schema = TIMESTAMP
    elif f.type == "enum":
        schema = {"type": "string", "enum": list(f.enum)}
    else:
        schema = {"type": f.type}
    return _nullable(schema) if f.nullable else schema


def _part(p: Part) -> dict[str, Any]:
    """The schema of a composite's part in an answer."""
    if p.type == "object":
        return {"type": "object", "additionalProperties": _string()}
    if p.type == "enum":
        return {"type": "string", "enum": list(p.enum)}
    schema = _string() if p.type == "string" else {"type": p.type}
    return _nullable(schema) if p.nullable else schema


def _composite(c: Composite) -> dict[str, Any]:
    """A composite's object (annotate/fields.py): every part; the optional ones present only
    when they say something."""
    return _object({p.key: _part(p) for p in c.parts}, [p.key for p in c.parts if not p.optional])


def _answer(table: Table, composites: dict[str, Any]) -> dict[str, Any]:
    """The schema of an item as the API answers it: every field, always present."""
    keys = [f.key for f in table.answer]
    return _object({f.key: _value(f, composites) for f in table.answer}, keys)


def _inputs(table: Table, ruled: dict[str, Any]) -> dict[str, Any]:
    """The request schemas of what a client sends to create an item, in the table's order:
    `ruled` for the fields with rules of their own, the rest by type and limit."""
    fields = [f for f in table if f.input]
    return {f.key: ruled[f.key] if f.key in ruled else _plain([f])[f.key] for f in fields}


def _plain(fields: Iterable[Field]) -> dict[str, Any]:
    """The request schemas of fields without rules of their own (validation.plain)."""
    out: dict[str, Any] = {}
    for f in fields:
        if f.type in ("boolean", "integer"):
            out[f.key] = _nullable({"type": f.type})
        else:
            out[f.key] = _text(f.limit or v.MAX_NOTE, filled=f.required, nullable=not f.required)
    return out


def _schemas() -> dict[str, Any]:
    string = _string()
    nullable_string = _nullable(string)
    timestamp = TIMESTAMP
    reply = _answer(REPLY, {})
    # The composites' schemas are components named after them, but a page's source (one key).
    composites = {name: _ref(name) for name in COMPOSITES} | {
        "PageSource": _composite(COMPOSITES["PageSource"]),
        "Reply": _ref("Reply"),
    }
    annotation = _answer(ANNOTATION, composites)
    page_note = _answer(PAGE_NOTE, composites)
    offset = {"type": "integer", "minimum": 0, "maximum": v.MAX_POSITION}
    element_input = _object(
        {
            **{
                k: _text(limit, nullable=True)
                for k, limit in v.ELEMENT_LIMITS.items()
                if k not in ("cssSelector", "tagName")
            },
            "cssSelector": _text(v.ELEMENT_LIMITS["cssSelector"], filled=True),
            "tagName": _nullable(
                _string(v.ELEMENT_LIMITS["tagName"], pattern="^(?:[A-Za-z][A-Za-z0-9-]*)?$")
            ),
            "attributes": _nullable(
                {
                    "type": "object",
                    "maxProperties": v.MAX_ATTRIBUTES,
                    "propertyNames": _text(v.MAX_ATTRIBUTE_NAME, filled=True),
                    "additionalProperties": _text(v.MAX_ATTRIBUTE_VALUE),
                }
            ),
        },
        ["cssSelector"],
    )
    # `validation.annotation_input`: the kind is `type`, else "element" when an elementSelector is
    # given; the intent decides whether `note` and `suggestion` are needed.
    is_element = {
        "anyOf": [
            {"properties": {"type": {"const": "element"}}, "required": ["type"]},
            {
                "properties": {"type": {"type": "null"}, "elementSelector": {"type": "object"}},
                "required": ["elementSelector"],
            },
        ]
    }
    needs_suggestion = {
        "properties": {"intent": {"enum": ["replace", "insert"]}},
        "required": ["intent"],
    }
    is_comment = {"properties": {"intent": {"enum": ["comment", None]}}}
    annotation_input = _object(
        _inputs(
            ANNOTATION,
            {
                "type": _nullable({"type": "string", "enum": ["text", "element"]}),
                "pageUrl": _string(v.MAX_PAGE_URL, pattern=SITE_PATH),
                "note": _text(v.MAX_NOTE, nullable=True),
                "intent": _nullable({"type": "string", "enum": list(INTENTS)}),
                "suggestion": _text(v.MAX_SUGGESTION, nullable=True),
                "selectedText": _text(v.MAX_SELECTED_TEXT, nullable=True),
                "quote": _nullable(
                    _object(
                        {
                            "exact": _text(v.MAX_SELECTED_TEXT, filled=True, nullable=True),
                            "prefix": _text(v.MAX_CONTEXT, nullable=True),
                            "suffix": _text(v.MAX_CONTEXT, nullable=True),
                        }
                    )
                ),
                "position": _nullable(_object({"start": offset, "end": offset}, ["start", "end"])),
                "elementSelector": _nullable(element_input),
                "inCode": _nullable({"type": "boolean"}),
                "occurrence": _nullable(
                    {"type": "integer", "minimum": 0, "maximum": v.MAX_POSITION}
                ),
            },
        )
        | SERVER_SET,
        ["pageUrl"],
    ) | {
        "allOf": [
            _when(
                is_element,
                {
                    "properties": {
                        **{
                            name: {"type": "null"}
                            for name in (
                                "selectedText",
                                "quote",
                                "position",
                                "inCode",
                                "occurrence",
                            )
                        },
                        "elementSelector": {"type": "object"},
                    },
                    "required": ["elementSelector"],
                },
                {
                    "properties": {
                        "elementSelector": {"type": "null"},
                        "selectedText": _text(v.MAX_SELECTED_TEXT, filled=True),
                    },
                    "required": ["selectedText"],
                },
            ),
            _when(
                needs_suggestion,
                {
                    "properties": {"suggestion": _text(v.MAX_SUGGESTION, filled=True)},
                    "required": ["suggestion"],
                },
                {"properties": {"suggestion": _nullable(_string(0))}},
            ),
            _when(
                is_comment,
                {"properties": {"note": _text(v.MAX_NOTE, filled=True)}, "required": ["note"]},
                {},
            ),
        ]
    }
    annotation_input["description"] = (
        "The annotation's JSON shape (docs/data-model.md). Text annotations need `selectedText` (and usually "
        "`quote` and `position`); element annotations need `elementSelector`. `note` is required "
        "for intent `comment`; `suggestion` for `replace` and `insert`. Fields the server sets "
        "(`id`, `status`, timestamps, …) are ignored. `position.end` must not be before "
        "`position.start`."
    )
    # An edit is checked against the annotation's current intent, which a schema cannot see: this
    # one asks for what is valid whatever it is (a note that is not blank unless the edit sets an
    # intent that needs none; a suggestion only together with the intent it goes with).
    annotation_patch = _object(
        {
            "note": _text(v.MAX_NOTE),
            "intent": {"type": "string", "enum": list(INTENTS)},
            "suggestion": _text(v.MAX_SUGGESTION, nullable=True),
            **_plain(f for f in v.ANNOTATION_PLAIN if f.editable),
        },
    ) | {
        "minProperties": 1,
        "allOf": [
            _when(
                {
                    "properties": {"intent": {"enum": ["delete", "replace", "insert"]}},
                    "required": ["intent"],
                },
                {},
                {"properties": {"note": _text(v.MAX_NOTE, filled=True)}},
            ),
            _when(
                needs_suggestion,
                {
                    "properties": {"suggestion": _text(v.MAX_SUGGESTION, filled=True)},
                    "required": ["suggestion"],
                },
                {
                    "anyOf": [
                        {"not": {"required": ["suggestion"]}},
                        {
                            "required": ["intent", "suggestion"],
                            "properties": {"suggestion": _nullable(_string(0))},
                        },
                    ]
                },
            ),
        ],
    }
    status_input = {
        "oneOf": [
            _object({"action": {"enum": ["start", "accept"]}}, ["action"]),
            _object(
                {
                    "action": {"const": "address"},
                    "replacedText": _text(v.MAX_SELECTED_TEXT, filled=True, nullable=True),
                    "message": _text(v.MAX_REPLY, filled=True, nullable=True),
                    "deleted": {"type": "boolean"},
                },
                ["action"],
            )
            # Deleted text has no replacement.
            | {
                "not": {
                    "properties": {
                        "deleted": {"const": True},
                        "replacedText": {"type": "string"},
                    },
                    "required": ["deleted", "replacedText"],
                }
            },
            _object(
                {"action": {"const": "reopen"}, "note": _text(v.MAX_REPLY, nullable=True)},
                ["action"],
            ),
        ],
        "description": "`start` → set_in_progress, `address` → address_annotation (with "
        "optional `replacedText`, the text now in the page where the quote was; `message`, an "
        "agent reply stored with the status; `deleted`, the text was deleted as asked), "
        "`accept`, `reopen` (with an optional follow-up `note`, added as a reviewer reply; it "
        "sends the note back to the agent at once).",
    }
    # A page note has no text to replace.
    page_note_status_input = status_input | {
        "oneOf": [
            *status_input["oneOf"][:1],
            _object(
                {
                    "action": {"const": "address"},
                    "message": _text(v.MAX_REPLY, filled=True, nullable=True),
                },
                ["action"],
            ),
            *status_input["oneOf"][2:],
        ]
    }
    return {
        "Error": _object(
            {"error": string, "code": string},
            ["error", "code"],
        ),
        "Reply": reply,
        **{name: _composite(c) for name, c in COMPOSITES.items() if name != "PageSource"},
        "Annotation": annotation,
        "PageNote": page_note,
        "AnnotationInput": annotation_input,
        "AnnotationPatch": annotation_patch,
        "PageNoteInput": _object(
            _inputs(
                PAGE_NOTE,
                {
                    "pageUrl": _string(v.MAX_PAGE_URL, pattern=SITE_PATH),
                    "note": _text(v.MAX_NOTE, filled=True),
                },
            )
            | {k: {} for k in sorted(v.SERVER_SET) if k in PAGE_NOTE.by_key},
            ["pageUrl", "note"],
        ),
        "PageNotePatch": _object(
            {
                "note": _text(v.MAX_NOTE, filled=True),
                **_plain(f for f in v.PAGE_NOTE_PLAIN if f.editable),
            },
        )
        | {"minProperties": 1},
        "ReplyInput": _object(
            {
                "message": _text(v.MAX_REPLY, filled=True),
                "role": {"type": "string", "enum": ["reviewer", "agent"]},
                "author": _text(v.MAX_AUTHOR, nullable=True),
            },
            ["message"],
        ),
        "StatusInput": status_input,
        "PageNoteStatusInput": page_note_status_input,
        "Review": _object(
            {
                "id": string,
                "mode": {"type": "string", "enum": list(REVIEW_MODES)},
                "message": string,
                "decision": _nullable({"type": "string", "enum": list(DECISIONS)}),
                "status": {"type": "string", "enum": list(REVIEW_STATUSES)},
                "author": nullable_string,
                "createdAt": timestamp,
                "pickedUpAt": _nullable(timestamp),
                "doneAt": _nullable(timestamp),
                "annotations": {"type": "array", "items": _ref("Annotation")},
                "pageNotes": {"type": "array", "items": _ref("PageNote")},
            },
            [
                "id",
                "mode",
                "message",
                "decision",
                "status",
                "author",
                "createdAt",
                "pickedUpAt",
                "doneAt",
                "annotations",
                "pageNotes",
            ],
        ),
        "ReviewInput": _object(
            {
                "mode": _nullable({"type": "string", "enum": list(REVIEW_MODES)}),
                "message": _text(v.MAX_MESSAGE, nullable=True),
                "author": _text(v.MAX_AUTHOR, nullable=True),
                "decision": _nullable({"type": "string", "enum": list(DECISIONS)}),
                "pageUrl": _text(v.MAX_PAGE_URL, nullable=True),
                "ids": _nullable(
                    {
                        "type": "array",
                        "items": string,
                        "minItems": 1,
                        "maxItems": v.MAX_REVIEW_IDS,
                    }
                ),
            }
        )
        | {
            "description": "Send to agent. Without `ids`: every open note not sent yet. With "
            "`ids`: just those notes (Ask agent now), the batch left as it is. `decision`: the "
            "reviewer's verdict (approve, approve_with_notes, request_changes); with one, a review "
            "without notes or message is allowed (an approval). `pageUrl`: without `ids`, only the open "
            "notes of that page join (a reviewed document's page sends its own notes)."
        },
        "AnchorInput": _object(
            {
                "pageUrl": _string(v.MAX_PAGE_URL, pattern=SITE_PATH),
                "text": string,
                "includeResolved": {"type": "boolean"},
            },
            ["pageUrl", "text"],
        ),
        "Anchor": _object(
            {
                "id": string,
                "start": _nullable({"type": "integer"}),
                "end": _nullable({"type": "integer"}),
                "score": _nullable({"type": "number"}),
                "method": _nullable(
                    {"type": "string", "enum": ["position", "exact", "replaced", "fuzzy"]}
                ),
            },
            ["id", "start", "end", "score", "method"],
        ),
        "Summary": _object(
            {
                "annotations": _counts(STATUSES),
                "pageNotes": _counts(STATUSES),
                "anchorStates": _counts(ANCHOR_STATES),
                "pages": {"type": "integer"},
                "pendingReviews": {"type": "integer"},
            },
            ["annotations", "pageNotes", "anchorStates", "pages", "pendingReviews"],
        ),
        "HistoryEntry": _object(
            {
                "at": timestamp,
                "action": string,
                "author": nullable_string,
                "status": _nullable({"type": "string", "enum": list(STATUSES)}),
            },
            ["at", "action", "author", "status"],
        ),
        "Change": _object(
            {
                "seq": {"type": "integer"},
                "at": timestamp,
                "kind": {"type": "string", "enum": ["annotation", "page_note", "review", "store"]},
                "id": string,
                "action": string,
                "pageUrl": nullable_string,
            },
            ["seq", "at", "kind", "id", "action", "pageUrl"],
        ),
    }


def _counts(keys: tuple[str, ...]) -> dict[str, Any]:
    return _object({k: {"type": "integer"} for k in keys}, list(keys))


def _paths() -> dict[str, Any]:
    annotation = _json(_ref("Annotation"), "The annotation.")
    item = _json({"anyOf": [_ref("Annotation"), _ref("PageNote")]}, "The annotation or page note.")
    page_note = _json(_ref("PageNote"), "The page note.")
    review = _json(_ref("Review"), "The review with its notes.")
    deleted = {"description": "Deleted."}
    history = _op(
        "Who changed the note and when",
        {
            200: _json(
                _object({"history": {"type": "array", "items": _ref("HistoryEntry")}}, ["history"]),
                "The note's change rows, oldest first.",
            )
        },
        (*READ_ERRORS, 404),
        params=[ID_PARAM],
        description="`action` is what the change did (`created`, `in_progress`, `addressed`, "
        "`resolved`, `reopened`, `edited`, `reviewer_reply`, `agent_reply`, …); `status` the "
        "status it set, null when it set none; `author` the person in team mode, else null. "
        "The annotation route accepts a page note's id as well, as the library does.",
    )
    lifecycle_ops = {
        "replies": _op(
            "Add a reply to the thread (always allowed)",
            {201: item},
            (*WRITE_ERRORS, 404),
            params=[ID_PARAM],
            body=_body(_ref("ReplyInput")),
            description="`role` defaults to `reviewer`. Annotation routes accept a page note's id "
            "as well, as the library does.",
        ),
        "status": _op(
            "Change the status: start, address, accept or reopen",
            {200: item},
            (*WRITE_ERRORS, 404, 409),
            params=[ID_PARAM],
            body=_body(_ref("StatusInput")),
        ),
    }
    return {
        "/__annotate/health": {
            "get": _op(
                "Is the server up? (no token needed)",
                {
                    200: _json(
                        _object(
                            {"ok": {"type": "boolean"}, "version": string_schema()},
                            ["ok", "version"],
                        ),
                        "Up.",
                    )
                },
                (403,),
                secure=False,
            )
        },
        "/__annotate/api/annotations": {
            "get": _op(
                "List annotations",
                {
                    200: _json(
                        _object(
                            {"annotations": {"type": "array", "items": _ref("Annotation")}},
                            ["annotations"],
                        ),
                        "Annotations in creation order.",
                    )
                },
                READ_ERRORS,
                params=[
                    PAGE,
                    STATUS,
                    _query(
                        "type",
                        {"type": "string", "enum": ["text", "element"]},
                        "Only text or element annotations.",
                    ),
                    _query(
                        "anchorState",
                        {"type": "array", "items": {"type": "string", "enum": list(ANCHOR_STATES)}},
                        "Only these anchor states (repeat, or a comma list).",
                    ),
                    INCLUDE_RESOLVED,
                    BRANCH,
                ],
            ),
            "post": _op(
                "Create an annotation",
                {201: annotation},
                WRITE_ERRORS,
                body=_body(_ref("AnnotationInput")),
            ),
        },
        "/__annotate/api/annotations/{id}": {
            "get": _op(
                "Get an annotation", {200: annotation}, (*READ_ERRORS, 404), params=[ID_PARAM]
            ),
            "patch": _op(
                "Edit note, intent, suggestion or page title",
                {200: annotation},
                (*WRITE_ERRORS, 404),
                params=[ID_PARAM],
                body=_body(_ref("AnnotationPatch")),
            ),
            "delete": _op(
                "Delete an annotation and its replies",
                {204: deleted},
                (*WRITE_ERRORS, 404),
                params=[ID_PARAM],
            ),
        },
        "/__annotate/api/annotations/{id}/replies": {"post": lifecycle_ops["replies"]},
        "/__annotate/api/annotations/{id}/status": {"post": lifecycle_ops["status"]},
        "/__annotate/api/annotations/{id}/history": {"get": history},
        "/__annotate/api/page-notes": {
            "get": _op(
                "List page notes",
                {
                    200: _json(
                        _object(
                            {"pageNotes": {"type": "array", "items": _ref("PageNote")}},
                            ["pageNotes"],
                        ),
                        "Page notes in creation order.",
                    )
                },
                READ_ERRORS,
                params=[PAGE, STATUS, INCLUDE_RESOLVED, BRANCH],
            ),
            "post": _op(
                "Create a page note",
                {201: page_note},
                WRITE_ERRORS,
                body=_body(_ref("PageNoteInput")),
            ),
        },
        "/__annotate/api/page-notes/{id}": {
            "get": _op("Get a page note", {200: page_note}, (*READ_ERRORS, 404), params=[ID_PARAM]),
            "patch": _op(
                "Edit a page note's note or page title",
                {200: page_note},
                (*WRITE_ERRORS, 404),
                params=[ID_PARAM],
                body=_body(_ref("PageNotePatch")),
            ),
            "delete": _op(
                "Delete a page note and its replies",
                {204: deleted},
                (*WRITE_ERRORS, 404),
                params=[ID_PARAM],
            ),
        },
        "/__annotate/api/page-notes/{id}/replies": {
            "post": lifecycle_ops["replies"] | {"summary": "Add a reply to a page note"}
        },
        "/__annotate/api/page-notes/{id}/status": {
            "post": lifecycle_ops["status"]
            | {
                "summary": "Change a page note's status",
                "requestBody": _body(_ref("PageNoteStatusInput")),
            }
        },
        "/__annotate/api/page-notes/{id}/history": {
            "get": history
            | {
                "summary": "Who changed the page note and when",
                "description": history["description"].rsplit(" The ", 1)[0],
            }
        },
        "/__annotate/api/reviews": {
            "get": _op(
                "List reviews (Send to agent batches)",
                {
                    200: _json(
                        _object(
                            {"reviews": {"type": "array", "items": _ref("Review")}}, ["reviews"]
                        ),
                        "Reviews, oldest first.",
                    )
                },
                READ_ERRORS,
                params=[
                    _query("pending", {"type": "boolean"}, "Only reviews no agent picked up yet.")
                ],
            ),
            "post": _op(
                "Send to agent: every open note not sent yet, or the notes `ids`, in a new review",
                {201: review},
                (*WRITE_ERRORS, 404, 409),
                body=_body(_ref("ReviewInput")),
            ),
        },
        "/__annotate/api/reviews/{id}": {
            "get": _op("Get a review", {200: review}, (*READ_ERRORS, 404), params=[ID_PARAM])
        },
        "/__annotate/api/reviews/{id}/changes": {
            "get": _op(
                "What changed in each Markdown file since the review was sent",
                {
                    200: _json(
                        _object(
                            {
                                "review": {"type": "string"},
                                "done": {"type": "boolean"},
                                "files": {
                                    "type": "array",
                                    "items": _object(
                                        {
                                            "path": {"type": "string"},
                                            "changed": {"type": "boolean"},
                                            "missing": {"type": "boolean"},
                                            "added": {"type": "integer"},
                                            "removed": {"type": "integer"},
                                            "diff": {"type": "string"},
                                        },
                                        ["path", "changed"],
                                    ),
                                },
                            },
                            ["review", "done", "files"],
                        ),
                        "One entry per file the review's notes pointed into when it was sent.",
                    )
                },
                (*READ_ERRORS, 404),
                params=[ID_PARAM],
                description="`diff` is a word diff, `[-removed-]{+added+}`, long unchanged "
                "runs cut to ` … `; `added` and `removed` count words. An unchanged file has "
                "`changed: false` and no diff; a deleted one `missing: true`.",
            )
        },
        "/__annotate/api/anchor": {
            "post": _op(
                "Where each text annotation of a page is now, in the page's current text",
                {
                    200: _json(
                        _object(
                            {"anchors": {"type": "array", "items": _ref("Anchor")}}, ["anchors"]
                        ),
                        "One entry per text annotation of the page, in creation order; "
                        "`start` is null when it could not be located.",
                    )
                },
                (400, 401, 403, 413, 415, 503),
                body=_body(_ref("AnchorInput"), "The page URL and its content text."),
                description="Stores nothing, so it is allowed on a read-only server. Body limit "
                "8 MB.",
            )
        },
        "/__annotate/api/export": {
            "get": _op(
                "Export every note",
                {
                    200: {
                        "description": "The export.",
                        "content": {
                            "text/markdown": {"schema": {"type": "string"}},
                            "application/json": {"schema": {"type": "object"}},
                            "application/ld+json": {"schema": {"type": "object"}},
                        },
                    }
                },
                READ_ERRORS,
                params=[
                    _query(
                        "format",
                        {"type": "string", "enum": ["markdown", "json", "w3c"]},
                        "`markdown` (default, text/markdown), `json` (application/json) or "
                        "`w3c` (application/ld+json).",
                    ),
                    _query(
                        "includeResolved",
                        {"type": "boolean"},
                        "Include resolved notes (default: only in json and w3c).",
                    ),
                ],
            )
        },
        "/__annotate/api/changes": {
            "get": _op(
                "The change feed (long-poll)",
                {
                    200: _json(
                        _object(
                            {
                                "events": {"type": "array", "items": _ref("Change")},
                                "cursor": {"type": "integer"},
                            },
                            ["events", "cursor"],
                        ),
                        "Changes after `since`, and the cursor to pass next.",
                    )
                },
                READ_ERRORS,
                params=[
                    _query(
                        "since",
                        {"type": "integer", "minimum": 0, "maximum": MAX_CURSOR},
                        "Cursor from the previous answer. Without it, the answer is immediate "
                        "and carries only the current cursor.",
                    ),
                    _query(
                        "timeout",
                        {"type": "number", "minimum": 0, "maximum": 25},
                        "Seconds to wait for a change (default and maximum 25).",
                    ),
                ],
                description="Answers at once when there are changes after `since`, else waits "
                "until one happens (in any process) or the timeout passes.",
            )
        },
        "/__annotate/api/shown": {
            "post": _op(
                "A view showed the note of a show_annotation",
                {
                    200: _json(
                        _object(
                            {"seq": {"type": "integer"}, "counted": {"type": "boolean"}},
                            ["seq", "counted"],
                        ),
                        "Whether this acknowledgement counted: false for a view already "
                        "counted, or a view of another page.",
                    )
                },
                (*WRITE_ERRORS, 404),
                body=_body(
                    _object(
                        {
                            "seq": {"type": "integer", "minimum": 1, "maximum": MAX_CURSOR},
                            "viewer": _string(64, pattern=VIEWER),
                            "pageUrl": _string(v.MAX_PAGE_URL, pattern=SITE_PATH),
                        },
                        ["seq"],
                    ),
                    "`seq`: the change number of the `show` event; `viewer`: an id the view "
                    "makes up, counted once; `pageUrl`: the view's page (another page's view "
                    "is not counted).",
                ),
                description="The acknowledgement of a `show` event of the change feed: "
                "show_annotation answers how many views sent one.",
            )
        },
        **_screenshot_paths(),
        "/__annotate/api/summary": {
            "get": _op(
                "Counts by status and anchor state",
                {200: _json(_ref("Summary"), "The counts.")},
                READ_ERRORS,
                params=[BRANCH],
                description="With `branch`: only notes made on a build of that branch, and only "
                "the waiting reviews holding one of them.",
            )
        },
    }


def _screenshot_paths() -> dict[str, Any]:
    """A note's screenshot (issue #30, annotate/screenshots.py): sent and answered as the WebP
    image itself, at most 1 MB; `/screenshots` lists which notes have one."""
    info = _json(_ref("Screenshot"), "The screenshot's description.")
    image = {
        "description": "The WebP image.",
        "content": {"image/webp": {"schema": {"type": "string", "format": "binary"}}},
    }
    ops = {
        "get": _op("Get a note's screenshot", {200: image}, (*READ_ERRORS, 404), params=[ID_PARAM]),
        "put": _op(
            "Attach a screenshot to a note (replaces its screenshot)",
            {200: info},
            (*WRITE_ERRORS, 404),
            params=[ID_PARAM],
            body={
                "required": True,
                "description": "A WebP image (RIFF…WEBP, VP8/VP8L/VP8X), at most 1 MB.",
                "content": {"image/webp": {"schema": {"type": "string", "format": "binary"}}},
            },
        ),
        "delete": _op(
            "Remove a note's screenshot",
            {204: {"description": "Removed."}},
            (*WRITE_ERRORS, 404),
            params=[ID_PARAM],
        ),
    }
    listing = _json(
        _object({"screenshots": {"type": "array", "items": _ref("Screenshot")}}, ["screenshots"]),
        "Every note's screenshot, described (no image).",
    )
    return {
        "/__annotate/api/annotations/{id}/screenshot": ops,
        "/__annotate/api/page-notes/{id}/screenshot": ops,
        "/__annotate/api/screenshots": {
            "get": _op("Which notes have a screenshot", {200: listing}, READ_ERRORS)
        },
    }


SCREENSHOT_SCHEMA = {
    "type": "object",
    "properties": {
        "noteId": {"type": "string"},
        "mediaType": {"const": "image/webp"},
        "width": {"type": "integer", "minimum": 1},
        "height": {"type": "integer", "minimum": 1},
        "size": {"type": "integer", "minimum": 1},
        "createdAt": TIMESTAMP,
        "author": {"type": ["string", "null"]},
    },
    "required": ["noteId", "mediaType", "width", "height", "size", "createdAt", "author"],
    "additionalProperties": False,
}


def string_schema() -> dict[str, Any]:
    return {"type": "string"}


def openapi(version: str) -> dict[str, Any]:
    """The whole document."""
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "mkdocs-annotate",
            "version": version,
            "description": "Review notes on a rendered site, for coding agents. Every "
            "`/__annotate/api/` request carries the project's token in `X-Annotate-Token`; "
            'errors are `{"error": message, "code": code}`. See docs/http-api.md.',
        },
        "paths": _paths(),
        "components": {
            "schemas": {**_schemas(), "Screenshot": SCREENSHOT_SCHEMA},
            "securitySchemes": {
                "token": {"type": "apiKey", "in": "header", "name": "X-Annotate-Token"}
            },
        },
        "security": [{"token": []}],
    }

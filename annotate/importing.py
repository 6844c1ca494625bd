"""`annotate import`: our JSON export, and astro-inline-review's `inline-review.json`.

Every item goes through the same validation as a new note, keeps its id, status, timestamps and
replies, and the whole file lands in one transaction or not at all. Ids already in the store are
skipped, so importing the same file twice changes nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import build as builds
from . import validation as validate
from .errors import ImportFormatError, ValidationError
from .export import JSON_FORMAT
from .fields import ANNOTATION
from .models import ANCHOR_STATES, DECISIONS, REVIEW_MODES, STATUSES
from .store import new_id, now

if TYPE_CHECKING:
    from .store import Store

__all__ = ["Rows", "import_data", "import_file", "rows_of"]

MAX_TIMESTAMP = 40


def import_file(store: Store, path: str | os.PathLike[str]) -> dict[str, int]:
    p = Path(path)
    try:
        raw = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ImportFormatError(f"{p} does not exist") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ImportFormatError(f"{p} cannot be read: {e}") from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ImportFormatError(f"{p} is not valid JSON: {e}") from None
    try:
        return import_data(store, data)
    except ValidationError as e:
        raise ImportFormatError(f"{p}: {e.message}", e.field) from None


def import_data(store: Store, data: Any) -> dict[str, int]:
    return store.insert_raw(*rows_of(data))


def rows_of(data: Any) -> Rows:
    """The validated rows of an import (annotations, page notes, replies, reviews), for
    `Store.insert_raw`; raises `ValidationError` naming the item at fault."""
    if not isinstance(data, Mapping):
        raise ImportFormatError("An import must be a JSON object")
    if data.get("format") == JSON_FORMAT:
        if data.get("version") != 1:
            raise ImportFormatError(
                f"This export has version {data.get('version')!r}; this mkdocs-annotate reads "
                "version 1"
            )
        return _ours(data)
    if data.get("version") == 1 and "annotations" in data and "format" not in data:
        return _inline_review(data)
    raise ImportFormatError(
        "Not an export of mkdocs-annotate nor an astro-inline-review inline-review.json"
    )


Rows = tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]


def _list(data: Mapping[str, Any], key: str) -> list[Any]:
    value = data.get(key) or []
    if not isinstance(value, list):
        raise ImportFormatError(f"{key} must be a list", key)
    return value


def _at(where: str, error: ValidationError) -> ValidationError:
    return ValidationError(f"{where}: {error.message}", error.field)


def _id(value: Any, where: str, prefix: str) -> str:
    if value is None:
        return new_id(prefix)
    if not validate.is_valid_id(value):
        raise ValidationError(f"{where}: id {value!r} is not a valid id", "id")
    return value


def _stamp(value: Any, field: str, default: str | None) -> str | None:
    if value is None:
        return default
    return validate.text(value, field, MAX_TIMESTAMP, allow_empty=False)


def _status(value: Any, resolved_at: Any) -> str:
    # inline-review files from before statuses existed: resolvedAt alone means resolved.
    if value is None:
        return "resolved" if resolved_at else "open"
    # A JSON value equal to a status is that string.
    if not isinstance(value, str) or value not in STATUSES:
        raise ValidationError(
            f"status must be one of {', '.join(STATUSES)}, got {value!r}", "status"
        )
    return value


def _replies(item: Mapping[str, Any], parent: str, default_role: str) -> list[dict[str, Any]]:
    out = []
    replies = item.get("replies") or []
    if not isinstance(replies, list):
        raise ValidationError("replies must be a list", "replies")
    for j, r in enumerate(replies):
        if not isinstance(r, Mapping):
            raise ValidationError(f"replies[{j}] must be an object", "replies")
        role = r.get("role") or default_role
        if role not in ("reviewer", "agent"):
            raise ValidationError(f"replies[{j}].role must be reviewer or agent", "role")
        out.append(
            {
                "id": _id(r.get("id"), f"replies[{j}]", "r"),
                "parent_id": parent,
                "role": role,
                "author": validate.text(r.get("author"), "author", validate.MAX_AUTHOR) or None,
                "message": validate.text(
                    r.get("message"), "message", validate.MAX_REPLY, required=True
                ),
                "created_at": _stamp(r.get("createdAt"), "createdAt", now()),
            }
        )
    return out


def _lifecycle(item: Mapping[str, Any]) -> dict[str, Any]:
    stamp = now()
    created = _stamp(item.get("createdAt"), "createdAt", stamp)
    return {
        "status": _status(item.get("status"), item.get("resolvedAt")),
        "created_at": created,
        "updated_at": _stamp(item.get("updatedAt"), "updatedAt", created),
        "in_progress_at": _stamp(item.get("inProgressAt"), "inProgressAt", None),
        "addressed_at": _stamp(item.get("addressedAt"), "addressedAt", None),
        "resolved_at": _stamp(item.get("resolvedAt"), "resolvedAt", None),
        **_build(item.get("build")),
    }


def _build(value: Any) -> dict[str, Any]:
    """The build a note was made on (`{branch, commit}`, annotate/build.py) as its columns."""
    found = builds.of(value)
    if found is None:
        return {}
    return {"build_branch": found.branch, "build_commit": found.commit}


def _annotation_row(
    shape: Mapping[str, Any], item: Mapping[str, Any], where: str
) -> dict[str, Any]:
    fields = validate.annotation_input(shape, require_note=False)
    if fields["element_selector"] is not None:
        fields["element_selector"] = json.dumps(fields["element_selector"])
    replaced = item.get("replacedText")
    if replaced is not None:
        replaced = validate.text(replaced, "replacedText", validate.MAX_SELECTED_TEXT)
    return {
        "id": _id(item.get("id"), where, "a"),
        **fields,
        "replaced_text": replaced or None,
        **_lifecycle(item),
    }


def _ours(data: Mapping[str, Any]) -> Rows:
    annotations, replies, reviews = [], [], []
    review_of: dict[str, str] = {}
    for i, r in enumerate(_list(data, "reviews")):
        where = f"reviews[{i}]"
        try:
            if not isinstance(r, Mapping) or r.get("mode") not in REVIEW_MODES:
                raise ValidationError("mode must be 'edit' or 'review'", "mode")
            rid = _id(r.get("id"), where, "rv")
            reviews.append(
                {
                    "id": rid,
                    "mode": r["mode"],
                    "message": validate.text(r.get("message"), "message", validate.MAX_MESSAGE)
                    or "",
                    "author": validate.text(r.get("author"), "author", validate.MAX_AUTHOR) or None,
                    "created_at": _stamp(r.get("createdAt"), "createdAt", now()),
                    "picked_up_at": _stamp(r.get("pickedUpAt"), "pickedUpAt", None),
                    "done_at": _stamp(r.get("doneAt"), "doneAt", None),
                    # A verdict it carried (issue #30 item 5); an unknown one is not kept.
                    "decision": r.get("decision") if r.get("decision") in DECISIONS else None,
                }
            )
            for key in ("annotationIds", "pageNoteIds"):
                for item_id in r.get(key) or []:
                    review_of[str(item_id)] = rid
        except ValidationError as e:
            raise _at(where, e) from None
    for i, a in enumerate(_list(data, "annotations")):
        where = f"annotations[{i}]"
        try:
            if not isinstance(a, Mapping):
                raise ValidationError("must be an object")
            shape = {k: a.get(k) for k in validate.ANNOTATION_INPUT if k in a}
            row = _annotation_row(shape, a, where)
            row.update(_anchor(a))
            row["review_id"] = review_of.get(row["id"])
            annotations.append(row)
            replies += _replies(a, row["id"], "reviewer")
        except ValidationError as e:
            raise _at(where, e) from None
    notes, note_replies = _page_notes(data, review_of, default_role="reviewer")
    return annotations, notes, replies + note_replies, reviews


def _anchor(a: Mapping[str, Any]) -> dict[str, Any]:
    # `pending` (exported while re-located after a branch switch): anchored, located on a read.
    state = a.get("anchorState") or "anchored"
    state = "anchored" if state == "pending" else state
    if state not in ANCHOR_STATES:
        raise ValidationError(
            f"anchorState must be one of {', '.join(ANCHOR_STATES)}", "anchorState"
        )
    score = a.get("anchorScore")
    if score is not None and (
        isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 100
    ):
        raise ValidationError("anchorScore must be a number from 0 to 100", "anchorScore")
    out: dict[str, Any] = {"anchor_state": state, "anchor_score": score}
    build = a.get("build")
    anchored = builds.make(None, build.get("anchoredOn")) if isinstance(build, Mapping) else None
    if anchored is not None:
        out["anchored_on"] = anchored.commit
    out.update(_source(a.get("source"), "source"))
    out.update(_source(a.get("originalSource"), "originalSource"))
    return out


def _source(source: Any, field: str) -> dict[str, Any]:
    """A `{path, lineStart, lineEnd, excerpt}` as the columns of the field table's composite
    (annotate/fields.py: `source_path`, …, or `original_path`, …), each part checked."""
    if source is None:
        return {}
    if not isinstance(source, Mapping):
        raise ValidationError(f"{field} must be an object", field)
    composite = ANNOTATION[field].composite
    assert composite is not None, field
    out: dict[str, Any] = {}
    # An import takes what a note was made on; `kind`, `object` and `lastKnown` the store
    # finds again.
    for part in (p for p in composite.parts if p.stored and not p.optional):
        value = source.get(part.key)
        if part.type == "integer":
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValidationError(f"{field} lines must be positive integers", field)
        else:
            assert part.limit is not None, part.key
            name = f"{field}.{part.key}"
            value = validate.text(value, name, part.limit, required=part.blank is None)
            if part.blank is not None:
                value = value or part.blank
        out[part.column] = value
    return out


def _page_notes(
    data: Mapping[str, Any], review_of: Mapping[str, str], *, default_role: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The `pageNotes` of either format, and their replies."""
    notes, replies = [], []
    for i, n in enumerate(_list(data, "pageNotes")):
        where = f"pageNotes[{i}]"
        try:
            row = _page_note_row(n, where)
            row["review_id"] = review_of.get(row["id"])
            notes.append(row)
            replies += _replies(n, row["id"], default_role)
        except ValidationError as e:
            raise _at(where, e) from None
    return notes, replies


def _page_note_row(n: Any, where: str) -> dict[str, Any]:
    if not isinstance(n, Mapping):
        raise ValidationError("must be an object")
    shape = {k: n.get(k) for k in validate.PAGE_NOTE_INPUT if k in n}
    return {"id": _id(n.get("id"), where, "p"), **validate.page_note_input(shape), **_lifecycle(n)}


def _inline_review(data: Mapping[str, Any]) -> Rows:
    annotations, replies = [], []
    for i, a in enumerate(_list(data, "annotations")):
        where = f"annotations[{i}]"
        try:
            if not isinstance(a, Mapping):
                raise ValidationError("must be an object")
            kind = a.get("type") or ("element" if a.get("elementSelector") else "text")
            shape: dict[str, Any] = {
                "type": kind,
                "pageUrl": a.get("pageUrl"),
                "pageTitle": a.get("pageTitle"),
                "note": a.get("note"),
            }
            if kind == "text":
                found = a.get("range")
                rng: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
                selected = a.get("selectedText") or rng.get("selectedText")
                shape["selectedText"] = selected
                # Their context strings are longer than ours; keep the 32 characters nearest.
                shape["quote"] = {
                    "exact": selected,
                    "prefix": (rng.get("contextBefore") or "")[-32:],
                    "suffix": (rng.get("contextAfter") or "")[:32],
                }
            else:
                shape["elementSelector"] = a.get("elementSelector")
            row = _annotation_row(shape, a, where)
            row["review_id"] = None
            annotations.append(row)
            # Their replies came from the MCP tool, so a reply without a role is the agent's.
            replies += _replies(a, row["id"], "agent")
        except ValidationError as e:
            raise _at(where, e) from None
    notes, note_replies = _page_notes(data, {}, default_role="agent")
    return annotations, notes, replies + note_replies, []

"""Checks on everything a reviewer, an agent or an import hands to the store.

Every rule names the field it guards, so the CLI, the API and the MCP tools can all say what was wrong.
Creating takes the JSON shape of annotate/fields.py; fields the server sets are accepted and
ignored, unknown fields are refused. The limits and the field sets come from that table; a field
without rules of its own is checked by its type and limit (`plain`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TypeGuard

from .errors import EmptyReplacedText, EmptyReply, ValidationError
from .fields import ANNOTATION, PAGE_NOTE, REPLY, Composite, Field, Part, Table
from .models import DECISIONS, INTENTS, REVIEW_MODES


def _limit(table: Table, key: str) -> int:
    limit = table[key].limit
    assert limit is not None, key
    return limit


def _composite(key: str) -> Composite:
    composite = ANNOTATION[key].composite
    assert composite is not None, key
    return composite


def _part_limit(part: Part) -> int:
    assert part.limit is not None, part.key
    return part.limit


# The composite fields a client sends, each a table of parts (annotate/fields.py).
QUOTE = _composite("quote")
POSITION = _composite("position")
ELEMENT_SELECTOR = _composite("elementSelector")


# Limits per field, from the field table (annotate/fields.py).
MAX_NOTE = _limit(ANNOTATION, "note")
MAX_SELECTED_TEXT = _limit(ANNOTATION, "selectedText")
MAX_SUGGESTION = _limit(ANNOTATION, "suggestion")
MAX_REPLY = _limit(REPLY, "message")
MAX_CONTEXT = _part_limit(QUOTE["prefix"])
MAX_PAGE_URL = _limit(ANNOTATION, "pageUrl")
MAX_PAGE_TITLE = _limit(ANNOTATION, "pageTitle")
MAX_AUTHOR = _limit(ANNOTATION, "author")
MAX_MESSAGE = 10_000
MAX_REVIEW_IDS = 1_000
MAX_POSITION = 100_000_000
ELEMENT_LIMITS = {p.key: _part_limit(p) for p in ELEMENT_SELECTOR.parts if p.type == "string"}
_ATTRIBUTES = ELEMENT_SELECTOR["attributes"]
assert _ATTRIBUTES.entries is not None and _ATTRIBUTES.name_limit is not None
MAX_ATTRIBUTES = _ATTRIBUTES.entries
MAX_ATTRIBUTE_NAME = _ATTRIBUTES.name_limit
MAX_ATTRIBUTE_VALUE = _part_limit(_ATTRIBUTES)

# A lone UTF-16 surrogate (`"\ud800"` in JSON, or a byte that is not UTF-8 in a command-line
# argument) is a str Python holds but cannot write as UTF-8: SQLite, the terminal and the MCP
# transport would all fail on it later (issue #17).
SURROGATE = re.compile("[\ud800-\udfff]")
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$")
# The parts a composite's table gives a pattern, compiled (tagName: an element name).
PATTERNS = {
    p.key: re.compile(p.pattern[0])
    for c in (QUOTE, POSITION, ELEMENT_SELECTOR)
    for p in c.parts
    if p.pattern is not None
}
TAG_PATTERN = PATTERNS["tagName"]

# Fields of the JSON shape that the store sets itself: accepted on create (a client may send back an
# object it received) but never taken from the client.
SERVER_SET = ANNOTATION.server_set | PAGE_NOTE.server_set
ANNOTATION_INPUT = ANNOTATION.input_keys
PAGE_NOTE_INPUT = PAGE_NOTE.input_keys
ANNOTATION_EDITABLE = ANNOTATION.editable_keys
PAGE_NOTE_EDITABLE = PAGE_NOTE.editable_keys
# Fields checked by their own rules below; every other field a client sends is checked by its
# type and limit alone (`plain`).
RULED = frozenset(
    {
        "type",
        "pageUrl",
        "note",
        "intent",
        "suggestion",
        "selectedText",
        "quote",
        "position",
        "elementSelector",
        "inCode",
        "occurrence",
    }
)
ANNOTATION_PLAIN = tuple(f for f in ANNOTATION if f.input and f.key not in RULED)
PAGE_NOTE_PLAIN = tuple(f for f in PAGE_NOTE if f.input and f.key not in RULED)


def is_valid_id(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and bool(ID_PATTERN.match(value))


def text(
    value: Any, field: str, limit: int, *, required: bool = False, allow_empty: bool = True
) -> str | None:
    """A string field: type, emptiness and length checked; None passes unless required."""
    if value is None:
        if required:
            raise ValidationError(f"{field} is required", field)
        return None
    if not isinstance(value, str):
        raise ValidationError(f"{field} must be a string", field)
    if "\x00" in value:
        raise ValidationError(f"{field} must not contain NUL characters", field)
    refuse_surrogates(value, field)
    if len(value) > limit:
        raise ValidationError(
            f"{field} is {len(value):,} characters long; the limit is {limit:,}", field
        )
    if not allow_empty and not value.strip():
        raise ValidationError(f"{field} must not be empty", field)
    return value


def refuse_surrogates(value: str, field: str) -> None:
    """Refuse a string Python holds but cannot write as UTF-8 (see SURROGATE)."""
    bad = SURROGATE.search(value)
    if bad:
        raise ValidationError(
            f"{field} must be valid Unicode text; it holds the lone surrogate "
            f"\\u{ord(bad.group()):04x} at character {bad.start() + 1}",
            field,
        )


def plain(f: Field, value: Any) -> Any:
    """A field without rules of its own: its type and limit checked, null as the table says."""
    if f.type == "boolean":
        if value is not None and not isinstance(value, bool):
            raise ValidationError(f"{f.key} must be true or false, got {value!r}", f.key)
        return value
    if f.type == "integer":
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise ValidationError(f"{f.key} must be a whole number, got {value!r}", f.key)
        return value
    checked = text(value, f.key, f.limit or MAX_NOTE, required=f.required)
    return checked or (f.blank if f.blank is not None else None)


def plain_changes(fields: tuple[Field, ...], data: Mapping[str, Any]) -> dict[str, Any]:
    """The columns of the plain editable fields in `data`."""
    return {f.col: plain(f, data[f.key]) for f in fields if f.editable and f.key in data}


def _nothing_to_change(editable: frozenset[str], plain: tuple[Field, ...]) -> str:
    """ "give note, intent, suggestion or pageTitle": the ruled fields, then the plain ones."""
    names: list[str] = [k for k in ("note", "intent", "suggestion") if k in editable]
    names += [f.key for f in plain if f.editable]
    return f"Nothing to change: give {', '.join(names[:-1])} or {names[-1]}"


def page_url(value: Any, field: str = "pageUrl") -> str:
    """A site path such as `/guide/install/`: no scheme, host, query, fragment or `..`."""
    url = text(value, field, MAX_PAGE_URL, required=True, allow_empty=False)
    assert url is not None
    if not url.startswith("/") or url.startswith("//"):
        raise ValidationError(f'{field} must be a site path starting with "/", got {url!r}', field)
    if any(c in url for c in "?#\\") or any(ord(c) < 0x20 or c.isspace() for c in url):
        raise ValidationError(
            f"{field} must be a plain site path without query, fragment, spaces or backslashes, "
            f"got {url!r}",
            field,
        )
    if ".." in url.split("/"):
        raise ValidationError(f'{field} must not contain ".." segments, got {url!r}', field)
    return url


def refuse_unknown(data: Mapping[str, Any], allowed: frozenset[str], what: str) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        names = ", ".join(f'"{k}"' for k in unknown)
        raise ValidationError(f"Unknown field {names} in {what}", unknown[0])


def _mapping(value: Any, field: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValidationError(f"{field} must be an object", field)
    return value


def _object_of(value: Any, composite: Composite, field: str) -> Mapping[str, Any]:
    """`value` as composite `field`'s object: a mapping of none but its parts' keys."""
    data = _mapping(value, field)
    unknown = sorted(set(data) - {p.key for p in composite.parts})
    if unknown:
        raise ValidationError(f'Unknown field "{unknown[0]}" in {field}', f"{field}.{unknown[0]}")
    return data


def _offset(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"{field} must be an integer", field)
    if not 0 <= value <= MAX_POSITION:
        raise ValidationError(f"{field} must be between 0 and {MAX_POSITION:,}", field)
    return value


def intent_and_suggestion(intent: Any, suggestion: Any) -> tuple[str, str | None]:
    intent = "comment" if intent is None else intent
    if intent not in INTENTS:
        raise ValidationError(
            f"intent must be one of {', '.join(INTENTS)}, got {intent!r}", "intent"
        )
    suggestion = text(suggestion, "suggestion", MAX_SUGGESTION)
    if intent in ("replace", "insert"):
        if suggestion is None or not suggestion.strip():
            raise ValidationError(f"suggestion is required for intent {intent!r}", "suggestion")
    elif suggestion:
        raise ValidationError(
            f"suggestion is only used with intent 'replace' or 'insert', not {intent!r}",
            "suggestion",
        )
    else:
        suggestion = None
    return intent, suggestion


def note_for(intent: str, value: Any, *, require: bool = True) -> str:
    """The note; it may be empty only when the intent already says what to do."""
    needed = require and intent == "comment"
    return text(value, "note", MAX_NOTE, required=needed, allow_empty=not needed) or ""


def _text_rules(composite: Composite, field: str) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """Composite `field`'s text parts as its table says them, made once: (key, name, limit,
    required, allow_empty) for each, then (key, name, pattern, what it names) for a pattern."""
    texts = tuple(
        (p.key, f"{field}.{p.key}", _part_limit(p), p.required, not (p.required or p.filled))
        for p in composite.parts
        if p.type == "string"
    )
    patterns = tuple(
        (p.key, f"{field}.{p.key}", PATTERNS[p.key], p.pattern[1])
        for p in composite.parts
        if p.pattern is not None
    )
    return texts, patterns


TEXT_RULES = {
    "quote": _text_rules(QUOTE, "quote"),
    "elementSelector": _text_rules(ELEMENT_SELECTOR, "elementSelector"),
}


def _texts(data: Mapping[str, Any], field: str) -> dict[str, str | None]:
    """The text parts of composite `field` (`TEXT_RULES`), each checked before any part's
    `pattern`, then those."""
    texts, patterns = TEXT_RULES[field]
    out = {
        key: text(data.get(key), name, limit, required=required, allow_empty=allow_empty)
        for key, name, limit, required, allow_empty in texts
    }
    for key, name, pattern, names in patterns:
        value = out[key]
        if value and not pattern.match(value):
            raise ValidationError(f"{name} must be {names}, got {value!r}", name)
    return out


def _entries(part: Part, value: Any, field: str) -> dict[str, str]:
    """An object part (name → text): at most `entries` names, each within `name_limit` and not
    blank, each value a text within `limit`."""
    name = f"{field}.{part.key}"
    entries = _mapping(value or {}, name)
    assert part.entries is not None and part.name_limit is not None, part.key
    if len(entries) > part.entries:
        raise ValidationError(
            f"{name} has {len(entries)} entries; the limit is {part.entries}", name
        )
    clean: dict[str, str] = {}
    for key, val in entries.items():
        text(key, f"{name} name", part.name_limit, allow_empty=False)
        clean[key] = text(val, f"{name}.{key}", _part_limit(part), required=True) or ""
    return clean


def _offsets(composite: Composite, data: Mapping[str, Any], field: str) -> dict[str, int]:
    """The whole-number parts of composite `field`, each within 0 to MAX_POSITION and not less
    than its `not_before` part."""
    out = {p.key: _offset(data.get(p.key), f"{field}.{p.key}") for p in composite.parts}
    for p in composite.parts:
        if p.not_before and out[p.key] < out[p.not_before]:
            raise ValidationError(
                f"{field}.{p.key} must not be before {field}.{p.not_before}", f"{field}.{p.key}"
            )
    return out


ELEMENT_OBJECTS = tuple(p for p in ELEMENT_SELECTOR.parts if p.type == "object")


def element_selector(value: Any) -> dict[str, Any]:
    data = _object_of(value, ELEMENT_SELECTOR, "elementSelector")
    out: dict[str, Any] = {
        key: checked or "" for key, checked in _texts(data, "elementSelector").items()
    }
    for p in ELEMENT_OBJECTS:
        out[p.key] = _entries(p, data.get(p.key), "elementSelector")
    return out


def where_on_page(data: Mapping[str, Any]) -> tuple[bool | None, int | None]:
    """`inCode` (a boolean) and `occurrence` (a whole number from 0), each optional."""
    in_code = data.get("inCode")
    if in_code is not None and not isinstance(in_code, bool):
        raise ValidationError(f"inCode must be true or false, got {in_code!r}", "inCode")
    occurrence = data.get("occurrence")
    if occurrence is not None:
        if isinstance(occurrence, bool) or not isinstance(occurrence, int):
            raise ValidationError(
                f"occurrence must be a whole number from 0, got {occurrence!r}", "occurrence"
            )
        if not 0 <= occurrence <= MAX_POSITION:
            raise ValidationError(
                f"occurrence must be between 0 and {MAX_POSITION:,}, got {occurrence}",
                "occurrence",
            )
    return in_code, occurrence


def annotation_input(data: Any, *, require_note: bool = True) -> dict[str, Any]:
    """Validate a new annotation in the JSON shape; return its fields, snake_case.

    `require_note=False` is for imports, which keep whatever the other tool stored.
    """
    data = _mapping(data, "annotation")
    refuse_unknown(data, ANNOTATION_INPUT | SERVER_SET, "annotation")
    kind = data.get("type")
    if kind is None:
        kind = "element" if data.get("elementSelector") is not None else "text"
    if kind not in ("text", "element"):
        raise ValidationError(f"type must be 'text' or 'element', got {kind!r}", "type")
    intent, suggestion = intent_and_suggestion(data.get("intent"), data.get("suggestion"))
    out: dict[str, Any] = {
        "type": kind,
        "page_url": page_url(data.get("pageUrl")),
        "note": note_for(intent, data.get("note"), require=require_note),
        "intent": intent,
        "suggestion": suggestion,
        **{f.col: plain(f, data.get(f.key)) for f in ANNOTATION_PLAIN},
        "selected_text": None,
        "quote_exact": None,
        "quote_prefix": None,
        "quote_suffix": None,
        "position_start": None,
        "position_end": None,
        "element_selector": None,
        "in_code": None,
        "occurrence": None,
    }
    if kind == "text":
        if data.get("elementSelector") is not None:
            raise ValidationError(
                "elementSelector is only used with type 'element'", "elementSelector"
            )
        selected = text(
            data.get("selectedText"),
            "selectedText",
            MAX_SELECTED_TEXT,
            required=True,
            allow_empty=False,
        )
        quote = _texts(_object_of(data.get("quote") or {}, QUOTE, "quote"), "quote")
        out["selected_text"] = selected
        given = {"selectedText": selected}
        for p in QUOTE.parts:
            # The exact text is the selected text unless given (`fallback`); the context may
            # be empty.
            out[p.column] = quote[p.key] or (given[p.fallback] if p.fallback else p.blank)
        if data.get("position") is not None:
            position = _offsets(
                POSITION, _object_of(data["position"], POSITION, "position"), "position"
            )
            out.update((p.column, position[p.key]) for p in POSITION.parts)
        out["in_code"], out["occurrence"] = where_on_page(data)
    else:
        for name in ("selectedText", "quote", "position", "inCode", "occurrence"):
            if data.get(name) is not None:
                raise ValidationError(f"{name} is only used with type 'text'", name)
        if data.get("elementSelector") is None:
            raise ValidationError(
                "elementSelector is required for type 'element'", "elementSelector"
            )
        out["element_selector"] = element_selector(data["elementSelector"])
    return out


def annotation_changes(
    current_intent: str, current_suggestion: str | None, data: Any
) -> dict[str, Any]:
    """Validate an edit of note / intent / suggestion / pageTitle; return the changed columns."""
    data = _mapping(data, "changes")
    refuse_unknown(data, ANNOTATION_EDITABLE, "annotation edit")
    if not data:
        raise ValidationError(_nothing_to_change(ANNOTATION_EDITABLE, ANNOTATION_PLAIN))
    out: dict[str, Any] = {}
    if "intent" in data or "suggestion" in data:
        intent = data.get("intent", current_intent)
        suggestion = data.get("suggestion", current_suggestion)
        if intent in ("comment", "delete") and "suggestion" not in data:
            suggestion = None  # switching to an intent without a suggestion drops the old one
        out["intent"], out["suggestion"] = intent_and_suggestion(intent, suggestion)
    intent = out.get("intent", current_intent)
    if "note" in data:
        out["note"] = note_for(intent, data["note"])
    out.update(plain_changes(ANNOTATION_PLAIN, data))
    return out


def page_note_input(data: Any) -> dict[str, Any]:
    data = _mapping(data, "page note")
    refuse_unknown(data, PAGE_NOTE_INPUT | SERVER_SET, "page note")
    return {
        "page_url": page_url(data.get("pageUrl")),
        "note": text(data.get("note"), "note", MAX_NOTE, required=True, allow_empty=False),
        **{f.col: plain(f, data.get(f.key)) for f in PAGE_NOTE_PLAIN},
    }


def page_note_changes(data: Any) -> dict[str, Any]:
    data = _mapping(data, "changes")
    refuse_unknown(data, PAGE_NOTE_EDITABLE, "page note edit")
    if not data:
        raise ValidationError(_nothing_to_change(PAGE_NOTE_EDITABLE, PAGE_NOTE_PLAIN))
    out: dict[str, Any] = {}
    if "note" in data:
        out["note"] = text(data["note"], "note", MAX_NOTE, required=True, allow_empty=False)
    out.update(plain_changes(PAGE_NOTE_PLAIN, data))
    return out


def review_input(data: Any) -> dict[str, Any]:
    """`{mode, message, author, ids, decision}`; `ids` (the notes to send, in order, once each) is
    None when absent: the batch. `decision`: the verdict (`DECISIONS`), optional."""
    data = _mapping(data or {}, "review")
    refuse_unknown(
        data, frozenset({"mode", "message", "author", "ids", "decision", "pageUrl"}), "review"
    )
    decision = data.get("decision")
    if decision is not None and decision not in DECISIONS:
        raise ValidationError(
            f"decision must be one of {', '.join(DECISIONS)}; got {decision!r}", "decision"
        )
    mode = data.get("mode") or "edit"
    if mode not in REVIEW_MODES:
        raise ValidationError(f"mode must be 'edit' or 'review', got {mode!r}", "mode")
    ids = data.get("ids")
    if ids is not None:
        if not isinstance(ids, list) or not ids:
            raise ValidationError("ids must be a non-empty list of note IDs", "ids")
        if len(ids) > MAX_REVIEW_IDS:
            raise ValidationError(
                f"ids lists {len(ids):,} notes; the limit is {MAX_REVIEW_IDS:,}", "ids"
            )
        for id in ids:
            if not isinstance(id, str):
                raise ValidationError("ids must be a list of note IDs (strings)", "ids")
        ids = list(dict.fromkeys(ids))
    return {
        "mode": mode,
        "message": text(data.get("message"), "message", MAX_MESSAGE) or "",
        "author": text(data.get("author"), "author", MAX_AUTHOR) or None,
        "decision": decision,
        "ids": ids,
        # The batch of this page only (a document's page, issue #29); ignored with `ids`.
        "page_url": text(data.get("pageUrl"), "pageUrl", MAX_PAGE_URL) or None,
    }


def reply_message(message: Any) -> str:
    """A reply's text: not blank (`EmptyReply`), within `MAX_REPLY`."""
    if not isinstance(message, str) or not message.strip():
        raise EmptyReply()
    text(message, "message", MAX_REPLY)
    return message


def replaced_text(value: Any) -> str:
    """The text an agent put in place of a quote: not blank (`EmptyReplacedText`), within
    `MAX_SELECTED_TEXT`."""
    if not isinstance(value, str) or not value.strip():
        raise EmptyReplacedText()
    text(value, "replacedText", MAX_SELECTED_TEXT)
    return value

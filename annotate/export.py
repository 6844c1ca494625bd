"""Exports: Markdown for a chat, JSON for backup and import, W3C Web Annotation JSON-LD.

The Markdown follows astro-inline-review's clipboard export (its marks `🔧 [Addressed]` and
`⏳ [In Progress]`, replies inline with their role) and adds what an agent needs to act: the id,
the intent and suggestion, and the Markdown `path:lines` when known.

Agents act on this text, so no user string in it may pass for the export's own structure (issue
#17): each is escaped so that it opens no heading, list item, quote, fence, emphasis, code span,
link or HTML; code-like strings sit in code spans longer than any backtick run they hold; control
characters are shown as escapes. Every one goes through `escape.escape` (annotate/escape.py).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from . import build as builds
from . import fields
from .diff import change
from .errors import ValidationError
from .escape import CODE, FENCED, INLINE, LINE, QUOTED, escape
from .escape import one_line as _one_line
from .models import Annotation, Build, PageNote, Review
from .store import pause_gc

if TYPE_CHECKING:
    from .store import Store

__all__ = ["FORMATS", "JSON_FORMAT", "W3C_CONTEXT", "render", "to_json", "to_markdown", "to_w3c"]

FORMATS = ("markdown", "json", "w3c")
JSON_FORMAT = "mkdocs-annotate"
JSON_VERSION = 1
W3C_CONTEXT = "http://www.w3.org/ns/anno.jsonld"
# Stable urn:uuid ids for the JSON-LD, derived from our ids (W3C ids must be IRIs).
ID_NAMESPACE = uuid.UUID("6f1d3c1e-58a4-4a52-9d43-1f0e0a5b7c11")

STATUS_MARKS = {
    "in_progress": "⏳ [In Progress]",
    "addressed": "🔧 [Addressed]",
    "resolved": "✅ [Resolved]",
}
ANCHOR_MARKS = {
    "stale": "⚠️ [Stale: the text changed since the note was made]",
    "orphaned": "⚠️ [Orphaned: could not locate the text]",
    "removed": "🗑️ [Removed: the text was deleted as the note asked]",
}
ROLE_LABELS = {"reviewer": "Reviewer", "agent": "Agent"}


def render(store: Store, format: str, *, include_resolved: bool | None = None) -> str:
    """One export of the whole store; resolved items are left out of Markdown unless asked for."""
    if format not in FORMATS:
        raise ValidationError(
            f"format must be one of {', '.join(FORMATS)}, got {format!r}", "format"
        )
    if include_resolved is None:
        include_resolved = format != "markdown"
    if format == "markdown":
        # Straight from plain rows: building 100k objects first would double the time.
        annotation_rows, note_rows, replies = store.export_rows(include_resolved=include_resolved)
        with pause_gc():
            return _markdown(
                annotation_rows,
                note_rows,
                replies,
                datetime.now(timezone.utc),
                store.build,
                frozenset(store.screenshots.list()),
            )
    annotations, notes = store.all_items(include_resolved=include_resolved)
    if format == "json":
        return json.dumps(to_json(annotations, notes, store.list_reviews()), indent=2)
    return json.dumps(to_w3c(annotations, notes), indent=2, ensure_ascii=False)


# -- Markdown -----------------------------------------------------------------------------------

# The Markdown writer works on the export rows of the field table (annotate/fields.py): tuples in
# the order of `fields.ANNOTATION.row` and `fields.PAGE_NOTE.row`, as `Store.export_rows` reads
# them, taken apart into parameters of the same names (`_annotation`, `_page_note`;
# tests/test_fields.py checks the names); replies as {parent id: [(role, message), ...]}.
AnnotationRow = tuple[Any, ...]
NoteRow = tuple[Any, ...]
Replies = dict[str, list[tuple[str, str]]]
NO_REPLIES: list[tuple[str, str]] = []
_A_URL, _A_TITLE, _A_BRANCH, _A_COMMIT = (
    fields.ANNOTATION.row._fields.index(n)
    for n in ("page_url", "page_title", "build_branch", "build_commit")
)
_P_URL, _P_TITLE, _P_BRANCH, _P_COMMIT = (
    fields.PAGE_NOTE.row._fields.index(n)
    for n in ("page_url", "page_title", "build_branch", "build_commit")
)
_annotation_row = fields.ANNOTATION.row_of()
_page_note_row = fields.PAGE_NOTE.row_of()


def to_markdown(
    annotations: Iterable[Annotation],
    notes: Iterable[PageNote],
    *,
    now: datetime | None = None,
    current: Build | None = None,
) -> str:
    """The Markdown export of these objects (what `render(store, "markdown")` writes), read on
    the build `current`."""
    rows: list[AnnotationRow] = []
    note_rows: list[NoteRow] = []
    replies: Replies = {}
    for a in annotations:
        rows.append(_annotation_row(a))
        replies[a.id] = [(r.role, r.message) for r in a.replies]
    for n in notes:
        note_rows.append(_page_note_row(n))
        replies[n.id] = [(r.role, r.message) for r in n.replies]
    return _markdown(rows, note_rows, replies, now or datetime.now(timezone.utc), current)


def _markdown(
    annotations: Iterable[AnnotationRow],
    notes: Iterable[NoteRow],
    replies: Replies,
    now: datetime,
    current: Build | None,
    shots: frozenset[str] = frozenset(),
) -> str:
    lines = ["# Review feedback", f"Exported: {now.strftime('%Y-%m-%d %H:%M UTC')}"]
    # page url -> [title, page-note rows, annotation rows]
    pages: dict[str, list[Any]] = {}
    made: set[builds.Made] = set()
    for note in notes:
        page = pages.get(note[_P_URL])
        if page is None:
            page = pages[note[_P_URL]] = [note[_P_TITLE], [], []]
        elif not page[0]:
            page[0] = note[_P_TITLE]
        page[1].append(note)
        made.add((note[_P_BRANCH], note[_P_COMMIT]))
    for a in annotations:
        page = pages.get(a[_A_URL])
        if page is None:
            page = pages[a[_A_URL]] = [a[_A_TITLE], [], []]
        elif not page[0]:
            page[0] = a[_A_TITLE]
        page[2].append(a)
        made.add((a[_A_BRANCH], a[_A_COMMIT]))
    # Builds are named only where that tells something (annotate/build.py `named`); then the
    # current one is named once, so a note without a build line reads as made on it.
    once, shown = builds.named(made, current)
    served = "" if current is None else escape(builds.label(current.branch, current.commit), CODE)
    if once is not None:
        made_on = escape(builds.label(*once), CODE)
        lines.append(f"Build: every note was made on {made_on}; the current build is {served}.")
    elif shown and current is not None:
        lines.append(f"Current build: {served}; a note made on another build names it.")
    lines.append("")
    if not pages:
        lines.append("No annotations or notes yet.")
        return "\n".join(lines) + "\n"
    for url, (title, page_notes, page_annotations) in pages.items():
        title = f" — {escape(_one_line(title), INLINE)}" if title else ""
        lines += ["---", "", f"## {escape(url, INLINE)}{title}", ""]
        if page_notes:
            lines.append("### Page notes")
            for n in page_notes:
                lines += _page_note(replies, shown, *n)
                lines += _shot(n[0], "page-notes", "  ", shots)
            lines.append("")
        if page_annotations:
            lines.append("### Annotations")
            for i, a in enumerate(page_annotations, 1):
                lines += _annotation(i, replies, shown, *a)
                lines += _shot(a[0], "annotations", "   ", shots)
                lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def _page_note(
    replies: Replies,
    shown: set[builds.Made],
    id: str,
    page_url: str,
    page_title: str,
    note: str,
    status: str,
    build_branch: str | None,
    build_commit: str | None,
) -> list[str]:
    lines = [f"- {escape(_one_line(note), LINE)}{_status(status)} (id: `{id}`)"]
    lines += _block(note, "  ", skip_first=True)
    if shown and (build_branch, build_commit) in shown:
        lines.append(f"  {_build(build_branch, build_commit)}")
    lines += _replies(replies.get(id, NO_REPLIES), "  ")
    return lines


def _shot(id: str, route: str, indent: str, shots: frozenset[str]) -> list[str]:
    """A link to the note's screenshot (issue #30) when it has one: the REST route, which asks
    for the token, and the command that saves it."""
    if id not in shots:
        return []
    url = f"/__annotate/api/{route}/{id}/screenshot"
    return [f"{indent}Screenshot: [{id}.webp]({url}) (`annotate screenshot {id}`)"]


def _build(branch: str | None, commit: str | None) -> str:
    return f"Build: {escape(builds.label(branch, commit), CODE)}"


def _annotation(
    i: int,
    replies: Replies,
    shown: set[builds.Made],
    id: str,
    type: str,
    page_url: str,
    page_title: str,
    note: str,
    status: str,
    intent: str,
    suggestion: str | None,
    selected_text: str | None,
    replaced_text: str | None,
    css_selector: str | None,
    outer_html_preview: str | None,
    source_path: str | None,
    line_start: int | None,
    line_end: int | None,
    original_excerpt: str | None,
    source_excerpt: str | None,
    anchor_state: str,
    build_branch: str | None,
    build_commit: str | None,
) -> list[str]:
    selected, css, preview, path = selected_text, css_selector, outer_html_preview, source_path
    start, end, replaced = line_start, line_end, replaced_text
    original, current = original_excerpt, source_excerpt
    if type == "text":
        head = f'{i}. **"{escape(_one_line(selected or ""), QUOTED)}"**'
    else:
        head = f"{i}. Element **{escape(css or '', CODE)}**"
        head += f" ({escape(_one_line(preview), CODE)})" if preview else ""
    head += _status(status)
    if path:
        # Source.lines: `path:12` or `path:12-14`.
        head += f" — {escape(f'{path}:{start}' if start == end else f'{path}:{start}-{end}', CODE)}"
    head += f" (id: `{id}`)"
    out = [head]
    if anchor_state in ANCHOR_MARKS:
        out.append(f"   {ANCHOR_MARKS[anchor_state]}")
    if shown and (build_branch, build_commit) in shown:
        out.append(f"   {_build(build_branch, build_commit)}")
    out += _block(note, "   ")
    if intent == "delete":
        out.append("   Suggestion: delete this text")
    elif intent in ("replace", "insert"):
        verb = "replace with" if intent == "replace" else "insert"
        out.append(f"   Suggestion ({verb}):")
        out += _block(suggestion or "", "   ", quote=False, fence=True)
    if replaced:
        out.append(f'   Replaced by: "{escape(_one_line(replaced), QUOTED)}"')
    diff = change(status, anchor_state, original, current)
    if diff:
        out.append("   Change in the Markdown (`[-removed-]{+added+}`):")
        out += _block(diff, "   ", quote=False, fence=True)
    thread = replies.get(id, NO_REPLIES)
    if thread:
        out += _replies(thread, "   ")
    return out


def _status(status: str) -> str:
    mark = STATUS_MARKS.get(status)
    return f" {mark}" if mark else ""


def _block(
    text: str, indent: str, *, quote: bool = True, fence: bool = False, skip_first: bool = False
) -> list[str]:
    if not text:
        return []
    if not fence and not skip_first and text.isprintable():
        # The common one-line note, without the general path's list building.
        return [f"{indent}{'> ' if quote else ''}{escape(text, LINE)}".rstrip()]
    rows = text.splitlines() or [""]
    if skip_first:
        rows = rows[1:]
        if not any(r.strip() for r in rows):
            return []  # blank lines after the first: nothing to quote (an empty `>` is a quote)
    if fence:
        # Inside a fence nothing is Markdown, and no line of the text can close it.
        ticks = "```"
        while ticks in text:
            ticks += "`"
        rows = [escape(r, FENCED) for r in rows]
        return [f"{indent}{ticks}", *(f"{indent}{r}" for r in rows), f"{indent}{ticks}"]
    mark = "> " if quote else ""
    return [f"{indent}{mark}{escape(r, LINE)}".rstrip() for r in rows]


def _replies(replies: Iterable[tuple[str, str]], indent: str) -> list[str]:
    out: list[str] = []
    for role, message in replies:
        label = ROLE_LABELS.get(role, role)
        if message.isprintable():
            out.append(f"{indent}> **{label}:** {escape(message, INLINE)}".rstrip())
            continue
        first, *rest = message.splitlines() or [""]
        out.append(f"{indent}> **{label}:** {escape(first, INLINE)}".rstrip())
        out += [f"{indent}> {escape(line, LINE)}".rstrip() for line in rest]
    return out


# -- JSON ---------------------------------------------------------------------------------------


def to_json(
    annotations: Iterable[Annotation], notes: Iterable[PageNote], reviews: Iterable[Review]
) -> dict[str, Any]:
    """The whole store; `annotate import` reads it back unchanged."""
    return {
        "format": JSON_FORMAT,
        "version": JSON_VERSION,
        "exportedAt": datetime.now(timezone.utc)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z"),
        "annotations": [a.to_dict() for a in annotations],
        "pageNotes": [n.to_dict() for n in notes],
        "reviews": [
            {
                "id": r.id,
                "mode": r.mode,
                "message": r.message,
                "author": r.author,
                "createdAt": r.created_at,
                "pickedUpAt": r.picked_up_at,
                "doneAt": r.done_at,
                "decision": r.decision,
                "annotationIds": [a.id for a in r.annotations],
                "pageNoteIds": [n.id for n in r.page_notes],
            }
            for r in reviews
        ],
    }


# -- W3C Web Annotation -------------------------------------------------------------------------


def w3c_id(id: str) -> str:
    return f"urn:uuid:{uuid.uuid5(ID_NAMESPACE, id)}"


def to_w3c(annotations: Iterable[Annotation], notes: Iterable[PageNote]) -> dict[str, Any]:
    """An AnnotationCollection whose first page embeds every annotation, page note and reply.

    Targets use the page's site path as `source` (a relative IRI: resolve it against the site's
    URL). Replies are `replying` annotations whose target is their parent.
    """
    items: list[dict[str, Any]] = []
    for a in annotations:
        items.append(_w3c_annotation(a))
        items += _w3c_replies(a)
    for n in notes:
        items.append(
            {
                "@context": W3C_CONTEXT,
                "id": w3c_id(n.id),
                "type": "Annotation",
                "motivation": "commenting",
                "created": n.created_at,
                "modified": n.updated_at,
                **_creator(n.author),
                "body": _body(n.note, "commenting"),
                "target": n.page_url,
            }
        )
        items += _w3c_replies(n)
    return {
        "@context": W3C_CONTEXT,
        "id": "urn:mkdocs-annotate:export",
        "type": "AnnotationCollection",
        "label": "mkdocs-annotate review notes",
        "total": len(items),
        "first": {"type": "AnnotationPage", "startIndex": 0, "items": items},
    }


def _creator(author: str | None) -> dict[str, Any]:
    return {"creator": {"type": "Person", "name": author}} if author else {}


def _body(value: str, purpose: str) -> dict[str, Any]:
    return {"type": "TextualBody", "value": value, "format": "text/plain", "purpose": purpose}


def _w3c_annotation(a: Annotation) -> dict[str, Any]:
    selectors: list[dict[str, Any]] = []
    if a.type == "text" and a.quote:
        selectors.append(
            {
                "type": "TextQuoteSelector",
                "exact": a.quote.exact,
                "prefix": a.quote.prefix,
                "suffix": a.quote.suffix,
            }
        )
        if a.position:
            selectors.append(
                {"type": "TextPositionSelector", "start": a.position.start, "end": a.position.end}
            )
    elif a.element_selector:
        selectors.append({"type": "CssSelector", "value": a.element_selector.css_selector})
        if a.element_selector.xpath:
            selectors.append({"type": "XPathSelector", "value": a.element_selector.xpath})
    bodies = []
    if a.note:
        bodies.append(_body(a.note, "commenting"))
    if a.intent == "delete":
        bodies.append(_body("Delete the selected text.", "editing"))
    elif a.intent in ("replace", "insert") and a.suggestion:
        bodies.append(_body(a.suggestion, "editing"))
    item: dict[str, Any] = {
        "@context": W3C_CONTEXT,
        "id": w3c_id(a.id),
        "type": "Annotation",
        "motivation": "commenting" if a.intent == "comment" else "editing",
        "created": a.created_at,
        "modified": a.updated_at,
        **_creator(a.author),
    }
    if bodies:
        item["body"] = bodies[0] if len(bodies) == 1 else bodies
    target: dict[str, Any] = {"source": a.page_url}
    if selectors:
        target["selector"] = selectors[0] if len(selectors) == 1 else selectors
    item["target"] = target
    return item


def _w3c_replies(parent: Annotation | PageNote) -> list[dict[str, Any]]:
    return [
        {
            "@context": W3C_CONTEXT,
            "id": w3c_id(r.id),
            "type": "Annotation",
            "motivation": "replying",
            "created": r.created_at,
            "creator": {
                "type": "Software" if r.role == "agent" else "Person",
                "name": r.author or r.role,
            },
            "body": _body(r.message, "replying"),
            "target": w3c_id(parent.id),
        }
        for r in parent.replies
    ]

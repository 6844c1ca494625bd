"""The objects the store returns: annotations, page notes, replies, reviews (docs/data-model.md).

Attributes are snake_case; `.to_dict()` gives the camelCase JSON shape that the API, the CLI's `--json`
and the MCP tools share, generated from the field table (annotate/fields.py), in its order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from .fields import (
    ANCHOR_STATES,
    ANCHORED_BUILD,
    ANNOTATION,
    ELEMENT_SELECTOR,
    INTENTS,
    PAGE_NOTE,
    PAGE_SOURCE,
    POSITION,
    QUOTE,
    REPLY,
    SOURCE,
    STATUSES,
)

__all__ = [
    "ANCHOR_STATES",
    "INTENTS",
    "STATUSES",
    "Annotation",
    "Build",
    "ElementSelector",
    "HistoryEntry",
    "PageNote",
    "PageSource",
    "Reply",
    "Review",
    "Shown",
    "Source",
    "Summary",
    "TextPosition",
    "TextQuote",
    "lean",
    "lean_item",
]

Status = Literal["open", "in_progress", "addressed", "resolved"]
Intent = Literal["comment", "delete", "replace", "insert"]
# `removed`: the agent deleted the text as the note asked (`address_annotation(deleted=True)`);
# re-anchoring leaves such a note be.
AnchorState = Literal["anchored", "stale", "orphaned", "removed", "pending"]
Role = Literal["reviewer", "agent"]

REVIEW_MODES: tuple[str, ...] = ("edit", "review")
# A reviewer's verdict on a review or a plan revision (issue #30 item 5, issue #29).
DECISIONS: tuple[str, ...] = ("approve", "approve_with_notes", "request_changes")
REVIEW_STATUSES: tuple[str, ...] = ("pending", "picked_up", "done")
# A note in a review's compact answer: the note and suggestion are cut here (the rest through
# get_context), which keeps a note under about 150 tokens.
BRIEF_TEXT = 300
BRIEF_QUOTE = 100
# A page of a review's compact answer: at most this many notes and characters of JSON (about
# 15k tokens at 4 characters a token; agents cut tool output at 25k tokens).
REVIEW_PAGE_NOTES = 100
REVIEW_PAGE_CHARS = 60_000


def lean(data: dict[str, Any]) -> dict[str, Any]:
    """`data` without the keys whose value is absent (None, an empty list or object), at every
    level.

    What the agent surfaces answer (MCP tools, `--json`), as the reference leaves out `addressedAt`,
    `replies`, … when there are none; the web API keeps every key for the overlay.
    """
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            value = lean(value)
        elif isinstance(value, list):
            value = [lean(v) if isinstance(v, dict) else v for v in value]
        if value is not None and value != [] and value != {}:
            out[key] = value
    return out


def lean_item(item: Annotation | PageNote, served: Build | None = None) -> dict[str, Any]:
    """An annotation or page note as agents get it: `lean`, and `originalSource` only once it
    differs from `source` (until the lines change it repeats them, excerpt and all); `build` only
    when it is not `served`, the build the answering process reads (made on the build the agent
    reads, it says nothing: ~77 bytes of indented JSON a note, benchmarks/builds.py)."""
    data = item.to_dict()
    if data.get("originalSource") is not None and data["originalSource"] == data.get("source"):
        data["originalSource"] = None
    if served is not None and item.build == served:
        data["build"] = None
    return lean(data)


def _cut(text: str, limit: int, *, exact: bool = False) -> tuple[str, bool]:
    """`text` within `limit` characters, its runs of whitespace made one space unless `exact`
    (a suggestion is text to put in the page: its spaces matter)."""
    if not exact:
        text = " ".join(text.split())
    return (text, False) if len(text) <= limit else (text[: limit - 1] + "…", True)


@dataclass(slots=True)
class Reply:
    id: str
    role: Role
    message: str
    created_at: str
    author: str | None = None

    to_dict = REPLY.to_dict()


@dataclass(slots=True)
class TextQuote:
    """W3C TextQuoteSelector: the quote and 32 characters either side (docs/data-model.md)."""

    exact: str
    prefix: str = ""
    suffix: str = ""

    to_dict = QUOTE.to_dict()


@dataclass(slots=True)
class TextPosition:
    """W3C TextPositionSelector: offsets into the page's content text."""

    start: int
    end: int

    to_dict = POSITION.to_dict()


@dataclass(slots=True)
class ElementSelector:
    css_selector: str
    xpath: str = ""
    tag_name: str = ""
    description: str = ""
    attributes: dict[str, str] = field(default_factory=dict)
    outer_html_preview: str = ""

    to_dict = ELEMENT_SELECTOR.to_dict()


@dataclass(slots=True)
class Source:
    """The Markdown file (relative to the project) and 1-based inclusive lines a note points at."""

    path: str
    line_start: int
    line_end: int
    excerpt: str = ""
    # Issue #13: "generated" when the lines hold the directive that produced the text (the text
    # itself is not in the Markdown); `object` is the documented Python object, when known;
    # `last_known` when the note is no longer anchored and the lines are where it was last seen.
    kind: str | None = None
    object: str | None = None
    last_known: bool = False

    @property
    def lines(self) -> str:
        """`path:12` or `path:12-14`, the form editors and agents understand."""
        if self.line_start == self.line_end:
            return f"{self.path}:{self.line_start}"
        return f"{self.path}:{self.line_start}-{self.line_end}"

    # `kind`, `object` and `lastKnown` present only when they say something (consumers read a
    # missing key as absent).
    to_dict = SOURCE.to_dict()


@dataclass(slots=True)
class PageSource:
    """The Markdown file a page is built from (relative to the project): a page note's `source`."""

    path: str

    to_dict = PAGE_SOURCE.to_dict()


@dataclass(frozen=True, slots=True)
class Build:
    """The build of the docs a note was made on (annotate/build.py): a branch and a commit,
    either unknown (None) but not both.

    On a note, `anchored_on` is the commit of a newer build of the same branch whose Markdown the
    note was located in again (None while it was only ever read on its own build).
    """

    branch: str | None
    commit: str | None
    anchored_on: str | None = None

    def text(self) -> str:
        """`main @ 0b105a0c1d2e`, and where it was located again, for people."""
        made = " @ ".join(v for v in (self.branch or "(no branch)", self.commit) if v)
        return f"{made}, re-anchored on {self.anchored_on}" if self.anchored_on else made

    to_dict = ANCHORED_BUILD.to_dict()


@dataclass(slots=True)
class Annotation:
    id: str
    type: Literal["text", "element"]
    page_url: str
    page_title: str
    note: str
    status: Status
    intent: Intent
    created_at: str
    updated_at: str
    suggestion: str | None = None
    selected_text: str | None = None
    quote: TextQuote | None = None
    position: TextPosition | None = None
    replaced_text: str | None = None
    element_selector: ElementSelector | None = None
    source: Source | None = None
    # `source` as when the note was made: what the reviewer saw, for the change once addressed.
    original_source: Source | None = None
    anchor_state: AnchorState = "anchored"
    anchor_score: float | None = None
    # The build the note was made on (annotate/build.py), and where it was located again.
    build: Build | None = None
    replies: tuple[Reply, ...] = ()
    author: str | None = None
    in_progress_at: str | None = None
    addressed_at: str | None = None
    resolved_at: str | None = None

    kind = "annotation"

    to_dict = ANNOTATION.to_dict()

    def brief(self) -> dict[str, Any]:
        """What a review lists for this note: enough to act on, details through get_context."""
        out: dict[str, Any] = {"id": self.id, "kind": self.type, "intent": self.intent}
        cut = False
        if self.note:
            out["note"], cut = _cut(self.note, BRIEF_TEXT)
        if self.suggestion:
            out["suggestion"], more = _cut(self.suggestion, BRIEF_TEXT, exact=True)
            cut = cut or more
        if self.source:
            out["at"] = self.source.lines
        else:
            out["page"] = self.page_url
        if self.type == "text":
            out["quote"] = _cut(self.selected_text or "", BRIEF_QUOTE)[0]
        elif self.element_selector:
            sel = self.element_selector
            out["element"] = _cut(sel.description or sel.css_selector, BRIEF_QUOTE)[0]
        if self.anchor_state != "anchored":
            out["anchorState"] = self.anchor_state
        return _brief_end(out, self.status, self.replies, cut)


def _brief_end(
    out: dict[str, Any], status: str, replies: tuple[Reply, ...], cut: bool
) -> dict[str, Any]:
    """What every brief ends with: a status other than open, the reviewer's follow-up when it is
    the last word of the thread (a Reopen's), and whether a text was cut."""
    if status != "open":
        out["status"] = status
    if replies and replies[-1].role == "reviewer":
        out["followUp"] = _cut(replies[-1].message, BRIEF_TEXT)[0]
    if cut:
        out["truncated"] = True
    return out


@dataclass(slots=True)
class PageNote:
    """Feedback about a page as a whole; it has a status and replies like an annotation."""

    id: str
    page_url: str
    page_title: str
    note: str
    status: Status
    created_at: str
    updated_at: str
    replies: tuple[Reply, ...] = ()
    author: str | None = None
    in_progress_at: str | None = None
    addressed_at: str | None = None
    resolved_at: str | None = None
    # The page's Markdown file, when known (from the plugin's page record or mkdocs.yml).
    source: PageSource | None = None
    build: Build | None = None

    kind = "page_note"

    to_dict = PAGE_NOTE.to_dict()

    def brief(self) -> dict[str, Any]:
        """What a review lists for this page note (see `Annotation.brief`)."""
        out: dict[str, Any] = {"id": self.id, "kind": "page"}
        out["note"], cut = _cut(self.note, BRIEF_TEXT)
        if self.source:
            out["at"] = self.source.path
        out["page"] = self.page_url
        return _brief_end(out, self.status, self.replies, cut)


@dataclass(slots=True)
class Review:
    """A batch sent with "Send to agent": the open notes collected since the previous review, or
    the notes chosen for it (`create_review({"ids": [...]})`)."""

    id: str
    mode: Literal["edit", "review"]
    message: str
    created_at: str
    picked_up_at: str | None = None
    author: str | None = None
    annotations: tuple[Annotation, ...] = ()
    page_notes: tuple[PageNote, ...] = ()
    # When the last of its notes was addressed or resolved.
    done_at: str | None = None
    # The reviewer's verdict (`DECISIONS`), or None when they sent notes without one.
    decision: str | None = None

    @property
    def status(self) -> str:
        """`pending` (no agent took it), `picked_up`, or `done` (every note addressed or
        resolved)."""
        if self.done_at:
            return "done"
        return "picked_up" if self.picked_up_at else "pending"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "mode": self.mode,
            "message": self.message,
            "decision": self.decision,
            "status": self.status,
            "author": self.author,
            "createdAt": self.created_at,
            "pickedUpAt": self.picked_up_at,
            "doneAt": self.done_at,
            "annotations": [a.to_dict() for a in self.annotations],
            "pageNotes": [n.to_dict() for n in self.page_notes],
        }

    def outline(self) -> dict[str, Any]:
        """The review without its notes, with their count: for listings of reviews."""
        notes: list[Annotation | PageNote] = [*self.annotations, *self.page_notes]
        waiting = sum(n.status in ("open", "in_progress") for n in notes)
        return lean(
            {
                "id": self.id,
                "mode": self.mode,
                "message": self.message or None,
                "decision": self.decision,
                "status": self.status,
                "createdAt": self.created_at,
                "pickedUpAt": self.picked_up_at,
                "doneAt": self.done_at,
                "notes": len(notes),
                "waiting": waiting,
            }
        )

    def brief(self, offset: int = 0) -> dict[str, Any]:
        """The compact answer an agent gets: per note `Annotation.brief`, a page at a time.

        A page ends after `REVIEW_PAGE_NOTES` notes or `REVIEW_PAGE_CHARS` characters of JSON,
        whichever comes first; `next` is then the offset of the next page.
        """
        notes: list[Annotation | PageNote] = [*self.annotations, *self.page_notes]
        out = self.outline()
        out.pop("waiting", None)
        page: list[dict[str, Any]] = []
        size = 0
        for item in notes[offset:]:
            entry = item.brief()
            size += len(json.dumps(entry, ensure_ascii=False)) + 4
            if page and (len(page) >= REVIEW_PAGE_NOTES or size > REVIEW_PAGE_CHARS):
                break
            page.append(entry)
        out["notes"] = page
        out["total"] = len(notes)
        if offset:
            out["offset"] = offset
        if offset + len(page) < len(notes):
            out["next"] = offset + len(page)
        return out


# The status each action of the change rows leaves a note in (`HistoryEntry.status`); the others
# (a reply, an edit, a relocation, `imported`, …) set none that their row could tell.
STATUS_AFTER: dict[str, Status] = {
    "created": "open",
    "in_progress": "in_progress",
    "addressed": "addressed",
    "resolved": "resolved",
    "reopened": "open",
}


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One change row of a note (`Store.history`): when, what, by whom (None when the store did
    not know: single-user mode, the reconciler) and the status it set, if it set one."""

    at: str
    action: str
    author: str | None
    status: Status | None

    def to_dict(self) -> dict[str, Any]:
        return {"at": self.at, "action": self.action, "author": self.author, "status": self.status}


@dataclass(slots=True)
class Summary:
    """Counts for `annotate summary`: what is waiting, where."""

    annotations: dict[str, int]
    page_notes: dict[str, int]
    anchor_states: dict[str, int]
    pages: int
    pending_reviews: int

    @staticmethod
    def count_anchor_states(annotations: Iterable[Annotation]) -> dict[str, int]:
        """`anchor_states` of these annotations: the text ones not resolved, by anchor state (as
        `Store.summary` counts them in SQL; `annotate mcp --remote` counts its checkout's)."""
        counts = dict.fromkeys(ANCHOR_STATES, 0)
        for a in annotations:
            if a.type == "text" and a.status != "resolved":
                counts[a.anchor_state] += 1
        return counts

    @property
    def open_items(self) -> int:
        """Items the agent still has to act on."""
        return sum(self.annotations.get(s, 0) + self.page_notes.get(s, 0) for s in STATUSES[:2])

    def to_dict(self) -> dict[str, Any]:
        return {
            "annotations": dict(self.annotations),
            "pageNotes": dict(self.page_notes),
            "anchorStates": dict(self.anchor_states),
            "pages": self.pages,
            "pendingReviews": self.pending_reviews,
        }


class Shown(int):
    """How many views acknowledged a `Store.show_annotation` (it is that number), with the note's
    `id` and page, and `why_not`: None when the views highlight the note's passage (or open a page
    note in their panel), else why they show the note in their panel instead."""

    id: str
    page_url: str
    why_not: str | None

    def __new__(cls, views: int, id: str, page_url: str, why_not: str | None = None) -> Shown:
        out = super().__new__(cls, views)
        out.id, out.page_url, out.why_not = id, page_url, why_not
        return out

    def to_dict(self) -> dict[str, Any]:
        """The answer of the MCP tool and of `annotate show --json`."""
        out: dict[str, Any] = {"id": self.id, "pageUrl": self.page_url, "views": int(self)}
        if self.why_not:
            out["noPassage"] = self.why_not
        return out

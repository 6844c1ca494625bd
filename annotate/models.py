"""The objects the store returns: annotations, page notes, replies, reviews (SPEC §3).

Attributes are snake_case; `.to_dict()` gives the camelCase JSON shape that the API, the CLI's `--json`
and the MCP tools share.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "ANCHOR_STATES",
    "INTENTS",
    "STATUSES",
    "Annotation",
    "ElementSelector",
    "PageNote",
    "Reply",
    "Review",
    "Source",
    "Summary",
    "TextPosition",
    "TextQuote",
]

Status = Literal["open", "in_progress", "addressed", "resolved"]
Intent = Literal["comment", "delete", "replace", "insert"]
AnchorState = Literal["anchored", "stale", "orphaned"]
Role = Literal["reviewer", "agent"]

STATUSES: tuple[str, ...] = ("open", "in_progress", "addressed", "resolved")
INTENTS: tuple[str, ...] = ("comment", "delete", "replace", "insert")
ANCHOR_STATES: tuple[str, ...] = ("anchored", "stale", "orphaned")
REVIEW_MODES: tuple[str, ...] = ("edit", "review")


@dataclass(slots=True)
class Reply:
    id: str
    role: Role
    message: str
    created_at: str
    author: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "role": self.role,
            "author": self.author,
            "message": self.message,
            "createdAt": self.created_at,
        }


@dataclass(slots=True)
class TextQuote:
    """W3C TextQuoteSelector: the quote and 32 characters either side (SPEC §5)."""

    exact: str
    prefix: str = ""
    suffix: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"exact": self.exact, "prefix": self.prefix, "suffix": self.suffix}


@dataclass(slots=True)
class TextPosition:
    """W3C TextPositionSelector: offsets into the page's content text."""

    start: int
    end: int

    def to_dict(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end}


@dataclass(slots=True)
class ElementSelector:
    css_selector: str
    xpath: str = ""
    tag_name: str = ""
    description: str = ""
    attributes: dict[str, str] = field(default_factory=dict)
    outer_html_preview: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "cssSelector": self.css_selector,
            "xpath": self.xpath,
            "tagName": self.tag_name,
            "description": self.description,
            "attributes": dict(self.attributes),
            "outerHtmlPreview": self.outer_html_preview,
        }


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

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path,
            "lineStart": self.line_start,
            "lineEnd": self.line_end,
            "excerpt": self.excerpt,
        }
        # Present only when they say something (consumers read a missing key as absent).
        if self.kind:
            out["kind"] = self.kind
        if self.object:
            out["object"] = self.object
        if self.last_known:
            out["lastKnown"] = True
        return out


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
    anchor_state: AnchorState = "anchored"
    anchor_score: float | None = None
    replies: tuple[Reply, ...] = ()
    author: str | None = None
    in_progress_at: str | None = None
    addressed_at: str | None = None
    resolved_at: str | None = None

    kind = "annotation"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": self.type,
            "pageUrl": self.page_url,
            "pageTitle": self.page_title,
            "note": self.note,
            "status": self.status,
            "intent": self.intent,
            "suggestion": self.suggestion,
            "selectedText": self.selected_text,
            "quote": self.quote.to_dict() if self.quote else None,
            "position": self.position.to_dict() if self.position else None,
            "replacedText": self.replaced_text,
            "elementSelector": self.element_selector.to_dict() if self.element_selector else None,
            "source": self.source.to_dict() if self.source else None,
            "anchorState": self.anchor_state,
            "anchorScore": self.anchor_score,
            "replies": [r.to_dict() for r in self.replies],
            "author": self.author,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
            "inProgressAt": self.in_progress_at,
            "addressedAt": self.addressed_at,
            "resolvedAt": self.resolved_at,
        }


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

    kind = "page_note"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "pageUrl": self.page_url,
            "pageTitle": self.page_title,
            "note": self.note,
            "status": self.status,
            "replies": [r.to_dict() for r in self.replies],
            "author": self.author,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
            "inProgressAt": self.in_progress_at,
            "addressedAt": self.addressed_at,
            "resolvedAt": self.resolved_at,
        }


@dataclass(slots=True)
class Review:
    """A batch sent with "Send to agent": the notes collected since the previous review."""

    id: str
    mode: Literal["edit", "review"]
    message: str
    created_at: str
    picked_up_at: str | None = None
    author: str | None = None
    annotations: tuple[Annotation, ...] = ()
    page_notes: tuple[PageNote, ...] = ()

    @property
    def status(self) -> str:
        return "picked_up" if self.picked_up_at else "pending"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "mode": self.mode,
            "message": self.message,
            "status": self.status,
            "author": self.author,
            "createdAt": self.created_at,
            "pickedUpAt": self.picked_up_at,
            "annotations": [a.to_dict() for a in self.annotations],
            "pageNotes": [n.to_dict() for n in self.page_notes],
        }


@dataclass(slots=True)
class Summary:
    """Counts for `annotate summary`: what is waiting, where."""

    annotations: dict[str, int]
    page_notes: dict[str, int]
    anchor_states: dict[str, int]
    pages: int
    pending_reviews: int

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

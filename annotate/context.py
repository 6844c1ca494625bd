"""The Markdown around a note, line-numbered: what `get_context` and `annotate context` show.

The note with the current content of its Markdown file
around the lines it points at, read after lazy reconciliation so the line numbers are today's. When
a note has no lines (an element, a page note, a quote not found in the Markdown) the top of the page's
file is shown instead, and `warning` says why; a stale or orphaned note gets a warning too. A removed
note (its text deleted as asked) marks no lines: the text now there is not the one it was about.

`Context.text()` is what an agent reads (the MCP tool answers it as plain text, issue #14): the note,
its intent and suggestion spelled out, its thread, then the numbered lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

from .agents import QUESTION, asks
from .config import site_config
from .errors import AnnotateError, ValidationError
from .escape import PLAIN, escape
from .models import Annotation, PageNote
from .pages import safe_path
from .reconcile import MAX_SOURCE_BYTES


class Store(Protocol):
    """What `get_context` reads: a `store.Store`, or the agent's checkout of
    `annotate mcp --remote` (annotate/mcp_remote.py)."""

    @property
    def project_dir(self) -> Path: ...

    def get_annotation(self, id: str) -> Annotation | PageNote: ...

    def page_file(self, page_url: str) -> str | None: ...


__all__ = ["DEFAULT_LINES", "MAX_LINES", "Context", "get_context", "intent_line"]

DEFAULT_LINES = 10
MAX_LINES = 500
# The Markdown suffixes MkDocs reads pages from.
MARKDOWN = frozenset({".md", ".markdown", ".mdown", ".mkdn", ".mkd"})
# `delete`'s phrase names the address call: this text is shown by the MCP tool and the CLI alike,
# so it names neither's form.
_NAMES = {"address": "address it", "deleted": "deleted"}


def intent_line(intent: str) -> str:
    """What an intent asks, beside the lines (the phrases of `annotate/agents.py`)."""
    line = f"{intent}: {asks(intent, _NAMES)}"
    return f"{line}; {QUESTION}" if intent == "comment" else line


@dataclass(slots=True)
class Context:
    """A note and the lines of Markdown around it."""

    item: Annotation | PageNote
    # The Markdown file relative to the project, or None when no file is known.
    path: str | None
    # The lines the note points at (1-based, inclusive), or None when it has none.
    line_start: int | None
    line_end: int | None
    # The lines shown, the first of them numbered `first_line`.
    first_line: int
    lines: tuple[str, ...]
    warning: str | None = None
    # The lines are where the note was last seen (stale, orphaned, removed): shown, never marked,
    # since other text may stand there now (issue #13).
    last_known: bool = False

    @property
    def last_line(self) -> int:
        return self.first_line + len(self.lines) - 1

    def numbered(self) -> str:
        """The lines as `  12 | text`, the note's own lines marked `>` (unless only last known)."""
        width = len(str(max(self.last_line, 1)))
        out = []
        for n, text in enumerate(self.lines, self.first_line):
            target = (
                not self.last_known
                and self.line_start is not None
                and self.line_start <= n <= (self.line_end or n)
            )
            out.append(f"{'>' if target else ' '} {n:>{width}} | {text}".rstrip())
        return "\n".join(out)

    def text(self) -> str:
        """The note, what it asks, its thread and the numbered lines, as plain text."""
        item = self.item
        if isinstance(item, Annotation):
            kind = f"{item.type} note"
            state = f"status: {item.status}, anchor: {item.anchor_state}"
        else:
            kind, state = "page note", f"status: {item.status}"
        # Every user string through `escape` (issue #27): none can start a line of its own.
        where = f" — {escape(self.path, PLAIN)}" if self.path else ""
        if self.line_start is not None:
            end = f"-{self.line_end}" if self.line_end != self.line_start else ""
            where += f":{self.line_start}{end}"
        out = [f"[{item.id}] {kind} on {escape(item.page_url, PLAIN)}{where} ({state})"]
        if isinstance(item, Annotation):
            out.append("intent: " + intent_line(item.intent))
        out += _field("note", item.note or "(none)")
        if isinstance(item, Annotation):
            if item.suggestion:
                out += _field("suggestion", item.suggestion)
            if item.type == "text":
                out += _field("quote", item.selected_text or "")
            elif item.element_selector:
                sel = item.element_selector
                out.append(f"element: {escape(sel.css_selector, PLAIN)}")
                if sel.description:
                    out.append(f"description: {escape(sel.description, PLAIN)}")
            if item.replaced_text:
                out += _field("replaced by", item.replaced_text)
        for r in item.replies:
            out += _field(f"reply ({r.role})", r.message)
        if self.warning:
            out.append(f"warning: {self.warning}")
        if self.lines:
            marks = self.line_start is not None and not self.last_known
            marked = " (> marks the note's lines)" if marks else ""
            shown = escape(self.path or "", PLAIN)
            out += ["", f"{shown}, lines {self.first_line}-{self.last_line}{marked}:"]
            out.append(self.numbered())
        return "\n".join(out)

    def to_dict(self) -> dict[str, Any]:
        return {
            "annotation": self.item.to_dict(),
            "path": self.path,
            "lineStart": self.line_start,
            "lineEnd": self.line_end,
            "firstLine": self.first_line if self.lines else None,
            "lastLine": self.last_line if self.lines else None,
            "context": self.numbered(),
            "warning": self.warning,
            **({"lastKnown": True} if self.last_known else {}),
        }


def get_context(store: Store, id: str, lines: int = DEFAULT_LINES) -> Context:
    """The note `id` with up to `lines` lines of its Markdown before and after its source lines."""
    if isinstance(lines, bool) or not isinstance(lines, int) or not 0 <= lines <= MAX_LINES:
        raise ValidationError(f"lines must be a whole number from 0 to {MAX_LINES}, got {lines!r}")
    item = store.get_annotation(id)  # reconciles a text annotation whose file changed
    source = item.source if isinstance(item, Annotation) else None
    if isinstance(item, Annotation) and item.anchor_state == "removed":
        source = None  # the lines where it was now hold other text: mark none
    path = (
        item.source.path
        if isinstance(item, Annotation) and item.source
        else store.page_file(item.page_url)
    )
    text = _read(store, path) if path else None
    if not path or text is None:
        return Context(item, path, None, None, 1, (), _missing(item, path))
    all_lines = text.splitlines()
    if source is not None:
        start = max(1, source.line_start - lines)
        end = min(len(all_lines), source.line_end + lines)
        shown = tuple(all_lines[start - 1 : end])
        return Context(
            item,
            path,
            source.line_start,
            source.line_end,
            start,
            shown,
            _caution(item),
            last_known=source.last_known,
        )
    if isinstance(item, Annotation) and item.anchor_state == "removed" and item.source:
        start = max(1, item.source.line_start - lines)
        end = min(len(all_lines), item.source.line_end + lines)
        shown = tuple(all_lines[start - 1 : end])
        return Context(item, path, None, None, start, shown, REMOVED)
    # No lines to point at: the top of the page's file.
    shown = tuple(all_lines[: 2 * lines + 1])
    return Context(item, path, None, None, 1, shown, _no_lines(item, path))


REMOVED = (
    "The annotated text was deleted as the note asked (removed): nothing is left to edit. These "
    "are the lines around where it was; the text now there is not what the note was about."
)


def _field(name: str, value: str) -> list[str]:
    """`name: value`, a value's further lines indented under it."""
    first, *rest = [escape(line, PLAIN) for line in value.splitlines()] or [""]
    return [f"{name}: {first}".rstrip(), *(f"  {line}".rstrip() for line in rest)]


def _read(store: Store, relative: str) -> str | None:
    """The text of a Markdown page of the docs folder, else None. A note's `source.path` comes
    from the store, which a hostile team server writes for `--remote`: any other file of the
    checkout (`.env`, `mkdocs.yml`, a key) is never read (issue #32)."""
    full = _page_path(store.project_dir, relative)
    try:
        if full is None or not full.is_file() or full.stat().st_size > MAX_SOURCE_BYTES:
            return None
        return full.read_text(encoding="utf-8-sig", errors="replace")
    except OSError:
        return None


def _page_path(project: Path, relative: str) -> Path | None:
    """`project / relative` when it is (symlinks resolved) a Markdown file inside the docs
    folder with no dot-file or dot-folder on its way; else None."""
    full = safe_path(project, relative)
    if full is None or full.suffix.lower() not in MARKDOWN:
        return None
    try:
        docs = safe_path(project, site_config(project).docs_dir)
    except AnnotateError:  # no readable site config: no docs folder to read from
        return None
    if docs is None or not full.is_relative_to(docs):
        return None
    inside = (*PurePosixPath(relative).parts, *full.relative_to(docs).parts)
    if any(part.startswith(".") for part in inside):
        return None
    return full


def _caution(item: Annotation | PageNote) -> str | None:
    if isinstance(item, Annotation) and item.anchor_state == "stale":
        return (
            "The annotated text was rewritten or deleted since the note was made (stale): these "
            "are the lines where it was last seen, and other text may stand there now (no line "
            "is marked). Check that the note still applies before editing."
        )
    if isinstance(item, Annotation) and item.source is not None and item.source.last_known:
        return (
            f"The note is {item.anchor_state}: these are the lines where its text was last "
            "seen, and other text may stand there now (no line is marked)."
        )
    if isinstance(item, Annotation) and item.source is not None and item.source.kind == "generated":
        what = f" (the docstring of {item.source.object})" if item.source.object else ""
        return (
            "The text was generated by the directive on the marked lines; edit its source"
            f"{what}, not these lines' output."
        )
    return None


def _missing(item: Annotation | PageNote, path: str | None) -> str:
    if path is None:
        return (
            f"No Markdown file is known for page {item.page_url}: the page may come from a theme, "
            "a macro or another generator. Find the text by its quote, or ask the reviewer."
        )
    return (
        f"The Markdown file {path} is gone (orphaned): find where the text moved before acting, "
        "or ask the reviewer."
    )


def _no_lines(item: Annotation | PageNote, path: str) -> str:
    if isinstance(item, PageNote):
        return f"A page note is about the whole page: {path}. The top of the file is shown."
    if item.type == "element":
        css = escape(item.element_selector.css_selector, PLAIN) if item.element_selector else "?"
        return (
            f"An element annotation points at the rendered page ({css}), not at Markdown lines: "
            f"find the element in {path}. The top of the file is shown."
        )
    return (
        f"The quote was not found in {path} (text from the theme, a macro or an include?). "
        "The top of the file is shown."
    )

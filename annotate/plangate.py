"""The plan gate: a document put up for review, and the wait for the person's verdict (issue #29).

`annotate hook plan` (Claude Code's `PermissionRequest` hook on `ExitPlanMode`), the MCP tool
`request_review` and `annotate open FILE --wait` all come here: the document becomes the next
revision of its plan (`store.plans`), is served on loopback with the overlay
(annotate/docserver.py), its address goes to the person (stderr, the browser), and the call blocks
until a review is sent from that page with a decision, or `timeout_s` passes. Notes from earlier
revisions stay on the page: it keeps its URL, and the store re-anchors them in the new text
(still there, or stale).
"""

from __future__ import annotations

import os
import threading
import webbrowser
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import documents
from .docserver import deciding, plan_page, plan_source, serve_document
from .errors import ValidationError
from .models import Annotation, PageNote, Review
from .plans import Revision
from .store import Store

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "NO_BROWSER_ENV",
    "Outcome",
    "changes_message",
    "first_heading",
    "hook_answer",
    "plan_input",
    "review_document",
    "submit_file",
    "submit_text",
]

DEFAULT_TIMEOUT_S = 3000.0  # the hook's own limit; `setup` gives Claude Code's a minute more
NO_BROWSER_ENV = "ANNOTATE_NO_BROWSER"  # set (non-empty): print the address, open no browser
MAX_LISTED = 50  # notes written out in one answer; the rest are counted
# How long the server waits, once decided, for the page that sent the verdict to have its
# answer (a decision recorded from elsewhere sends none: the wait ends then).
ANSWER_WAIT_S = 2.0


@dataclass(frozen=True)
class Outcome:
    """How a review of one revision ended: `revision` with its decision (None: no decision
    before the timeout), the review that carried it, and that review's notes on the document."""

    revision: Revision
    url: str
    decided: bool
    review: Review | None = None
    notes: tuple[Annotation | PageNote, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "planId": self.revision.plan_id,
            "revision": self.revision.number,
            "url": self.url,
            "decision": self.revision.decision,
            "message": self.revision.message,
            "reviewId": self.revision.review_id,
            "notes": [n.brief() for n in self.notes],
        }


def first_heading(markdown: str) -> str | None:
    for line in markdown.splitlines():
        if line.startswith("# "):
            return line[2:].strip() or None
    return None


def plan_input(payload: Any) -> tuple[str, str]:
    """`(session key, plan Markdown)` from Claude Code's PermissionRequest hook input;
    `ValidationError` naming what is missing."""
    if not isinstance(payload, Mapping):
        raise ValidationError("The hook's input is not a JSON object", "input")
    tool_input = payload.get("tool_input")
    plan = tool_input.get("plan") if isinstance(tool_input, Mapping) else None
    if not isinstance(plan, str) or not plan.strip():
        raise ValidationError(
            "The hook's input has no plan (tool_input.plan): register `annotate hook plan` "
            "for ExitPlanMode only",
            "tool_input.plan",
        )
    session = payload.get("session_id")
    session = session if isinstance(session, str) and session else "unknown"
    return f"session:{session[:200]}", plan


def submit_text(store: Store, key: str, markdown: str) -> tuple[Revision, str, str]:
    """Store `markdown` as the next revision of plan `key`; write it where its notes are located
    (inside the store's folder); answer the revision, its page URL and that Markdown path."""
    plan = store.plans.find(key)
    if plan is not None and plan.latest.markdown == markdown and plan.latest.decision is None:
        revision = plan.latest  # put up again unchanged (a wait that timed out): same revision
    else:
        revision = store.plans.submit(key, markdown, title=first_heading(markdown))
    source = plan_source(revision.plan_id)
    target = store.project_dir / source
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(markdown, encoding="utf-8")
    return revision, f"{documents.PLANS_PREFIX}{revision.plan_id}/", source


def submit_file(
    store: Store, path: str | os.PathLike[str], *, base: Path | None = None
) -> tuple[Revision, str, str]:
    """A Markdown file of the project (`documents.read_document`'s refusals apply) as the next
    revision of its plan; its notes carry its own path and lines, and a file inside docs_dir keeps
    its site page's URL."""
    doc = documents.read_document(store.project_dir, path, base=base)
    plan = store.plans.find(f"file:{doc.path}")
    if plan is not None and plan.latest.markdown == doc.text and plan.latest.decision is None:
        revision = plan.latest  # opened again unchanged: the same revision, still undecided
    else:
        revision = store.plans.submit(
            f"file:{doc.path}", doc.text, title=first_heading(doc.text) or doc.path
        )
    return revision, doc.page_url, doc.path


def review_document(
    store: Store,
    revision: Revision,
    page_url: str,
    source: str,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    open_browser: bool = True,
    say: Callable[[str], None] = print,
    poll_s: float = 0.25,
    stop: threading.Event | None = None,
) -> Outcome:
    """Serve `revision` at `page_url` and wait for the person's verdict, at most `timeout_s`."""
    plan = store.plans.get(revision.plan_id)
    html = plan_page(plan, revision.number, source=source)
    served = serve_document(
        store,
        {page_url: (html, source)},
        page_url=page_url,
        on_review=deciding(store, revision),
    )
    try:
        say(f"Review revision {revision.number} of {plan.key} at {served.url}")
        if open_browser and not os.environ.get(NO_BROWSER_ENV):
            webbrowser.open(served.url)

        def check() -> None:
            if served.errors:
                raise ValidationError(f"The review page stopped: {served.errors[0]}", "server")

        decided = store.plans.wait_for_decision(
            revision.plan_id, revision.number, timeout_s, poll_s=poll_s, check=check, stop=stop
        )
        if decided is not None:
            # The page that sent the verdict gets its answer before the server goes: it then
            # says the decision went out and stops asking, never a page gone offline.
            served.answered.wait(ANSWER_WAIT_S)
    finally:
        served.stop()
    if decided is None:
        return Outcome(revision, served.url, False)
    review = store.get_review(decided.review_id) if decided.review_id else None
    notes: list[Annotation | PageNote] = []
    if review is not None:
        mine: list[Annotation | PageNote] = [*review.annotations, *review.page_notes]
        notes = [n for n in mine if n.page_url == page_url]
    return Outcome(decided, served.url, True, review, tuple(notes))


def review_text(store: Store, key: str, markdown: str, **wait: Any) -> Outcome:
    """Put `markdown` up as the next revision of plan `key` and wait for the verdict (the plan
    gate's and `request_review`'s one call; `wait`: `review_document`'s options)."""
    return review_document(store, *submit_text(store, key, markdown), **wait)


def review_file(
    store: Store, path: str | os.PathLike[str], *, base: Path | None = None, **wait: Any
) -> Outcome:
    """Put a Markdown file of the project up for review and wait for the verdict (`annotate
    open`'s and `request_review`'s one call; `wait`: `review_document`'s options)."""
    return review_document(store, *submit_file(store, path, base=base), **wait)


def _note_lines(i: int, note: Annotation | PageNote) -> list[str]:
    if isinstance(note, PageNote):
        return [f"{i}. [page note] {note.note}"]
    where = f"lines {note.source.line_start}-{note.source.line_end}" if note.source else "lines ?"
    if note.source and note.source.line_start == note.source.line_end:
        where = f"line {note.source.line_start}"
    if note.anchor_state not in ("anchored", "moved"):
        where += f" ({note.anchor_state})"
    quote = note.selected_text or (note.quote.exact if note.quote else "")
    out = [f'{i}. [{note.intent}] {where}: "{quote}"']
    if note.suggestion:
        out.append(f'   suggestion: "{note.suggestion}"')
    if note.note:
        out.append(f"   note: {note.note}")
    return out


def changes_message(outcome: Outcome) -> str:
    """What the agent reads with a verdict: each note with its intent, plan lines, quoted text
    and suggestion, then the reviewer's message."""
    revision = outcome.revision
    verdict = {
        "request_changes": "requested changes to",
        "approve_with_notes": "approved, with notes,",
        "approve": "approved",
    }.get(revision.decision or "", "reviewed")
    lines = [f"The reviewer {verdict} the plan (revision {revision.number})."]
    if outcome.notes:
        lines.append("Notes (line numbers are the plan's):")
        for i, note in enumerate(outcome.notes[:MAX_LISTED], 1):
            lines += _note_lines(i, note)
        if len(outcome.notes) > MAX_LISTED:
            lines.append(f"… and {len(outcome.notes) - MAX_LISTED} more (get_review).")
    if revision.message:
        lines.append(f"Message: {revision.message}")
    if revision.decision == "request_changes":
        lines.append("Revise the plan accordingly and present it again.")
    return "\n".join(lines)


def hook_answer(outcome: Outcome, timeout_s: float) -> dict[str, Any]:
    """Claude Code's PermissionRequest answer for `outcome` (docs/plans.md)."""
    if not outcome.decided:
        # No decision: Claude Code asks the person in its own dialog, as without the hook.
        return {
            "systemMessage": f"annotate: no decision on the plan within {timeout_s:g} s "
            f"({outcome.url}); answer Claude Code's own prompt instead."
        }

    def decision(behavior: str, message: str | None = None) -> dict[str, Any]:
        d: dict[str, Any] = {"behavior": behavior}
        if message is not None:
            d["message"] = message
        return {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": d}}

    revision = outcome.revision
    if revision.decision == "request_changes":
        return decision("deny", changes_message(outcome))
    answer = decision("allow")
    if revision.decision == "approve_with_notes":
        # Claude Code's "allow" carries no message for the agent: the notes wait in the store
        # for wait_for_review (the review is pending), and the person is told so.
        n = len(outcome.notes)
        answer["systemMessage"] = (
            f"Plan approved with {n} note{'' if n == 1 else 's'}: the agent gets them with "
            f"wait_for_review (review {revision.review_id})."
        )
    return answer


def project_of(payload: Mapping[str, Any], given: str | None) -> Path:
    """The project a hook runs for: `--project`, else the hook's `cwd`, else the current
    folder."""
    from .project import find_project

    cwd = payload.get("cwd") if isinstance(payload, Mapping) else None
    start = given or (cwd if isinstance(cwd, str) and cwd else None) or "."
    return find_project(start)

"""`annotate export --html FILE`: one reviewed document as one self-contained HTML file (issue #29).

The rendered document, what changed since the last reviewed revision, every revision with its
decision and message, and the notes made on it with their replies. Nothing in it is fetched from
anywhere (styles inline, no script, no link to a resource) and its Content-Security-Policy says so
again; every text from the store is escaped, and the Markdown is rendered with raw HTML off, so
whatever a note or a plan holds is shown, never run.
"""

from __future__ import annotations

import os
from html import escape
from pathlib import Path

from . import documents
from .errors import ValidationError
from .models import Annotation, PageNote
from .plans import Plan
from .store import Store

__all__ = ["page_url_of_plan", "render_share", "write_html"]

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'"
NOTES_STYLE = """
.notes article{border:1px solid #8884;border-radius:.4rem;padding:.4rem .8rem;margin:.5rem 0}
.notes blockquote{margin:.3rem 0;padding-left:.7rem;border-left:3px solid #8886;
white-space:pre-wrap}.notes .where{color:#777;font-size:.85em}.notes .text{white-space:pre-wrap}
.notes ol{margin:.2rem 0}
"""


def page_url_of_plan(store: Store, plan: Plan) -> str:
    """The page URL a plan's notes carry (annotate/plangate.py chose it)."""
    if plan.key.startswith("file:"):
        return documents.page_url_of(store.project_dir, plan.key[len("file:") :])[0]
    return f"{documents.PLANS_PREFIX}{plan.id}/"


def _note_html(note: Annotation | PageNote) -> str:
    parts = ['<article class="note">']
    if isinstance(note, Annotation):
        where = note.source.lines if note.source else "not located"
        parts.append(
            f'<p class="where">[{escape(note.intent)}] {escape(where)} · {escape(note.status)}'
            f" · {escape(note.anchor_state)}</p>"
        )
        quote = note.selected_text or (note.quote.exact if note.quote else "")
        if quote:
            parts.append(f"<blockquote>{escape(quote)}</blockquote>")
        if note.suggestion:
            parts.append(f'<p class="text">Suggestion: {escape(note.suggestion)}</p>')
    else:
        parts.append(f'<p class="where">[page note] · {escape(note.status)}</p>')
    if note.note:
        parts.append(f'<p class="text">{escape(note.note)}</p>')
    if note.replies:
        parts.append("<ol>")
        for r in note.replies:
            who = r.author or ("Agent" if r.role == "agent" else "Reviewer")
            parts.append(f"<li><b>{escape(who)}</b>: {escape(r.message)}</li>")
        parts.append("</ol>")
    parts.append("</article>")
    return "".join(parts)


def render_share(store: Store, plan: Plan, number: int | None = None) -> str:
    """The self-contained page of `plan`'s revision `number` (the latest by default)."""
    revision = plan.revision(number)
    url = page_url_of_plan(store, plan)
    annotations = store.list_annotations(url, include_resolved=True)
    notes = store.list_page_notes(url, include_resolved=True)
    before = plan.last_reviewed(revision.number)
    changes = ""
    if before is not None:
        diff, added, removed = documents.word_diff_html(before.markdown, revision.markdown)
        changes = (
            f"<p>Since revision {before.number} ({escape(str(before.decision))}): {added} words "
            f"added, {removed} removed.</p>{diff}"
        )
    history = [
        (
            f"Revision {r.number}",
            f"{r.created_at}: {r.decision or 'no decision'}"
            + (f" ({r.message})" if r.message else ""),
        )
        for r in plan.revisions
    ]
    verdict = revision.decision or "no decision yet"
    meta = f"{plan.key} · revision {revision.number} · {verdict}"
    if revision.message:
        meta += f" · {revision.message}"
    html = documents.page(
        plan.title or plan.key,
        documents.render(revision.markdown),
        meta=meta,
        changes_html=changes,
        history=history,
    )
    every: list[Annotation | PageNote] = [*notes, *annotations]
    listed = "".join(_note_html(n) for n in every) or "<p>No notes.</p>"
    section = f'<section class="notes" aria-label="Notes"><h2>Notes</h2>{listed}</section></body>'
    head = f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
    html = html.replace('<meta charset="utf-8">', f'<meta charset="utf-8">{head}', 1)
    html = html.replace("</style>", f"{NOTES_STYLE}</style>", 1)
    return html.replace("</body>", section, 1)


def write_html(
    store: Store, path: str | os.PathLike[str], plan_id: str | None, number: int | None = None
) -> Path:
    """Write `render_share` of plan `plan_id` (the most recently revised when None) to `path`."""
    if plan_id is None:
        found = store.plans.list()
        if not found:
            raise ValidationError("No plan or reviewed file to export yet", "plan")
        plan = found[0]
    else:
        plan = store.plans.get(plan_id)
    target = Path(path)
    target.write_text(render_share(store, plan, number), encoding="utf-8")
    return target

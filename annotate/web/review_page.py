"""The site-wide review page at `/__annotate/`: every page with its notes, counts by status, filters.

Rendered on the server with every user string escaped, and served with a Content-Security-Policy
that allows no script at all and only the one stylesheet below (by its hash). Filters are a plain
GET form, so the page needs no JavaScript.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape

from .. import build as builds
from ..models import ANCHOR_STATES, STATUSES, Annotation, Build, PageNote

__all__ = ["CSP", "Filters", "render"]

STYLE = """
:root{color-scheme:light dark;--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--bg:#fff;--card:#f6f8fa;
--open:#0969da;--in_progress:#9a6700;--addressed:#8250df;--resolved:#1a7f37}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9198a1;--line:#3d444d;--bg:#0d1117;
--card:#151b23;--open:#4493f8;--in_progress:#d29922;--addressed:#ab7df8;--resolved:#3fb950}}
body{font:15px/1.5 system-ui,sans-serif;color:var(--fg);background:var(--bg);margin:0 auto;
max-width:60rem;padding:1rem 1.5rem 4rem}
h1{font-size:1.6rem;margin:.5rem 0}h2{font-size:1.15rem;margin:2rem 0 .5rem;
border-bottom:1px solid var(--line);padding-bottom:.3rem}
a{color:var(--open)}.muted,.url{color:var(--muted);font-size:.85em}
.counts{display:flex;flex-wrap:wrap;gap:.5rem;padding:0;list-style:none}
.counts li,.badge{border:1px solid var(--line);border-radius:1rem;padding:.1rem .6rem}
.badge{font-size:.8em;font-weight:600}
.s-open{color:var(--open)}.s-in_progress{color:var(--in_progress)}
.s-addressed{color:var(--addressed)}.s-resolved{color:var(--resolved)}
form{display:flex;flex-wrap:wrap;gap:.75rem;align-items:end;background:var(--card);
padding:.75rem;border-radius:.5rem}fieldset{border:0;margin:0;padding:0}
label{display:inline-flex;gap:.3rem;align-items:center}
article{background:var(--card);border-radius:.5rem;padding:.6rem .9rem;margin:.6rem 0}
blockquote{margin:.4rem 0;padding-left:.8rem;border-left:3px solid var(--line);
white-space:pre-wrap}
.text{white-space:pre-wrap;margin:.3rem 0}
ol{margin:.3rem 0;padding-left:1.2rem}.banner{background:var(--card);padding:.5rem;
border-radius:.5rem}
"""
STYLE_HASH = base64.b64encode(hashlib.sha256(STYLE.encode()).digest()).decode()
CSP = (
    "default-src 'none'; "
    f"style-src 'sha256-{STYLE_HASH}'; "
    "img-src 'self' data:; "
    "form-action 'self'; "
    "base-uri 'none'; "
    "frame-ancestors 'none'"
)
DEFAULT_STATUSES = STATUSES[:3]


@dataclass(frozen=True)
class Filters:
    statuses: tuple[str, ...] = DEFAULT_STATUSES
    page: str = ""
    kind: str = ""
    anchor: str = ""
    query: str = ""

    @classmethod
    def from_query(cls, params: Mapping[str, Sequence[str]]) -> Filters:
        """Filters from the form's query string; unknown values are ignored, never an error."""

        def one(name: str) -> str:
            values = params.get(name) or [""]
            return values[0][:2000]

        statuses = tuple(s for s in STATUSES if s in (params.get("status") or []))
        return cls(
            statuses=statuses or DEFAULT_STATUSES,
            page=one("page"),
            kind=one("type") if one("type") in ("text", "element", "page") else "",
            anchor=one("anchor") if one("anchor") in ANCHOR_STATES else "",
            query=one("q").strip(),
        )


@dataclass
class _Page:
    url: str
    title: str = ""
    notes: list[PageNote] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)


def _matches(item: Annotation | PageNote, f: Filters) -> bool:
    if item.status not in f.statuses or (f.page and item.page_url != f.page):
        return False
    if isinstance(item, Annotation):
        if f.kind and f.kind != item.type:
            return False
        if f.anchor and (item.type != "text" or item.anchor_state != f.anchor):
            return False
        texts = [item.note, item.selected_text or "", item.suggestion or "", item.page_title]
    else:
        if (f.kind and f.kind != "page") or f.anchor:
            return False
        texts = [item.note, item.page_title]
    if f.query:
        texts += [r.message for r in item.replies]
        needle = f.query.casefold()
        return any(needle in t.casefold() for t in texts)
    return True


def _link(url: str, text: str) -> str:
    # Page URLs are validated site paths; anything else is shown, never linked.
    if url.startswith("/") and not url.startswith("//"):
        return f'<a href="{escape(url)}">{escape(text)}</a>'
    return escape(text)


def _status(status: str) -> str:
    return f'<span class="badge s-{escape(status)}">{escape(status.replace("_", " "))}</span>'


def _replies(item: Annotation | PageNote) -> str:
    if not item.replies:
        return ""
    rows = "".join(
        f"<li><strong>{escape(r.role)}</strong>{' ' + escape(r.author) if r.author else ''} "
        f'<span class="muted">{escape(r.created_at)}</span>'
        f'<div class="text">{escape(r.message)}</div></li>'
        for r in item.replies
    )
    return f'<ol class="replies" aria-label="Replies">{rows}</ol>'


def _build(item: Annotation | PageNote, shown: set[builds.Made]) -> str:
    """` · built main@0b105a0c1d2e` when the page names this note's build, else nothing."""
    b = item.build
    if b is None or (b.branch, b.commit) not in shown:
        return ""
    return f' · <span class="muted">built <code>{escape(builds.label(b.branch, b.commit))}</code></span>'


def _annotation(a: Annotation, shown: set[builds.Made]) -> str:
    meta = [_status(a.status), escape(a.type), escape(a.intent)]
    if a.type == "text":
        meta.append(escape(a.anchor_state))
    if a.source:
        meta.append(f"<code>{escape(a.source.lines)}</code>")
    meta[-1] += _build(a, shown)
    body = [f'<p class="meta">{" · ".join(meta)} <span class="muted">{escape(a.id)}</span></p>']
    if a.type == "text":
        body.append(f"<blockquote>{escape(a.selected_text or '')}</blockquote>")
        if a.replaced_text:
            body.append(f'<p class="text">Now: {escape(a.replaced_text)}</p>')
    elif a.element_selector:
        sel = a.element_selector
        body.append(f"<p>Element <code>{escape(sel.css_selector)}</code></p>")
        if sel.description:
            body.append(f'<p class="muted">{escape(sel.description)}</p>')
    if a.note:
        body.append(f'<div class="text">{escape(a.note)}</div>')
    if a.suggestion:
        body.append(f'<p class="text">Suggestion: {escape(a.suggestion)}</p>')
    body.append(_replies(a))
    return f'<article class="note">{"".join(body)}</article>'


def _page_note(n: PageNote, shown: set[builds.Made]) -> str:
    meta = (
        f"{_status(n.status)} page note{_build(n, shown)} <span class='muted'>{escape(n.id)}</span>"
    )
    return (
        f'<article class="note"><p class="meta">{meta}</p>'
        f'<div class="text">{escape(n.note)}</div>{_replies(n)}</article>'
    )


def _counts(items: Iterable[Annotation | PageNote]) -> dict[str, int]:
    counts = dict.fromkeys(STATUSES, 0)
    for item in items:
        counts[item.status] = counts.get(item.status, 0) + 1
    return counts


def _form(f: Filters, pages: Iterable[_Page]) -> str:
    boxes = "".join(
        f'<label><input type="checkbox" name="status" value="{s}"'
        f"{' checked' if s in f.statuses else ''}> {s.replace('_', ' ')}</label>"
        for s in STATUSES
    )

    def options(name: str, choices: Iterable[tuple[str, str]], chosen: str) -> str:
        opts = "".join(
            f'<option value="{escape(v)}"{" selected" if v == chosen else ""}>{escape(t)}</option>'
            for v, t in choices
        )
        return f'<select name="{name}">{opts}</select>'

    page_choices = [("", "All pages")] + [(p.url, p.title or p.url) for p in pages]
    kinds = [("", "Any"), ("text", "Text"), ("element", "Element"), ("page", "Page note")]
    anchors = [("", "Any")] + [(s, s) for s in ANCHOR_STATES]
    return (
        '<form method="get" action="/__annotate/" role="search" aria-label="Filters">'
        f"<fieldset><legend>Status</legend>{boxes}</fieldset>"
        f"<label>Page {options('page', page_choices, f.page)}</label>"
        f"<label>Type {options('type', kinds, f.kind)}</label>"
        f"<label>Anchor {options('anchor', anchors, f.anchor)}</label>"
        f'<label>Search <input type="search" name="q" value="{escape(f.query)}"></label>'
        '<button type="submit">Filter</button></form>'
    )


def render(
    annotations: Sequence[Annotation],
    notes: Sequence[PageNote],
    filters: Filters,
    *,
    read_only: bool = False,
    current: Build | None = None,
) -> str:
    """The whole page; `annotations` and `notes` are every item, filtered here. `current`: the
    build the server serves; a note made on another one names its own (annotate/build.py
    `named`)."""
    pages: dict[str, _Page] = {}
    items: list[Annotation | PageNote] = [*notes, *annotations]
    for item in items:
        page = pages.setdefault(item.page_url, _Page(item.page_url))
        page.title = page.title or item.page_title
    for n in notes:
        if _matches(n, filters):
            pages[n.page_url].notes.append(n)
    for a in annotations:
        if _matches(a, filters):
            pages[a.page_url].annotations.append(a)
    once, named = builds.named(
        ((i.build.branch, i.build.commit) if i.build else (None, None) for i in items), current
    )
    ordered = sorted(pages.values(), key=lambda p: p.url)
    counts = _counts(items)
    count_items = "".join(
        f'<li class="s-{s}">{counts[s]} {s.replace("_", " ")}</li>' for s in STATUSES
    )
    sections = []
    shown = 0
    for page in ordered:
        size = len(page.notes) + len(page.annotations)
        if not size:
            continue
        shown += size
        heading = _link(page.url, page.title or page.url)
        sections.append(
            f"<section><h2>{heading} <span class='url'>{escape(page.url)}</span> "
            f"<span class='muted'>{size} note{'' if size == 1 else 's'}</span></h2>"
            + "".join(_page_note(x, named) for x in page.notes)
            + "".join(_annotation(x, named) for x in page.annotations)
            + "</section>"
        )
    if not sections:
        sections.append('<p class="muted">No notes match these filters.</p>')
    banner = (
        '<p class="banner" role="status">Read-only: this server does not accept changes.</p>'
        if read_only
        else ""
    )
    served = "" if current is None else escape(builds.label(current.branch, current.commit))
    if once is not None:
        banner += (
            f'<p class="muted">Every note was made on build <code>{escape(builds.label(*once))}'
            f"</code>; serving build <code>{served}</code>.</p>"
        )
    elif named and current is not None:
        banner += (
            f'<p class="muted">Serving build <code>{served}</code>; a note made on another '
            "build names it.</p>"
        )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>Review notes · mkdocs-annotate</title>"
        f"<style>{STYLE}</style></head><body>"
        f"<header><h1>Review notes</h1>{banner}"
        f'<ul class="counts" aria-label="Counts by status">{count_items}</ul></header>'
        f"{_form(filters, ordered)}"
        f'<main><p class="muted">{shown} shown on '
        f"{len(sections) if shown else 0} page{'' if len(sections) == 1 else 's'}.</p>"
        f"{''.join(sections)}</main></body></html>\n"
    )

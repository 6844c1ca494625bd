"""Anchoring: where is a quoted passage now, in a text that may have changed since?
(docs/architecture.md, "Anchoring")

One concern per module, as in hypothesis/client `src/annotator/anchoring/`:

- `selectors`: `Selector` (quote, context, old position, replacement), `Match`, `build_selector`;
- `matching`: `locate` and `locate_many`, exact hits ranked by context, then approximate matches;
- `approximate`: candidate windows voted for by word pairs, and the quote's ends inside one;
- `index`: the word-pair index behind the `Index` protocol (`TextIndex`, and the indexes of texts
  `locate` saw recently);
- `pageindex`: a page's index kept from one version of its text to the next (`PageIndex`);
- `pagecache`: the anchor route's remembered answers and page indexes (`Anchors`);
- `markdown`: a quote the page shows, found in a Markdown file's projection (`locate_in_markdown`,
  what `sourcemap` answers with): exact occurrences ranked, else `locate`'s approximate match;
- `normalise`: rendered text folded for that search (quotes, dashes, case, whitespace);
- `text`: whitespace folding and word pairs; `tuning`: every weight and threshold, the Markdown
  side's included.

A web server re-anchors the notes of a page on every load, and the page changes little between
two loads: keep a `PageIndex` per page and call its `locate_many`, and the whole-text index costs
only the lines that changed.
"""

from __future__ import annotations

from .index import Index, TextIndex
from .matching import context_elsewhere, framed, locate, locate_many
from .pageindex import PageIndex
from .selectors import CONTEXT_LENGTH, Match, Selector, build_selector
from .tuning import MIN_QUOTE_SIMILARITY

__all__ = [
    "CONTEXT_LENGTH",
    "MIN_QUOTE_SIMILARITY",
    "Index",
    "Match",
    "PageIndex",
    "Selector",
    "TextIndex",
    "build_selector",
    "context_elsewhere",
    "framed",
    "locate",
    "locate_many",
]

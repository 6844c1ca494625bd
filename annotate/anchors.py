"""Anchors: where each note was selected on its rendered page, as `store.anchors`: the text
notes' selectors the anchor route finds again in the page (annotate/anchoring/pagecache.py), and
what each client reported of its selection (`fields.SELECTION`). Where a note stands in the
Markdown is `Sources`' (annotate/sources.py)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from . import urls
from . import validation as validate
from .backends import Backend
from .fields import SELECTION
from .sources import Sources
from .tables import IN_CHUNK

__all__ = ["Anchors"]


class Anchors:
    """The page side of the annotations' anchoring: their selectors, read as plain rows."""

    def __init__(self, backend: Backend, sources: Sources) -> None:
        self._file = backend
        self._sources = sources

    def text_selectors(
        self, page_url: str, *, include_resolved: bool = False
    ) -> list[tuple[str, str, str, str, int | None, int | None, str | None]]:
        """The selector of each text annotation of a page, in creation order, as plain tuples
        `(id, exact, prefix, suffix, start, end, replaced_text)`: cheap to compare, for the anchor
        route, which remembers its answers (annotate/anchoring/pagecache.py).

        No replies and no Markdown reconciliation: positions in the page text do not depend on
        them.
        """
        # The URL as written is the page's when it has notes (the first form with notes wins,
        # `Sources.page_url`): one query, not the lookup of every form it may be written in.
        # Found no note, the lookup decides, as for any other read.
        path = urls.clean(page_url) if isinstance(page_url, str) and page_url.strip() else page_url
        path = validate.page_url(path, "pageUrl")
        rows = self._text_selectors(path, include_resolved)
        if rows:
            return rows
        resolved = self._sources.page_url(page_url)
        return rows if resolved == path else self._text_selectors(resolved, include_resolved)

    def _text_selectors(
        self, page_url: str, include_resolved: bool
    ) -> list[tuple[str, str, str, str, int | None, int | None, str | None]]:
        sql = (
            "SELECT id, coalesce(nullif(quote_exact, ''), selected_text, ''), "
            "coalesce(quote_prefix, ''), coalesce(quote_suffix, ''), position_start, "
            "position_end, nullif(replaced_text, '') FROM annotations "
            # A deleted passage has nothing to highlight: re-anchoring it would mark whatever
            # text now stands where it was.
            "WHERE page_url = ? AND type = 'text' AND anchor_state != 'removed'"
        )
        if not include_resolved:
            sql += " AND status != 'resolved'"
        with self._file.transaction(write=False) as conn:
            cur = conn.cursor()
            cur.row_factory = None  # plain tuples: a page load reads every note of the page
            return cur.execute(sql + " ORDER BY rowid", (page_url,)).fetchall()

    def selections(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Where each of these annotations was selected on its page, as its client reported it
        (`fields.SELECTION`: `inCode`, `occurrence`, input only): `{id: {key: value}}`, the keys
        known, for the notes that know either. For `annotate mcp --remote`, which locates the
        notes in its own checkout (annotate/mcp_remote.py)."""
        wanted = list(dict.fromkeys(ids))
        cols = ", ".join(f.col for f in SELECTION)
        known = " OR ".join(f"{f.col} IS NOT NULL" for f in SELECTION)
        out: dict[str, dict[str, Any]] = {}
        with self._file.transaction(write=False) as conn:
            for at in range(0, len(wanted), IN_CHUNK):
                some = wanted[at : at + IN_CHUNK]
                marks = ", ".join("?" * len(some))
                sql = f"SELECT id, {cols} FROM annotations WHERE id IN ({marks}) AND ({known})"
                for id, *values in conn.execute(sql, some).fetchall():
                    out[id] = {
                        f.key: bool(v) if f.type == "boolean" else v
                        for f, v in zip(SELECTION, values, strict=True)
                        if v is not None
                    }
        return out

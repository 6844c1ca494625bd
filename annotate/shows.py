"""Shows: "show me this passage" (issue #19), as `store.shows`: a note pointed at in every open
view of its page, and the views' acknowledgements."""

from __future__ import annotations

import re
import time

from .backends import Backend, now
from .errors import ShowNotFound, ValidationError
from .models import Shown
from .sources import Sources
from .tables import Tables, ago, kind_of

__all__ = ["MAX_SEQ", "MAX_SHOW_WAIT_S", "SHOWN_KEPT_S", "SHOW_WAIT_S", "Shows"]

# show_annotation (issue #19): how long it waits for views to acknowledge by default, how often
# it looks, and the quiet time after an acknowledgement that ends the wait early (open views
# read the change feed on the same beat, annotate/web/feed.py, so they answer close together).
SHOW_WAIT_S = 1.5
MAX_SHOW_WAIT_S = 30.0
SHOW_POLL_S = 0.05
SHOW_QUIET_S = 0.5
# Acknowledgements older than this are deleted by the next show.
SHOWN_KEPT_S = 600
VIEWER = re.compile(r"[A-Za-z0-9_-]{1,64}")  # docs/http-api.md, POST shown
MAX_SEQ = 10**18 - 1  # as the change feed's cursor (annotate/web/app.py `_int`)
# Why the views show a note in their panel rather than on its passage (Shown.why_not).
NO_PASSAGE = {
    "resolved": "The note is resolved, so no view highlights it: they show it in their panel.",
    "removed": "Its passage was deleted as the note asked: views show the note in their panel.",
    "stale": "Its quote was rewritten in the Markdown: a view that no longer finds it on the "
    "page shows the note in its panel.",
    "orphaned": "Its Markdown file is gone: a view that does not find the quote on the page "
    "shows the note in its panel.",
}


class Shows:
    """A `show` row of the change feed per request; the `shown` table counts the views."""

    def __init__(self, backend: Backend, sources: Sources) -> None:
        self._file = backend
        self._tables = Tables(backend)
        self._sources = sources

    def show(self, id: str, wait: float = SHOW_WAIT_S) -> Shown:
        """Ask every open view of the note's page (browser pages with the overlay, the chat view)
        to scroll to it and flash it: a change row of action `show`, no data change. Returns how
        many views acknowledged it (`acknowledge`) within `wait` seconds, as a `Shown`
        (an int); the wait ends early once acknowledgements stop coming for `SHOW_QUIET_S`."""
        if (
            isinstance(wait, bool)
            or not isinstance(wait, (int, float))
            or not (0 <= wait <= MAX_SHOW_WAIT_S)
        ):
            raise ValidationError(f"wait must be 0 to {MAX_SHOW_WAIT_S:g} seconds", "wait")
        with self._file.transaction(write=True) as conn:
            table, row = self._tables.find(conn, id)
            conn.execute("DELETE FROM shown WHERE at < ?", (ago(SHOWN_KEPT_S),))
            self._tables.record(conn, kind_of(table), id, "show", row["page_url"])
            seq = conn.execute(
                "SELECT max(seq) FROM changes WHERE item_id = ? AND action = 'show'", (id,)
            ).fetchone()[0]
        why_not = None
        if table == "annotations":
            state = "resolved" if row["status"] == "resolved" else row["anchor_state"]
            why_not = NO_PASSAGE.get(state)
        deadline = time.monotonic() + wait
        views, last = 0, time.monotonic()
        while True:
            with self._file.transaction(write=False) as conn:
                n = conn.execute("SELECT count(*) FROM shown WHERE seq = ?", (seq,)).fetchone()[0]
            at = time.monotonic()
            if n != views:
                views, last = n, at
            if at >= deadline or (views and at - last >= SHOW_QUIET_S):
                return Shown(views, id, row["page_url"], why_not)
            time.sleep(min(SHOW_POLL_S, deadline - at))

    def acknowledge(self, seq: int, viewer: str, page_url: str | None = None) -> bool:
        """A view showed the note of `show`'s change `seq`: count it once per
        `viewer` (an id the view makes up, letters, digits, `_` and `-`). A view of another page
        than the note's (`page_url`, when given) is not counted. True when this counted."""
        if isinstance(seq, bool) or not isinstance(seq, int) or not 1 <= seq <= MAX_SEQ:
            raise ValidationError(
                f"seq must be a whole number from 1 to {MAX_SEQ}: the show's change number", "seq"
            )
        if not isinstance(viewer, str) or not VIEWER.fullmatch(viewer):
            raise ValidationError(
                "viewer must be 1 to 64 letters, digits, '_' or '-' naming the view", "viewer"
            )
        if page_url is not None:
            page_url = self._sources.page_url(page_url)
        with self._file.transaction(write=True) as conn:
            found = conn.execute(
                "SELECT page_url FROM changes WHERE seq = ? AND action = 'show'", (seq,)
            ).fetchone()
            if found is None:
                raise ShowNotFound(seq)
            if page_url is not None and page_url != found[0]:
                return False
            cur = conn.execute(
                "INSERT INTO shown (seq, viewer, at) VALUES (?, ?, ?) "
                "ON CONFLICT (seq, viewer) DO NOTHING",
                (seq, viewer, now()),
            )
            return cur.rowcount == 1

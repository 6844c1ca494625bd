"""Feed: the change feed every view follows (docs/http-api.md) and each note's history, as
`store.feed`. Its rows are written by each verb's transaction (`Tables.record`)."""

from __future__ import annotations

from typing import Any

from .backends import Backend
from .models import STATUS_AFTER, HistoryEntry
from .tables import Tables, kind_of

__all__ = ["Feed"]


class Feed:
    """The `changes` table read: after a cursor, or one note's rows."""

    def __init__(self, backend: Backend) -> None:
        self._file = backend
        self._tables = Tables(backend)

    def changes(self, since: int = 0, limit: int = 1000) -> tuple[list[dict[str, Any]], int]:
        """Mutations after cursor `since` and the next cursor (the change feed, docs/http-api.md)."""
        with self._file.transaction(write=False) as conn:
            # Both sent at once (the cursor when nothing came): one round trip on PostgreSQL.
            sent = self._tables.send_tuples(
                conn,
                "SELECT seq, at, kind, item_id, action, page_url FROM changes WHERE seq > ? "
                "ORDER BY seq LIMIT ?",
                (since, limit),
            )
            top = self._tables.send_tuples(conn, "SELECT coalesce(max(seq), 0) FROM changes")
        _, rows = sent()
        if rows:
            cursor = rows[-1][0]
        else:
            cursor = top()[1][0][0]
            cursor = min(cursor, since) if since else cursor
        events = [
            {"seq": seq, "at": at, "kind": kind, "id": item, "action": action, "pageUrl": url}
            for seq, at, kind, item, action, url in rows
        ]
        return events, cursor

    def history(self, id: str, *, kind: str | None = None) -> list[HistoryEntry]:
        """The change rows of an annotation or page note (only that `kind` when given), oldest
        first: who started, addressed, accepted, reopened, edited or replied to it, and when."""
        with self._file.transaction(write=False) as conn:
            table, _ = self._tables.find(conn, id, kind)
            rows = conn.execute(
                "SELECT at, action, author FROM changes WHERE kind = ? AND item_id = ? "
                "ORDER BY seq",
                (kind_of(table), id),
            ).fetchall()
        return [
            HistoryEntry(at, action, author, STATUS_AFTER.get(action))
            for at, action, author in rows
        ]

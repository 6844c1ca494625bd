"""Bulk: the verbs on every note of the store at once (an export's one snapshot, the summary,
purging the resolved notes, an import), as `store.bulk`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .backends import Backend, Connection, now
from .filters import Filter
from .items import Items
from .models import ANCHOR_STATES, STATUSES, Annotation, PageNote, Summary
from .sources import ALL_ANNOTATIONS, Sources
from .tables import IN_CHUNK, Tables, decode_annotation, decode_page_note, kind_of, pause_gc

__all__ = ["Bulk"]


class Bulk:
    """Every annotation, page note, reply and review, read or written in one transaction."""

    def __init__(self, backend: Backend, sources: Sources, items: Items) -> None:
        self._file = backend
        self._tables = Tables(backend)
        self._sources = sources
        self._items = items

    def all_items(
        self, *, include_resolved: bool = True
    ) -> tuple[list[Annotation], list[PageNote]]:
        """Every annotation and page note, read in one snapshot (for exports)."""
        where = "" if include_resolved else " WHERE status != 'resolved'"
        with pause_gc(), self._sources.reading(ALL_ANNOTATIONS + where) as conn:
            replies = self._items.all_replies(conn)
            annotations = [
                decode_annotation(r, tuple(replies.get(r["id"], ())))
                for r in self._tables.query(
                    conn, f"SELECT * FROM annotations{where} ORDER BY rowid"
                )
            ]
            rows = self._tables.query(conn, f"SELECT * FROM page_notes{where} ORDER BY rowid")
            files = self._sources.page_files(conn, {r["page_url"] for r in rows})
            notes = [
                decode_page_note(r, tuple(replies.get(r["id"], ())), files[r["page_url"]])
                for r in rows
            ]
        return annotations, notes

    def export_rows(
        self, *, include_resolved: bool
    ) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], dict[str, list[tuple[str, str]]]]:
        """What the Markdown export shows, as rows of the field table (annotate/fields.py) in one
        snapshot (annotate/export.py).

        Objects cost twice the whole Markdown export at 100k notes; the columns the export does
        not show (quote context, positions, excerpts) are not even read.
        """
        where = "" if include_resolved else " WHERE status != 'resolved'"
        with pause_gc(), self._sources.reading(ALL_ANNOTATIONS + where) as conn:
            return self._file.export_rows(conn, where)

    def summary(self, *, branch: str | None = None) -> Summary:
        """Counts by status, by anchor state, pages with notes, reviews waiting for an agent.

        `branch`: only notes made on a build of that branch, as listings filter them
        (`annotate.filters.Filter`), and only the waiting reviews holding one of them.
        """
        every, every_params = Filter.of(status="all", branch=branch).where()
        waiting, waiting_params = Filter.of(branch=branch).where()
        scope = f"{ALL_ANNOTATIONS} WHERE {waiting}"
        with self._sources.reading(scope, waiting_params) as conn:

            def counts(sql: str, params: Sequence[Any]) -> dict[str, int]:
                return {r[0]: r[1] for r in conn.execute(sql, params)}

            by_status = counts(
                f"SELECT status, count(*) FROM annotations WHERE {every} GROUP BY status",
                every_params,
            )
            notes = counts(
                f"SELECT status, count(*) FROM page_notes WHERE {every} GROUP BY status",
                every_params,
            )
            anchors = counts(
                f"SELECT anchor_state, count(*) FROM annotations WHERE {waiting} "
                "AND type = 'text' GROUP BY anchor_state",
                waiting_params,
            )
            pages = conn.execute(
                f"SELECT count(*) FROM (SELECT page_url FROM annotations WHERE {waiting} "
                f"UNION SELECT page_url FROM page_notes WHERE {waiting}) AS u",
                [*waiting_params, *waiting_params],
            ).fetchone()[0]
            pending_sql = (
                "SELECT count(*) FROM reviews WHERE picked_up_at IS NULL AND done_at IS NULL"
            )
            pending_params: list[Any] = []
            if branch is not None:
                pending_sql += (
                    f" AND (EXISTS (SELECT 1 FROM annotations WHERE review_id = reviews.id "
                    f"AND {every}) OR EXISTS (SELECT 1 FROM page_notes WHERE review_id = "
                    f"reviews.id AND {every}))"
                )
                pending_params = [*every_params, *every_params]
            pending = conn.execute(pending_sql, pending_params).fetchone()[0]
        return Summary(
            annotations={s: by_status.get(s, 0) for s in STATUSES},
            page_notes={s: notes.get(s, 0) for s in STATUSES},
            anchor_states={s: anchors.get(s, 0) for s in ANCHOR_STATES},
            pages=pages,
            pending_reviews=pending,
        )

    def purge_resolved(self) -> int:
        """Delete every resolved annotation and page note (and their replies and screenshots);
        return how many."""
        with self._file.transaction(write=True) as conn:
            total = 0
            for table in ("annotations", "page_notes"):
                for child in ("replies WHERE parent_id", "screenshots WHERE note_id"):
                    conn.execute(
                        f"DELETE FROM {child} IN (SELECT id FROM {table} WHERE status = 'resolved')"
                    )
                total += conn.execute(f"DELETE FROM {table} WHERE status = 'resolved'").rowcount
            if total:
                self._tables.record(conn, "store", "*", "purged", None)
            return total

    def insert_raw(
        self,
        annotations: Iterable[Mapping[str, Any]],
        page_notes: Iterable[Mapping[str, Any]],
        replies: Iterable[Mapping[str, Any]],
        reviews: Iterable[Mapping[str, Any]] = (),
    ) -> dict[str, int]:
        """Insert already-validated rows keeping their ids, skipping ids already present.

        One transaction: an import lands whole or not at all. Which ids are stored already is
        read first, in one go (the write lock keeps it so); then each table's new rows go in
        one `executemany`, in their given order: on PostgreSQL two round trips whatever the
        size, not one per row (issue #31).
        """
        given = {
            "reviews": list(reviews),
            "annotations": list(annotations),
            "page_notes": list(page_notes),
            "replies": list(replies),
        }
        counts = {"annotations": 0, "pageNotes": 0, "replies": 0, "reviews": 0, "skipped": 0}
        inserted: set[str] = set()
        with self._file.transaction(write=True) as conn:
            stored = self._stored_ids(
                conn, {t: [r["id"] for r in rows] for t, rows in given.items()}
            )
            for table, rows in given.items():
                new: list[Mapping[str, Any]] = []
                for row in rows:
                    # A known item keeps its thread: replies come only with a new parent, so
                    # replies without ids (inline-review has none) are not duplicated.
                    orphan = table == "replies" and row["parent_id"] not in inserted
                    if orphan or row["id"] in stored[table]:
                        counts["skipped"] += 1
                        continue
                    stored[table].add(row["id"])  # the same id twice in the input: the first
                    new.append(row)
                counts[_COUNTED[table]] += len(new)
                _insert_rows(conn, table, new)
                if table in ("annotations", "page_notes"):
                    inserted.update(r["id"] for r in new)
                    stamp, kind = now(), kind_of(table)
                    changes = [
                        {"at": stamp, "kind": kind, "item_id": r["id"], "action": "imported",
                         "page_url": r["page_url"]}
                        for r in new
                    ]  # fmt: skip
                    _insert_rows(conn, "changes", changes)
            if inserted:
                self._file.notify(conn)
        return counts

    def _stored_ids(self, conn: Connection, ids: Mapping[str, list[str]]) -> dict[str, set[str]]:
        """Which of `ids` each table holds: every chunk's query sent at once, read together."""
        sent: dict[str, list[Callable[[], Any]]] = {}
        for table, wanted in ids.items():
            sent[table] = []
            for i in range(0, len(wanted), IN_CHUNK):
                chunk = wanted[i : i + IN_CHUNK]
                marks = ",".join("?" * len(chunk))
                sql = f"SELECT id FROM {table} WHERE id IN ({marks})"
                sent[table].append(self._tables.send_tuples(conn, sql, chunk))
        return {t: {r[0] for read in reads for r in read()[1]} for t, reads in sent.items()}


# `insert_raw`'s tables, by the key of the count it returns.
_COUNTED = {
    "reviews": "reviews",
    "annotations": "annotations",
    "page_notes": "pageNotes",
    "replies": "replies",
}
# What a column left out of an INSERT gets (annotate/schema.py, `_initial`); any other: NULL.
_DEFAULTS = {"page_title": "", "anchor_state": "anchored"}


def _insert_rows(conn: Connection, table: str, rows: Sequence[Mapping[str, Any]]) -> None:
    """INSERT `rows` in their order in one `executemany` (on PostgreSQL sent with the commit,
    without waiting): a row without a column others have gets what the database would give it."""
    if not rows:
        return
    cols = list(dict.fromkeys(c for row in rows for c in row))
    marks = ", ".join("?" * len(cols))
    conn.executemany(
        f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({marks})",
        [tuple(row.get(c, _DEFAULTS.get(c)) for c in cols) for row in rows],
    )

"""Bulk: the verbs on every note of the store at once (an export's one snapshot, the summary,
purging the resolved notes, an import), as `store.bulk`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .backends import Backend
from .fields import ANNOTATION, PAGE_NOTE
from .filters import Filter
from .items import Items
from .models import ANCHOR_STATES, STATUSES, Annotation, PageNote, Summary
from .sources import ALL_ANNOTATIONS, Sources
from .tables import Item, Tables, decode_annotation, decode_page_note, kind_of, pause_gc

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
        if not self._file.writes_rows:
            return self._export_rows_of_objects(include_resolved=include_resolved)
        where = "" if include_resolved else " WHERE status != 'resolved'"
        with pause_gc(), self._sources.reading(ALL_ANNOTATIONS + where) as conn:
            return self._file.export_rows(conn, where)

    def _export_rows_of_objects(
        self, *, include_resolved: bool
    ) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], dict[str, list[tuple[str, str]]]]:
        """`export_rows` from objects: the fields' SQL (`json_extract`) is SQLite's."""
        annotations, notes = self.all_items(include_resolved=include_resolved)
        items: list[Item] = [*annotations, *notes]
        replies: dict[str, list[tuple[str, str]]] = {
            i.id: [(r.role, r.message) for r in i.replies] for i in items if i.replies
        }
        return (
            [_annotation_row(a) for a in annotations],
            [_page_note_row(p) for p in notes],
            replies,
        )

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

        One transaction: an import lands whole or not at all.
        """
        counts = {"annotations": 0, "pageNotes": 0, "replies": 0, "reviews": 0, "skipped": 0}
        inserted: set[str] = set()
        with self._file.transaction(write=True) as conn:
            for table, rows, key in (
                ("reviews", reviews, "reviews"),
                ("annotations", annotations, "annotations"),
                ("page_notes", page_notes, "pageNotes"),
                ("replies", replies, "replies"),
            ):
                for row in rows:
                    # A known item keeps its thread: replies come only with a new parent, so
                    # replies without ids (inline-review has none) are not duplicated.
                    if table == "replies" and row["parent_id"] not in inserted:
                        counts["skipped"] += 1
                        continue
                    cols = ", ".join(row)
                    marks = ", ".join("?" * len(row))
                    cur = conn.execute(
                        f"INSERT INTO {table} ({cols}) VALUES ({marks}) ON CONFLICT DO NOTHING",
                        tuple(row.values()),
                    )
                    if not cur.rowcount:
                        counts["skipped"] += 1
                        continue
                    counts[key] += 1
                    if table in ("annotations", "page_notes"):
                        inserted.add(row["id"])
                        self._tables.record(
                            conn, kind_of(table), row["id"], "imported", row["page_url"]
                        )
        return counts


# The export's rows of objects, from the field table (annotate/fields.py).
_annotation_row: Callable[[Annotation], tuple[Any, ...]] = ANNOTATION.row_of()
_page_note_row: Callable[[PageNote], tuple[Any, ...]] = PAGE_NOTE.row_of()

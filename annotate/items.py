"""Items: annotations and page notes read as objects, with their replies (annotate/models.py).
What the store's verbs answer, and the reviews' notes (annotate/reviews.py)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Literal, overload

from . import validation as validate
from .backends import Backend, Connection
from .errors import AnnotationNotFound
from .filters import Filter
from .models import Annotation, PageNote, Reply
from .sources import Sources
from .tables import (
    IN_CHUNK,
    Item,
    ItemTable,
    Row,
    Tables,
    decode_annotation,
    decode_page_note,
    decode_reply,
    threads,
)

__all__ = ["Items"]


class Items:
    """Rows of the two kinds of note into objects, each with its thread of replies."""

    def __init__(self, backend: Backend, sources: Sources) -> None:
        self._file = backend
        self._tables = Tables(backend)
        self._sources = sources

    def replies(self, conn: Connection, ids: list[str]) -> dict[str, list[Reply]]:
        out: dict[str, list[Reply]] = {}
        for i in range(0, len(ids), IN_CHUNK):
            chunk = ids[i : i + IN_CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = self._tables.query(
                conn, f"SELECT * FROM replies WHERE parent_id IN ({marks}) ORDER BY rowid", chunk
            )
            threads(rows, out)  # adds to `out`
        return out

    def all_replies(self, conn: Connection) -> dict[str, list[Reply]]:
        return threads(self._tables.query(conn, "SELECT * FROM replies ORDER BY rowid"))

    @overload
    def objects(
        self,
        conn: Connection,
        table: Literal["annotations"],
        rows: Sequence[Row],
        replies: dict[str, list[Reply]] | None = ...,
    ) -> list[Annotation]: ...

    @overload
    def objects(
        self,
        conn: Connection,
        table: Literal["page_notes"],
        rows: Sequence[Row],
        replies: dict[str, list[Reply]] | None = ...,
    ) -> list[PageNote]: ...

    @overload
    def objects(
        self,
        conn: Connection,
        table: ItemTable,
        rows: Sequence[Row],
        replies: dict[str, list[Reply]] | None = ...,
    ) -> list[Annotation] | list[PageNote]: ...

    def objects(
        self,
        conn: Connection,
        table: ItemTable,
        rows: Sequence[Row],
        replies: dict[str, list[Reply]] | None = None,
    ) -> list[Annotation] | list[PageNote]:
        if replies is None:
            replies = self.replies(conn, [r["id"] for r in rows]) if rows else {}
        if table == "annotations":
            return [decode_annotation(r, tuple(replies.get(r["id"], ()))) for r in rows]
        files = self._sources.page_files(conn, {r["page_url"] for r in rows})
        return [
            decode_page_note(r, tuple(replies.get(r["id"], ())), files[r["page_url"]]) for r in rows
        ]

    @overload
    def loading(
        self, conn: Connection, table: Literal["annotations"], id: str
    ) -> Callable[[], Annotation]: ...

    @overload
    def loading(
        self, conn: Connection, table: Literal["page_notes"], id: str
    ) -> Callable[[], PageNote]: ...

    @overload
    def loading(self, conn: Connection, table: ItemTable, id: str) -> Callable[[], Item]: ...

    def loading(self, conn: Connection, table: ItemTable, id: str) -> Callable[[], Item]:
        """Send the reads of item `id` and its replies together; the function returned makes
        the object, also after the transaction (a write verb's answer then comes with its
        commit on PostgreSQL, one round trip for both)."""
        rows = self._tables.send(conn, f"SELECT * FROM {table} WHERE id = ?", (id,))
        replies = self._tables.send(
            conn, "SELECT * FROM replies WHERE parent_id = ? ORDER BY rowid", (id,)
        )
        if table == "page_notes":  # its Markdown file is one more read, from its row
            note = self.objects(conn, table, rows(), threads(replies()))[0]
            return lambda: note

        def load() -> Item:
            (row,) = rows()
            return decode_annotation(row, tuple(decode_reply(r) for r in replies()))

        return load

    def getting(self, conn: Connection, id: str) -> Callable[[], Item]:
        """The annotation or page note `id` with its replies (`Store.get_annotation`): the reads
        sent together, read after the transaction (with its commit on PostgreSQL: one round
        trip, issue #31); a page note's Markdown file is one more read, outside it."""
        if not validate.is_valid_id(id):
            raise AnnotationNotFound(id)
        rows = [
            self._tables.send(conn, f"SELECT * FROM {table} WHERE id = ?", (id,))
            for table in ("annotations", "page_notes")
        ]
        replies = self._tables.send(
            conn, "SELECT * FROM replies WHERE parent_id = ? ORDER BY rowid", (id,)
        )

        def load() -> Item:
            thread = tuple(decode_reply(r) for r in replies())
            for row in rows[0]():
                return decode_annotation(row, thread)
            for row in rows[1]():
                files = self._sources.page_files(self._file.connection(), {row["page_url"]})
                return decode_page_note(row, thread, files[row["page_url"]])
            raise AnnotationNotFound(id)

        return load

    def annotations(self, found: Filter, *, as_json: bool) -> list[Annotation] | str:
        """The annotations `found` selects, in creation order, as objects or as the JSON array
        of their `to_dict()`s (`Store.list_annotations`); only those are reconciled."""
        where, params = found.where()
        page, window = found.page()
        ordered = f"SELECT * FROM annotations WHERE {where} ORDER BY rowid{page}"
        # Without a page, the notes to reconcile need no order: an aggregate over an ordered
        # subquery would copy every row first.
        scope = ordered if page else f"SELECT * FROM annotations WHERE {where}"
        with self._sources.reading(scope, [*params, *window]) as conn:
            if as_json and self._file.writes_rows:
                return self._file.annotations_json(conn, where, page, [*params, *window])
            # The notes and their replies sent together and read after the transaction: on
            # PostgreSQL they come with its commit, one round trip.
            ids = (
                f"SELECT id FROM ({ordered}) AS o"
                if page
                else f"SELECT id FROM annotations WHERE {where}"
            )
            notes = self._tables.send(conn, ordered, [*params, *window])
            replies = self._tables.send(
                conn,
                f"SELECT * FROM replies WHERE parent_id IN ({ids}) ORDER BY rowid",
                [*params, *window],
            )
        by_note = threads(replies())
        listed = [decode_annotation(r, tuple(by_note.get(r["id"], ()))) for r in notes()]
        if not as_json:
            return listed
        # A database that does not write it (PostgreSQL): the same JSON from the objects.
        return json.dumps([a.to_dict() for a in listed], ensure_ascii=False, separators=(",", ":"))

    def page_notes(self, found: Filter) -> list[PageNote]:
        """The page notes `found` selects, in creation order (`Store.list_page_notes`)."""
        where, params = found.where()
        with self._file.transaction(write=False) as conn:
            rows = self._tables.query(
                conn, f"SELECT * FROM page_notes WHERE {where} ORDER BY rowid", params
            )
            return self.objects(conn, "page_notes", rows)

"""Items: annotations and page notes read as objects, with their replies (annotate/models.py).
What the store's verbs answer, and the reviews' notes (annotate/reviews.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal, overload

from .backends import Backend, Connection
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

"""What the store's nouns share over one backend (annotate/backends/interface.py): the deferred
read as dicts, a change row for the feed and its history, inserts and updates by column, a note
found by its id, and the field table's row decoders.

`Store` (annotate/store.py) and each noun beside it (`People`, `Feed`, `Shows`, `Reviews`,
`Sources`, …: docs/architecture.md, "Where a new noun goes") hold a `Tables` over the store's
backend; none imports another's private names.
"""

from __future__ import annotations

import contextlib
import gc
import secrets
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any, Literal

from . import lineversions
from . import validation as validate
from .backends import Backend, Connection, Rows, now
from .errors import AnnotationNotFound, InvalidTransition, PageNoteNotFound
from .fields import ANNOTATION, PAGE_NOTE, REPLY
from .identity import Person
from .models import (
    Annotation,
    Build,
    ElementSelector,
    PageNote,
    PageSource,
    Reply,
    Source,
    TextPosition,
    TextQuote,
)

__all__ = [
    "IN_CHUNK",
    "KINDS",
    "LABELS",
    "Item",
    "ItemTable",
    "Row",
    "Tables",
    "ago",
    "decode_annotation",
    "decode_page_note",
    "decode_reply",
    "kind_of",
    "new_id",
    "pause_gc",
    "refuse_resolved",
    "threads",
    "who",
]

# SQLite's bound-variable limit is 32766 on current builds; stay far below it.
IN_CHUNK = 500

Item = Annotation | PageNote
Row = Mapping[str, Any]
# The tables of the two kinds of item: `Items.objects` and `Items.loading` answer each one's class.
ItemTable = Literal["annotations", "page_notes"]
LABELS = {"annotations": "Annotation", "page_notes": "Page note"}
KINDS: dict[str, ItemTable] = {"annotation": "annotations", "page_note": "page_notes"}


class Tables:
    """The statements every noun writes the same way, over one backend."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def transaction(self, write: bool) -> contextlib.AbstractContextManager[Connection]:
        return self.backend.transaction(write)

    def query(self, conn: Connection, sql: str, params: Iterable[Any] = ()) -> list[dict[str, Any]]:
        """Rows as dicts: Row looks names up by a linear, case-insensitive scan, which costs
        more than building the whole object on wide rows (measured: export of 100k notes)."""
        return self.send(conn, sql, params)()

    def send(
        self, conn: Connection, sql: str, params: Iterable[Any] = ()
    ) -> Callable[[], list[dict[str, Any]]]:
        """Send a query now; the function returned gives its rows as `query` does, also after
        the transaction (`Backend.send`: on PostgreSQL queries sent one after another share one
        round trip, and those read after the transaction arrive with its commit)."""
        sent = self.send_tuples(conn, sql, params)

        def rows() -> list[dict[str, Any]]:
            names, tuples = sent()
            return [dict(zip(names, t, strict=True)) for t in tuples]

        return rows

    def send_tuples(
        self, conn: Connection, sql: str, params: Iterable[Any] = ()
    ) -> Callable[[], Rows]:
        """`send` giving the column names and the rows as plain tuples (no dict per row)."""
        return self.backend.send(conn, sql, tuple(params))

    def record(
        self,
        conn: Connection,
        kind: str,
        id: str,
        action: str,
        page_url: str | None,
        author: str | None = None,
    ) -> None:
        """A row of the change feed (and of the item's history), waking other processes."""
        # `author`: who made the change, in team mode (docs/team.md); the feed does not show it.
        conn.execute(
            "INSERT INTO changes (at, kind, item_id, action, page_url, author) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (now(), kind, id, action, page_url, author),
        )
        self.backend.notify(conn)

    def record_many(
        self, conn: Connection, kind: str, action: str, items: Iterable[tuple[str, str | None]]
    ) -> None:
        """`record` for each (id, page URL) of `items`, in one statement (none if no items)."""
        stamp = now()
        rows = [(stamp, kind, id, action, page_url) for id, page_url in items]
        if rows:
            conn.executemany(
                "INSERT INTO changes (at, kind, item_id, action, page_url) VALUES (?, ?, ?, ?, ?)",
                rows,
            )
            self.backend.notify(conn)

    def current(
        self, conn: Connection, table: str, ids: list[str], columns: tuple[str, ...]
    ) -> dict[str, tuple[Any, ...]]:
        """`columns` of each of `ids` that `table` holds, every chunk's query sent at once."""
        sent = []
        for i in range(0, len(ids), IN_CHUNK):
            chunk = ids[i : i + IN_CHUNK]
            sql = f"SELECT id, {', '.join(columns)} FROM {table} WHERE id IN ({','.join('?' * len(chunk))})"
            sent.append(self.send_tuples(conn, sql, chunk))
        return {r[0]: tuple(r[1:]) for read in sent for r in read()[1]}

    def insert(self, conn: Connection, table: str, values: Mapping[str, Any]) -> None:
        _keep_version(conn, values)
        cols = ", ".join(values)
        marks = ", ".join("?" * len(values))
        conn.execute(f"INSERT INTO {table} ({cols}) VALUES ({marks})", tuple(values.values()))

    def update(self, conn: Connection, table: str, id: str, values: Mapping[str, Any]) -> None:
        _keep_version(conn, values)
        sets = ", ".join(f"{k} = ?" for k in values)
        conn.execute(f"UPDATE {table} SET {sets} WHERE id = ?", (*values.values(), id))

    def row(self, conn: Connection, table: str, id: str) -> Row | None:
        """The row of `table` with this id, else None (also for a malformed id)."""
        if not validate.is_valid_id(id):
            return None
        found = self.query(conn, f"SELECT * FROM {table} WHERE id = ?", (id,))
        return found[0] if found else None

    def find(self, conn: Connection, id: str, kind: str | None = None) -> tuple[ItemTable, Row]:
        """The annotation or page note with this id (only that `kind` when given, "annotation"
        or "page_note"), with the reference's not-found message."""
        tables: tuple[ItemTable, ...] = (
            ("annotations", "page_notes") if kind is None else (KINDS[kind],)
        )
        for table in tables:
            row = self.row(conn, table, id)
            if row is not None:
                return table, row
        raise PageNoteNotFound(id) if kind == "page_note" else AnnotationNotFound(id)


def _keep_version(conn: Connection, values: Mapping[str, Any]) -> None:
    """The file version a note just located points at (`source_lines`), written with it
    (annotate/lineversions.py)."""
    key = values.get("source_lines")
    if isinstance(key, lineversions.LineKey):
        lineversions.keep(conn, {key: values.get("source_mtime")})


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(5)}"


def kind_of(table: str) -> str:
    """The change feed's `kind` of a row of `table`."""
    return "annotation" if table == "annotations" else "page_note"


def who(by: Person | None) -> str | None:
    return None if by is None else by.name


def refuse_resolved(table: str, row: Row, action: str) -> None:
    """`InvalidTransition` when the note of `row` (in `table`) is resolved: reopen it first."""
    if row["status"] == "resolved":
        raise InvalidTransition(
            f'Cannot {action}: {LABELS[table].lower()} "{row["id"]}" is resolved; reopen it first'
        )


def ago(seconds: float) -> str:
    """The time `seconds` ago, written as `now()` writes it (so the two compare as text)."""
    then = datetime.now(timezone.utc) - timedelta(seconds=seconds)
    return then.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@contextlib.contextmanager
def pause_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many acyclic objects.

    Each collection walks every live object, and building 100k annotations triggers dozens of
    them (benchmarks/store.py, "export markdown (all)", measures the export).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def threads(
    rows: Iterable[Row], out: dict[str, list[Reply]] | None = None
) -> dict[str, list[Reply]]:
    """Reply rows (in creation order) by the id of their note."""
    out = {} if out is None else out
    for r in rows:
        out.setdefault(r["parent_id"], []).append(decode_reply(r))
    return out


# Rows to objects, generated from the field table (annotate/fields.py): one constructor call each.
_DECODING = {
    "Build": Build,
    "TextQuote": TextQuote,
    "TextPosition": TextPosition,
    "Source": Source,
    "PageSource": PageSource,
    "ElementSelector": ElementSelector,
}
decode_reply: Callable[[Row], Reply] = REPLY.decoder(Reply, _DECODING)
decode_annotation: Callable[[Row, tuple[Reply, ...]], Annotation] = ANNOTATION.decoder(
    Annotation, _DECODING
)
decode_page_note: Callable[[Row, tuple[Reply, ...], str | None], PageNote] = PAGE_NOTE.decoder(
    PageNote, _DECODING
)

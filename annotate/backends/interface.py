"""What the store asks of a database (annotate/store.py): the `Backend` protocol that
`backends/sqlite.py` (`SqliteBackend`, one file) and `backends/postgres.py` (`PostgresBackend`, a
pooled server shared by several processes) implement.

The store's statements are written once, with `?` placeholders (PostgreSQL's backend binds them
as `%s`); where the two SQL dialects differ, the backend names the piece (`same`, `differs`).
A transaction's reads may be deferred (`send`): on PostgreSQL statements are queued and travel
together, so a verb costs a round trip per result it needs before its commit, 2 to 4 in all.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

__all__ = [
    "BUSY_TIMEOUT_S",
    "DEFAULT_DIR",
    "DEFAULT_FILE",
    "Backend",
    "Connection",
    "Cursor",
    "ExportRows",
    "Rows",
    "now",
]

# What every backend shares: the project's folder of the store (the SQLite file's, the token's),
# how long a transaction waits for the write lock, and the timestamps both write as TEXT.
DEFAULT_DIR = ".annotate"
DEFAULT_FILE = "annotations.db"
BUSY_TIMEOUT_S = 10.0


def now() -> str:
    """ISO 8601 UTC with milliseconds, e.g. `2026-11-21T10:30:00.123Z`."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# The columns' names and the rows, as plain tuples.
Rows = tuple[list[str], list[tuple[Any, ...]]]
# The Markdown export's rows: annotations, page notes (columns of annotate/fields.py's
# `Table.select`), and each note's replies as (role, message).
ExportRows = tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], dict[str, list[tuple[str, str]]]]


class Cursor(Protocol):
    """The part of a DB-API cursor the store uses. Rows answer by index and by column name
    unless `row_factory` is set to None (plain tuples)."""

    row_factory: Any

    def execute(self, sql: str, parameters: Any = (), /) -> Cursor: ...

    @property
    def description(self) -> Any: ...

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """A connection in a transaction (or one running each statement on its own)."""

    def cursor(self) -> Cursor: ...

    def execute(self, sql: str, parameters: Any = (), /) -> Cursor: ...

    def executemany(self, sql: str, parameters: Any, /) -> Cursor: ...


class Backend(Protocol):
    """One project's store in one database: transactions, reads, notifications of other
    processes' writes, and the facts about its SQL the store's statements need."""

    # "sqlite" or "postgresql".
    dialect: str
    # How the database is named in messages: the file's path, or the URL without its password.
    name: str
    project_dir: Path
    busy_timeout: float
    # Null-safe comparisons: SQLite's `IS` / `IS NOT` (NULL equal to NULL), which PostgreSQL
    # spells `IS NOT DISTINCT FROM` / `IS DISTINCT FROM`.
    same: str
    differs: str
    # Whether the database writes the JSON listing itself (`annotations_json`); otherwise the store
    # builds it from its objects, in the verb's one read. Every backend reads the export's rows.
    writes_rows: bool

    def transaction(self, write: bool) -> contextlib.AbstractContextManager[Connection]:
        """One transaction: writes serialised with every other writer, reads on one snapshot."""
        ...

    def connection(self) -> Connection:
        """This thread's transaction's connection, else one that runs each statement on its own
        (a read before a verb: one statement, no transaction around it)."""
        ...

    @property
    def conn(self) -> Any: ...

    @property
    def db(self) -> Any:
        """sqlite-utils' `Database` over this thread's connection (SQLite only)."""
        ...

    @property
    def schema_version(self) -> int: ...

    def send(self, conn: Connection, sql: str, params: Sequence[Any]) -> Callable[[], Rows]:
        """Send a query now; the function returned gives its rows, also after the transaction.
        The deferred read: on PostgreSQL queries sent one after another share one round trip,
        and those read after the transaction arrive with its commit; SQLite reads at once."""
        ...

    def notify(self, conn: Connection) -> None:
        """Wake the other processes' `subscribe` callbacks when this transaction commits."""
        ...

    def subscribe(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` (from another thread) after each commit with changes, from any
        process; returns the function that unsubscribes. Backends without notifications never
        call it (readers poll)."""
        ...

    def keep_open(self) -> None:
        """A server's store: open its connections now rather than at the first requests."""
        ...

    def close(self) -> None: ...

    def annotations_json(
        self, conn: Connection, where: str, page: str, params: Sequence[Any]
    ) -> str:
        """The JSON array of the annotations `where` selects, in creation order (`page`: its
        LIMIT/OFFSET), written by the database (only when `writes_rows`)."""
        ...

    def export_rows(self, conn: Connection, where: str) -> ExportRows:
        """What the Markdown export shows, read in `conn`'s snapshot."""
        ...

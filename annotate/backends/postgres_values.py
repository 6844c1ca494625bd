"""What a PostgreSQL statement sends and reads back (annotate/backends/postgres.py): the store's
`?` placeholders bound as psycopg's, parameters as PostgreSQL takes them, and rows that answer
by index and by column name."""

from __future__ import annotations

import functools
import re
from typing import Any, ClassVar

from ..errors import ValidationError

__all__ = ["Many", "Result", "Row", "bind", "column_names", "json_paths", "postgres_sql",
           "read_result", "row_class"]  # fmt: skip

_LITERAL = re.compile(r"('(?:[^']|'')*')")
_JSON_PATH = re.compile(r"json_extract\((\w+), '\$\.(\w+)'\)")


def json_paths(sql: str) -> str:
    """SQLite's `json_extract(column, '$.key')` of the field table's SQL as PostgreSQL spells it
    (the export reads strings only, which both give as text)."""
    return _JSON_PATH.sub(r"(\1::json ->> '\2')", sql)


@functools.lru_cache(maxsize=1024)
def postgres_sql(sql: str) -> str:
    """A statement's `?` placeholders bound as psycopg's `%s` (a literal `%` is doubled); text
    inside quotes is left alone. Nothing else is rewritten: where the dialects differ, the
    statement takes the backend's piece by name (`same`, `differs`)."""
    out = []
    for i, part in enumerate(_LITERAL.split(sql)):
        part = part.replace("%", "%%")
        out.append(part.replace("?", "%s") if i % 2 == 0 else part)
    return "".join(out)


class Row(tuple[Any, ...]):
    """A row read by index or by column name (the store's rows answer both ways)."""

    __slots__ = ()
    _index: ClassVar[dict[str, int]] = {}

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return tuple.__getitem__(self, self._index[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._index)


@functools.lru_cache(maxsize=256)
def row_class(names: tuple[str, ...]) -> type[Row]:
    return type("Row", (Row,), {"__slots__": (), "_index": {n: i for i, n in enumerate(names)}})


def bind(params: Any) -> Any:
    if isinstance(params, dict):
        return params
    for p in params or ():
        # PostgreSQL's text takes no NUL (SQLite's does): bad input, not a database failure.
        if isinstance(p, str) and "\x00" in p:
            raise ValidationError("Text must not contain NUL characters")
    # Booleans are stored as 0/1 on both backends (annotate/schema.py).
    return tuple(int(p) if isinstance(p, bool) else p for p in params or ())


class Many(list[Any]):
    """The rows of values of an `executemany` queued in a transaction's batch."""

    __slots__ = ()


# What a statement answered: its column names (None: no rows), the rows it touched, its rows.
Result = tuple[tuple[str, ...] | None, int, list[tuple[Any, ...]]]


def column_names(raw: Any) -> tuple[str, ...] | None:
    """The result's column names, None when it has no rows: read off the result itself, since
    psycopg's `description` builds a `Column` object per column on each read (50 us for 40
    columns, twice a statement; issue #31)."""
    res = raw.pgresult
    if res is None or res.nfields == 0:
        return None
    return tuple(res.fname(i).decode() for i in range(res.nfields))


def read_result(raw: Any) -> Result:
    names = column_names(raw)
    return names, raw.rowcount, raw.fetchall() if names is not None else []

"""The databases a store can live in, one module each, chosen by the `--db` value's URL scheme
(as encode/databases does): `postgresql://…` is `backends/postgres.py`, anything else an SQLite
file (`backends/sqlite.py`). Both implement `interface.Backend`.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from .interface import (
    BUSY_TIMEOUT_S,
    DEFAULT_DIR,
    DEFAULT_FILE,
    Backend,
    Connection,
    Cursor,
    ExportRows,
    Rows,
    now,
)
from .postgres import PostgresBackend
from .sqlite import SqliteBackend

__all__ = [
    "BUSY_TIMEOUT_S",
    "DEFAULT_DIR",
    "DEFAULT_FILE",
    "SCHEMES",
    "Backend",
    "Connection",
    "Cursor",
    "ExportRows",
    "Rows",
    "is_url",
    "now",
    "open_backend",
]

# A URL scheme -> the backend class that stores there (a file path has none: SQLite).
SCHEMES: dict[str, Callable[..., Backend]] = {
    "postgresql": PostgresBackend,
    "postgres": PostgresBackend,
}


def _scheme(value: object) -> str | None:
    if not isinstance(value, str) or "://" not in value:
        return None
    scheme = value.split("://", 1)[0]
    return scheme if scheme in SCHEMES else None


def is_url(value: object) -> bool:
    """Whether a `--db` value names a database server rather than an SQLite file."""
    return _scheme(value) is not None


def open_backend(
    path: str | os.PathLike[str],
    *,
    project_dir: str | os.PathLike[str] | None = None,
    busy_timeout: float = BUSY_TIMEOUT_S,
) -> Backend:
    """The backend `path` names: a database URL (`project_dir` then defaults to the current
    folder), else an SQLite file."""
    scheme = _scheme(path)
    if scheme is not None:
        return SCHEMES[scheme](str(path), project_dir=project_dir or ".", busy_timeout=busy_timeout)
    return SqliteBackend(path, project_dir=project_dir, busy_timeout=busy_timeout)

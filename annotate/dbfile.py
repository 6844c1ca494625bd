"""Moved to annotate/backends/sqlite.py (issue #28); kept importable under its old name."""

from .backends.sqlite import BUSY_TIMEOUT_S, DEFAULT_DIR, DEFAULT_FILE, SqliteBackend, now

DbFile = SqliteBackend

__all__ = ["BUSY_TIMEOUT_S", "DEFAULT_DIR", "DEFAULT_FILE", "DbFile", "SqliteBackend", "now"]

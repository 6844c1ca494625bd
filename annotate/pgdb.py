"""Moved to annotate/backends/postgres.py (issue #28); kept importable under its old name."""

from .backends import is_url
from .backends.postgres import CHANNEL, POOL_MAX, WRITE_LOCK, PostgresBackend, postgres_sql, redact

PgDb = PostgresBackend

__all__ = [
    "CHANNEL",
    "POOL_MAX",
    "WRITE_LOCK",
    "PgDb",
    "PostgresBackend",
    "is_url",
    "postgres_sql",
    "redact",
]

"""PostgreSQL's spelling of the schema (annotate/schema.py): the DDL of the migrations written
with sqlite-utils, and the migrator every other migration gets on PostgreSQL."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .interface import Connection, Cursor

__all__ = ["POSTGRES", "SQL_TYPES", "Migrator"]

# The SQL type of a field's JSON type (annotate/fields.py).
SQL_TYPES: dict[str, str] = {
    "string": "TEXT",
    "timestamp": "TEXT",
    "enum": "TEXT",
    "integer": "BIGINT",
    "boolean": "BIGINT",
    "number": "DOUBLE PRECISION",
}

_ITEM_STATUS = (
    "status TEXT NOT NULL, author TEXT, review_id TEXT, created_at TEXT NOT NULL, "
    "updated_at TEXT, in_progress_at TEXT, addressed_at TEXT, resolved_at TEXT"
)
# `rowid`: insertion order, which SQLite keeps implicitly and the store's listings sort by.
_ROWID = "rowid BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE"
# The DDL of annotate/schema.py's hand-written migrations (sqlite-utils calls), by the version
# they start from.
POSTGRES: dict[int, tuple[str, ...]] = {
    0: (
        "CREATE TABLE annotations (id TEXT PRIMARY KEY, type TEXT NOT NULL, "
        "page_url TEXT NOT NULL, page_title TEXT DEFAULT '', note TEXT NOT NULL, "
        "intent TEXT NOT NULL, suggestion TEXT, selected_text TEXT, quote_exact TEXT, "
        "quote_prefix TEXT, quote_suffix TEXT, position_start BIGINT, position_end BIGINT, "
        "replaced_text TEXT, element_selector TEXT, source_path TEXT, source_line_start BIGINT, "
        "source_line_end BIGINT, source_excerpt TEXT, source_mtime DOUBLE PRECISION, "
        "anchor_state TEXT NOT NULL DEFAULT 'anchored', anchor_score DOUBLE PRECISION, "
        f"{_ITEM_STATUS}, {_ROWID})",
        "CREATE TABLE page_notes (id TEXT PRIMARY KEY, page_url TEXT NOT NULL, "
        f"page_title TEXT DEFAULT '', note TEXT NOT NULL, {_ITEM_STATUS}, {_ROWID})",
        "CREATE TABLE replies (id TEXT PRIMARY KEY, parent_id TEXT NOT NULL, role TEXT NOT NULL, "
        f"author TEXT, message TEXT NOT NULL, created_at TEXT NOT NULL, {_ROWID})",
        "CREATE TABLE reviews (id TEXT PRIMARY KEY, mode TEXT NOT NULL, message TEXT, "
        f"author TEXT, created_at TEXT NOT NULL, picked_up_at TEXT, {_ROWID})",
        "CREATE TABLE changes (seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
        "at TEXT NOT NULL, kind TEXT NOT NULL, item_id TEXT NOT NULL, action TEXT NOT NULL, "
        "page_url TEXT)",
        "CREATE INDEX idx_annotations_page_url ON annotations (page_url)",
        "CREATE INDEX idx_annotations_status ON annotations (status)",
        "CREATE INDEX idx_annotations_review_id ON annotations (review_id)",
        "CREATE INDEX idx_annotations_source_path ON annotations (source_path)",
        "CREATE INDEX idx_page_notes_page_url ON page_notes (page_url)",
        "CREATE INDEX idx_page_notes_review_id ON page_notes (review_id)",
        "CREATE INDEX idx_replies_parent_id ON replies (parent_id)",
    ),
    1: (
        "ALTER TABLE annotations ADD COLUMN source_file TEXT",
        "CREATE TABLE pages (page_url TEXT PRIMARY KEY, src_path TEXT, title TEXT, "
        "updated_at TEXT)",
    ),
    # No PostgreSQL store was ever at version 2 or 3 with notes in it: no data to carry over.
    2: (
        "ALTER TABLE annotations ADD COLUMN original_path TEXT",
        "ALTER TABLE annotations ADD COLUMN original_line_start BIGINT",
        "ALTER TABLE annotations ADD COLUMN original_line_end BIGINT",
        "ALTER TABLE annotations ADD COLUMN original_excerpt TEXT",
        "ALTER TABLE reviews ADD COLUMN done_at TEXT",
    ),
    3: (
        "ALTER TABLE annotations ADD COLUMN in_code BIGINT",
        "ALTER TABLE annotations ADD COLUMN occurrence BIGINT",
        "ALTER TABLE annotations ADD COLUMN source_kind TEXT",
        "ALTER TABLE annotations ADD COLUMN source_object TEXT",
        "ALTER TABLE pages ADD COLUMN generated TEXT",
    ),
}


class Migrator:
    """What a migration in annotate/schema.py gets on PostgreSQL: `execute` with the store's SQL,
    and this database's spelling of what the SQLite migrations write with sqlite-utils."""

    dialect = "postgresql"
    blob_type = "BYTEA"

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        return self.conn.execute(sql, params)

    def serial(self, column: str) -> str:
        return f"{column} BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"

    def add_column(self, table: str, column: str, json_type: str) -> None:
        self.execute(f"ALTER TABLE {table} ADD COLUMN {column} {SQL_TYPES[json_type]}")

    def own_migration(self, version: int) -> bool:
        for sql in POSTGRES.get(version, ()):
            self.execute(sql)
        return version in POSTGRES

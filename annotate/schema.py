"""The database schema and its forward migrations (docs/storage.md).

`MIGRATIONS[n]` brings a database from version n to n + 1. A migration runs inside the same
`BEGIN IMMEDIATE` transaction that re-reads the version, so two processes opening an old file at
once cannot both migrate it. A file whose version is above `len(MIGRATIONS)` was written by a newer
release and is refused rather than misread.

A migration gets its backend's migrator (annotate/backends/): on SQLite a sqlite-utils
`Database`. PostgreSQL (annotate/backends/postgres.py) has the same versions; the first four,
written with sqlite-utils, have its own DDL there (`own_migration`); every later migration runs on
both as it is, so it may only call `db.execute(sql)` with SQL both accept (`?` placeholders,
`CREATE TABLE` / `ALTER TABLE … ADD COLUMN` with the types `TEXT`, `BIGINT`, `DOUBLE PRECISION`;
`dialect(db)` says which database it is, `serial(db)` spells an increasing key for a new table,
`blob(db)` the type of a column of bytes,
`db.add_column(table, column, json_type)` adds a field's column). On PostgreSQL the item tables
have an identity column named `rowid`, so `ORDER BY rowid` keeps meaning creation order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlite_utils

from . import lineversions
from .fields import ANNOTATION, PAGE_NOTE, REPLY

__all__ = ["LATEST", "MIGRATIONS", "OWN_TABLES", "blob", "dialect", "migrate", "serial"]


def dialect(db: Any) -> str:
    """`"sqlite"` or `"postgresql"`: which database the migrator `db` works on."""
    return str(db.dialect)


def serial(db: Any, column: str = "seq") -> str:
    """The DDL of an increasing integer key for a new table (numbered in insertion order), in the
    spelling of `db`'s backend: `CREATE TABLE t ({serial(db)}, …)` in a migration."""
    return str(db.serial(column))


def blob(db: Any) -> str:
    """The column type of bytes in the spelling of `db`'s backend (BLOB, BYTEA)."""
    return str(db.blob_type)


def _initial(db: sqlite_utils.Database) -> None:
    item_status = {
        "status": str,
        "author": str,
        "review_id": str,
        "created_at": str,
        "updated_at": str,
        "in_progress_at": str,
        "addressed_at": str,
        "resolved_at": str,
    }
    db.table("annotations").create(
        {
            "id": str,
            "type": str,
            "page_url": str,
            "page_title": str,
            "note": str,
            "intent": str,
            "suggestion": str,
            "selected_text": str,
            "quote_exact": str,
            "quote_prefix": str,
            "quote_suffix": str,
            "position_start": int,
            "position_end": int,
            "replaced_text": str,
            "element_selector": str,  # JSON object
            # Where the note points in the Markdown source, and how sure we are
            # (docs/data-model.md); source_mtime is the file's mtime at the last check, for lazy
            # reconciliation.
            "source_path": str,
            "source_line_start": int,
            "source_line_end": int,
            "source_excerpt": str,
            "source_mtime": float,
            "anchor_state": str,
            "anchor_score": float,
            **item_status,
        },
        pk="id",
        not_null={"type", "page_url", "note", "intent", "status", "anchor_state", "created_at"},
        defaults={"page_title": "", "anchor_state": "anchored"},
    )
    db.table("page_notes").create(
        {"id": str, "page_url": str, "page_title": str, "note": str, **item_status},
        pk="id",
        not_null={"page_url", "note", "status", "created_at"},
        defaults={"page_title": ""},
    )
    db.table("replies").create(
        {
            "id": str,
            "parent_id": str,
            "role": str,
            "author": str,
            "message": str,
            "created_at": str,
        },
        pk="id",
        not_null={"parent_id", "role", "message", "created_at"},
    )
    db.table("reviews").create(
        {
            "id": str,
            "mode": str,
            "message": str,
            "author": str,
            "created_at": str,
            "picked_up_at": str,
        },
        pk="id",
        not_null={"mode", "created_at"},
    )
    # The change feed: one row per mutation, read by `changes?since=N` (annotate/web/feed.py).
    db.execute(
        "CREATE TABLE changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, "
        "kind TEXT NOT NULL, item_id TEXT NOT NULL, action TEXT NOT NULL, page_url TEXT)"
    )
    db.table("annotations").create_index(["page_url"])
    db.table("annotations").create_index(["status"])
    db.table("annotations").create_index(["review_id"])
    db.table("annotations").create_index(["source_path"])
    db.table("page_notes").create_index(["page_url"])
    db.table("page_notes").create_index(["review_id"])
    db.table("replies").create_index(["parent_id"])


def _page_sources(db: sqlite_utils.Database) -> None:
    # source_file: the page's Markdown file as last checked (its mtime is source_mtime), kept even
    # when the quote is not in it; source_path is set only where the quote was found.
    db.table("annotations").add_column("source_file", str)
    # Page URL -> Markdown file (relative to the project), registered by the MkDocs plugin.
    db.table("pages").create(
        {"page_url": str, "src_path": str, "title": str, "updated_at": str}, pk="page_url"
    )


def _agent_loop(db: sqlite_utils.Database) -> None:
    # issue #14. original_*: the note's source as when it was made, for the change the reviewer
    # sees once it is addressed; an open note has not been worked on, so its source is the
    # original one.
    for column, kind in (
        ("original_path", str),
        ("original_line_start", int),
        ("original_line_end", int),
        ("original_excerpt", str),
    ):
        db.table("annotations").add_column(column, kind)
    db.execute(
        "UPDATE annotations SET original_path = source_path, original_line_start = "
        "source_line_start, original_line_end = source_line_end, original_excerpt = "
        "source_excerpt WHERE status = 'open' AND source_path IS NOT NULL"
    )
    # done_at: when the last note of the review was addressed or resolved (status `done`).
    db.table("reviews").add_column("done_at", str)
    db.execute(
        "UPDATE reviews SET done_at = coalesce((SELECT max(coalesce(resolved_at, addressed_at)) "
        "FROM (SELECT resolved_at, addressed_at FROM annotations WHERE review_id = reviews.id "
        "UNION ALL SELECT resolved_at, addressed_at FROM page_notes WHERE review_id = "
        "reviews.id)), strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) "
        "WHERE NOT EXISTS (SELECT 1 FROM annotations WHERE review_id = reviews.id AND status IN "
        "('open', 'in_progress')) AND NOT EXISTS (SELECT 1 FROM page_notes WHERE review_id = "
        "reviews.id AND status IN ('open', 'in_progress')) AND (EXISTS (SELECT 1 FROM "
        "annotations WHERE review_id = reviews.id) OR EXISTS (SELECT 1 FROM page_notes WHERE "
        "review_id = reviews.id))"
    )


def _source_fidelity(db: sqlite_utils.Database) -> None:
    # Issue #13. Where the selection was on the page: inside <pre>/<code> (1/0) and which
    # occurrence of the quote among those of its kind, to tell a code example from its result.
    db.table("annotations").add_column("in_code", int)
    db.table("annotations").add_column("occurrence", int)
    # Text a directive generated (mkdocstrings `::: pkg.mod`, mkdocs-click, macros): source_kind
    # 'generated' with the directive's lines, and the documented Python object when known.
    db.table("annotations").add_column("source_kind", str)
    db.table("annotations").add_column("source_object", str)
    # Page URL -> the objects a page documents, as the build rendered them (JSON), recorded by
    # the MkDocs plugin: which object's docstring holds a quote.
    db.table("pages").add_column("generated", str)


def _shown(db: sqlite_utils.Database) -> None:
    # issue #19: which views acknowledged a `show_annotation` (a change row of action `show`),
    # one row per view; rows older than a few minutes are pruned by the next show.
    db.execute(
        "CREATE TABLE shown (seq BIGINT NOT NULL, viewer TEXT NOT NULL, at TEXT NOT NULL, "
        "PRIMARY KEY (seq, viewer))"
    )


def _people(db: sqlite_utils.Database) -> None:
    # Team mode (issue #20, docs/team.md): personal tokens, stored as their SHA-256 only
    # (annotate/identity.py); a revoked one keeps its row, so `annotate token list` shows it.
    db.execute(
        "CREATE TABLE tokens (name TEXT PRIMARY KEY, role TEXT NOT NULL, "
        "token_hash TEXT NOT NULL, created_at TEXT NOT NULL, revoked_at TEXT)"
    )
    db.execute("CREATE UNIQUE INDEX tokens_token_hash ON tokens (token_hash)")
    # Who made each change (a status change above all: accepted by whom); NULL in single-user
    # mode, where the store does not know who is asking.
    db.execute("ALTER TABLE changes ADD COLUMN author TEXT")


def _new_columns(version: int) -> Callable[[sqlite_utils.Database], None]:
    """The migration to `version` of the fields declared `since=version` (annotate/fields.py)."""

    def migrate(db: Any) -> None:  # either backend's migrator
        for table in (ANNOTATION, PAGE_NOTE, REPLY):
            for f in table:
                if f.since == version:
                    db.add_column(table.sql_table, f.col, f.type)

    return migrate


def _screenshots(db: Any) -> None:
    # Issue #30: a WebP image per note (annotate/screenshots.py), beside the notes, not in
    # docs_dir; deleted with its note.
    db.execute(
        "CREATE TABLE screenshots (note_id TEXT PRIMARY KEY, kind TEXT NOT NULL, "
        "media_type TEXT NOT NULL, width BIGINT NOT NULL, height BIGINT NOT NULL, "
        f"size BIGINT NOT NULL, created_at TEXT NOT NULL, author TEXT, data {blob(db)} NOT NULL)"
    )


MIGRATIONS: list[Callable[[sqlite_utils.Database], None]] = [
    _initial,
    _page_sources,
    _agent_loop,
    _source_fidelity,
    _shown,
    _people,
]
# A field added to the table after these brings its own migration: its `since` must come after
# them, or its column would never be added.
_late = [
    f"{t.name}.{f.key} (since={f.since})"
    for t in (ANNOTATION, PAGE_NOTE, REPLY)
    for f in t
    if 0 < f.since <= len(MIGRATIONS)
]
if _late:
    raise RuntimeError(
        f"{', '.join(_late)}: migration versions 1 to {len(MIGRATIONS)} are annotate/schema.py's "
        f"own; a new field takes since={len(MIGRATIONS) + 1} or later"
    )


def _pull_requests(db: Any) -> None:
    # issue #30 (docs/pull-requests.md): which review comment each note became on which pull or
    # merge request, so pushing again never posts it twice, and which replies (the host's id, the
    # store's reply) are on both sides already, brought back or posted there.
    db.execute(
        "CREATE TABLE pr_links (note_id TEXT NOT NULL, host TEXT NOT NULL, repo TEXT NOT NULL, "
        "number BIGINT NOT NULL, placement TEXT NOT NULL, comment_id TEXT, path TEXT, "
        "line_start BIGINT, line_end BIGINT, excerpt TEXT, suggestion TEXT, posted_at TEXT "
        "NOT NULL, PRIMARY KEY (note_id, host, repo, number))"
    )
    db.execute(
        "CREATE TABLE pr_replies (host TEXT NOT NULL, repo TEXT NOT NULL, number BIGINT NOT NULL, "
        "remote_id TEXT NOT NULL, note_id TEXT NOT NULL, reply_id TEXT, at TEXT NOT NULL, "
        "PRIMARY KEY (host, repo, number, remote_id))"
    )


def _plans(db: Any) -> None:
    # Issue #29 (docs/plans.md): a plan is the document an agent (or a file) puts up for review,
    # kept as numbered revisions, each with the person's decision. Issue #30 item 5: a review
    # carries a decision too.
    db.execute("ALTER TABLE reviews ADD COLUMN decision TEXT")
    db.execute(
        "CREATE TABLE plans (id TEXT PRIMARY KEY, key TEXT NOT NULL UNIQUE, title TEXT, "
        "source_path TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL)"
    )
    db.execute(
        "CREATE TABLE plan_revisions (plan_id TEXT NOT NULL, number BIGINT NOT NULL, "
        "markdown TEXT NOT NULL, created_at TEXT NOT NULL, decision TEXT, message TEXT, "
        "review_id TEXT, decided_at TEXT, PRIMARY KEY (plan_id, number))"
    )


def _review_sources(db: Any) -> None:
    # Issue #29 item 3: the Markdown of each file a review's notes point into, as it was when the
    # review was sent, for "what changed since this review was sent" (Reviews.changes).
    db.execute(
        "CREATE TABLE review_sources (review_id TEXT NOT NULL, path TEXT NOT NULL, "
        "markdown TEXT NOT NULL, PRIMARY KEY (review_id, path))"
    )


def _line_versions(db: Any) -> None:
    # Issue #31: a file's line hashes once per version of the file (annotate/lineversions.py),
    # each note's `source_lines` the key of its version instead of the hashes themselves.
    lineversions.create(db)
    lineversions.convert(db)


# Hand-written migrations after the first six, by the version they bring a store to; a version
# may also add fields' columns (`since`), which run after its own step.
LATER: dict[int, Callable[[Any], None]] = {
    9: _plans,
    10: _screenshots,
    11: _pull_requests,
    12: _review_sources,
    13: _line_versions,
}


def _step(version: int) -> Callable[[Any], None]:
    own, columns = LATER.get(version), _new_columns(version)

    def migrate(db: Any) -> None:
        if own is not None:
            own(db)
        columns(db)

    return migrate


MIGRATIONS += [
    _step(v)
    for v in range(
        len(MIGRATIONS) + 1,
        max(
            max(f.since for t in (ANNOTATION, PAGE_NOTE, REPLY) for f in t),
            max(LATER),
        )
        + 1,
    )
]


LATEST = len(MIGRATIONS)

OWN_TABLES = frozenset(
    {
        "annotations",
        "page_notes",
        "replies",
        "reviews",
        "changes",
        "pages",
        "shown",
        "tokens",
        "pr_links",
        "pr_replies",
        "plans",
        "plan_revisions",
        "screenshots",
        "review_sources",
        lineversions.TABLE,
        "schema_version",
    }
)


def migrate(db: Any, version: int) -> None:
    """Bring `db` (a backend's migrator) from `version` to `version + 1`, in the caller's
    transaction: the backend's own DDL for that step if it has one, else `MIGRATIONS[version]`."""
    if not db.own_migration(version):
        MIGRATIONS[version](db)

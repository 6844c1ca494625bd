"""A Markdown file's line hashes kept once per version of the file (issue #31).

A located note keeps the hashes of its file's lines as they were (annotate/reconcile.py,
`line_hashes`: 8 characters a line, ~3 kB for a page of 400 lines), to carry its last known
lines through the next edit. Every note of a page holds the same string, so they are kept once:
the table `line_versions` holds each version's hashes under a short key (`key`, a hash of the
file's path and its line hashes), with the mtime the file was last seen with that text, and a
note's `source_lines` column holds the key. A read then fetches and writes 16 characters a note,
not 3 kB, and a page saved unchanged (a new mtime, the same text) costs one write of its version's
row, not one of each note (`Sources._stale`). Likewise the notes an edit did not move: their rows
stay, and their version's row names the version they are at now (`next`, `succeed`).

Garbage: a version no note points at any more is dropped when a reconciliation finds the notes
of its file at a newer version (`collect`), so a file keeps the versions its notes point at and
the current one; a deleted note's version goes with its file's next edit.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

__all__ = ["TABLE", "LineKey", "collect", "convert", "create", "fetch", "keep", "key", "succeed"]

TABLE = "line_versions"
# 12 bytes of BLAKE2b, 16 characters of base64: two versions of a project's files sharing a key
# would need a collision of 96 bits.
KEY_BYTES = 12
# The keys a statement names at most (SQLite's limit of bound variables is far above).
CHUNK = 500


class Connection(Protocol):
    """What is used of a backend's connection (annotate/backends/interface.py, which imports
    annotate/schema.py, which imports this module: not imported here)."""

    def execute(self, sql: str, parameters: Any = (), /) -> Any: ...

    def executemany(self, sql: str, parameters: Any, /) -> Any: ...


class LineKey(str):
    """A version's key as a note's `source_lines` stores it, carrying the path and the line
    hashes it names: whatever writes it to a note writes the version too (`keep`), also when it
    was planned in another process (annotate/relocator.py pickles it with its attributes)."""

    path: str
    lines: str


@functools.lru_cache(maxsize=256)
def key(path: str, lines: str) -> LineKey:
    """The key of the version of file `path` whose line hashes are `lines`."""
    digest = hashlib.blake2b(digest_size=KEY_BYTES)
    digest.update(path.encode("utf-8", "surrogatepass"))
    digest.update(b"\0")
    digest.update(lines.encode("ascii"))
    out = LineKey(base64.urlsafe_b64encode(digest.digest()).decode("ascii"))
    out.path, out.lines = path, lines
    return out


def create(db: Any) -> None:
    """The table, in a migration (annotate/schema.py: SQL both backends accept)."""
    db.execute(
        f"CREATE TABLE {TABLE} (key TEXT PRIMARY KEY, path TEXT NOT NULL, lines TEXT NOT NULL, "
        "mtime DOUBLE PRECISION, next TEXT)"
    )
    db.execute(f"CREATE INDEX idx_{TABLE}_path ON {TABLE} (path)")


def convert(db: Any) -> None:
    """Move the line hashes every note kept (schema version 8 to 12) into versions, one per
    file and text, and leave each note its version's key. File by file: the notes of one
    file are found by the `source_path` index."""
    found = db.execute(
        "SELECT DISTINCT source_path, source_lines FROM annotations "
        "WHERE source_lines IS NOT NULL AND source_path IS NOT NULL"
    ).fetchall()
    for path, lines in found:
        k = key(path, lines)
        db.execute(
            f"INSERT INTO {TABLE} (key, path, lines, mtime) VALUES (?, ?, ?, NULL) "
            "ON CONFLICT (key) DO NOTHING",
            (k, path, lines),
        )
        db.execute(
            "UPDATE annotations SET source_lines = ? WHERE source_path = ? AND source_lines = ?",
            (k, path, lines),
        )
    # Hashes without a file to name (never written so): nothing to carry them with.
    db.execute("UPDATE annotations SET source_lines = NULL WHERE source_path IS NULL")


def keep(conn: Connection, seen: Mapping[LineKey, float | None]) -> None:
    """Write each version of `seen` with the mtime its file was read with (in the caller's
    write transaction), before or with the notes that point at it."""
    if seen:
        conn.executemany(
            f"INSERT INTO {TABLE} (key, path, lines, mtime) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (key) DO UPDATE SET mtime = excluded.mtime",
            [(k, k.path, k.lines, mtime) for k, mtime in seen.items()],
        )


# The notes `succeed` speaks for: a text note anchored in the Markdown itself (the notes whose
# lines annotate/linemove.py carries), of this version (by the `source_path` index).
_SAME = (
    "SELECT count(*) FROM annotations WHERE source_path = ? AND source_lines = ? "
    "AND type = 'text' AND anchor_state = 'anchored' AND source_kind IS NULL"
)


def succeed(conn: Connection, unmoved: Mapping[str, tuple[LineKey, int]]) -> None:
    """Record that the notes of each version of `unmoved` are where they were in the version it
    names (`next`): the edit did not touch them (annotate/linemove.py), so their rows are not
    written. Only when they are all the notes of that version there are now (the count the plan
    found): a note the plan did not see may be one the edit touched."""
    if unmoved:
        conn.executemany(
            f"UPDATE {TABLE} SET next = ? WHERE key = ? AND ({_SAME}) = ?",
            [(now, was, now.path, was, n) for was, (now, n) in unmoved.items()],
        )


def collect(conn: Connection, current: Iterable[LineKey]) -> None:
    """Drop the versions of the files of `current` that no note points at, but `current`'s
    (a version that only another's `next` names goes: that one's notes are then searched)."""
    rows = [(k.path, k) for k in current]
    if rows:
        conn.executemany(
            f"DELETE FROM {TABLE} WHERE path = ? AND key != ? AND NOT EXISTS (SELECT 1 FROM "
            f"annotations WHERE source_path = {TABLE}.path AND source_lines = {TABLE}.key)",
            rows,
        )


def fetch(conn: Connection, keys: Sequence[str]) -> dict[str, str]:
    """The line hashes of each of `keys` that the table holds."""
    out: dict[str, str] = {}
    for i in range(0, len(keys), CHUNK):
        chunk = list(keys[i : i + CHUNK])
        marks = ",".join("?" * len(chunk))
        out.update(
            conn.execute(f"SELECT key, lines FROM {TABLE} WHERE key IN ({marks})", chunk).fetchall()
        )
    return out

"""The backend seam (annotate/backends/, issue #28): the URL scheme chooses the class, the pieces
where the SQL dialects differ are the backend's, and no module outside the package knows which
database it runs on."""

from __future__ import annotations

import ast
from pathlib import Path

import annotate
from annotate import backends
from annotate.backends.postgres import PostgresBackend
from annotate.backends.sqlite import SqliteBackend

BACKENDS = ("sqlite", "postgresql")
PACKAGE = Path(annotate.__file__).parent


def test_the_url_scheme_chooses_the_backend(tmp_path: Path, pg_url: str) -> None:
    assert backends.is_url(pg_url)
    assert backends.is_url("postgres://h/d")
    assert not backends.is_url(str(tmp_path / "notes.db"))
    assert not backends.is_url("mysql://h/d")  # no backend for it: a file name, as before
    db = backends.open_backend(pg_url, project_dir=tmp_path)
    try:
        assert type(db) is PostgresBackend
    finally:
        db.close()
    db = backends.open_backend(tmp_path / "notes.db")
    try:
        assert type(db) is SqliteBackend
        assert db.project_dir == tmp_path
    finally:
        db.close()


def test_null_safe_comparisons_are_the_backends(store: annotate.Store) -> None:
    db = store._file
    with db.transaction(write=True) as conn:
        conn.execute(
            "INSERT INTO pages (page_url, src_path, generated, updated_at) VALUES (?, ?, ?, ?)",
            ("/a/", "a.md", None, "2026-01-01T00:00:00.000Z"),
        )
    with db.transaction(write=False) as conn:
        row = conn.execute(
            f"SELECT generated {db.same} ?, src_path {db.same} ?, generated {db.differs} ?, "
            f"src_path {db.differs} ?, src_path {db.same} ? FROM pages",
            (None, None, None, None, "a.md"),
        ).fetchone()
    assert [bool(v) for v in row] == [True, False, False, True, True]


def test_deferred_reads_come_back_after_the_transaction(store: annotate.Store) -> None:
    store.add_page_note({"pageUrl": "/a/", "note": "n"})
    db = store._file
    with db.transaction(write=False) as conn:
        first = db.send(conn, "SELECT count(*) AS n FROM page_notes", ())
        second = db.send(conn, "SELECT page_url FROM page_notes WHERE page_url = ?", ("/a/",))
    assert first() == (["n"], [(1,)])
    assert second() == (["page_url"], [("/a/",)])


def _imported(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add(node.module or "")
            names.update(a.name for a in node.names)
    return names


def test_no_module_outside_the_backends_knows_a_database() -> None:
    # The old module names stay importable as re-exports of the package's.
    allowed = {PACKAGE / "pgdb.py", PACKAGE / "dbfile.py", PACKAGE / "sqljson.py"}
    knowing = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if PACKAGE / "backends" in path.parents or path in allowed:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        # A backend's own module too: what the nouns share (`now`, DEFAULT_DIR) is the package's.
        known = {"sqlite3", "psycopg", "psycopg_pool", "pgdb", "dbfile"}
        found = _imported(tree) & (known | {"backends.sqlite", "backends.postgres"})
        found |= {
            n.id
            for n in ast.walk(tree)
            if isinstance(n, ast.Name) and n.id in {"PostgresBackend", "SqliteBackend"}
        }
        if found:
            knowing[str(path.relative_to(PACKAGE))] = sorted(found)
    assert knowing == {}

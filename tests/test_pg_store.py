"""What only the PostgreSQL store has to show (annotate/pgdb.py): its schema versions and
migrations, the write lock, its errors, the SQL it rewrites. The verbs themselves run on both
backends in the store suite (tests/conftest.py, `BACKENDS`)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import psycopg
import pytest

import annotate
from annotate import schema
from annotate.backends.postgres import WRITE_LOCK, postgres_sql, redact
from annotate.backends.postgres_schema import POSTGRES
from annotate.backends.sqlite import Migrator
from annotate.store import Store

from .conftest import text_note

ANNOTATE = str(Path(sys.executable).parent / "annotate")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "mkdocs.yml").write_text("site_name: t\n")
    return tmp_path


def execute(url: str, sql: str) -> list[tuple[object, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(sql)
        return cur.fetchall() if cur.description else []


def test_a_new_database_gets_every_table_at_the_latest_version(pg_url: str, project: Path) -> None:
    store = annotate.open(project, db=pg_url)
    assert store.dialect == "postgresql"
    assert store.path is None and store.url == pg_url
    assert store.schema_version == schema.LATEST
    tables = {
        r[0]
        for r in execute(
            pg_url,
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = current_schema()",
        )
    }
    assert tables == set(schema.OWN_TABLES)
    store.close()


def test_every_field_has_its_column(pg_url: str, project: Path) -> None:
    """The PostgreSQL DDL (annotate/schema.py `POSTGRES`) has each column of the SQLite file."""
    annotate.open(project, db=pg_url).close()
    sqlite = annotate.open(project)
    for table in schema.OWN_TABLES - {"schema_version"}:
        theirs = {r[1] for r in sqlite.conn.execute(f"PRAGMA table_info({table})")}
        ours = {
            r[0]
            for r in execute(
                pg_url,
                "SELECT column_name FROM information_schema.columns WHERE table_schema = "
                f"current_schema() AND table_name = '{table}'",
            )
        }
        assert ours - {"rowid"} == theirs, table
    sqlite.close()


def test_forward_migration_runs_once(
    pg_url: str, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = annotate.open(project, db=pg_url)
    a = old.add_annotation(text_note())
    old.close()
    calls: list[str] = []

    def add_label(db) -> None:  # type: ignore[no-untyped-def]
        # A later migration: plain SQL both databases accept, run as it is on PostgreSQL.
        calls.append(schema.dialect(db))
        db.execute("ALTER TABLE annotations ADD COLUMN label TEXT")
        db.execute(f"CREATE TABLE labels ({schema.serial(db)}, name TEXT NOT NULL)")

    monkeypatch.setattr(schema, "MIGRATIONS", [*schema.MIGRATIONS, add_label])
    monkeypatch.setattr(schema, "LATEST", schema.LATEST + 1)
    new = annotate.open(project, db=pg_url)
    assert new.schema_version == schema.LATEST
    assert new.get_annotation(a.id).note == a.note  # data kept
    assert new.conn.execute("SELECT label FROM annotations").fetchall() == [(None,)]
    new.conn.execute("INSERT INTO labels (name) VALUES (?), (?)", ("a", "b"))
    assert new.conn.execute("SELECT seq, name FROM labels ORDER BY seq").fetchall() == [
        (1, "a"),
        (2, "b"),
    ]
    annotate.open(project, db=pg_url).close()
    assert calls == ["postgresql"]
    new.close()


def test_an_old_database_is_migrated_step_by_step(pg_url: str, project: Path) -> None:
    """A database at version 2 gets the DDL of versions 3 and 4, not the tables anew."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE schema_version (version BIGINT PRIMARY KEY, applied_at TEXT)")
        for version in (0, 1):
            for sql in POSTGRES[version]:
                conn.execute(sql)
            conn.execute("INSERT INTO schema_version VALUES (%s, 'then')", (version + 1,))
        conn.execute(
            "INSERT INTO annotations (id, type, page_url, note, intent, status, created_at) "
            "VALUES ('a_0123456789', 'element', '/', 'kept', 'comment', 'open', 'then')"
        )
    store = annotate.open(project, db=pg_url)
    assert store.schema_version == schema.LATEST
    assert store.get_annotation("a_0123456789").note == "kept"
    versions = [r[0] for r in execute(pg_url, "SELECT version FROM schema_version ORDER BY 1")]
    assert versions == list(range(1, schema.LATEST + 1))
    store.close()


def test_newer_schema_is_refused(pg_url: str, project: Path) -> None:
    annotate.open(project, db=pg_url).close()
    execute(pg_url, f"INSERT INTO schema_version VALUES ({schema.LATEST + 1}, 'later')")
    with pytest.raises(annotate.NewerSchemaError, match="upgrade mkdocs-annotate"):
        annotate.open(project, db=pg_url)


def test_a_schema_with_other_tables_is_refused(pg_url: str, project: Path) -> None:
    execute(pg_url, "CREATE TABLE invoices (id BIGINT)")
    with pytest.raises(annotate.StoreCorruptError, match="not written by mkdocs-annotate"):
        annotate.open(project, db=pg_url)
    tables = execute(
        pg_url,
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()",
    )
    assert tables == [("invoices",)]


def test_a_write_waits_for_the_write_lock_then_is_busy(pg_url: str, project: Path) -> None:
    """Writes are serialised by one advisory lock: another holder makes a write wait, and one
    that waits longer than the busy timeout is StoreBusyError, with nothing written."""
    annotate.open(project, db=pg_url).close()
    store = Store(pg_url, project_dir=project, busy_timeout=0.3)
    with psycopg.connect(pg_url) as holder:
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
        with pytest.raises(annotate.StoreBusyError, match="is busy"):
            store.add_page_note({"pageUrl": "/", "note": "waits"})
        assert store.list_page_notes() == []  # reads do not wait
        store.close()
        slow = Store(pg_url, project_dir=project, busy_timeout=10)
        done = threading.Event()

        def write() -> None:
            slow.add_page_note({"pageUrl": "/", "note": "after"})
            done.set()

        writer = threading.Thread(target=write)
        writer.start()
        assert not done.wait(0.5)  # waiting for the lock
        holder.rollback()
        writer.join(10)
    assert done.is_set()
    assert [n.note for n in slow.list_page_notes()] == ["after"]
    slow.close()


def test_change_rows_are_in_the_transaction_of_their_change(pg_url: str, project: Path) -> None:
    store = annotate.open(project, db=pg_url)
    _, cursor = store.changes()
    with pytest.raises(annotate.AnnotationNotFound):
        store.add_reply("a_0000000000", "nothing to reply to")
    assert store.changes(cursor) == ([], cursor)
    a = store.add_annotation(text_note())
    store.add_reply(a.id, "Yes")
    events, _ = store.changes(cursor)
    assert [(e["id"], e["action"]) for e in events] == [
        (a.id, "created"),
        (a.id, "reviewer_reply"),
    ]
    store.close()


def test_listings_keep_creation_order(pg_url: str, project: Path) -> None:
    store = annotate.open(project, db=pg_url)
    made = [store.add_annotation(text_note(note=f"n{i}")).id for i in range(12)]
    # Updating rows moves them in PostgreSQL's heap; the order is the identity column's.
    for id in made[::2]:
        store.add_reply(id, "moved")
    assert [a.id for a in store.list_annotations()] == made
    assert [a["id"] for a in json.loads(store.list_annotations(as_json=True))] == made
    store.close()


def test_unreachable_server_names_the_url_without_the_password(project: Path) -> None:
    url = "postgresql://ana:s3cret@127.0.0.1:1/notes"
    with pytest.raises(annotate.StoreUnreachableError) as e:
        annotate.open(project, db=url)
    assert "s3cret" not in str(e.value)
    assert str(e.value).startswith("postgresql://ana:***@127.0.0.1:1/notes cannot be reached (")
    assert e.value.http_status == 503 and e.value.code == "store_unreachable"


def test_a_missing_driver_is_one_line_naming_the_extra(project: Path) -> None:
    script = (
        "import sys; sys.modules['psycopg'] = None; from annotate.cli import main; "
        "sys.argv = ['annotate', 'list', '--db', 'postgresql://ana:s3cret@localhost/notes']; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=project, capture_output=True, text=True, check=False
    )
    assert done.returncode == 1
    assert done.stderr == (
        "Error: PostgreSQL stores need psycopg: pip install 'mkdocs-annotate[postgres]' (in a "
        "checkout of mkdocs-annotate: pip install -e '.[postgres]')\n"
    )


@pytest.mark.parametrize(
    ("sqlite", "postgres"),
    [
        ("SELECT * FROM t WHERE a = ? AND b IN (?,?)", "SELECT * FROM t WHERE a = %s AND b IN (%s,%s)"),
        ("SELECT '50%?' FROM t WHERE a LIKE ?", "SELECT '50%%?' FROM t WHERE a LIKE %s"),
        # Only placeholders: a null-safe comparison is the backend's `same` / `differs`.
        ("UPDATE t SET x = ? WHERE a IS NOT NULL", "UPDATE t SET x = %s WHERE a IS NOT NULL"),
        ("SELECT 'it''s ?' , ?", "SELECT 'it''s ?' , %s"),
    ],
)  # fmt: skip
def test_sql_rewriting(sqlite: str, postgres: str) -> None:
    assert postgres_sql(sqlite) == postgres


def test_redact() -> None:
    assert redact("postgresql://a:pw@h:5/d?x=1") == "postgresql://a:***@h:5/d?x=1"
    assert redact("postgresql://a@h/d") == "postgresql://a@h/d"
    assert redact("postgres://:pw@[::1]/d") == "postgres://***@[::1]/d"


def test_serial_key_on_sqlite() -> None:
    import sqlite3

    db = Migrator(sqlite3.connect(":memory:"))
    db.execute(f"CREATE TABLE labels ({schema.serial(db)}, name TEXT NOT NULL)")
    db.execute("INSERT INTO labels (name) VALUES (?), (?)", ("a", "b"))
    assert db.execute("SELECT seq, name FROM labels ORDER BY seq").fetchall() == [
        (1, "a"),
        (2, "b"),
    ]

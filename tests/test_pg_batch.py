"""Transactions on PostgreSQL send their statements in batches (annotate/pgdb.py
`PgDb.transaction`, psycopg's pipeline mode): a statement reaches the server with the next read
or the commit, so a failed one raises there. Each failure is the error it was before, nothing of the transaction is
stored, and the store goes on working; failures are made for real, by a constraint or a trigger
in the database. And the round trips each verb of the REST hot path costs."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import Cursor, Pipeline

import annotate
from annotate.store import Store

from .conftest import text_note, write_project


@pytest.fixture
def store(tmp_path: Path, pg_url: str) -> Iterator[Store]:
    write_project(tmp_path, "# Install\n\nRun pip install mkdocs-annotate in a shell.\n")
    made = annotate.open(tmp_path, db=pg_url)
    yield made
    made.close()


def execute(url: str, sql: str) -> list[tuple[object, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(sql)
        return cur.fetchall() if cur.description else []


def counts(url: str) -> tuple[object, ...]:
    return execute(
        url,
        "SELECT (SELECT count(*) FROM annotations), (SELECT count(*) FROM replies), "
        "(SELECT count(*) FROM changes), (SELECT max(updated_at) FROM annotations)",
    )[0]


def test_a_refused_change_row_fails_the_reply_and_stores_nothing(store: Store, pg_url: str) -> None:
    """The change row and NOTIFY are sent unread after the reply and the update, and the reads
    of the answer with the commit: the violation arrives there, as the same error, and the
    reply is not stored."""
    a = store.add_annotation(text_note())
    execute(
        pg_url,
        "ALTER TABLE changes ADD CONSTRAINT no_replies CHECK (action != 'reviewer_reply')",
    )
    before = counts(pg_url)
    with pytest.raises(annotate.StoreError) as e:
        store.add_reply(a.id, "refused")
    assert str(e.value) == (
        f'{store.url}: new row for relation "changes" violates check constraint "no_replies"'
    )
    assert counts(pg_url) == before
    assert store.get_annotation(a.id).replies == ()
    # The connection went back to the pool in a usable state: the next writes go through.
    assert [r.message for r in store.add_agent_reply(a.id, "fine").replies] == ["fine"]
    assert store.add_annotation(text_note(note="next")).note == "next"


def test_a_refused_note_stores_no_change_row(store: Store, pg_url: str) -> None:
    """The first write fails: the change row, NOTIFY and reads after it are skipped."""
    execute(pg_url, "ALTER TABLE annotations ADD CONSTRAINT no_x CHECK (note != 'x')")
    with pytest.raises(annotate.StoreError, match='violates check constraint "no_x"'):
        store.add_annotation(text_note(note="x"))
    assert counts(pg_url)[:3] == (0, 0, 0)
    assert store.changes() == ([], 0)
    assert store.add_annotation(text_note(note="y")).note == "y"


def test_a_failed_statement_raises_at_the_next_read_before_what_follows(
    store: Store, pg_url: str
) -> None:
    """Python code between an unread statement and the next read runs, but nothing after
    that read; and a statement's error comes before an error the code raised later."""
    store.add_token("ada")
    duplicate = (
        "INSERT INTO tokens (name, role, token_hash, created_at) "
        "VALUES ('ada', 'reviewer', 'x', 'now')"
    )
    ran = []
    with (
        pytest.raises(annotate.StoreError, match="duplicate key"),
        store._file.transaction(write=True) as conn,
    ):
        conn.execute(duplicate)
        ran.append("before the read")
        conn.execute("SELECT 1").fetchone()
        ran.append("after the read")
    assert ran == ["before the read"]
    with (
        pytest.raises(annotate.StoreError, match="duplicate key"),
        store._file.transaction(write=True) as conn,
    ):
        conn.execute("INSERT INTO changes (at, kind, item_id, action) VALUES ('t', 'k', 'i', 'a')")
        conn.execute(duplicate)
        raise ValueError("raised after the statement that failed")
    assert counts(pg_url)[2] == 0
    assert [t["name"] for t in store.list_tokens()] == ["ada"]


def test_a_server_gone_mid_transaction_is_unreachable_and_stores_nothing(
    store: Store, pg_url: str
) -> None:
    """The server ends the connection while the reply's statements are in flight."""
    a = store.add_annotation(text_note())
    execute(
        pg_url,
        "CREATE FUNCTION die() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN PERFORM pg_terminate_backend(pg_backend_pid()); RETURN NEW; END $$",
    )
    execute(
        pg_url,
        "CREATE TRIGGER die BEFORE INSERT ON replies FOR EACH ROW EXECUTE FUNCTION die()",
    )
    before = counts(pg_url)
    with pytest.raises(annotate.StoreUnreachableError) as e:
        store.add_reply(a.id, "lost")
    assert str(e.value).startswith(f"{store.url} cannot be reached (")
    assert counts(pg_url) == before
    execute(pg_url, "DROP TRIGGER die ON replies")
    assert [r.message for r in store.add_reply(a.id, "again").replies] == ["again"]


def test_a_server_gone_before_a_read_is_unreachable(store: Store, pg_url: str) -> None:
    with pytest.raises(annotate.StoreUnreachableError), store._file.transaction(write=True) as conn:
        pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        execute(pg_url, f"SELECT pg_terminate_backend({pid})")
        conn.execute("INSERT INTO changes (at, kind, item_id, action) VALUES ('t', 'k', 'i', 'a')")
        conn.execute("SELECT 1").fetchone()
    assert counts(pg_url)[2] == 0
    assert store.add_annotation(text_note()).note == text_note()["note"]


@pytest.fixture
def round_trips(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The waits for the server: a statement sent on its own, or a pipeline's end (its sync;
    statements in a pipeline only queue)."""
    waits: list[str] = []
    execute, leave = Cursor.execute, Pipeline.__exit__

    def sent(self: Cursor[Any], query: Any, *args: Any, **kwargs: Any) -> Any:
        if not self.connection._pipeline:
            waits.append(str(query))
        return execute(self, query, *args, **kwargs)

    def synced(self: Pipeline, *args: Any) -> None:
        if self.level == 1:
            waits.append("sync")
        leave(self, *args)

    monkeypatch.setattr(Cursor, "execute", sent)
    monkeypatch.setattr(Pipeline, "__exit__", synced)
    return waits


def test_round_trips_of_the_rest_hot_path(store: Store, round_trips: list[str]) -> None:
    """A write is one round trip to read what it checks (with BEGIN and the lock) and one for
    its writes, its answer and COMMIT; a new note needs no read before its writes; a listing
    is one for the stale check and one for the notes, their replies and COMMIT; the feed one."""
    a = store.add_annotation(text_note())
    store.add_reply(a.id, "warm")

    def trips(call: Callable[[], object]) -> int:
        round_trips.clear()
        call()
        return len(round_trips)

    assert trips(lambda: store.add_reply(a.id, "yes")) == 2
    assert trips(lambda: store.set_in_progress(a.id)) == 2
    # Addressing first reads which Markdown file the note is in, to parse it before the write
    # lock rather than inside it (docs/architecture.md, "When a verb reads the Markdown").
    assert trips(lambda: store.address_annotation(a.id, message="done")) == 3
    assert trips(lambda: store.accept(a.id)) == 2
    # The page's URL (and its Markdown file) outside the transaction, then the transaction.
    assert trips(lambda: store.add_annotation(text_note(note="next"))) == 2
    assert trips(lambda: store.list_annotations("/guide/install/", as_json=True)) == 3
    # The check for changed Markdown, then the note, its replies and COMMIT together (was 4).
    assert trips(lambda: store.get_annotation(a.id)) == 2
    page = store.add_page_note({"pageUrl": "/guide/install/", "note": "More on pipx."})
    assert trips(lambda: store.get_annotation(page.id)) == 3  # + its Markdown file (was 5)
    assert trips(lambda: store.changes(1)) == 1
    assert trips(lambda: store.changes(10**6)) == 1
    assert trips(lambda: store.person_for_token("nope")) == 1


def test_an_import_costs_two_round_trips_whatever_its_size(
    store: Store, pg_url: str, round_trips: list[str]
) -> None:
    """`insert_raw` reads which ids are stored in one go and sends every row with the commit:
    two round trips for 600 notes and their replies (it was two per row, issue #31), and the
    answer is the one it was: skipped ids counted, order and change rows kept."""
    store.add_annotation(text_note())
    (kept,) = store.list_annotations()
    at = "2026-01-05T09:00:00.000Z"
    annotations = [
        {"id": f"a_{i:010x}", "type": "text" if i % 3 else "element", "page_url": "/guide/x/",
         "note": f"note {i}", "intent": "comment", "status": "open", "created_at": at,
         **({"selected_text": "pip"} if i % 3 else {})}
        for i in range(600)
    ] + [{"id": kept.id, "type": "text", "page_url": "/guide/x/", "note": "dup",
          "intent": "comment", "status": "open", "created_at": at}]  # fmt: skip
    replies = [
        {"id": f"r_{i:010x}", "parent_id": f"a_{i:010x}", "role": "agent", "message": "m",
         "created_at": at}
        for i in range(0, 600, 2)
    ] + [{"id": "r_orphan0000", "parent_id": kept.id, "role": "agent", "message": "m",
          "created_at": at}]  # fmt: skip
    round_trips.clear()
    counts = store.insert_raw(annotations, [], replies)
    assert len(round_trips) == 2
    assert counts == {"annotations": 600, "pageNotes": 0, "replies": 300, "reviews": 0,
                      "skipped": 2}  # fmt: skip
    # Columns a row leaves out get the database's defaults, as when inserted one by one.
    stored = execute(
        pg_url,
        "SELECT anchor_state, page_title, selected_text FROM annotations "
        "WHERE page_url = '/guide/x/' ORDER BY rowid LIMIT 2",
    )
    assert stored == [("anchored", "", None), ("anchored", "", "pip")]
    listed = store.list_annotations("/guide/x/", include_resolved=True)
    assert [a.id for a in listed] == [f"a_{i:010x}" for i in range(600)]
    assert [len(a.replies) for a in listed[:3]] == [1, 0, 1]
    feed, _ = store.changes(0)
    assert [c["action"] for c in feed].count("imported") == 600


def test_a_listing_after_a_save_reads_and_writes_in_four_round_trips(
    store: Store, pg_url: str, round_trips: list[str]
) -> None:
    """The page saved (a new mtime, same text): its URL, the check with its COMMIT (which reads
    the file and finds its version), the version's new mtime written (one row, none of the
    notes'), and the listing: 4 round trips, whatever the page holds (it was 5, and wrote each
    note); the next listing needs no write."""
    for k in range(5):
        store.add_annotation(text_note(note=f"note {k}"))
    page = store.project_dir / "docs" / "guide" / "install.md"
    was = execute(pg_url, "SELECT DISTINCT source_mtime FROM annotations")
    at = page.stat().st_mtime + 100
    os.utime(page, (at, at))
    round_trips.clear()
    assert len(store.list_annotations("/guide/install/")) == 5
    assert len(round_trips) == 4
    assert execute(pg_url, "SELECT DISTINCT source_mtime FROM annotations") == was
    assert execute(pg_url, "SELECT mtime FROM line_versions") == [(at,)]
    round_trips.clear()
    assert len(store.list_annotations("/guide/install/")) == 5
    assert len(round_trips) == 3


def test_the_export_reads_rows_in_five_round_trips(store: Store, round_trips: list[str]) -> None:
    """The Markdown export reads the field table's columns as rows, its replies, annotations and
    page notes in one round trip (it built every object first: 8), and says what it did before."""
    from annotate.export import render

    a = store.add_annotation(text_note())
    store.add_reply(a.id, "Done in the install page.")
    store.add_page_note({"pageUrl": "/guide/install/", "note": "More on pipx."})
    expected = render(store, "markdown")
    round_trips.clear()
    assert render(store, "markdown") == expected
    assert len(round_trips) == 5
    assert "Mention pipx as well." in expected and "Done in the install page." in expected


def test_a_refused_row_of_an_import_fails_it_whole(store: Store, pg_url: str) -> None:
    """A row refused in the middle of an import's executemany: the same error as a statement
    alone, nothing of the import stored, and the next verbs go through."""
    execute(pg_url, "ALTER TABLE replies ADD CONSTRAINT no_x CHECK (message != 'x')")
    at = "2026-01-05T09:00:00.000Z"
    annotations = [
        {"id": f"a_{i:010x}", "type": "element", "page_url": "/guide/x/", "note": f"n{i}",
         "intent": "comment", "status": "open", "created_at": at}
        for i in range(50)
    ]  # fmt: skip
    replies = [
        {"id": f"r_{i:010x}", "parent_id": f"a_{i:010x}", "role": "agent",
         "message": "x" if i == 25 else "fine", "created_at": at}
        for i in range(50)
    ]  # fmt: skip
    with pytest.raises(annotate.StoreError, match='violates check constraint "no_x"'):
        store.insert_raw(annotations, [], replies)
    assert counts(pg_url)[:3] == (0, 0, 0)
    assert store.insert_raw(annotations[:3], [], replies[:3])["annotations"] == 3
    assert store.add_annotation(text_note()).note == text_note()["note"]

"""The store: creating, reading, filtering, editing, deleting; page notes; reviews; the schema."""

from __future__ import annotations

import ast
import os
import re
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

import annotate
from annotate import schema
from annotate.store import Store

from .conftest import element_note, text_note, write_project

# Each test using the `store` fixture runs on both (tests/conftest.py).
BACKENDS = ("sqlite", "postgresql")


def test_open_creates_store_in_project_folder(tmp_path: Path) -> None:
    s = annotate.open(tmp_path)
    assert s.path == tmp_path / ".annotate" / "annotations.db"
    assert s.path.exists()
    # The folder ignores itself, so nothing reaches git even before `annotate setup`.
    assert (tmp_path / ".annotate" / ".gitignore").read_text().splitlines()[-1] == "*"
    assert s.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert s.schema_version == schema.LATEST


def test_open_missing_project_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(annotate.ValidationError, match="does not exist"):
        annotate.open(tmp_path / "nope")


def test_add_text_annotation_round_trips(store: Store) -> None:
    a = store.add_annotation(text_note(author="ana"))
    assert a.id.startswith("a_")
    assert a.type == "text"
    assert a.status == "open"
    assert a.intent == "comment"
    assert a.anchor_state == "anchored"
    assert a.created_at == a.updated_at
    assert a.created_at.endswith("Z")
    assert store.get_annotation(a.id) == a
    d = a.to_dict()
    assert list(d) == [
        "id", "type", "pageUrl", "pageTitle", "note", "status", "intent", "suggestion",
        "selectedText", "quote", "position", "replacedText", "elementSelector", "source",
        "originalSource", "anchorState", "anchorScore", "build", "replies", "author", "createdAt",
        "updatedAt", "inProgressAt", "addressedAt", "resolvedAt",
    ]  # fmt: skip
    assert d["quote"] == {
        "exact": "pip install mkdocs-annotate",
        "prefix": "Run ",
        "suffix": " in a shell",
    }
    assert d["position"] == {"start": 120, "end": 147}
    assert d["elementSelector"] is None
    assert d["author"] == "ana"


def test_selections_are_what_the_page_reported(store: Store) -> None:
    """`inCode` and `occurrence` are in no answer; `Store.selections` gives them by id (for
    `annotate mcp --remote`), the keys known, for the notes that know either."""
    both = store.add_annotation(text_note(inCode=True, occurrence=2)).id
    first = store.add_annotation(text_note(occurrence=0)).id
    prose = store.add_annotation(text_note(inCode=False)).id
    unknown = store.add_annotation(text_note()).id
    element = store.add_annotation(element_note()).id
    assert "inCode" not in store.get_annotation(both).to_dict()
    # More ids than one statement takes, unknown and repeated ones among them.
    ids = [f"a_{n:010x}" for n in range(1_200)] + [both, first, prose, unknown, element, both]
    assert store.selections(ids) == {
        both: {"inCode": True, "occurrence": 2},
        first: {"occurrence": 0},
        prose: {"inCode": False},
    }
    assert store.selections([]) == {}


def test_add_element_annotation(store: Store) -> None:
    a = store.add_annotation(element_note())
    d = store.get_annotation(a.id).to_dict()
    assert d["type"] == "element"
    assert d["selectedText"] is None and d["quote"] is None
    assert d["elementSelector"]["cssSelector"] == "article img:nth-of-type(2)"
    assert d["elementSelector"]["attributes"] == {"src": "panel.png", "alt": "Review panel"}


def test_type_is_inferred(store: Store) -> None:
    data = element_note()
    del data["type"]
    assert store.add_annotation(data).type == "element"
    data = text_note()
    del data["type"]
    assert store.add_annotation(data).type == "text"


def test_server_set_fields_are_ignored(store: Store) -> None:
    a = store.add_annotation(
        text_note(
            id="a_chosen", status="resolved", createdAt="1999-01-01T00:00:00Z", replies=[{"x": 1}]
        )
    )
    assert a.id != "a_chosen"
    assert a.status == "open"
    assert a.created_at != "1999-01-01T00:00:00Z"
    assert a.replies == ()


def test_quote_exact_defaults_to_selected_text(store: Store) -> None:
    a = store.add_annotation(text_note(quote=None, position=None))
    assert a.quote == annotate.TextQuote("pip install mkdocs-annotate", "", "")
    assert a.position is None


def test_get_unknown_id_uses_reference_message(store: Store) -> None:
    with pytest.raises(annotate.AnnotationNotFound) as e:
        store.get_annotation("abc123")
    assert str(e.value) == 'Annotation with ID "abc123" not found'
    # Malformed ids are not found either, never an SQL problem.
    with pytest.raises(annotate.AnnotationNotFound):
        store.get_annotation("'; DROP TABLE annotations; --")


def test_list_filters(store: Store) -> None:
    a1 = store.add_annotation(text_note())
    a2 = store.add_annotation(element_note())
    a3 = store.add_annotation(text_note(pageUrl="/other/"))
    store.accept(a2.id)
    store.set_in_progress(a3.id)
    ids = lambda items: [i.id for i in items]  # noqa: E731
    assert ids(store.list_annotations()) == [a1.id, a3.id]
    assert ids(store.list_annotations(include_resolved=True)) == [a1.id, a2.id, a3.id]
    assert ids(store.list_annotations("/guide/install/")) == [a1.id]
    assert ids(store.list_annotations(status="resolved")) == [a2.id]
    assert ids(store.list_annotations(status=["open", "in_progress"])) == [a1.id, a3.id]
    assert ids(store.list_annotations(status="all")) == [a1.id, a2.id, a3.id]
    assert ids(store.list_annotations(type="element", include_resolved=True)) == [a2.id]
    assert ids(store.list_annotations(anchor_state="anchored")) == [a1.id, a3.id]
    assert store.list_annotations(anchor_state="stale") == []
    with pytest.raises(annotate.ValidationError, match="status must be one of"):
        store.list_annotations(status="done")
    with pytest.raises(annotate.ValidationError, match="anchorState must be one of"):
        store.list_annotations(anchor_state="lost")


def test_edit_annotation(store: Store) -> None:
    a = store.add_annotation(text_note())
    b = store.edit_annotation(
        a.id, {"note": "Better wording", "intent": "replace", "suggestion": "pipx install"}
    )
    assert (b.note, b.intent, b.suggestion) == ("Better wording", "replace", "pipx install")
    assert b.updated_at >= a.updated_at
    c = store.edit_annotation(a.id, {"intent": "comment"})
    assert c.suggestion is None  # a comment carries no suggestion
    with pytest.raises(annotate.ValidationError, match='Unknown field "status"'):
        store.edit_annotation(a.id, {"status": "resolved"})
    with pytest.raises(annotate.ValidationError, match="Nothing to change"):
        store.edit_annotation(a.id, {})
    with pytest.raises(annotate.AnnotationNotFound):
        store.edit_annotation("a_missing", {"note": "x"})


def test_delete_annotation_removes_replies(store: Store) -> None:
    a = store.add_annotation(text_note())
    store.add_agent_reply(a.id, "Done")
    store.delete(a.id)
    with pytest.raises(annotate.AnnotationNotFound):
        store.get_annotation(a.id)
    assert store.conn.execute("SELECT count(*) FROM replies").fetchone()[0] == 0
    with pytest.raises(annotate.AnnotationNotFound):
        store.delete(a.id)


def test_page_notes(store: Store) -> None:
    n = store.add_page_note(
        {"pageUrl": "/guide/", "pageTitle": "Guide", "note": "Too long; split it."}
    )
    assert n.id.startswith("p_")
    assert n.status == "open"
    assert store.get_page_note(n.id) == n
    other = store.add_page_note({"pageUrl": "/other/", "note": "Fine."})
    assert [p.id for p in store.list_page_notes("/guide/")] == [n.id]
    assert [p.id for p in store.list_page_notes()] == [n.id, other.id]
    edited = store.edit_page_note(n.id, {"note": "Split it in two."})
    assert edited.note == "Split it in two."
    # The lifecycle works on page notes through the same calls.
    store.set_in_progress(n.id)
    store.add_agent_reply(n.id, "Split into two pages.")
    addressed = store.address_annotation(n.id)
    assert addressed.status == "addressed"
    assert [r.role for r in addressed.replies] == ["agent"]
    store.accept(n.id)
    assert [p.id for p in store.list_page_notes()] == [other.id]
    assert [p.id for p in store.list_page_notes(include_resolved=True)] == [n.id, other.id]
    store.delete(other.id)
    with pytest.raises(annotate.PageNoteNotFound, match='Page note with ID "'):
        store.get_page_note(other.id)
    with pytest.raises(annotate.ValidationError, match="note must not be empty"):
        store.add_page_note({"pageUrl": "/", "note": "  "})
    with pytest.raises(annotate.ValidationError, match='Unknown field "selectedText"'):
        store.add_page_note({"pageUrl": "/", "note": "x", "selectedText": "y"})


def test_get_finds_either_kind(store: Store) -> None:
    a = store.add_annotation(text_note())
    n = store.add_page_note({"pageUrl": "/", "note": "x"})
    assert isinstance(store.get_annotation(a.id), annotate.Annotation)
    assert isinstance(store.get_annotation(n.id), annotate.PageNote)
    with pytest.raises(annotate.AnnotationNotFound):
        store.get_annotation("p_nothing")


def test_reviews_collect_notes_since_the_last_one(store: Store) -> None:
    a1 = store.add_annotation(text_note())
    n1 = store.add_page_note(
        {"pageUrl": "/guide/install/", "note": "Add a troubleshooting section"}
    )
    r1 = store.create_review({"mode": "review", "message": "Answer first, edit later."})
    assert r1.id.startswith("rv_")
    assert (r1.mode, r1.message, r1.status) == ("review", "Answer first, edit later.", "pending")
    assert [a.id for a in r1.annotations] == [a1.id]
    assert [n.id for n in r1.page_notes] == [n1.id]
    a2 = store.add_annotation(element_note())
    r2 = store.create_review({"mode": "edit"})
    assert [a.id for a in r2.annotations] == [a2.id]
    assert r2.page_notes == ()
    with pytest.raises(annotate.ValidationError, match="Nothing to send"):
        store.create_review({"mode": "edit"})
    # A message alone is worth sending.
    r3 = store.create_review({"mode": "edit", "message": "Also check the nav."})
    assert r3.annotations == ()
    with pytest.raises(annotate.ValidationError, match="mode must be"):
        store.create_review({"mode": "fix"})
    assert [r.id for r in store.list_reviews()] == [r1.id, r2.id, r3.id]
    # Agents pick reviews up oldest first, each once.
    assert store.claim_review().id == r1.id
    assert store.get_review(r1.id).status == "picked_up"
    assert store.claim_review().id == r2.id
    assert store.claim_review().id == r3.id
    assert store.claim_review() is None
    assert store.summary().pending_reviews == 0
    with pytest.raises(annotate.ReviewNotFound):
        store.get_review("rv_nothing")


def test_reopened_note_joins_the_next_review(store: Store) -> None:
    a = store.add_annotation(text_note())
    store.create_review({"mode": "edit"})
    store.address_annotation(a.id)
    store.reopen(a.id)  # no follow-up: back to the batch
    r = store.create_review({"mode": "edit"})
    assert [x.id for x in r.annotations] == [a.id]


def test_summary(store: Store) -> None:
    a = store.add_annotation(text_note())
    store.add_annotation(text_note(pageUrl="/b/"))
    e = store.add_annotation(element_note())
    store.add_page_note({"pageUrl": "/c/", "note": "x"})
    store.set_in_progress(a.id)
    store.accept(e.id)
    s = store.summary()
    assert s.annotations == {"open": 1, "in_progress": 1, "addressed": 0, "resolved": 1}
    assert s.page_notes == {"open": 1, "in_progress": 0, "addressed": 0, "resolved": 0}
    assert s.anchor_states == {"anchored": 2, "stale": 0, "orphaned": 0, "removed": 0}
    assert s.pages == 3
    assert s.open_items == 3
    assert s.to_dict()["pendingReviews"] == 0


def test_purge_resolved(store: Store) -> None:
    keep = store.add_annotation(text_note())
    gone = store.add_annotation(text_note())
    note = store.add_page_note({"pageUrl": "/", "note": "x"})
    store.add_agent_reply(gone.id, "done")
    store.accept(gone.id)
    store.accept(note.id)
    assert store.purge_resolved() == 2
    assert [a.id for a in store.list_annotations(include_resolved=True)] == [keep.id]
    assert store.list_page_notes(include_resolved=True) == []
    assert store.conn.execute("SELECT count(*) FROM replies").fetchone()[0] == 0
    assert store.purge_resolved() == 0


def test_change_feed(store: Store) -> None:
    events, cursor = store.changes(0)
    assert events == [] and cursor == 0
    a = store.add_annotation(text_note())
    store.add_agent_reply(a.id, "On it")
    events, cursor = store.changes(0)
    assert [(e["kind"], e["id"], e["action"]) for e in events] == [
        ("annotation", a.id, "created"),
        ("annotation", a.id, "agent_reply"),
    ]
    assert events[0]["pageUrl"] == "/guide/install/"
    assert cursor == events[-1]["seq"]
    assert store.changes(cursor) == ([], cursor)
    store.accept(a.id)
    more, cursor2 = store.changes(cursor)
    assert [e["action"] for e in more] == ["resolved"]
    assert cursor2 > cursor


def test_threads_share_a_store(store: Store) -> None:
    a = store.add_annotation(text_note())
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(25):
                store.add_agent_reply(a.id, "reply")
                store.list_annotations()
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(store.get_annotation(a.id).replies) == 100


# -- the file itself ------------------------------------------------------------------------------


def test_corrupt_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "annotations.db"
    path.write_bytes(b"this is not a database, it is a shopping list\n" * 100)
    with pytest.raises(annotate.StoreCorruptError) as e:
        Store(path)
    assert str(path) in str(e.value)
    # Nothing was written over it.
    assert path.read_bytes().startswith(b"this is not a database")


def test_damaged_database_is_reported_not_emptied(tmp_path: Path) -> None:
    s = Store(tmp_path / "a.db")
    for i in range(200):
        s.add_annotation(text_note(note=f"note {i} " + "x" * 500))
    s.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    s.close()
    data = bytearray((tmp_path / "a.db").read_bytes())
    # Scribble over the middle pages, keep the header.
    for i in range(4096, len(data) - 4096, 7):
        data[i] = 0xFF
    (tmp_path / "a.db").write_bytes(bytes(data))
    with pytest.raises(annotate.StoreError) as e:
        Store(tmp_path / "a.db").list_annotations()
    assert str(tmp_path / "a.db") in str(e.value)


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "annotations.db"
    Store(path).close()
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO schema_version VALUES (?, 'later')", (schema.LATEST + 1,))
    conn.commit()
    conn.close()
    with pytest.raises(annotate.NewerSchemaError) as e:
        Store(path)
    assert str(path) in str(e.value)
    assert "upgrade mkdocs-annotate" in str(e.value)


def test_foreign_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE invoices (id INTEGER)")
    conn.commit()
    conn.close()
    with pytest.raises(annotate.StoreCorruptError, match="not written by mkdocs-annotate"):
        Store(path)
    conn = sqlite3.connect(path)
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master")]
    conn.close()
    assert tables == ["invoices"]


def test_forward_migration_runs_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "annotations.db"
    old = Store(path)
    a = old.add_annotation(text_note())
    old.close()
    calls: list[int] = []

    def add_label(db) -> None:  # type: ignore[no-untyped-def]
        calls.append(1)
        db["annotations"].add_column("label", str)

    latest = schema.LATEST
    monkeypatch.setattr(schema, "MIGRATIONS", [*schema.MIGRATIONS, add_label])
    monkeypatch.setattr(schema, "LATEST", latest + 1)
    new = Store(path)
    assert new.schema_version == schema.LATEST
    assert "label" in new.db["annotations"].columns_dict
    assert new.get_annotation(a.id).note == a.note  # data kept
    Store(path).close()
    assert calls == [1]


def test_text_selector_rows_of_a_page(store: Store) -> None:
    a = store.add_annotation(text_note())
    store.add_annotation(element_note())
    b = store.add_annotation(text_note(quote=None, position=None, selectedText="mkdocs serve"))
    store.add_annotation(text_note(pageUrl="/other/"))
    store.update_annotation_target(a.id, "pipx install mkdocs-annotate")
    store.accept(b.id)
    assert store.text_selector_rows("/guide/install/") == [
        (a.id, "pip install mkdocs-annotate", "Run ", " in a shell", 120, 147, "pipx install mkdocs-annotate")
    ]  # fmt: skip
    assert [
        row[0] for row in store.text_selector_rows("/guide/install/", include_resolved=True)
    ] == [
        a.id,
        b.id,
    ]


def test_the_store_imports_none_of_its_clients() -> None:
    # Export, import and context are modules over the store's public methods: no circle.
    package = Path(annotate.__file__).parent
    # The nouns beside the store (issue #28 item 2) neither.
    nouns = ("tables", "items", "sources", "anchors", "people", "feed", "shows", "reviews", "bulk")
    for module in ("store", "dbfile", "filters", *nouns):
        tree = ast.parse((package / f"{module}.py").read_text())
        imported = {
            alias.name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.level == 1
            for alias in node.names
        } | {
            (node.module or "").split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.level == 1
        }
        assert not imported & {"export", "importing", "context", "cli", "mcp_server", "web"}
    for client in ("export", "importing", "context"):
        source = (package / f"{client}.py").read_text()
        assert not re.search(r"\bstore\._", source), client


def test_each_noun_answers_as_the_store_calls_it(store: Store) -> None:
    # Issue #28 item 2: the store's old calls delegate to its nouns, answer for answer.
    store.register_pages({"/guide/install/": "docs/guide/install.md"})
    a = store.add_annotation(text_note())
    review = store.create_review({"mode": "edit", "message": "go"})
    token = store.people.add_token("bob", "agent")
    assert store.list_tokens() == store.people.list_tokens() != []
    assert store.person_for_token(token) == store.people.person_for_token(token) is not None
    assert store.get_review(review.id) == store.reviews.get(review.id)
    assert store.list_reviews(pending_only=True) == store.reviews.all(pending_only=True)
    claimed = store.reviews.wait(0, token=token)
    assert claimed is not None and claimed.id == review.id and claimed.picked_up_at
    assert store.wait_for_review(0) is None
    assert store.changes(0) == store.feed.changes(0)
    assert store.history(a.id) == store.feed.history(a.id)
    assert [h.action for h in store.history(a.id)] == ["created"]
    assert store.page_url("guide/install") == store.sources.page_url("guide/install")
    assert store.page_file("/guide/install/") == store.sources.page_file("/guide/install/")
    assert store.summary() == store.bulk.summary()
    assert store.text_selector_rows("/guide/install/") == store.anchors.text_selectors(
        "/guide/install/"
    )
    assert store.shows.show(a.id, wait=0) == 0  # no view open
    store.people.revoke_token("bob")
    with pytest.raises(annotate.Unauthorized):
        store.claim_review(token=token)


def _statements(store: Store, call: Any) -> tuple[Any, list[str]]:
    """What `call()` returns and the SQL it ran on this thread's connection."""
    ran: list[str] = []
    store.conn.set_trace_callback(ran.append)
    try:
        return call(), ran
    finally:
        store.conn.set_trace_callback(None)


def test_address_with_a_replacement_is_one_transaction(tmp_path: Path) -> None:
    write_project(tmp_path, "# Install\n\nRun pip install mkdocs-annotate in a shell.\n")
    with annotate.open(tmp_path) as store:
        a = store.add_annotation(text_note())
        md = tmp_path / "docs" / "guide" / "install.md"
        md.write_text("# Install\n\nIntro.\n\nRun pipx install mkdocs-annotate in a shell.\n")
        done, ran = _statements(
            store, lambda: store.address_annotation(a.id, "pipx install mkdocs-annotate")
        )
        assert [s for s in ran if s.startswith("BEGIN")] == ["BEGIN IMMEDIATE"]
        assert (done.status, done.anchor_state, done.source.line_start) == (
            "addressed",
            "anchored",
            5,
        )
        assert done == store.get_annotation(a.id)


def test_the_agents_sequence_writes_the_replacement_once(tmp_path: Path) -> None:
    write_project(tmp_path, "# Install\n\nRun pip install mkdocs-annotate in a shell.\n")
    with annotate.open(tmp_path) as store:
        a = store.add_annotation(text_note())
        md = tmp_path / "docs" / "guide" / "install.md"
        md.write_text("# Install\n\nRun pipx install mkdocs-annotate in a shell.\n")
        target = store.update_annotation_target(a.id, "pipx install mkdocs-annotate")
        done, ran = _statements(
            store, lambda: store.address_annotation(a.id, "pipx install mkdocs-annotate")
        )
        updates = [s for s in ran if s.startswith("UPDATE annotations")]
        assert len(updates) == 1 and "replaced_text" not in updates[0]
        assert done.source == target.source
        assert done.replaced_text == "pipx install mkdocs-annotate"


def test_a_read_of_unchanged_notes_is_one_read_transaction(tmp_path: Path) -> None:
    write_project(tmp_path, "# Install\n\nRun pip install mkdocs-annotate in a shell.\n")
    with annotate.open(tmp_path) as store:
        a = store.add_annotation(text_note())
        for read in (
            lambda: store.get_annotation(a.id),
            lambda: store.list_annotations(),
            lambda: store.list_annotations(as_json=True),
            lambda: store.summary(),
        ):
            _, ran = _statements(store, read)
            assert [s for s in ran if s.startswith(("BEGIN", "UPDATE"))] == ["BEGIN"]
        # A changed file is reconciled first, then read once.
        md = tmp_path / "docs" / "guide" / "install.md"
        md.write_text("# Install\n\nIntro.\n\nRun pip install mkdocs-annotate in a shell.\n")
        os.utime(md, (md.stat().st_atime, md.stat().st_mtime + 10))
        got, ran = _statements(store, lambda: store.get_annotation(a.id))
        assert [s for s in ran if s.startswith("BEGIN")] == ["BEGIN", "BEGIN IMMEDIATE", "BEGIN"]
        assert got.source.line_start == 5

"""Many writers on one database file: nothing lost, nothing half-written (issue #2,
docs/storage.md).

The dev server, the MCP server and the CLI write the same file at once. astro-inline-review's JSON file
kept 31–35 of 200 records when two processes wrote 100 each; the store must keep every one.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import annotate
from annotate import reconcile

# Each test taking `db_url` runs on both (tests/conftest.py).
BACKENDS = ("sqlite", "postgresql")

WORKERS = 4
OPS = 250
SHARED = 3  # annotations every worker replies to, so writers also meet on the same rows
REPLIES_EACH = 100

# The legal moves of docs/workflow.md, "Statuses", and where each one leads.
LEGAL = {
    "open": ("set_in_progress", "address", "accept"),
    "in_progress": ("set_in_progress", "address", "accept"),
    "addressed": ("set_in_progress", "address", "accept", "reopen"),
    "resolved": ("reopen",),
}
ILLEGAL = {
    "open": ("reopen",),
    "in_progress": ("reopen",),
    "addressed": (),
    "resolved": ("set_in_progress", "address", "accept"),
}
LEADS_TO = {
    "set_in_progress": "in_progress",
    "address": "addressed",
    "accept": "resolved",
    "reopen": "open",
}


def _new_note(worker: int, op: int) -> dict[str, Any]:
    return {
        "pageUrl": f"/guide/page-{op % 7}/",
        "pageTitle": f"Page {op % 7}",
        "note": f"Worker {worker}, op {op}: reword this.",
        "selectedText": f"text {worker}-{op}",
        "quote": {"exact": f"text {worker}-{op}", "prefix": "Some ", "suffix": " here"},
        "position": {"start": op, "end": op + 10},
    }


def _change(store: annotate.Store, id: str, action: str, message: str) -> annotate.Annotation:
    if action == "set_in_progress":
        return store.set_in_progress(id)
    if action == "address":
        return store.address_annotation(id, replaced_text=message)
    if action == "accept":
        return store.accept(id)
    return store.reopen(id, note=message)


def mixed_writes(
    store: annotate.Store, worker: int, ops: int, seed: int, shared: list[str]
) -> dict[str, Any]:
    """`ops` random creates, replies and status changes; returns what this worker wrote."""
    rng = random.Random(seed)
    created: list[str] = []
    replies: list[list[str]] = []  # [reply id, parent id, message]
    status: dict[str, str] = {}  # the status after this worker's last successful change
    refused = 0

    def keep_reply(item: annotate.Annotation, message: str) -> None:
        (reply,) = [r for r in item.replies if r.message == message]
        replies.append([reply.id, item.id, message])

    for op in range(ops):
        roll = rng.random()
        message = f"worker {worker} op {op}"
        if not created or roll < 0.3:
            a = store.add_annotation(_new_note(worker, op))
            created.append(a.id)
            status[a.id] = "open"
        elif roll < 0.6:
            parent = rng.choice(created + shared)
            if rng.random() < 0.5:
                keep_reply(store.add_agent_reply(parent, message), message)
            else:
                keep_reply(store.add_reply(parent, message, author=f"w{worker}"), message)
        else:
            id = rng.choice(created)
            before = status[id]
            if roll > 0.95 and ILLEGAL[before]:
                # A refused move must change nothing.
                try:
                    _change(store, id, rng.choice(ILLEGAL[before]), message)
                except annotate.InvalidTransition:
                    refused += 1
                    continue
                raise AssertionError(f"{id} moved from {before} by an illegal change")
            action = rng.choice(LEGAL[before])
            item = _change(store, id, action, message)
            assert item.status == LEADS_TO[action], (id, before, action, item.status)
            status[id] = item.status
            if action == "reopen":
                keep_reply(item, message)  # the follow-up note is a reviewer reply
    return {"created": created, "replies": replies, "status": status, "refused": refused}


def _process_worker(
    db: str, worker: int, ops: int, seed: int, shared: list[str], start: Any, out: str
) -> None:
    store = annotate.Store(db)
    start.wait(30)  # all processes write at the same time, not one after another
    try:
        result = mixed_writes(store, worker, ops, seed, shared)
    finally:
        store.close()
    Path(out).write_text(json.dumps(result))


def _replying_worker(db: str, parent: str, worker: int, count: int, start: Any, out: str) -> None:
    store = annotate.Store(db)
    start.wait(30)
    ids = []
    try:
        for n in range(count):
            message = f"worker {worker} reply {n}"
            item = store.add_agent_reply(parent, message)
            ids += [r.id for r in item.replies if r.message == message]
    finally:
        store.close()
    Path(out).write_text(json.dumps(ids))


def _run_processes(target: Any, args: list[tuple[Any, ...]], timeout: float = 50) -> None:
    ctx = multiprocessing.get_context("spawn")  # real OS processes with their own connections
    start = ctx.Barrier(len(args))
    procs = [ctx.Process(target=target, args=(*a[:-1], start, a[-1])) for a in args]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout)
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()
    assert [p.exitcode for p in procs] == [0] * len(procs)


def assert_consistent(a: annotate.Annotation) -> None:
    """A status and its timestamps agree, and no reply is newer than the item: no torn write."""
    stamps = (a.in_progress_at is not None, a.addressed_at is not None, a.resolved_at is not None)
    if a.status == "open":
        assert stamps == (False, False, False), a
    elif a.status == "in_progress":
        assert stamps[0] and not stamps[1] and not stamps[2], a
    elif a.status == "addressed":
        assert stamps[1] and not stamps[2], a
    else:
        assert stamps[2], a
    assert all(r.created_at <= a.updated_at for r in a.replies), a


def integrity(store: annotate.Store) -> str:
    if store.path is None:
        return "ok"  # PostgreSQL checks its own pages; SQLite's file is checked here
    conn = sqlite3.connect(store.path)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


def check_results(store: annotate.Store, shared: list[str], results: list[dict[str, Any]]) -> None:
    """Every create and every reply each worker saw succeed is in the store, and nothing else."""
    created = [id for r in results for id in r["created"]]
    replies = [reply for r in results for reply in r["replies"]]
    assert len(set(created)) == len(created)
    everything = {a.id: a for a in store.list_annotations(include_resolved=True)}
    assert set(everything) == set(created) | set(shared)
    stored_replies = {r.id: (a.id, r.message) for a in everything.values() for r in a.replies}
    assert stored_replies == {id: (parent, message) for id, parent, message in replies}
    for r in results:
        for id, status in r["status"].items():
            assert everything[id].status == status, id
    for a in everything.values():
        assert_consistent(a)
    assert store.conn.execute("SELECT count(*) FROM annotations").fetchone()[0] == len(everything)
    assert store.conn.execute("SELECT count(*) FROM replies").fetchone()[0] == len(replies)
    assert integrity(store) == "ok"


def test_many_writer_processes(tmp_path: Path, db_url: str | None) -> None:
    store = annotate.open(tmp_path, db=db_url)
    shared = [store.add_annotation(_new_note(-1, n)).id for n in range(SHARED)]
    outs = [tmp_path / f"worker{w}.json" for w in range(WORKERS)]
    args = [
        (db_url or str(store.path), w, OPS, 1000 + w, shared, str(outs[w])) for w in range(WORKERS)
    ]

    # Meanwhile this process keeps reading: every snapshot must be a whole, consistent state.
    done = threading.Event()
    reads: list[int] = []
    failures: list[BaseException] = []

    def read_all_the_time() -> None:
        try:
            while not done.is_set():
                for a in store.list_annotations(include_resolved=True):
                    assert_consistent(a)
                reads.append(1)
        except BaseException as e:
            failures.append(e)
        finally:
            store.close()

    reader = threading.Thread(target=read_all_the_time)
    reader.start()
    try:
        _run_processes(_process_worker, args)
    finally:
        done.set()
        reader.join()
    assert not failures, failures[0]
    assert reads

    results = [json.loads(out.read_text()) for out in outs]
    assert sum(len(r["created"]) for r in results) > WORKERS * OPS // 4
    assert sum(len(r["replies"]) for r in results) > WORKERS * OPS // 4
    assert sum(r["refused"] for r in results) > 0
    check_results(store, shared, results)
    store.close()


def test_many_writer_threads_share_one_store(tmp_path: Path, db_url: str | None) -> None:
    store = annotate.open(tmp_path, db=db_url)  # one object; each thread gets its own connection
    shared = [store.add_annotation(_new_note(-1, n)).id for n in range(SHARED)]
    start = threading.Barrier(WORKERS)
    results: list[dict[str, Any]] = [{} for _ in range(WORKERS)]
    failures: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            start.wait(30)
            results[worker] = mixed_writes(store, worker, OPS, 2000 + worker, shared)
        except BaseException as e:
            failures.append(e)
        finally:
            store.close()  # closes this thread's connection only

    threads = [threading.Thread(target=work, args=(w,)) for w in range(WORKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures[0]
    check_results(store, shared, results)
    store.close()


def test_no_lost_update_on_one_annotation(tmp_path: Path, db_url: str | None) -> None:
    # The race that cost astro-inline-review 165 of 200 records: read, append, write back.
    store = annotate.open(tmp_path, db=db_url)
    parent = store.add_annotation(_new_note(-1, 0)).id
    outs = [tmp_path / f"replies{w}.json" for w in range(WORKERS)]
    _run_processes(
        _replying_worker,
        [
            (db_url or str(store.path), parent, w, REPLIES_EACH, str(outs[w]))
            for w in range(WORKERS)
        ],
    )
    written = [id for out in outs for id in json.loads(out.read_text())]
    assert len(written) == WORKERS * REPLIES_EACH
    a = store.get_annotation(parent)
    assert len(a.replies) == WORKERS * REPLIES_EACH
    assert sorted(r.id for r in a.replies) == sorted(written)
    # Each worker's replies keep their order in the thread.
    for w in range(WORKERS):
        mine = [r.message for r in a.replies if r.message.startswith(f"worker {w} ")]
        assert mine == [f"worker {w} reply {n}" for n in range(REPLIES_EACH)]
    assert integrity(store) == "ok"
    store.close()


def test_a_read_does_not_overwrite_a_newer_anchor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, db_url: str | None
) -> None:
    # No update may be lost (docs/storage.md), and reads reconcile anchors, so reads write too:
    # a read that planned from rows older than another connection's commit must not write its plan.
    (tmp_path / "mkdocs.yml").write_text("site_name: Race\n")
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "install.md"
    page.write_text("# Install\n\nInstall it with pip today, then run the server.\n")
    os.utime(page, (1_000_000, 1_000_000))
    reviewer = annotate.open(tmp_path, db=db_url)  # the dev server
    agent = annotate.open(tmp_path, db=db_url)  # the MCP server: same file, its own connection
    a = reviewer.add_annotation(
        {
            "pageUrl": "/install/",
            "note": "Suggest uv.",
            "selectedText": "pip",
            "quote": {"exact": "pip", "prefix": "Install it with ", "suffix": " today, then run"},
        }
    )
    assert a.anchor_state == "anchored"
    # The agent rewrites the sentence ...
    page.write_text("# Install\n\nInstall it with uv today, then run the server.\n")
    os.utime(page, (2_000_000, 2_000_000))

    real_plan = reconcile.plan
    agent_saw: list[annotate.Annotation] = []

    def plan_then_let_the_agent_in(rows: Any, locator: Any, **options: Any) -> Any:
        updates = real_plan(rows, locator, **options)
        monkeypatch.setattr(reconcile, "plan", real_plan)  # interleave once
        # ... and records its replacement while the reviewer's read sits between planning (by the
        # old quote: not found, "stale") and writing that plan.
        agent_saw.append(agent.update_annotation_target(a.id, "uv"))
        return updates

    monkeypatch.setattr(reconcile, "plan", plan_then_let_the_agent_in)
    reviewer.get_annotation(a.id)
    assert agent_saw[0].anchor_state == "anchored"  # the agent's own relocation found "uv"
    try:
        assert agent.get_annotation(a.id).anchor_state == "anchored"
    finally:
        reviewer.close()
        agent.close()


def test_a_second_store_in_one_process_keeps_its_writes_visible(tmp_path: Path) -> None:
    """Opening a file this process already has open must not drop SQLite's locks on it (closing
    any descriptor of a file drops the process's POSIX locks): another process would then reset
    the WAL, and the writes after it would be seen by no one else."""
    first = annotate.open(tmp_path)
    first.add_page_note({"pageUrl": "/", "note": "one"})
    second = annotate.open(tmp_path)
    notes = [sys.executable, "-m", "annotate.cli", "notes", "--json", "--project", str(tmp_path)]
    subprocess.run(notes, check=True, capture_output=True)  # another process reads the file
    second.add_page_note({"pageUrl": "/", "note": "two"})
    out = subprocess.run(notes, check=True, capture_output=True, text=True).stdout
    assert sorted(n["note"] for n in json.loads(out)) == ["one", "two"]
    first.close()
    second.close()

"""PostgreSQL under faults (issue #32): its disk full, the server restarted under an idle
server, the pool's connections after both. Each fault is real: the disk is a small tmpfs holding
the store's tablespace (in a private mount namespace), the restart is `pg_ctl restart`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from starlette.testclient import TestClient

import annotate
from annotate.backends.postgres import POOL_MAX, redact
from annotate.web import create_app
from annotate.web.team import Settings

from .pgcluster import PgCluster

ROOT = Path(__file__).resolve().parent.parent
API = "/__annotate/api"
TOKEN = "t" * 32

# Run in its own mount namespace: a cluster whose store's tables live on a 1 MB tmpfs.
DISK_FULL = r"""
import json, os, subprocess, sys, tempfile, threading
sys.path.insert(0, sys.argv[1])
from tests.pgcluster import PgCluster
from tests.conftest import text_note
import psycopg, annotate

def writer(store, kind, stop, errors, acked):
    # Three writers of different verbs (a note, a note and a reply, reads), as three reviewers.
    done = 0
    while not stop(done):
        done += 1
        try:
            if kind == 0:
                acked.append(store.add_page_note({"pageUrl": "/p/", "note": os.urandom(700).hex()}).id)
            elif kind == 1:
                a = store.add_annotation(text_note(note=os.urandom(500).hex()))
                acked.append(a.id)
                store.add_reply(a.id, os.urandom(300).hex())
            else:
                store.list_annotations()
                store.summary()
        except annotate.StoreError as e:
            errors.append(f"{type(e).__name__}: {str(e).rpartition(': ')[2]}")

def run(store, stop):
    errors, acked = [], []
    threads = [threading.Thread(target=writer, args=(store, k, stop(errors), errors, acked))
               for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors, acked

cluster = PgCluster()
small = cluster.folder / "small"
small.mkdir()
try:
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(small)], check=True)
    subprocess.run(["chown", "postgres:postgres", str(small)], check=True)
    with psycopg.connect(cluster.url, autocommit=True) as conn:
        conn.execute(f"CREATE TABLESPACE small LOCATION '{small}'")
        conn.execute("ALTER DATABASE postgres SET default_tablespace = small")
    project = tempfile.mkdtemp()
    open(os.path.join(project, "mkdocs.yml"), "w").write("site_name: t\n")
    store = annotate.open(project, db=cluster.new_schema())
    # Writes until the disk has refused 600 of them...
    full, acked = run(store, lambda errors: lambda done: len(errors) >= 600)
    # ...then room again: every write must succeed, on every pooled connection.
    subprocess.run(["mount", "-o", "remount,size=256m", str(small)], check=True)
    after, acked_after = run(store, lambda errors: lambda done: done >= 150)
    kept = {n.id for n in store.list_page_notes()} | {a.id for a in store.list_annotations()}
    print(json.dumps({"full": sorted(set(full)), "after": sorted(set(after)),
                      "after_count": len(after), "written_after": len(acked_after),
                      "lost": len(set(acked + acked_after) - kept)}))
    store.close()
finally:
    subprocess.run(["umount", "-l", str(small)], check=False)
    cluster.stop()
"""


def test_a_full_disk_leaves_no_connection_broken(tmp_path: Path) -> None:
    # Root mounts in a private namespace; anyone else in a user namespace of their own.
    unshare = ["unshare", "-m"] if os.geteuid() == 0 else ["unshare", "-r", "-m"]
    cmd = [*unshare, "--propagation", "private", sys.executable, "-c", DISK_FULL, str(ROOT)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["full"] == ["StoreFullError: no space left on the device"]
    # Before the fix: hundreds of `prepared statement "_pg3_N" does not exist` here.
    assert (out["after"], out["after_count"]) == ([], 0)
    assert out["written_after"] == 300 and out["lost"] == 0


def test_a_restarted_server_costs_no_request(tmp_path: Path) -> None:
    # Its own cluster: the session's stays up for the other tests.
    cluster = PgCluster()
    try:
        (tmp_path / "mkdocs.yml").write_text("site_name: t\n")
        store = annotate.open(tmp_path, db=cluster.new_schema())
        store.keep_open()  # a server's pool: every connection open and idle
        client = TestClient(create_app(store, token=TOKEN), base_url="http://127.0.0.1:8000")
        sent = {"X-Annotate-Token": TOKEN}
        made = client.post(f"{API}/page-notes", json={"pageUrl": "/p/", "note": "n"}, headers=sent)
        assert made.status_code == 201
        cluster.restart()
        # Before the fix: the pool's ten connections, closed by the restart, each failed the
        # request that drew it with 503 store_unreachable.
        answers = [client.get(f"{API}/page-notes", headers=sent) for _ in range(2 * POOL_MAX)]
        assert [r.status_code for r in answers] == [200] * (2 * POOL_MAX)
        assert all([n["id"] for n in r.json()["pageNotes"]] == [made.json()["id"]] for r in answers)
        written = client.post(
            f"{API}/page-notes", json={"pageUrl": "/p/", "note": "m"}, headers=sent
        )
        assert written.status_code == 201
        store.close()
    finally:
        cluster.stop()


def test_team_mode_answers_503_while_postgresql_is_down(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cluster = PgCluster()
    try:
        # A password in the query, as libpq takes it (trust auth ignores it).
        url = cluster.new_schema() + "&password=hunter2&sslpassword=hunter3"
        (tmp_path / "mkdocs.yml").write_text("site_name: t\n")
        (tmp_path / "site").mkdir()
        (tmp_path / "site" / "index.html").write_text("<p>page</p>")
        # Each request waits this long for a connection before saying the server is down.
        store = annotate.Store(url, project_dir=tmp_path, busy_timeout=1.0)
        token = store.add_token("ada", "reviewer")
        app = create_app(store, site_dir=tmp_path / "site", team=Settings(identity_header=None))
        client = TestClient(app, base_url="http://127.0.0.1:8000")
        bearer = {"Authorization": f"Bearer {token}"}
        assert client.get(f"{API}/annotations", headers=bearer).status_code == 200
        cluster.stop()
        caplog.clear()
        # Before the fix: 500 internal for the API and for pages, a traceback in the log.
        for path in (f"{API}/annotations", "/index.html", f"{API}/summary"):
            r = client.get(path, headers=bearer)
            assert (r.status_code, r.json()) == (503, UNREACHABLE), path
        assert not any(rec.exc_info for rec in caplog.records)
        logged = caplog.text
        assert "cannot be reached" in logged and "hunter" not in logged
        store.close()
    finally:
        cluster.stop()


UNREACHABLE = {
    "error": "The store's database cannot be reached; try again later",
    "code": "store_unreachable",
}


def test_api_clients_get_no_connection_details(tmp_path: Path) -> None:
    cluster = PgCluster()
    try:
        url = cluster.new_schema() + "&password=hunter2"
        (tmp_path / "mkdocs.yml").write_text("site_name: t\n")
        store = annotate.Store(url, project_dir=tmp_path, busy_timeout=1.0)
        client = TestClient(create_app(store, token=TOKEN), base_url="http://127.0.0.1:8000")
        cluster.stop()
        r = client.get(f"{API}/annotations", headers={"X-Annotate-Token": TOKEN})
        # Before the fix: the URL with its ?password=, host and port, and libpq's message.
        assert (r.status_code, r.json()) == (503, UNREACHABLE)
        with pytest.raises(annotate.StoreError) as caught:
            store.list_annotations()
        # The library (the CLI, the log) still says which database, without the password.
        assert "hunter2" not in str(caught.value) and str(cluster.port) in str(caught.value)
        store.close()
    finally:
        cluster.stop()


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("postgresql://u:pw@h:5/d?x=1", "postgresql://u:***@h:5/d?x=1"),
        ("postgres://:pw@[::1]/d", "postgres://***@[::1]/d"),
        ("postgresql://u@h/d?password=pw&sslmode=require", "postgresql://u@h/d?password=***&sslmode=require"),
        ("postgresql://h/d?sslpassword=pw", "postgresql://h/d?sslpassword=***"),
        ("postgresql://h/d?pass%77ord=pw", "postgresql://h/d?pass%77ord=***"),
        ("postgresql://h?PASSWORD=pw", "postgresql://h?PASSWORD=***"),
        ("postgresql://u:pw@h1:1,h2:2/d", "postgresql://u:***@h1:1,h2:2/d"),
        ("host=h password=pw dbname=d", "host=h password=*** dbname=d"),
        ("host=h sslpassword = 'p w\\' d' dbname=d", "host=h sslpassword = *** dbname=d"),
        ("failed: postgresql://u:pw@h/d?password=pw (x)", "failed: postgresql://u:***@h/d?password=*** (x)"),
    ],
)  # fmt: skip
def test_every_form_of_password_libpq_reads_is_redacted(given: str, shown: str) -> None:
    assert redact(given) == shown


def test_a_nul_in_a_filter_is_bad_input_not_a_database_failure(tmp_path: Path, pg_url: str) -> None:
    (tmp_path / "mkdocs.yml").write_text("site_name: t\n")
    store = annotate.open(tmp_path, db=pg_url)
    # Before the fix: StoreError (500) naming the database; PostgreSQL's text holds no NUL.
    with pytest.raises(annotate.ValidationError, match="NUL"):
        store.list_annotations(branch="\x00")
    assert store.list_annotations(branch="main") == []
    store.close()

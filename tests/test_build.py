"""Issue #20, item 6: each note records the build it was made on (annotate/build.py).

Real git repositories in temporary folders, the real web app (Starlette's TestClient), the CLI
through click's runner and the MCP tools through the SDK's client in memory.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils
from click.testing import CliRunner
from mcp import Client
from starlette.testclient import TestClient

import annotate
from annotate import build, export, importing, schema
from annotate.cli import cli
from annotate.compose import build_server
from annotate.errors import ValidationError
from annotate.fields import BUILD_SINCE
from annotate.models import Build
from annotate.store import Store
from annotate.web import create_app

from .conftest import text_note, write_project
from .test_web_server import Server, _first_line

# The re-anchoring test also runs on PostgreSQL (tests/conftest.py).
BACKENDS = ("sqlite", "postgresql")
TOKEN = "test-token-0123456789abcdef"
API = "/__annotate/api"
INSTALL = """\
# Install

Some words first.

Run pip install mkdocs-annotate in a shell.

Then build the site.
"""
QUOTE_LINE = 5


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=Test", "-c", "user.email=test@example.com", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def commit(root: Path, message: str) -> str:
    """Commit everything; the new commit as notes record it (12 hex digits)."""
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD")[:12]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A project in a git repository on branch `main` with one commit."""
    write_project(tmp_path, INSTALL)
    git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / ".gitignore").write_text(".annotate/\n")
    commit(tmp_path, "first")
    return tmp_path


def install(root: Path) -> Path:
    return root / "docs" / "guide" / "install.md"


# -- where the build comes from ----------------------------------------------------------------


def test_git_gives_the_branch_and_commit(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    assert build.current(repo, env={}) == Build("main", head[:12])
    # from a folder inside the repository too
    assert build.current(repo / "docs", env={}) == Build("main", head[:12])


def test_the_environment_wins_one_value_at_a_time(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")[:12]
    both = {build.ENV_BRANCH: "preview/pr-7", build.ENV_COMMIT: "ABCDEF0123456789ABCDEF"}
    assert build.current(repo, env=both) == Build("preview/pr-7", "abcdef012345")
    assert build.current(repo, env={build.ENV_BRANCH: "release"}) == Build("release", head)
    assert build.current(repo, env={build.ENV_COMMIT: "build-42"}) == Build("main", "build-42")


def test_a_detached_head_takes_the_branch_from_ci(repo: Path) -> None:
    git(repo, "checkout", "-q", "--detach")
    head = git(repo, "rev-parse", "HEAD")[:12]
    assert build.current(repo, env={}) == Build(None, head)
    # a GitHub pull request: GITHUB_HEAD_REF names the branch, GITHUB_REF_NAME is `7/merge`
    pull = {"GITHUB_HEAD_REF": "fix-typo", "GITHUB_REF_NAME": "7/merge"}
    assert build.current(repo, env=pull) == Build("fix-typo", head)
    assert build.current(repo, env={"CI_COMMIT_REF_NAME": "docs"}) == Build("docs", head)


def test_no_repository_and_no_git_give_no_build(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path.parent / (tmp_path.name + "-plain")
    outside.mkdir()
    assert build.current(outside, env={}) is None
    # no commit yet
    empty = tmp_path.parent / (tmp_path.name + "-empty")
    empty.mkdir()
    git(empty, "init", "-q")
    assert build.current(empty, env={}) is None
    # no git on PATH: the environment still counts
    monkeypatch.setenv("PATH", str(outside))
    assert build.current(repo, env={}) is None
    assert build.current(repo, env={build.ENV_BRANCH: "main"}) == Build("main", None)


def test_a_bad_build_name_is_refused(repo: Path) -> None:
    with pytest.raises(ValidationError, match="build branch must be at most 200 printable"):
        build.current(repo, env={build.ENV_BRANCH: "main\nx"})
    with pytest.raises(ValidationError, match="build commit must be at most 200"):
        build.make("main", "x" * 201)


def test_current_reads_again_after_a_while(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reader = build.Current(repo, env={})
    first = reader()
    install(repo).write_text(INSTALL + "\nMore.\n")
    second = commit(repo, "second")
    assert reader() == first  # within REREAD_S: what it read
    monkeypatch.setattr(build, "REREAD_S", 0.0)
    assert reader() == Build("main", second)


# -- notes record it ---------------------------------------------------------------------------


def app_client(store: Store) -> TestClient:
    return TestClient(
        create_app(store, token=TOKEN), base_url="http://127.0.0.1:8000", headers={
            "X-Annotate-Token": TOKEN}
    )  # fmt: skip


def test_notes_made_through_the_api_record_the_served_build(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    head = git(repo, "rev-parse", "HEAD")[:12]
    with annotate.open(repo) as store, app_client(store) as c:
        made = c.post(f"{API}/annotations", json=text_note()).json()
        assert made["build"] == {"branch": "main", "commit": head}
        # a client cannot claim another build: the key is the server's
        other = c.post(
            f"{API}/page-notes",
            json={"pageUrl": "/guide/install/", "note": "x", "build": {"branch": "evil"}},
        ).json()
        assert other["build"] == {"branch": "main", "commit": head}
        listed = c.get(f"{API}/annotations").json()["annotations"][0]
        assert listed["build"] == made["build"]
    # ANNOTATE_BUILD_* in the server's environment (a preview built in CI)
    monkeypatch.setenv(build.ENV_BRANCH, "preview")
    monkeypatch.setenv(build.ENV_COMMIT, "0" * 40)
    with annotate.open(repo) as store, app_client(store) as c:
        made = c.post(f"{API}/annotations", json=text_note()).json()
        assert made["build"] == {"branch": "preview", "commit": "0" * 12}


def test_the_library_records_a_build_only_when_given_one(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")[:12]
    with annotate.open(repo) as store:
        assert store.add_annotation(text_note()).build is None
        assert store.add_page_note({"pageUrl": "/", "note": "x"}).to_dict()["build"] is None
    with annotate.open(repo, build="auto") as store:
        assert store.add_annotation(text_note()).build == Build("main", head)
    with annotate.open(repo, build={"branch": "docs", "commit": None}) as store:
        note = store.add_page_note({"pageUrl": "/", "note": "x"})
        assert note.to_dict()["build"] == {"branch": "docs", "commit": None}
    with pytest.raises(ValidationError, match="build must be an object"):
        annotate.open(repo, build="main")  # type: ignore[arg-type]


# -- listing by branch ------------------------------------------------------------------------


@pytest.fixture
def branches(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """Notes made on `main`, on `feature` and on no build; their ids by branch."""
    write_project(tmp_path, INSTALL)
    ids: dict[str, str] = {}
    with annotate.open(tmp_path) as store:
        for name, made in (("main", "a" * 12), ("feature", "b" * 12), ("none", None)):
            store.build = None if made is None else Build(name, made)
            ids[name] = store.add_annotation(text_note(note=name)).id
            ids[name + "-page"] = store.add_page_note({"pageUrl": "/", "note": name}).id
    yield tmp_path, ids


def test_the_library_lists_one_branch(branches: tuple[Path, dict[str, str]]) -> None:
    root, ids = branches
    with annotate.open(root) as store:
        assert [a.id for a in store.list_annotations(branch="feature")] == [ids["feature"]]
        assert [n.id for n in store.list_page_notes(branch="main")] == [ids["main-page"]]
        listed = json.loads(store.list_annotations(branch="main", as_json=True))
        assert [a["id"] for a in listed] == [ids["main"]]
        assert store.list_annotations(branch="nope") == []
        assert len(store.list_annotations()) == 3
        with pytest.raises(ValidationError, match="branch must not be empty"):
            store.list_annotations(branch="")


def test_the_cli_lists_one_branch(branches: tuple[Path, dict[str, str]]) -> None:
    root, ids = branches
    runner = CliRunner()
    out = runner.invoke(cli, ["list", "--branch", "feature", "--json", "--project", str(root)])
    assert out.exit_code == 0, out.output
    assert [i["id"] for i in json.loads(out.stdout)] == [ids["feature"], ids["feature-page"]]
    assert json.loads(out.stdout)[0]["build"] == {"branch": "feature", "commit": "b" * 12}
    human = runner.invoke(cli, ["list", "--branch", "main", "--project", str(root)])
    assert "2 notes (status=open,in_progress,addressed, branch=main):" in human.stdout
    bad = runner.invoke(cli, ["list", "--branch", "", "--project", str(root)])
    assert bad.exit_code == 1 and bad.output == "Error: branch must not be empty\n"
    detail = runner.invoke(cli, ["get", ids["main"], "--project", str(root)])
    assert f"build: main @ {'a' * 12}\n" in detail.stdout


def test_the_api_lists_one_branch(branches: tuple[Path, dict[str, str]]) -> None:
    root, ids = branches
    with annotate.open(root) as store, app_client(store) as c:
        got = c.get(f"{API}/annotations", params={"branch": "feature"}).json()
        assert [a["id"] for a in got["annotations"]] == [ids["feature"]]
        got = c.get(f"{API}/page-notes", params={"branch": "feature"}).json()
        assert [n["id"] for n in got["pageNotes"]] == [ids["feature-page"]]
        bad = c.get(f"{API}/annotations", params={"branch": ""})
        assert bad.status_code == 400
        assert bad.json() == {"error": "branch must not be empty", "code": "invalid"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_the_mcp_tools_list_one_branch(branches: tuple[Path, dict[str, str]]) -> None:
    root, ids = branches
    async with Client(build_server(root)) as client:

        async def call(name: str, **args: Any) -> tuple[bool, str]:
            result = await client.call_tool(name, args)
            return bool(result.is_error), result.content[0].text  # type: ignore[union-attr]

        error, text = await call("list_annotations", branch="feature")
        assert not error and [a["id"] for a in json.loads(text)] == [ids["feature"]]
        assert json.loads(text)[0]["build"] == {"branch": "feature", "commit": "b" * 12}
        error, text = await call("list_page_notes", branch="main")
        assert not error and [n["id"] for n in json.loads(text)] == [ids["main-page"]]
        error, text = await call("list_annotations", branch="")
        assert error and text == "branch must not be empty"
        # without a build the key is left out, as every absent field is
        error, text = await call("list_annotations")
        assert "build" not in json.loads(text)[2]


# -- a newer build of the same branch ---------------------------------------------------------


def listed(root: Path, db: str | None = None) -> dict[str, Any]:
    """The one annotation as the web API lists it (SQLite's JSON), read by a store that serves
    the checkout's build; checked against the objects' own JSON."""
    with annotate.open(root, db=db, build="auto") as store:
        rows = json.loads(store.list_annotations(include_resolved=True, as_json=True))
        objects = [a.to_dict() for a in store.list_annotations(include_resolved=True)]
    assert rows == objects and len(rows) == 1
    row: dict[str, Any] = rows[0]
    return row


def test_a_newer_build_re_anchors_and_says_so(repo: Path, db_url: str | None) -> None:
    made = git(repo, "rev-parse", "HEAD")[:12]
    with annotate.open(repo, db=db_url, build="auto") as store:
        note = store.add_annotation(text_note())
    assert note.source is not None and note.source.line_start == QUOTE_LINE
    assert note.build == Build("main", made)
    # The branch moves on: a line inserted above the passage.
    install(repo).write_text(INSTALL.replace("Some words", "A new intro line.\n\nSome words"))
    newer = commit(repo, "intro")
    got = listed(repo, db_url)
    assert got["source"]["lineStart"] == QUOTE_LINE + 2
    assert got["anchorState"] == "anchored"
    assert got["build"] == {"branch": "main", "commit": made, "anchoredOn": newer}
    # A commit that leaves the page alone: located again all the same, and said.
    (repo / "docs" / "index.md").write_text("# Home\n")
    other = commit(repo, "home")
    got = listed(repo, db_url)
    assert got["source"]["lineStart"] == QUOTE_LINE + 2
    assert got["build"]["anchoredOn"] == other
    # The passage removed: flagged, never dropped, its last known lines kept.
    install(repo).write_text(INSTALL.replace("Run pip install mkdocs-annotate in a shell.\n", ""))
    gone = commit(repo, "remove")
    got = listed(repo, db_url)
    assert got["id"] == note.id
    assert got["anchorState"] == "stale" and got["source"]["lastKnown"] is True
    assert got["build"]["anchoredOn"] == gone


def test_the_build_it_was_made_on_says_nothing_more(repo: Path) -> None:
    with annotate.open(repo, build="auto") as store:
        store.add_annotation(text_note())
    assert "anchoredOn" not in listed(repo)["build"]
    # Back on the commit it was made on after a newer one: the mention goes.
    first = git(repo, "rev-parse", "HEAD")
    install(repo).write_text(INSTALL.replace("Some words", "Intro.\n\nSome words"))
    commit(repo, "intro")
    assert "anchoredOn" in listed(repo)["build"]
    git(repo, "checkout", "-q", first, "--", ".")
    git(repo, "checkout", "-q", "--detach", first)
    with annotate.open(repo, build={"branch": "main", "commit": first}) as store:
        got = store.list_annotations()[0]
    assert got.build is not None and got.build.anchored_on is None
    assert got.source is not None and got.source.line_start == QUOTE_LINE


def test_another_branch_is_not_a_newer_build(repo: Path) -> None:
    with annotate.open(repo, build="auto") as store:
        store.add_annotation(text_note())
    git(repo, "checkout", "-q", "-b", "feature")
    install(repo).write_text(INSTALL.replace("Some words", "Intro.\n\nSome words"))
    commit(repo, "intro on feature")
    got = listed(repo)
    # its Markdown is still followed (by mtime, as ever), but no build is claimed
    assert got["source"]["lineStart"] == QUOTE_LINE + 2
    assert got["build"] == {"branch": "main", "commit": got["build"]["commit"]}


def test_get_says_where_it_was_re_anchored(repo: Path) -> None:
    with annotate.open(repo, build="auto") as store:
        note = store.add_annotation(text_note())
    made = git(repo, "rev-parse", "HEAD")[:12]
    install(repo).write_text(INSTALL.replace("Some words", "Intro.\n\nSome words"))
    newer = commit(repo, "intro")
    out = CliRunner().invoke(cli, ["get", note.id, "--project", str(repo)])
    assert out.exit_code == 0, out.output
    assert f"build: main @ {made}, re-anchored on {newer}\n" in out.stdout
    assert f"source: docs/guide/install.md:{QUOTE_LINE + 2}\n" in out.stdout


# -- an old database ---------------------------------------------------------------------------


def test_a_database_from_before_builds_keeps_its_rows(tmp_path: Path) -> None:
    write_project(tmp_path, INSTALL)
    path = tmp_path / "old.db"
    db = sqlite_utils.Database(path)
    db.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TEXT)")
    # the last version without the build columns
    for version, migrate in enumerate(schema.MIGRATIONS[: BUILD_SINCE - 1], 1):
        migrate(db)
        db.execute("INSERT INTO schema_version VALUES (?, '2026-01-01T00:00:00Z')", [version])
    stamp = "2026-01-01T00:00:00.000Z"
    db["annotations"].insert(
        {"id": "a_0123456789", "type": "text", "page_url": "/guide/install/", "note": "old",
         "intent": "comment", "status": "open", "anchor_state": "anchored",
         "created_at": stamp, "updated_at": stamp, "quote_exact": "pip install mkdocs-annotate",
         "selected_text": "pip install mkdocs-annotate"}
    )  # fmt: skip
    db["page_notes"].insert(
        {"id": "p_0123456789", "page_url": "/", "note": "old page", "status": "open",
         "created_at": stamp, "updated_at": stamp}
    )  # fmt: skip
    db.conn.commit()
    db.conn.close()
    with Store(path, project_dir=tmp_path, build=Build("main", "c" * 12)) as store:
        assert store.schema_version == schema.LATEST >= BUILD_SINCE
        columns = {c.name for c in store.db["annotations"].columns}
        assert {"build_branch", "build_commit", "anchored_on"} <= columns
        assert {"build_branch", "build_commit"} <= {c.name for c in store.db["page_notes"].columns}
        (old,) = store.list_annotations()
        assert old.id == "a_0123456789" and old.note == "old" and old.build is None
        assert old.source is not None and old.source.line_start == QUOTE_LINE
        (page,) = store.list_page_notes()
        assert page.note == "old page" and page.to_dict()["build"] is None
        # new notes on the migrated file record the build
        assert store.add_annotation(text_note()).build == Build("main", "c" * 12)
        assert len(store.list_annotations(branch="main")) == 1


def test_an_export_imported_elsewhere_keeps_the_build(repo: Path, tmp_path_factory: Any) -> None:
    with annotate.open(repo, build="auto") as store:
        note = store.add_annotation(text_note())
        store.add_page_note({"pageUrl": "/", "note": "x"})
    install(repo).write_text(INSTALL.replace("Some words", "Intro.\n\nSome words"))
    commit(repo, "intro")
    exported = json.loads(
        CliRunner().invoke(cli, ["export", "--format", "json", "--project", str(repo)]).stdout
    )
    other = write_project(tmp_path_factory.mktemp("other"), INSTALL)
    with annotate.open(other) as store:
        importing.import_data(store, exported)
        got = store.get_annotation(note.id).to_dict()["build"]
        assert got == exported["annotations"][0]["build"] and "anchoredOn" in got
        assert store.list_page_notes()[0].to_dict()["build"] == exported["pageNotes"][0]["build"]
    with annotate.open(other) as store, pytest.raises(ValidationError, match="build must be"):
        importing.import_data(store, {**exported, "annotations": [
            {**exported["annotations"][0], "id": "a_ffffffffff", "build": "main"}]})  # fmt: skip


@pytest.mark.anyio
async def test_agents_see_a_build_only_when_it_is_not_theirs(repo: Path) -> None:
    with annotate.open(repo, build="auto") as store:
        note = store.add_annotation(text_note())
    made = note.build
    assert made is not None

    async def listed_by_the_tool() -> dict[str, Any]:
        async with Client(build_server(repo)) as client:
            result = await client.call_tool("list_annotations", {})
            got: dict[str, Any] = json.loads(result.content[0].text)[0]  # type: ignore[union-attr]
            return got

    # Made on the build the agent reads: nothing to say, no bytes spent.
    assert "build" not in await listed_by_the_tool()
    cli_json = CliRunner().invoke(cli, ["list", "--json", "--project", str(repo)]).stdout
    assert "build" not in json.loads(cli_json)[0]
    # The agent's checkout moves on: the note says where it was made and where it was found.
    install(repo).write_text(INSTALL.replace("Some words", "Intro.\n\nSome words"))
    newer = commit(repo, "intro")
    got = await listed_by_the_tool()
    assert got["build"] == {"branch": "main", "commit": made.commit, "anchoredOn": newer}
    assert got["source"]["lineStart"] == QUOTE_LINE + 2


def test_annotate_serve_records_the_build_of_its_environment(repo: Path) -> None:
    """`annotate serve` for real (a subprocess), as a CI preview runs it: ANNOTATE_BUILD_* win
    over the checkout's git."""
    site = repo / "site" / "guide"
    site.mkdir(parents=True)
    (site / "index.html").write_text("<html><body><p>Run pip install it.</p></body></html>")
    env = {**os.environ, "PYTHONUNBUFFERED": "1", build.ENV_BRANCH: "pr-12",
           build.ENV_COMMIT: "FEEDFACE" * 5}  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "annotate.cli", "serve", str(repo / "site"), "--port", "0",
         "--project", str(repo)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        line = _first_line(proc, 20)
        match = re.search(r"http://\S+?/", line)
        assert match, line
        server = Server(proc, match[0], repo)
        status, _, body = server.request("POST", f"{API}/annotations", text_note())
        assert status == 201, body
        assert json.loads(body)["build"] == {"branch": "pr-12", "commit": "feedfacefeed"}
        status, _, body = server.request("GET", f"{API}/annotations?branch=pr-12")
        assert [a["build"]["branch"] for a in json.loads(body)["annotations"]] == ["pr-12"]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(10)
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]


# -- the summary of one branch ------------------------------------------------------------------


def test_the_library_summarises_one_branch(store: Store) -> None:
    """Counts, anchors, pages and waiting reviews of the notes made on one branch, on both
    backends, with the listing's filter (its check included)."""
    store.build = Build("main", "a" * 12)
    main = store.add_annotation(text_note())
    store.add_page_note({"pageUrl": "/", "note": "main page"})
    store.build = Build("feature", "b" * 12)
    feature = store.add_annotation(text_note(pageUrl="/feature/"))
    done = store.add_page_note({"pageUrl": "/feature/", "note": "feature page"})
    store.accept(done.id)
    store.build = None
    store.add_annotation(text_note(pageUrl="/none/"))
    # A review of the feature note only, and one of the main note only, both waiting.
    store.create_review({"mode": "edit", "ids": [feature.id]})
    store.create_review({"mode": "edit", "ids": [main.id]})

    everything = store.summary()
    assert everything.annotations["open"] == 3 and everything.pages == 4
    assert everything.pending_reviews == 2
    assert store.summary(branch=None) == everything

    s = store.summary(branch="feature")
    assert s.annotations == {"open": 1, "in_progress": 0, "addressed": 0, "resolved": 0}
    assert s.page_notes == {"open": 0, "in_progress": 0, "addressed": 0, "resolved": 1}
    assert sum(s.anchor_states.values()) == 1
    assert s.pages == 1  # the resolved page note's page is not waiting
    assert s.pending_reviews == 1
    m = store.summary(branch="main")
    assert m.annotations["open"] == 1 and m.page_notes["open"] == 1
    assert m.pages == 2 and m.pending_reviews == 1
    nothing = store.summary(branch="nope")
    assert nothing.open_items == 0 and nothing.pages == 0 and nothing.pending_reviews == 0
    with pytest.raises(ValidationError, match="branch must not be empty"):
        store.summary(branch="")
    with pytest.raises(ValidationError, match="branch must be at most 200 characters"):
        store.summary(branch="x" * 201)


def test_the_cli_api_and_mcp_summarise_one_branch(branches: tuple[Path, dict[str, str]]) -> None:
    root, _ = branches
    with annotate.open(root) as store:
        feature = store.summary(branch="feature").to_dict()
    assert feature["annotations"]["open"] == 1 and feature["pageNotes"]["open"] == 1
    runner = CliRunner()
    out = runner.invoke(cli, ["summary", "--branch", "feature", "--json", "--project", str(root)])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout) == feature
    human = runner.invoke(cli, ["summary", "--branch", "feature", "--project", str(root)])
    assert human.stdout.startswith(
        "2 items waiting for the agent on 2 pages (notes made on branch feature).\n"
    )
    bad = runner.invoke(cli, ["summary", "--branch", "", "--project", str(root)])
    assert bad.exit_code == 1 and bad.output == "Error: branch must not be empty\n"
    with annotate.open(root) as store, app_client(store) as c:
        assert c.get(f"{API}/summary", params={"branch": "feature"}).json() == feature
        assert c.get(f"{API}/summary").json()["annotations"]["open"] == 3
        bad_api = c.get(f"{API}/summary", params={"branch": ""})
        assert bad_api.status_code == 400
        assert bad_api.json() == {"error": "branch must not be empty", "code": "invalid"}
        assert c.get(f"{API}/summary", params={"brnach": "feature"}).status_code == 400


@pytest.mark.anyio
async def test_the_mcp_summary_counts_one_branch(branches: tuple[Path, dict[str, str]]) -> None:
    root, _ = branches
    async with Client(build_server(root)) as client:
        result = await client.call_tool("summary", {"branch": "main"})
        counts = json.loads(result.content[0].text)  # type: ignore[union-attr]
        assert not result.is_error
        assert counts["annotations"]["open"] == 1 and counts["openItems"] == 2
        result = await client.call_tool("summary", {})
        assert json.loads(result.content[0].text)["openItems"] == 6  # type: ignore[union-attr]
        result = await client.call_tool("summary", {"branch": ""})
        assert result.is_error
        assert result.content[0].text == "branch must not be empty"  # type: ignore[union-attr]


# -- the build a note was made on, in the Markdown export and on the review page ---------------


def _build_lines(markdown: str) -> list[str]:
    lines = (line.strip() for line in markdown.splitlines())
    return [line for line in lines if line.startswith(("Build: ", "Current build: "))]


def test_the_export_names_a_build_only_where_it_tells_something(store: Store) -> None:
    """On both backends (SQLite writes the export from rows, PostgreSQL from objects)."""
    main, other = Build("main", "a" * 12), Build("feature", "b" * 12)
    store.build = main
    store.add_annotation(text_note(note="on main"))
    store.add_page_note({"pageUrl": "/guide/install/", "note": "page on main"})
    store.build = None
    store.add_annotation(text_note(note="on no build"))
    # Every note on the current build (or none): not a word about builds.
    store.build = main
    assert _build_lines(export.render(store, "markdown")) == []
    # No current build and the notes from one build: nothing to tell them apart by.
    store.build = None
    assert _build_lines(export.render(store, "markdown")) == []
    # Read on another build: the notes made on main name it, once each; the current is named.
    store.build = other
    assert _build_lines(export.render(store, "markdown")) == [
        f"Current build: `feature@{'b' * 12}`; a note made on another build names it.",
        f"Build: `main@{'a' * 12}`",
        f"Build: `main@{'a' * 12}`",
    ]
    # Notes from two builds and no current one: each note names its own.
    store.add_annotation(text_note(note="on feature"))
    store.build = None
    text = export.render(store, "markdown")
    assert _build_lines(text) == [
        f"Build: `main@{'a' * 12}`",
        f"Build: `main@{'a' * 12}`",
        f"Build: `feature@{'b' * 12}`",
    ]
    # The line sits under its note's head line, before the note.
    assert f"(id: `{store.list_annotations()[-1].id}`)\n   Build: `feature@" in text
    # Read on main: only the feature note names its build.
    store.build = main
    assert _build_lines(export.render(store, "markdown"))[1:] == [f"Build: `feature@{'b' * 12}`"]


def test_one_build_for_every_note_is_named_once(store: Store) -> None:
    """The agent's checkout moved on from the build every note was made on: one line, not one
    a note."""
    store.build = Build("main", "a" * 12)
    for n in range(3):
        store.add_annotation(text_note(note=f"note {n}"))
    store.add_page_note({"pageUrl": "/", "note": "page"})
    store.build = Build("main", "c" * 12)
    text = export.render(store, "markdown")
    assert _build_lines(text) == [
        f"Build: every note was made on `main@{'a' * 12}`; the current build is `main@{'c' * 12}`."
    ]
    assert text.splitlines()[2] == _build_lines(text)[0]  # under the date


def test_a_build_name_cannot_break_the_export_or_the_review_page(tmp_path: Path) -> None:
    write_project(tmp_path, INSTALL)
    hostile = "x`](http://evil)<script>alert(1)</script>"
    with annotate.open(tmp_path, build={"branch": hostile, "commit": None}) as store:
        store.add_annotation(text_note())
        store.add_page_note({"pageUrl": "/guide/install/", "note": "Too long."})
        store.build = Build("main", "c" * 12)
        once = export.render(store, "markdown")  # every note on the hostile build
        assert f"Build: every note was made on ``{hostile}@?``; the current build is" in once
        with app_client(store) as c:
            page = c.get("/__annotate/").text
        assert "<script>" not in page
        assert "Every note was made on build <code>x`](http://evil)&lt;script&gt;" in page
        store.build = None
        store.add_annotation(text_note(note="made on no build"))
        store.build = Build("main", "c" * 12)
        text = export.render(store, "markdown")
        assert f"\n   Build: ``{hostile}@?``\n" in text  # the annotation's
        assert f"\n  Build: ``{hostile}@?``\n" in text  # the page note's
        with app_client(store) as c:
            page = c.get("/__annotate/").text
    assert "<script>" not in page
    shown = "x`](http://evil)&lt;script&gt;alert(1)&lt;/script&gt;@?"
    assert page.count(f"built <code>{shown}</code>") == 2
    assert f"Serving build <code>main@{'c' * 12}</code>" in page


def test_the_review_page_names_a_build_only_where_it_tells_something(
    branches: tuple[Path, dict[str, str]],
) -> None:
    root, _ = branches
    with annotate.open(root, build={"branch": "main", "commit": "a" * 12}) as store:
        with app_client(store) as c:
            page = c.get("/__annotate/").text
        # The feature notes name their build; main's are the served one's; none have none.
        assert page.count("built <code>") == 2
        assert page.count(f"built <code>feature@{'b' * 12}</code>") == 2
        assert f"Serving build <code>main@{'a' * 12}</code>" in page
        store.build = Build("main", "a" * 12)
        for note in (*store.list_annotations(), *store.list_page_notes()):
            if note.build is not None and note.build.branch == "feature":
                store.delete(note.id)
        with app_client(store) as c:
            page = c.get("/__annotate/").text
    assert "built <code>" not in page and "Serving build" not in page

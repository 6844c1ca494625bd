"""The agent's side of the loop (issue #14), point by point: through the library, the CLI
(CliRunner), the MCP server (the SDK's client, in memory) and the REST API (TestClient).

Each section names the point of the issue it covers.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from mcp import Client
from starlette.testclient import TestClient

import annotate
from annotate import schema
from annotate.cli import cli
from annotate.compose import build_server
from annotate.context import get_context
from annotate.diff import word_diff
from annotate.export import render
from annotate.importing import import_data
from annotate.models import lean
from annotate.web import create_app

from .conftest import element_note, text_note, write_project

TOKEN = "test-token-0123456789abcdef"
API = "/__annotate/api"
INSTALL_MD = """\
# Install

Some words first.

Run pip install mkdocs-annotate in a shell.

This paragraph is innocent.

## Next

Then add the plugin to mkdocs.yml and run mkdocs serve.
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write_project(tmp_path, INSTALL_MD)
    (tmp_path / "docs" / "index.md").write_text("# Home\n\nWelcome to the docs.\n")
    return tmp_path


@pytest.fixture
def store(project: Path) -> Iterator[annotate.Store]:
    s = annotate.open(project)
    yield s
    s.close()


@pytest.fixture
def client(store: annotate.Store) -> Iterator[TestClient]:
    app = create_app(store, token=TOKEN, changes_timeout=0.5, poll_interval=0.05)
    with TestClient(
        app, base_url="http://127.0.0.1:8000", headers={"X-Annotate-Token": TOKEN}
    ) as c:
        yield c


def cli_run(*args: str, code: int = 0) -> Any:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == code, result.output
    return result


async def mcp_call(project: Path | None, name: str, **args: Any) -> tuple[bool, list[str]]:
    async with Client(build_server(project)) as c:
        result = await c.call_tool(name, args)
        return bool(result.is_error), [block.text for block in result.content]  # type: ignore[union-attr]


async def mcp_ok(project: Path, name: str, **args: Any) -> Any:
    is_error, texts = await mcp_call(project, name, **args)
    assert not is_error, texts
    return json.loads(texts[0])


# -- 1. finding the project ------------------------------------------------------------------


def test_project_is_found_upwards(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with annotate.open(project) as s:
        s.add_annotation(text_note())
    monkeypatch.chdir(project / "docs" / "guide")
    assert annotate.project.find_project() == project.resolve()
    with annotate.open() as s:
        assert s.path == project.resolve() / ".annotate" / "annotations.db"
    out = cli_run("summary").output
    assert out.startswith("1 item waiting for the agent on 1 page.")
    # A folder named with --project is searched upwards too, as `git -C` does.
    assert cli_run("list", "--json", "--project", str(project / "docs")).output.count('"id"') == 1
    for name in ("mkdocs.yaml", "properdocs.yml", "zensical.toml"):
        other = project.parent / f"other-{name}"
        (other / "docs").mkdir(parents=True)
        (other / name).write_text("")
        assert annotate.project.find_project(other / "docs") == other.resolve()
    # Nothing is ever created inside docs_dir.
    assert not (project / "docs" / ".annotate").exists()
    assert not (project / "docs" / "guide" / ".annotate").exists()


def test_no_project_is_one_line_never_an_empty_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lost = tmp_path / "somewhere"
    lost.mkdir()
    monkeypatch.chdir(lost)
    message = (
        f"No documentation project in {lost} or any folder above it (looked for "
        f"{', '.join(annotate.config.CONFIG_FILES)}): run this in the project, or name it with "
        "--project PATH"
    )
    with pytest.raises(annotate.ProjectNotFound) as raised:
        annotate.open()
    assert str(raised.value) == message
    for args in (["summary"], ["list", "--json"], ["token"], ["setup"]):
        result = cli_run(*args, code=1)
        assert (result.stdout, result.stderr) == ("", f"Error: {message}\n"), args
    assert not (lost / ".annotate").exists()


@pytest.mark.anyio
async def test_mcp_without_a_project_answers_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    is_error, texts = await mcp_call(None, "list_annotations")
    assert is_error and texts[0].startswith(f"No documentation project in {tmp_path} ")
    assert "--project" in texts[0]
    assert not (tmp_path / ".annotate").exists()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# -- 2. page URLs ------------------------------------------------------------------------------

FORMS = (
    "/guide/install",
    "guide/install/",
    "/guide/install/index.html",
    "http://127.0.0.1:8000/guide/install/",
    "/guide/install/#next",
)


def test_page_urls_are_normalised(store: annotate.Store) -> None:
    a = store.add_annotation(text_note())
    n = store.add_page_note({"pageUrl": "/guide/install/index.html", "note": "Whole page"})
    assert n.page_url == "/guide/install/"
    for form in FORMS:
        assert store.page_url(form) == "/guide/install/", form
        assert [x.id for x in store.list_annotations(form)] == [a.id], form
        assert [x.id for x in store.list_page_notes(form)] == [n.id], form
    # No page known: the path itself, a folder URL with its slash.
    assert store.page_url("elsewhere") == "/elsewhere/"
    assert store.page_url("/old/page.html") == "/old/page.html"
    with pytest.raises(annotate.ValidationError, match=r"\.\."):
        store.page_url("/guide/../secret/")


def test_index_html_pages_keep_their_url(store: annotate.Store) -> None:
    # use_directory_urls: false: MkDocs links to /guide/index.html, which the overlay then sends;
    # the plugin registers both forms of the page.
    store.register_pages(
        {"/guide/index.html": "docs/guide/index.md", "/guide/": "docs/guide/index.md"}
    )
    a = store.add_annotation(text_note(pageUrl="/guide/index.html"))
    assert a.page_url == "/guide/index.html"  # the overlay's location.pathname, unchanged
    for form in ("/guide/", "/guide", "guide/index.html", "http://127.0.0.1:8000/guide/"):
        assert [x.id for x in store.list_annotations(form)] == [a.id], form
    # The page's notes stay under one URL, whichever form a later note comes with.
    assert store.add_page_note({"pageUrl": "/guide/", "note": "x"}).page_url == "/guide/index.html"
    # Nothing known: the address as written.
    assert store.page_url("/other/index.html") == "/other/index.html"


def test_site_url_sub_path(tmp_path: Path) -> None:
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: t\nsite_url: https://example.com/sub/  # served under /sub/\n"
    )
    with annotate.open(tmp_path) as s:
        # The overlay sends the path the page is served at: kept as it is.
        a = s.add_annotation(text_note(pageUrl="/sub/getting-started/"))
        assert a.page_url == "/sub/getting-started/"
        for form in (
            "/getting-started",
            "getting-started/",
            "/getting-started/index.html",
            "http://127.0.0.1:8000/getting-started/",
            "http://127.0.0.1:8000/sub/getting-started/",
            "/sub/getting-started",
        ):
            assert [x.id for x in s.list_annotations(form)] == [a.id], form
        # The plugin's page record settles a page with no notes yet.
        s.register_pages({"/sub/other/": "docs/other.md"})
        assert s.page_url("/other") == "/sub/other/"


def test_a_page_with_no_notes_names_the_closest(store: annotate.Store) -> None:
    store.add_annotation(text_note())
    store.add_annotation(text_note(pageUrl="/guide/configure/"))
    store.add_page_note({"pageUrl": "/", "note": "x"})
    assert store.page_hint("/guide/install") is None
    assert store.page_hint("/guide/instal/") == (
        "No notes on page /guide/instal/. Pages with notes closest to it: /guide/install/, "
        "/guide/configure/, /."
    )


@pytest.mark.anyio
async def test_page_urls_through_mcp(project: Path, store: annotate.Store) -> None:
    a = store.add_annotation(text_note())
    n = store.add_page_note({"pageUrl": "/guide/install/", "note": "Whole page"})
    for form in FORMS:
        assert [x["id"] for x in await mcp_ok(project, "list_annotations", pageUrl=form)] == [a.id]
        assert [x["id"] for x in await mcp_ok(project, "list_page_notes", pageUrl=form)] == [n.id]
    is_error, texts = await mcp_call(project, "list_page_notes", pageUrl="/guide/instal")
    assert not is_error and json.loads(texts[0]) == []
    assert texts[1].startswith("No notes on page /guide/instal/. Pages with notes closest")


def test_page_urls_through_rest(client: TestClient, store: annotate.Store) -> None:
    a = store.add_annotation(text_note())
    for form in FORMS:
        r = client.get(f"{API}/annotations", params={"page": form})
        assert [x["id"] for x in r.json()["annotations"]] == [a.id], form
    r = client.post(f"{API}/annotations", json=text_note(pageUrl="/guide/install/index.html"))
    assert r.json()["pageUrl"] == "/guide/install/"


# -- 3. deletions ------------------------------------------------------------------------------


def test_deleted_text_is_removed_and_left_be(project: Path, store: annotate.Store) -> None:
    a = store.add_annotation(
        text_note(intent="delete", note="", selectedText="Some words first.", quote=None)
    )
    assert a.source is not None and a.source.line_start == 3
    store.create_review({"mode": "edit"})
    md = project / "docs" / "guide" / "install.md"
    md.write_text(INSTALL_MD.replace("Some words first.\n\n", ""))  # the agent deletes it
    done = store.address_annotation(a.id, deleted=True, message="Deleted the sentence.")
    assert (done.status, done.anchor_state, done.anchor_score) == ("addressed", "removed", None)
    assert done.replies[-1].message == "Deleted the sentence."
    assert done.to_dict()["anchorState"] == "removed"
    # Re-anchoring leaves it be, through later edits too.
    md.write_text(md.read_text() + "\nMore.\n")
    assert store.reconcile(force=True) == 0
    assert store.get_annotation(a.id).anchor_state == "removed"
    assert store.text_selector_rows("/guide/install/") == []
    # Never in a later review unless reopened.
    other = store.add_annotation(text_note())
    assert [x.id for x in store.create_review({"mode": "edit"}).annotations] == [other.id]
    # Its context marks no line: the lines there now are innocent.
    context = get_context(store, a.id, 1)
    assert context.line_start is None and ">" not in context.numbered()
    assert "deleted as the note asked (removed)" in (context.warning or "")
    assert store.summary().anchor_states["removed"] == 1
    # Reopened (not deleted after all): located again.
    md.write_text(INSTALL_MD)
    assert store.reopen(a.id).anchor_state == "stale"  # until the next read locates it
    again = store.get_annotation(a.id)
    assert again.anchor_state == "anchored" and again.source.line_start == 3  # type: ignore[union-attr]


def test_deleted_refusals(store: annotate.Store) -> None:
    a = store.add_annotation(text_note())
    n = store.add_page_note({"pageUrl": "/", "note": "x"})
    with pytest.raises(annotate.ValidationError, match="exclude each other"):
        store.address_annotation(a.id, "new text", deleted=True)
    with pytest.raises(annotate.ValidationError, match="page note"):
        store.address_annotation(n.id, deleted=True)
    with pytest.raises(annotate.ValidationError, match="true or false"):
        store.address_annotation(a.id, deleted="yes")  # type: ignore[arg-type]
    assert store.get_annotation(a.id).status == "open"


def test_deleted_through_the_surfaces(
    project: Path, store: annotate.Store, client: TestClient
) -> None:
    ids = [store.add_annotation(element_note(intent="delete", note="")).id for _ in range(3)]
    out = cli_run("address", ids[0], "--deleted", "--json", "--project", str(project)).output
    assert json.loads(out)["anchorState"] == "removed"
    r = client.post(
        f"{API}/annotations/{ids[1]}/status", json={"action": "address", "deleted": True}
    )
    assert r.status_code == 200 and r.json()["anchorState"] == "removed"
    r = client.post(f"{API}/annotations/{ids[1]}/status", json={"action": "start", "deleted": True})
    assert r.status_code == 400 and r.json()["error"] == (
        "deleted is only used with action 'address'"
    )
    listed = client.get(f"{API}/annotations", params={"anchorState": "removed"}).json()
    assert [x["id"] for x in listed["annotations"]] == ids[:2]


@pytest.mark.anyio
async def test_deleted_through_mcp(project: Path, store: annotate.Store) -> None:
    a = store.add_annotation(element_note(intent="delete", note=""))
    got = await mcp_ok(project, "address_annotation", id=a.id, deleted=True)
    assert (got["status"], got["anchorState"]) == ("addressed", "removed")


# -- 5. reviews hold only work, compactly ------------------------------------------------------


def test_a_batch_holds_only_open_notes(store: annotate.Store) -> None:
    work = store.add_annotation(text_note())
    started = store.add_annotation(text_note())
    addressed = store.add_annotation(text_note())
    resolved = store.add_annotation(text_note())
    page = store.add_page_note({"pageUrl": "/", "note": "x"})
    store.set_in_progress(started.id)
    store.address_annotation(addressed.id)
    store.accept(resolved.id)
    review = store.create_review({"mode": "edit"})
    assert [a.id for a in review.annotations] == [work.id]
    assert [n.id for n in review.page_notes] == [page.id]


def test_a_review_answer_is_compact(store: annotate.Store) -> None:
    long = "word " * 2_000
    store.add_annotation(text_note(note=long, intent="replace", suggestion=long))
    store.add_annotation(element_note())
    store.add_page_note({"pageUrl": "/guide/install/", "note": "Split this page."})
    review = store.create_review({"mode": "edit"})
    brief = review.brief()
    text, element, page = brief["notes"]
    assert set(text) == {"id", "kind", "intent", "note", "suggestion", "at", "quote", "truncated"}
    assert text["note"].endswith("…") and len(text["note"]) == 300
    assert element["kind"] == "element" and element["element"] == "Screenshot of the review panel"
    assert page == {"id": page["id"], "kind": "page", "note": "Split this page.",
                    "at": "docs/guide/install.md", "page": "/guide/install/"}  # fmt: skip
    # Under about 150 tokens a note (4 characters a token), a long note included.
    for note in brief["notes"]:
        assert len(json.dumps(note, ensure_ascii=False)) / 4 < 200, note
    typical = json.dumps(element, ensure_ascii=False)
    assert len(typical) / 4 < 60


def test_a_suggestion_keeps_its_spaces_in_the_compact_answer(store: annotate.Store) -> None:
    # An insertion's leading space is part of the text to put in the page.
    note = store.add_annotation(text_note(intent="insert", suggestion=" or  pipx"))
    brief = store.create_review({"mode": "edit"}).brief()
    assert [n["suggestion"] for n in brief["notes"] if n["id"] == note.id] == [" or  pipx"]


def test_a_long_review_is_paged(store: annotate.Store) -> None:
    long = "word " * 60
    for _ in range(250):
        store.add_annotation(text_note(note=long, intent="replace", suggestion=long))
    review = store.create_review({"mode": "edit"})
    offset, seen, pages = 0, [], 0
    while True:
        page = store.get_review(review.id).brief(offset)
        # No answer exceeds about 20k tokens.
        assert len(json.dumps(page, ensure_ascii=False)) < 80_000
        seen += [n["id"] for n in page["notes"]]
        pages += 1
        if "next" not in page:
            break
        offset = page["next"]
    assert seen == [a.id for a in review.annotations] and pages >= 3


@pytest.mark.anyio
async def test_get_review_pages_through_mcp(project: Path, store: annotate.Store) -> None:
    for _ in range(120):
        store.add_annotation(text_note())
    review = store.create_review({"mode": "edit"})
    first = await mcp_ok(project, "get_review", id=review.id)
    assert (len(first["notes"]), first["total"], first["next"]) == (100, 120, 100)
    second = await mcp_ok(project, "get_review", id=review.id, offset=100)
    assert len(second["notes"]) == 20 and "next" not in second and second["offset"] == 100


# -- 6. lean answers ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_answers_are_lean(project: Path, store: annotate.Store) -> None:
    a = store.add_annotation(element_note())
    got = await mcp_ok(project, "get_annotation", id=a.id)
    assert None not in got.values() and [] not in got.values()
    assert not {"source", "replies", "suggestion", "addressedAt", "author"} & set(got)
    # The write tools still return the updated annotation, lean.
    replied = await mcp_ok(project, "add_agent_reply", id=a.id, message="Looking")
    assert replied["replies"][0] == {
        "id": replied["replies"][0]["id"],
        "role": "agent",
        "message": "Looking",
        "createdAt": replied["replies"][0]["createdAt"],
    }
    # The web API keeps every key for the overlay.
    assert store.get_annotation(a.id).to_dict()["source"] is None
    assert lean({"a": None, "b": [], "c": {"d": None}, "e": 0, "f": ""}) == {"e": 0, "f": ""}
    # originalSource only once it differs from source: until then it repeats it.
    t = store.add_annotation(text_note())
    got = await mcp_ok(project, "get_annotation", id=t.id)
    assert got["source"]["lineStart"] == 5 and "originalSource" not in got
    md = project / "docs" / "guide" / "install.md"
    md.write_text(INSTALL_MD.replace("Run pip install", "Run pipx install"))
    done = await mcp_ok(project, "address_annotation", id=t.id, replacedText="pipx install")
    assert done["originalSource"]["excerpt"] == "Run pip install mkdocs-annotate in a shell."


# -- 7. address with a message -----------------------------------------------------------------


def test_address_with_a_message_is_one_transaction(store: annotate.Store) -> None:
    a = store.add_annotation(text_note())
    _, cursor = store.changes()
    done = store.address_annotation(a.id, message="Switched to pipx.")
    assert done.status == "addressed"
    assert [(r.role, r.message) for r in done.replies] == [("agent", "Switched to pipx.")]
    events, _ = store.changes(cursor)
    assert [e["action"] for e in events] == ["addressed"]  # one change: reply and badge together
    # A bad message changes nothing.
    b = store.add_annotation(text_note())
    with pytest.raises(annotate.EmptyReply):
        store.address_annotation(b.id, message="  ")
    assert store.get_annotation(b.id).status == "open" and store.get_annotation(b.id).replies == ()


def test_address_with_a_message_through_the_surfaces(
    project: Path, store: annotate.Store, client: TestClient
) -> None:
    a, b = store.add_annotation(text_note()), store.add_annotation(text_note())
    out = cli_run("address", a.id, "-m", "Done.", "--project", str(project)).output
    assert out == f"Addressed {a.id} (status: addressed)\n"
    assert store.get_annotation(a.id).replies[0].message == "Done."
    r = client.post(f"{API}/annotations/{b.id}/status", json={"action": "address", "message": "Ok"})
    assert r.json()["replies"][0]["message"] == "Ok" and r.json()["status"] == "addressed"


@pytest.mark.anyio
async def test_address_with_a_message_through_mcp(project: Path, store: annotate.Store) -> None:
    a = store.add_annotation(text_note())
    got = await mcp_ok(project, "address_annotation", id=a.id, message="Done.")
    assert got["status"] == "addressed" and got["replies"][0]["message"] == "Done."
    is_error, texts = await mcp_call(project, "address_annotation", id=a.id, message=" ")
    assert is_error and texts == ["Reply message must not be empty"]


# -- 8. page notes point at their file ---------------------------------------------------------


def test_page_notes_carry_their_source(project: Path, store: annotate.Store) -> None:
    n = store.add_page_note({"pageUrl": "/guide/install/", "note": "Split this page."})
    unknown = store.add_page_note({"pageUrl": "/nowhere/", "note": "x"})
    assert n.to_dict()["source"] == {"path": "docs/guide/install.md"}
    assert unknown.source is None
    out = cli_run("list", "--project", str(project)).output
    assert f"[{n.id}] /guide/install/ docs/guide/install.md (page note, status=open)" in out
    listed = json.loads(cli_run("list", "--json", "--project", str(project)).output)
    assert [x["id"] for x in listed] == [n.id, unknown.id]
    assert "source" not in listed[1]


# -- 10. a Reopen reaches a waiting agent; done reviews ----------------------------------------


def test_a_reopen_with_a_follow_up_goes_back_at_once(store: annotate.Store) -> None:
    a, b = store.add_annotation(text_note()), store.add_annotation(text_note())
    sent = store.create_review({"mode": "review"})
    assert store.claim_review().id == sent.id  # type: ignore[union-attr]
    store.address_annotation(a.id)
    _, cursor = store.changes()
    store.address_annotation(b.id)
    assert store.get_review(sent.id).status == "done"
    events, _ = store.changes(cursor)
    assert ("review", sent.id, "done") in [(e["kind"], e["id"], e["action"]) for e in events]
    store.reopen(a.id, "Not quite: say why.")
    back = store.wait_for_review(0)
    assert back is not None and back.mode == "review"  # the mode of the review it came from
    assert [x.id for x in back.annotations] == [a.id]
    assert back.brief()["notes"][0]["followUp"] == "Not quite: say why."
    # Without a follow-up, it waits for the next Send to agent.
    store.address_annotation(b.id)
    store.reopen(b.id)
    assert store.wait_for_review(0) is None
    assert store.get_review(sent.id).status == "done"


@pytest.mark.anyio
async def test_a_reopen_wakes_wait_for_review(project: Path, store: annotate.Store) -> None:
    a = store.add_annotation(text_note())
    store.create_review({"mode": "edit"})
    assert (await mcp_ok(project, "wait_for_review", timeout_s=0))["review"] is not None
    store.address_annotation(a.id)
    store.reopen(a.id, "Also mention uv.")
    got = await mcp_ok(project, "wait_for_review", timeout_s=0)
    assert got["review"]["mode"] == "edit"
    assert [(n["id"], n["followUp"]) for n in got["review"]["notes"]] == [
        (a.id, "Also mention uv.")
    ]
    assert got["instructions"].startswith("Edit mode:")


def test_review_status_through_rest(client: TestClient, store: annotate.Store) -> None:
    a = store.add_annotation(text_note())
    review = client.post(f"{API}/reviews", json={"mode": "edit"}).json()
    assert review["status"] == "pending" and review["doneAt"] is None
    client.post(f"{API}/annotations/{a.id}/status", json={"action": "address"})
    got = client.get(f"{API}/reviews/{review['id']}").json()
    assert got["status"] == "done" and got["doneAt"] is not None
    # Set back in progress for rework: not done any more.
    client.post(f"{API}/annotations/{a.id}/status", json={"action": "start"})
    assert client.get(f"{API}/reviews/{review['id']}").json()["status"] == "pending"


# -- 11. reviews of chosen notes ---------------------------------------------------------------


def test_a_review_of_chosen_notes_leaves_the_batch(store: annotate.Store) -> None:
    a, b = store.add_annotation(text_note()), store.add_annotation(text_note())
    n = store.add_page_note({"pageUrl": "/", "note": "x"})
    asked = store.create_review({"mode": "review", "ids": [b.id, n.id, b.id]})
    assert [x.id for x in asked.annotations] == [b.id] and [x.id for x in asked.page_notes] == [
        n.id
    ]
    assert [x.id for x in store.create_review({"mode": "edit"}).annotations] == [a.id]
    with pytest.raises(annotate.AnnotationNotFound):
        store.create_review({"ids": ["a_nope"]})
    store.accept(a.id)
    with pytest.raises(annotate.InvalidTransition, match="is resolved; reopen it first"):
        store.create_review({"ids": [a.id]})
    with pytest.raises(annotate.ValidationError, match="non-empty list"):
        store.create_review({"ids": []})
    assert len(store.list_reviews()) == 2  # the refused ones left nothing behind


def test_chosen_notes_through_rest_and_cli(
    project: Path, store: annotate.Store, client: TestClient
) -> None:
    a, b = store.add_annotation(text_note()), store.add_annotation(text_note())
    r = client.post(f"{API}/reviews", json={"mode": "review", "ids": [a.id]})
    assert r.status_code == 201
    assert [x["id"] for x in r.json()["annotations"]] == [a.id] and r.json()["mode"] == "review"
    r = client.post(f"{API}/reviews", json={"ids": ["a_nope"]})
    assert (r.status_code, r.json()["code"]) == (404, "not_found")
    out = cli_run("send", b.id, "--mode", "review", "--project", str(project)).output
    assert out.startswith("Sent review rv_") and out.endswith("(review mode, 1 note)\n")
    assert store.summary().pending_reviews == 2


# -- 13. what changed --------------------------------------------------------------------------


def test_original_source_and_the_change(project: Path, store: annotate.Store) -> None:
    a = store.add_annotation(text_note())
    original = a.original_source
    assert original == a.source and original is not None
    assert original.excerpt == "Run pip install mkdocs-annotate in a shell."
    md = project / "docs" / "guide" / "install.md"
    md.write_text(INSTALL_MD.replace("Run pip install", "Run pipx install"))
    store.set_in_progress(a.id)
    done = store.address_annotation(a.id, "pipx install mkdocs-annotate")
    assert done.original_source == original  # as when it was made
    assert done.source is not None and done.source.excerpt.startswith("Run pipx")
    assert done.to_dict()["originalSource"]["excerpt"] == original.excerpt
    export = render(store, "markdown")
    assert (
        "   Change in the Markdown (`[-removed-]{+added+}`):\n"
        "   ```\n"
        "   Run [-pip-]{+pipx+} install mkdocs-annotate in a shell.\n"
        "   ```\n"
    ) in export
    out = cli_run("get", a.id, "--project", str(project)).output
    assert (
        "change in the Markdown ([-removed-]{+added+}):\n"
        "  Run [-pip-]{+pipx+} install mkdocs-annotate in a shell.\n"
    ) in out
    # Open notes show no change; the JSON round trip keeps originalSource.
    assert "Change in the Markdown" not in annotate.export.to_markdown(
        [store.add_annotation(text_note())], []
    )
    data = json.loads(render(store, "json"))
    with annotate.Store(project / "copy.db") as copy:
        import_data(copy, data)
        assert copy.get_annotation(a.id).original_source == original


def test_word_diff() -> None:
    assert word_diff("same", "same") is None
    assert word_diff("a b c", "a x c") == "a [-b-]{+x+} c"
    long = " ".join(f"w{i}" for i in range(40))
    diff = word_diff(long, long.replace("w20", "W"))
    assert diff == "… w14 w15 w16 w17 w18 w19 [-w20-]{+W+} w21 w22 w23 w24 w25 w26 …"


def test_migration_keeps_what_it_can(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    import sqlite_utils

    db = sqlite_utils.Database(conn)
    db.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TEXT)")
    for n, migrate in enumerate(schema.MIGRATIONS[:2], 1):
        migrate(db)
        db.execute("INSERT INTO schema_version VALUES (?, 'x')", (n,))
    row = {"type": "text", "page_url": "/", "note": "n", "intent": "comment", "status": "open",
           "anchor_state": "anchored", "created_at": "t", "source_path": "docs/index.md",
           "source_line_start": 3, "source_line_end": 3, "source_excerpt": "Welcome"}  # fmt: skip
    db["annotations"].insert({"id": "a_open", **row, "review_id": "rv_1"})
    db["annotations"].insert({"id": "a_done", **row, "status": "addressed", "review_id": "rv_2"})
    db["reviews"].insert({"id": "rv_1", "mode": "edit", "created_at": "t"})
    db["reviews"].insert({"id": "rv_2", "mode": "edit", "created_at": "t"})
    conn.commit()
    conn.close()
    with annotate.Store(path) as s:
        assert s.schema_version == schema.LATEST
        assert s.get_annotation("a_open").original_source is not None
        assert s.get_annotation("a_done").original_source is None  # worked on: unknown
        assert (s.get_review("rv_1").status, s.get_review("rv_2").status) == ("pending", "done")


@pytest.mark.anyio
async def test_a_reopen_wakes_an_agent_already_waiting(
    project: Path, store: annotate.Store
) -> None:
    a = store.add_annotation(text_note())
    store.create_review({"mode": "review"})
    store.claim_review()
    store.address_annotation(a.id, message="It is right as it is.")
    reopened_at: list[float] = []

    def reopen() -> None:
        time.sleep(0.6)
        with annotate.open(project) as other:  # the dev server's process, say
            other.reopen(a.id, "Then cite the source.")
        reopened_at.append(time.monotonic())

    async with Client(build_server(project)) as c:
        thread = threading.Thread(target=reopen)
        started = time.monotonic()
        thread.start()
        result = await c.call_tool("wait_for_review", {"timeout_s": 20})
        woke = time.monotonic()
        thread.join()
    got = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert woke - started >= 0.6 and woke - reopened_at[0] < 1.0
    assert got["review"]["mode"] == "review"
    assert [(n["id"], n["followUp"]) for n in got["review"]["notes"]] == [
        (a.id, "Then cite the source.")
    ]

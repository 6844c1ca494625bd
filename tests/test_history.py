"""Who changed a note and when (`Store.history`): the library on both backends, the REST routes
through the real app in single-user and team mode, `annotate history` through click's runner."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

import annotate
from annotate.cli import cli
from annotate.errors import AnnotationNotFound, PageNoteNotFound
from annotate.identity import Person
from annotate.store import Store
from annotate.web import create_app
from annotate.web.team import Settings

from .conftest import text_note, write_project
from .test_team import HEADER, Team

BACKENDS = ("sqlite", "postgresql")
TOKEN = "test-token-0123456789abcdef"
API = "/__annotate/api"
INSTALL = "# Install\n\nRun pip install mkdocs-annotate in a shell.\n"


def _steps(store: Store, id: str) -> list[tuple[str, str | None, str | None]]:
    return [(e.action, e.status, e.author) for e in store.history(id)]


def test_the_history_of_a_note_is_its_change_rows_oldest_first(store: Store) -> None:
    ada, max_ = Person("ada", "reviewer"), Person("max", "maintainer")
    bot = Person("bot", "agent")
    note = store.add_annotation(text_note(), by=ada)
    store.edit_annotation(note.id, {"note": "Mention pipx."}, by=ada)
    store.set_in_progress(note.id, by=bot)
    store.address_annotation(note.id, message="Done.", by=bot)
    store.reopen(note.id, "Not quite.", by=max_)
    store.accept(note.id, by=max_)
    steps = _steps(store, note.id)
    # The reconciler may add `anchor` rows (no author, no status): the people's steps are these.
    assert [s for s in steps if s[0] != "anchor"] == [
        ("created", "open", "ada"),
        ("edited", None, "ada"),
        ("in_progress", "in_progress", "bot"),
        ("addressed", "addressed", "bot"),
        ("reopened", "open", "max"),
        ("resolved", "resolved", "max"),
    ]
    entries = store.history(note.id)
    assert [e.at for e in entries] == sorted(e.at for e in entries)
    assert entries[0].to_dict() == {
        "at": entries[0].at,
        "action": "created",
        "author": "ada",
        "status": "open",
    }
    # Single-user mode: the store does not know who asked; the rows say so.
    before = store.history(note.id)
    page = store.add_page_note({"pageUrl": "/", "note": "Too long."})
    store.add_reply(page.id, "Why?")
    store.accept(page.id)
    assert _steps(store, page.id) == [
        ("created", "open", None),
        ("reviewer_reply", None, None),
        ("resolved", "resolved", None),
    ]
    # Another note's rows never show; a kind refuses the other kind's id, as not found.
    assert store.history(note.id) == before
    assert store.history(page.id, kind="page_note") == store.history(page.id)
    with pytest.raises(PageNoteNotFound):
        store.history(note.id, kind="page_note")
    with pytest.raises(AnnotationNotFound, match='Annotation with ID "a_0000000000" not found'):
        store.history("a_0000000000")
    store.delete(page.id)
    with pytest.raises(AnnotationNotFound):
        store.history(page.id)


# -- REST ---------------------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Iterator[tuple[Store, TestClient]]:
    write_project(tmp_path, INSTALL)
    with annotate.open(tmp_path) as store:
        app = create_app(store, token=TOKEN)
        with TestClient(
            app, base_url="http://127.0.0.1:8000", headers={"X-Annotate-Token": TOKEN}
        ) as client:
            yield store, client


def test_the_api_answers_the_history(project: tuple[Store, TestClient]) -> None:
    store, c = project
    id = c.post(f"{API}/annotations", json=text_note()).json()["id"]
    assert c.post(f"{API}/annotations/{id}/status", json={"action": "start"}).status_code == 200
    got = c.get(f"{API}/annotations/{id}/history")
    assert got.status_code == 200
    assert got.json() == {"history": [e.to_dict() for e in store.history(id)]}
    assert [e["action"] for e in got.json()["history"]] == ["created", "in_progress"]
    assert got.json()["history"][1]["author"] is None
    page = c.post(f"{API}/page-notes", json={"pageUrl": "/", "note": "Too long."}).json()["id"]
    got = c.get(f"{API}/page-notes/{page}/history").json()
    assert got == {"history": [e.to_dict() for e in store.history(page)]}
    # As the other item routes: an annotation route takes a page note's id too, not conversely.
    assert c.get(f"{API}/annotations/{page}/history").json() == got
    wrong = c.get(f"{API}/page-notes/{id}/history")
    assert wrong.status_code == 404
    assert wrong.json() == {"error": f'Page note with ID "{id}" not found', "code": "not_found"}
    unknown = c.get(f"{API}/annotations/a_0000000000/history")
    assert unknown.status_code == 404
    assert unknown.json() == {
        "error": 'Annotation with ID "a_0000000000" not found',
        "code": "not_found",
    }
    assert c.get(f"{API}/annotations/{id}/history", params={"since": "1"}).status_code == 400
    assert c.post(f"{API}/annotations/{id}/history").status_code == 405
    # The token guards it as every other route.
    assert (
        c.get(f"{API}/annotations/{id}/history", headers={"X-Annotate-Token": ""}).status_code
        == 401
    )
    spec = c.get("/__annotate/openapi.json").json()["paths"]
    assert "get" in spec["/__annotate/api/annotations/{id}/history"]
    assert "get" in spec["/__annotate/api/page-notes/{id}/history"]
    params = spec["/__annotate/api/summary"]["get"]["parameters"]
    assert [p["name"] for p in params] == ["branch"]


@pytest.fixture
def team(tmp_path: Path) -> Iterator[Team]:
    made = Team(tmp_path, Settings(identity_header=HEADER))
    yield made
    made.store.close()


def test_team_mode_history_names_the_people(team: Team) -> None:
    made = team.client("ada").post(f"{API}/annotations", json=text_note())
    id = made.json()["id"]
    bot, max_ = team.client("bot"), team.client("max")
    assert bot.post(f"{API}/annotations/{id}/status", json={"action": "address"}).status_code == 200
    assert max_.post(f"{API}/annotations/{id}/status", json={"action": "accept"}).status_code == 200
    # Any person may read it, an agent too.
    got = bot.get(f"{API}/annotations/{id}/history")
    assert got.status_code == 200
    steps = [(e["action"], e["status"], e["author"]) for e in got.json()["history"]]
    assert steps == [
        ("created", "open", "ada"),
        ("addressed", "addressed", "bot"),
        ("resolved", "resolved", "max"),
    ]
    # No person, no history.
    assert team.client().get(f"{API}/annotations/{id}/history").status_code == 401


# -- CLI ----------------------------------------------------------------------------------------


def test_annotate_history(tmp_path: Path) -> None:
    write_project(tmp_path, INSTALL)
    with annotate.open(tmp_path) as store:
        id = store.add_annotation(text_note(), by=Person("ada")).id
        store.add_reply(id, "On it.", role="agent")
        store.accept(id, by=Person("max", "maintainer"))
        entries = store.history(id)
    runner = CliRunner()
    out = runner.invoke(cli, ["history", id, "--project", str(tmp_path)])
    assert out.exit_code == 0, out.output
    at = [e.at for e in entries]
    assert out.stdout == (
        f"{id}: 3 changes, oldest first:\n"
        f"  {at[0]}  created         -> open         by ada\n"
        f"  {at[1]}  agent_reply\n"
        f"  {at[2]}  resolved        -> resolved     by max\n"
    )
    # --json: one object a change, absent values left out as in every agent answer.
    got = runner.invoke(cli, ["history", id, "--json", "--project", str(tmp_path)])
    assert json.loads(got.stdout) == [
        {"at": at[0], "action": "created", "author": "ada", "status": "open"},
        {"at": at[1], "action": "agent_reply"},
        {"at": at[2], "action": "resolved", "author": "max", "status": "resolved"},
    ]
    bad = runner.invoke(cli, ["history", "a_0000000000", "--project", str(tmp_path)])
    assert bad.exit_code == 1
    assert bad.output == 'Error: Annotation with ID "a_0000000000" not found\n'

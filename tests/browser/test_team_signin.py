"""Team mode in Chromium (docs/team.md): a page sends the browser to the sign-in page, the token
pasted there becomes an HttpOnly cookie no script can read, the overlay then writes as that
person, shows every note's author, and offers Edit and Delete on the reader's own notes only."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from playwright.sync_api import Browser, Page, expect

import annotate
from annotate.identity import Person
from annotate.web.app import create_app
from annotate.web.server import bind
from annotate.web.team import Settings

from .conftest import SITES, annotate_selection, notes_in_store, wait_painted


class TeamServer:
    """The plain fixture site in team mode (personal tokens), uvicorn in a thread."""

    def __init__(self, project: Path) -> None:
        self.project = project
        self.store = annotate.open(project)
        self.tokens = {"ada": self.store.add_token("ada"), "max": self.store.add_token("max", "maintainer")}  # fmt: skip
        app = create_app(self.store, site_dir=project / "site", team=Settings())
        self.feed = app.state.feed
        self.sock = bind("127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/"
        config = uvicorn.Config(app, log_level="warning", lifespan="off", proxy_headers=False)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "the team server did not start"
            time.sleep(0.01)

    def stop(self) -> None:
        self.feed.close()
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()
        self.store.close()


@pytest.fixture
def team_server(tmp_path: Path, browser: Browser) -> Iterator[TeamServer]:
    project = tmp_path / "project"
    project.mkdir()
    shutil.copytree(SITES / "plain", project / "site")
    server = TeamServer(project)
    yield server
    for context in browser.contexts:
        context.close()
    server.stop()


def sign_in(page: Page, server: TeamServer, who: str) -> None:
    page.goto(server.url)
    expect(page).to_have_url(f"{server.url}__annotate/signin?next=/")
    page.get_by_label("Personal token").fill(server.tokens[who])
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(server.url)
    wait_painted(page)


def test_sign_in_then_review_as_oneself(page: Page, team_server: TeamServer) -> None:
    bob = team_server.store.add_annotation(
        {"pageUrl": "/", "selectedText": "Callout text", "note": "Bob's note."},
        by=Person("bob"),
    )
    sign_in(page, team_server, "ada")
    cookies = page.context.cookies()
    assert [(c["name"], c["httpOnly"], c["sameSite"]) for c in cookies] == [
        ("annotate", True, "Strict")
    ]
    assert page.evaluate("document.cookie") == ""  # HttpOnly: no script reads the token
    assert team_server.tokens["ada"] not in page.content()

    annotate_selection(page, "unique sentence", "Ada's note.")
    [mine] = [n for n in notes_in_store(team_server.project) if n.id != bob.id]
    assert (mine.note, mine.author) == ("Ada's note.", "ada")

    page.get_by_role("button", name="Review panel").click()
    panel = page.locator("#annotate-panel")
    ours = panel.locator("li.item", has_text="Ada's note.")
    theirs = panel.locator("li.item", has_text="Bob's note.")
    expect(ours).to_contain_text("by ada")
    expect(theirs).to_contain_text("by bob")
    expect(ours.get_by_role("button", name="Delete")).to_have_count(1)
    expect(theirs.get_by_role("button", name="Delete")).to_have_count(0)
    expect(theirs.get_by_role("button", name="Edit")).to_have_count(0)
    expect(theirs.get_by_role("button", name="Reply")).to_have_count(1)


def test_a_maintainer_sees_edit_and_delete_on_every_note(
    page: Page, team_server: TeamServer
) -> None:
    team_server.store.add_annotation(
        {"pageUrl": "/", "selectedText": "Callout text", "note": "Bob's note."},
        by=Person("bob"),
    )
    sign_in(page, team_server, "max")
    page.get_by_role("button", name="Review panel").click()
    theirs = page.locator("#annotate-panel li.item", has_text="Bob's note.")
    expect(theirs.get_by_role("button", name="Delete")).to_have_count(1)
    theirs.get_by_role("button", name="Delete").click()
    page.locator("#annotate-panel").get_by_role("button", name="Delete").first.click()
    expect(theirs).to_have_count(0)
    assert notes_in_store(team_server.project) == []

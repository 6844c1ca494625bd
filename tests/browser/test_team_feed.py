"""Two servers on one PostgreSQL database (issue #20): a page open on instance B shows, without
reloading, a reply written through instance A."""

from __future__ import annotations

import json
import shutil
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from .conftest import SITES, Server, annotate_selection, open_page


@pytest.fixture
def servers(tmp_path: Path, browser: Browser, pg_url: str) -> Iterator[tuple[Server, Server]]:
    project = tmp_path / "project"
    project.mkdir()
    shutil.copytree(SITES / "plain", project / "site")
    a = Server(project, project / "site", db=pg_url).start()
    b = Server(project, project / "site", db=pg_url).start()
    yield a, b
    for context in browser.contexts:
        context.close()  # pages first: an open page would log its refused long-poll
    a.stop()
    b.stop()


def test_a_page_on_one_server_shows_a_reply_written_on_the_other(
    page: Page, servers: tuple[Server, Server]
) -> None:
    a, b = servers
    open_page(page, b.url)
    annotate_selection(page, "unique sentence", "Reword this.")
    page.get_by_role("button", name="Review panel").click()
    item = page.locator("#annotate-panel li.item")
    expect(item.locator(".badge")).to_have_text("open")
    [note] = a.store.list_annotations()  # A reads what the page saved through B
    request = urllib.request.Request(
        f"{a.url}__annotate/api/annotations/{note.id}/replies",
        data=json.dumps({"message": "Written on A", "role": "agent"}).encode(),
        headers={"X-Annotate-Token": a.token, "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 201
    expect(item.locator(".reply.agent")).to_contain_text("Written on A", timeout=10_000)

"""One whole round of the agent's side of the loop (issue #14, "Must show"): a real `mkdocs serve`
with the plugin, notes of every kind made in Chromium through the overlay (comment, delete, replace,
insert, question, page note, element), Send to agent, and `annotate mcp` over stdio, started in
`docs/` without `--project`, driven by the SDK's client as an agent drives it: wait for the review,
read each note's context, set it in progress, edit the Markdown, address it with a message,
`deleted` or `replacedText`. The panel shows the answers live, the deletion as asked, the word
diff and the review done. Then the reviewer reopens one note with a follow-up, which wakes a second
wait with that one note, and asks about another with Ask agent now, which wakes a third.

The MCP client runs in its own event loop thread (an anyio blocking portal): Playwright's sync API
refuses to run inside one.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client, StdioServerParameters
from playwright.sync_api import Locator, Page, expect

import annotate

from ..test_plugin_serve import DevServer
from .conftest import Console, select_text, wait_painted

BIN = Path(sys.executable).parent
MD = "docs/guide.md"
GUIDE = """\
# Guide

Install the tool with pip before anything else.

The configuration lives in a single YAML file at the project root.

This sentence is obsolete and should go away.

Run the server and open the browser on port 8000 to see the site.

The cache lives in the home folder of the user.

!!! note

    Back up the database before an upgrade.
"""
# (quote, intent, suggestion, note) of each text note, in the order they are made.
COMMENT = ("a single YAML file", "comment", None, "Name the file.")
DELETE = ("This sentence is obsolete and should go away.", "delete", None, "")
REPLACE = ("port 8000", "replace", "port 8080", "The default changed.")
INSERT = ("with pip", "insert", "or pipx", "")
QUESTION = ("in the home folder", "comment", None, "Why there and not in the project?")
TEXT_NOTES = (COMMENT, DELETE, REPLACE, INSERT, QUESTION)
PAGE_NOTE = "Add a troubleshooting section."
ELEMENT_NOTE = "Make this a warning."
ANSWER = "The home folder survives a clean checkout; the project folder does not."
FOLLOW_UP = "Say which port in the heading too."


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "docs").mkdir(parents=True)
    (root / "mkdocs.yml").write_text(
        "site_name: Round\ntheme:\n  name: mkdocs\n  highlightjs: false\nmarkdown_extensions:\n  - admonition\n"
        "plugins:\n  - search\n  - annotate\nnav:\n  - index.md\n  - guide.md\n"
    )
    (root / "docs" / "index.md").write_text("# Home\n\nSee the guide.\n")
    (root / MD).write_text(GUIDE)
    return root


@pytest.fixture
def dev(project: Path) -> Iterator[DevServer]:
    server = DevServer(project)
    yield server
    server.stop()


class Agent:
    """`annotate mcp` over stdio, started in `docs/` without `--project`, through the SDK's client;
    tool calls made from this (sync) thread."""

    def __init__(self, portal: BlockingPortal, client: Client) -> None:
        self.portal, self.client = portal, client
        self.chars = 0  # characters of every answer, for the lean-answer checks

    def _text(self, result: Any, name: str) -> str:
        assert not result.is_error, f"{name}: {result.content[0].text}"
        text: str = result.content[0].text
        self.chars += len(text)
        return text

    def call(self, name: str, **args: Any) -> Any:
        text = self._text(self.portal.call(self.client.call_tool, name, args), name)
        return text if name == "get_context" else json.loads(text)

    def start_wait(self, timeout_s: float = 60) -> Future[Any]:
        return self.portal.start_task_soon(
            self.client.call_tool, "wait_for_review", {"timeout_s": timeout_s}
        )

    def waited(self, future: Future[Any]) -> dict[str, Any]:
        got: dict[str, Any] = json.loads(self._text(future.result(timeout=90), "wait_for_review"))
        return got

    def prompt(self, name: str, **args: str) -> str:
        result = self.portal.call(self.client.get_prompt, name, args)
        return "\n".join(m.content.text for m in result.messages)


@pytest.fixture
def agent(project: Path) -> Iterator[Agent]:
    params = StdioServerParameters(
        command=str(BIN / "annotate"), args=["mcp"], cwd=str(project / "docs")
    )
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(Client(params, read_timeout_seconds=120)) as client,
    ):
        yield Agent(portal, client)


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def edit(path: Path, *changes: tuple[str, str]) -> None:
    """Replace each `old` (found once) by `new`, in one write: one rebuild, one reload."""
    text = path.read_text()
    for old, new in changes:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path.write_text(text)


def cli(project: Path, *args: str, stdin: str | None = None) -> str:
    """An `annotate` command run in `docs/` (the project is found upwards)."""
    done = subprocess.run(
        [str(BIN / "annotate"), *args],
        cwd=project / "docs",
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def panel_item(page: Page, id: str) -> Locator:
    return page.locator(f'#annotate-panel li.item[data-id="{id}"]')


def test_agent_round(
    dev: DevServer, project: Path, agent: Agent, page: Page, console: Console
) -> None:
    page.set_default_timeout(20_000)  # rebuilds and reloads under a loaded machine
    md = project / MD
    url = dev.base + "/guide/"
    page.goto(url)
    wait_painted(page)

    # -- the reviewer: every kind of note, made through the overlay ----------------------------
    at_creation: dict[str, tuple[int, int]] = {}
    for quote, intent, suggestion, note in TEXT_NOTES:
        select_text(page, quote)
        page.get_by_role("button", name="Annotate").click()
        page.get_by_label("Intent").select_option(intent)
        if suggestion is not None:
            page.get_by_label("Suggestion").fill(suggestion)
        page.get_by_label("Note", exact=True).fill(note)
        page.get_by_role("button", name="Save").click()
        page.locator("#annotate-host [role=dialog]").wait_for(state="hidden")
        line = line_of(md, quote)
        at_creation[quote] = (line, line)

    box = page.locator("div.admonition p:not(.admonition-title)").bounding_box()
    assert box is not None
    page.keyboard.down("Alt")
    page.mouse.move(box["x"] + 20, box["y"] + box["height"] / 2)
    page.mouse.click(box["x"] + 20, box["y"] + box["height"] / 2)
    page.keyboard.up("Alt")
    expect(page.get_by_role("dialog", name="New note")).to_contain_text("Back up the database")
    page.get_by_label("Note", exact=True).fill(ELEMENT_NOTE)
    page.get_by_role("button", name="Save").click()
    page.locator("#annotate-host [role=dialog]").wait_for(state="hidden")

    page.get_by_role("button", name="Review panel").click()
    panel = page.locator("#annotate-panel")
    panel.get_by_role("button", name="Add page note").click()
    panel.get_by_label("Note", exact=True).fill(PAGE_NOTE)
    panel.get_by_role("button", name="Save").click()
    expect(panel.locator("li.item")).to_have_count(7)

    # Item 8 and the source lines at creation: each text note on its line of docs/guide.md, the
    # page note on the file, and originalSource holding the lines as made.
    with annotate.open(project) as store:
        notes = store.list_annotations()
        [page_note] = store.list_page_notes()
    assert not (project / "docs" / ".annotate").exists()
    by_quote = {n.selected_text: n for n in notes if n.type == "text"}
    assert set(by_quote) == {q for q, *_ in TEXT_NOTES}
    for quote, intent, suggestion, note in TEXT_NOTES:
        n = by_quote[quote]
        assert (n.source.path, n.source.line_start, n.source.line_end) == (MD, *at_creation[quote])
        assert (n.intent, n.suggestion or None, n.note) == (intent, suggestion, note)
        assert n.original_source is not None
        assert (n.original_source.line_start, n.original_source.line_end) == at_creation[quote]
        assert quote in n.original_source.excerpt
        assert n.page_url == "/guide/" and n.anchor_state == "anchored"
    [element] = [n for n in notes if n.type == "element"]
    assert element.note == ELEMENT_NOTE
    assert "Back up the database" in element.element_selector.description
    # Item 8: the element note points at the Markdown line that produced the element.
    element_line = line_of(md, "Back up the database")
    assert element.source is not None
    assert (element.source.path, element.source.line_start) == (MD, element_line)
    assert element.source.line_end == element_line
    assert page_note.source is not None and page_note.source.path == MD
    ids = {q: by_quote[q].id for q, *_ in TEXT_NOTES}

    # -- Send to agent, while the agent waits ---------------------------------------------------
    waiting = agent.start_wait()
    send = panel.get_by_role("region", name="Send to agent")
    send.get_by_label("Message").fill("Please go through these.")
    send.get_by_role("button", name="Send to agent").click()
    review = agent.waited(waiting)
    expect(send).to_contain_text("was picked up by the agent")

    # Item 5: the compact review, every note with its kind, intent and path:lines.
    r = review["review"]
    assert (r["mode"], r["message"], r["total"]) == ("edit", "Please go through these.", 7)
    assert review["instructions"].startswith("Edit mode:")
    briefs = {b["id"]: b for b in r["notes"]}
    assert set(briefs) == {*ids.values(), element.id, page_note.id}
    for quote, intent, suggestion, note in TEXT_NOTES:
        b = briefs[ids[quote]]
        line = at_creation[quote][0]
        expected = {"id": ids[quote], "kind": "text", "intent": intent, "at": f"{MD}:{line}"}
        expected |= {"quote": quote} | ({"note": note} if note else {})
        expected |= {"suggestion": suggestion} if suggestion else {}
        assert b == expected  # item 6: nothing absent is sent as null or []
    assert briefs[page_note.id] == {
        "id": page_note.id, "kind": "page", "note": PAGE_NOTE, "at": MD, "page": "/guide/",
    }  # fmt: skip
    assert briefs[element.id]["kind"] == "element" and briefs[element.id]["note"] == ELEMENT_NOTE
    assert briefs[element.id]["at"] == f"{MD}:{element_line}"
    # Under about 150 tokens (~600 characters) a note.
    assert all(len(json.dumps(b)) < 600 for b in r["notes"])

    # Item 1: the server started in docs/ found the project (no store of its own there), and
    # item 2: page URLs in any form name the same page.
    assert not (project / "docs" / ".annotate").exists()
    for form in ("/guide", "guide/", "/guide/index.html", url, f"{dev.base}/guide/index.html"):
        listed = agent.call("list_annotations", pageUrl=form)
        assert {a["id"] for a in listed} == {*ids.values(), element.id}, form

    # Item 14: the prompt walks through the review the agent took.
    walkthrough = agent.prompt("address-review")
    assert r["id"] in walkthrough and "edit mode" in walkthrough

    # Item 12: the Stop hook blocks while the review has notes left, naming them.
    blocked = json.loads(cli(project, "hook", "stop", stdin=json.dumps({"session_id": "s1"})))
    assert blocked["decision"] == "block"
    assert all(i in blocked["reason"] for i in ids.values())

    # -- the agent works the review ---------------------------------------------------------------
    # Item 4 and 6: get_context is plain text with the intent spelled out beside the lines.
    line = at_creation[REPLACE[0]][0]
    context = agent.call("get_context", id=ids[REPLACE[0]], lines=1)
    assert context.startswith(f"[{ids[REPLACE[0]]}] text note on /guide/ — {MD}:{line} ")
    assert "intent: replace: put the suggestion in place of the quoted text" in context
    assert "suggestion: port 8080" in context
    quoted = re.escape("Run the server and open the browser on port 8000 to see the site.")
    assert re.search(rf"^> +{line} \| {quoted}$", context, re.M)
    assert '\\"' not in context and "\\n" not in context

    # The question first, no edit: the reply shows live in the open panel, without a reload.
    page.evaluate("window.__notReloaded = true")
    question = ids[QUESTION[0]]
    assert agent.call("set_in_progress", id=question)["status"] == "in_progress"
    answered = agent.call("address_annotation", id=question, message=ANSWER)
    assert answered["status"] == "addressed"
    assert [(x["role"], x["message"]) for x in answered["replies"]] == [("agent", ANSWER)]
    assert None not in answered.values() and [] not in answered.values()  # item 6
    item = panel_item(page, question)
    expect(item.locator(".reply.agent")).to_contain_text(ANSWER)
    expect(item.locator(".badge")).to_have_text("addressed")
    assert page.evaluate("window.__notReloaded") is True

    # Then every edit, each note set in progress first.
    for id in (*ids.values(), element.id, page_note.id):
        if id != question:
            agent.call("set_in_progress", id=id)
    edit(
        md,
        ("a single YAML file", "mkdocs.yml"),
        ("This sentence is obsolete and should go away.\n\n", ""),
        ("port 8000", "port 8080"),
        ("with pip", "with pip or pipx"),
        ("!!! note", "!!! warning"),
        ("before an upgrade.\n", "before an upgrade.\n\n## Troubleshooting\n\nRestart it.\n"),
    )
    addressed = {
        ids[COMMENT[0]]: agent.call(
            "address_annotation", id=ids[COMMENT[0]], replacedText="mkdocs.yml",
            message="Named the file.",
        ),
        ids[DELETE[0]]: agent.call(
            "address_annotation", id=ids[DELETE[0]], deleted=True, message="Deleted."
        ),
        ids[REPLACE[0]]: agent.call(
            "address_annotation", id=ids[REPLACE[0]], replacedText="port 8080",
            message="Now 8080.",
        ),
        ids[INSERT[0]]: agent.call(
            "address_annotation", id=ids[INSERT[0]], replacedText="with pip or pipx",
            message="Added pipx.",
        ),
        element.id: agent.call(
            "address_annotation", id=element.id, message="Made it a warning."
        ),
        page_note.id: agent.call(
            "address_annotation", id=page_note.id, message="Added Troubleshooting."
        ),
    }  # fmt: skip
    assert all(a["status"] == "addressed" for a in addressed.values())
    # Item 3: the deletion is recorded; the note is not looked for again.
    assert addressed[ids[DELETE[0]]]["anchorState"] == "removed"
    assert "replacedText" not in addressed[ids[DELETE[0]]]
    # Item 7: text, status and reply in one call; the new lines of the edited notes.
    for quote, new in (
        (COMMENT[0], "mkdocs.yml"),
        (REPLACE[0], "port 8080"),
        (INSERT[0], "or pipx"),
    ):
        a = addressed[ids[quote]]
        assert a["anchorState"] == "anchored"
        assert a["source"]["lineStart"] == line_of(md, new), quote
    last = addressed[ids[REPLACE[0]]]["replies"][-1]
    assert (last["role"], last["message"]) == ("agent", "Now 8080.")
    removed_context = agent.call("get_context", id=ids[DELETE[0]])
    assert "warning: The annotated text was deleted as the note asked (removed)" in removed_context
    assert ">" not in "".join(x[:1] for x in removed_context.splitlines())  # no lines marked

    # Item 10: every note addressed, the review is done; the gate lets the agent stop.
    [outline] = agent.call("list_reviews")
    assert (outline["id"], outline["status"], outline["waiting"]) == (r["id"], "done", 0)
    assert cli(project, "hook", "stop", stdin=json.dumps({"session_id": "s2"})).strip() == ""

    # Livereload brought the edited page; the overlay shows the agent's work.
    page.wait_for_function("() => window.__notReloaded === undefined")
    wait_painted(page)
    expect(page.get_by_role("heading", name="Troubleshooting")).to_be_visible()
    expect(page.locator("div.admonition")).to_have_class("admonition warning")
    replaced = panel_item(page, ids[REPLACE[0]])
    expect(replaced.locator(".badge")).to_have_text("addressed")
    expect(replaced.locator(".reply.agent")).to_contain_text("Now 8080.")
    expect(replaced).to_contain_text("Now reads: port 8080")
    # Item 13 in the panel: the word diff of the Markdown then and now.
    expect(replaced.locator(".diff del")).to_have_text("8000")
    expect(replaced.locator(".diff ins")).to_have_text("8080")
    # Item 3 in the panel: the deletion is the note's answer, not a note that went missing.
    deleted = panel_item(page, ids[DELETE[0]])
    expect(deleted.locator(".removed")).to_have_text("deleted as asked")
    expect(deleted.locator(".orphan")).to_have_count(0)
    expect(deleted.locator(".flag")).to_have_count(0)
    # Item 10 in the panel: the review is done.
    expect(send).to_contain_text("is done: every note in it is addressed or resolved.")

    # -- the reviewer reopens one note with a follow-up: it wakes a second wait, alone ----------
    waiting = agent.start_wait()
    replaced.get_by_role("button", name="Reopen").click()
    replaced.get_by_label("Follow-up note (optional)").fill(FOLLOW_UP)
    replaced.get_by_role("button", name="Reopen").click()
    expect(replaced.locator(".badge")).to_have_text("open")
    second = agent.waited(waiting)["review"]
    assert second["id"] != r["id"] and second["mode"] == "edit"
    assert [(b["id"], b["followUp"]) for b in second["notes"]] == [(ids[REPLACE[0]], FOLLOW_UP)]
    assert second["total"] == 1
    agent.call("set_in_progress", id=ids[REPLACE[0]])
    edit(md, ("# Guide", "# Guide (port 8080)"))
    again = agent.call(
        "address_annotation", id=ids[REPLACE[0]], replacedText="port 8080",
        message="Named the port in the heading.",
    )  # fmt: skip
    assert again["status"] == "addressed"
    assert [x["status"] for x in agent.call("list_reviews")] == ["done", "done"]
    expect(replaced.locator(".badge")).to_have_text("addressed")
    expect(send).to_contain_text("is done: every note in it is addressed or resolved.")

    # Item 13: the word diff of the Markdown then and now, in `annotate get`.
    shown = cli(project, "get", ids[REPLACE[0]])
    assert "change in the Markdown ([-removed-]{+added+}):" in shown
    assert "[-8000-]{+8080+}" in shown
    assert "[-This sentence is obsolete and should go away.-]" in cli(
        project, "get", ids[DELETE[0]]
    )
    assert "change in the Markdown" not in cli(project, "get", ids[QUESTION[0]])

    # Item 11: Ask agent now sends one note alone, in review mode, outside the batch; the
    # agent's answer shows live.
    waiting = agent.start_wait()
    asked_item = panel_item(page, element.id)
    asked_item.get_by_role("button", name="Ask agent now").click()
    asked = agent.waited(waiting)["review"]
    assert (asked["mode"], asked["total"]) == ("review", 1)
    assert [b["id"] for b in asked["notes"]] == [element.id]
    agent.call("add_agent_reply", id=element.id, message="A warning: skipping it loses data.")
    expect(asked_item.locator(".reply.agent").last).to_contain_text("skipping it loses data")

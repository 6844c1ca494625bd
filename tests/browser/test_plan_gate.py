"""The plan gate end to end (issue #29): `annotate hook plan` run as Claude Code runs it, with the
documented PermissionRequest input on stdin, the plan reviewed in Chromium, the verdict sent from
the overlay, and the hook's exact answer on stdout; a second revision with its diff and the notes
carried over; `annotate open` on files inside and outside docs_dir."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

import annotate
from tests.browser.conftest import Console, select_text, wait_painted
from tests.conftest import text_note

ANNOTATE = Path(sys.executable).parent / "annotate"
PLAN_1 = """# Migrate the store

1. Add the column decision to reviews.
2. Copy every row into the new table.
3. Drop the old table afterwards.
"""
PLAN_2 = """# Migrate the store

1. Add the column decision to reviews.
2. Copy every row into the new table.
3. Keep the old table for a week, then drop it.
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "docs" / "guide").mkdir(parents=True)
    (root / "mkdocs.yml").write_text("site_name: Gate\n")
    (root / "docs" / "index.md").write_text("# Home\n\nWelcome.\n")
    (root / "docs" / "guide" / "install.md").write_text(
        "# Install\n\nRun the installer twice.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    )
    (root / "NOTES.md").write_text("# Notes\n\n- [ ] write the plan\n- [x] read it\n")
    return root


def hook_input(project: Path, plan: str, session: str = "sess-1") -> str:
    """Claude Code's PermissionRequest input for ExitPlanMode (docs/plans.md)."""
    return json.dumps(
        {
            "session_id": session,
            "transcript_path": "/tmp/t.jsonl",
            "cwd": str(project),
            "permission_mode": "plan",
            "hook_event_name": "PermissionRequest",
            "tool_name": "ExitPlanMode",
            "tool_input": {"plan": plan},
        }
    )


class Running:
    """A command started with its stdin written; `url` is the page address it printed."""

    def __init__(self, args: list[str], stdin: str | None, cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [str(ANNOTATE), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd,
            env={**os.environ, "NO_COLOR": "1", "ANNOTATE_NO_BROWSER": "1"},
        )
        assert self.proc.stdin is not None and self.proc.stderr is not None
        if stdin is not None:
            self.proc.stdin.write(stdin)
        self.proc.stdin.close()
        self.proc.stdin = None  # written and closed: communicate() must not flush it
        line = self.proc.stderr.readline()
        assert " at http://127.0.0.1:" in line, line + self.proc.stderr.read()
        self.url = line.rsplit(" at ", 1)[1].strip()

    def finish(self) -> tuple[int, str, str]:
        out, err = self.proc.communicate(timeout=60)
        return self.proc.returncode, out, err


@pytest.fixture(autouse=True)
def server_ends(console: Console) -> None:
    """The page's server ends with the command once the verdict is in: the overlay's next
    requests are refused, and it shows itself offline."""
    console.allow("ERR_CONNECTION_REFUSED")


@pytest.fixture
def started() -> Iterator[list[Running]]:
    runs: list[Running] = []
    yield runs
    for r in runs:
        if r.proc.poll() is None:
            r.proc.kill()
            r.proc.communicate()


def hook(project: Path, plan: str, started: list[Running], session: str = "sess-1") -> Running:
    run = Running(["hook", "plan", "--timeout", "120"], hook_input(project, plan, session), project)
    started.append(run)
    return run


def note(page: Page, quote: str, intent: str, text: str, suggestion: str | None = None) -> None:
    select_text(page, quote)
    page.get_by_role("button", name="Annotate").click()
    page.get_by_label("Intent").select_option(intent)
    if suggestion is not None:
        page.get_by_label("Suggestion").fill(suggestion)
    page.get_by_label("Note", exact=True).fill(text)
    page.get_by_role("button", name="Save").click()
    page.locator("#annotate-host [role=dialog]").wait_for(state="hidden")


def send(page: Page, decision: str, message: str = "") -> None:
    region = page.locator("#annotate-panel").get_by_role("region", name="Send to agent")
    if not region.is_visible():
        page.get_by_role("button", name="Review panel").click()
    region.get_by_label("Verdict").select_option(decision)
    if message:
        region.get_by_label("Message").fill(message)
    region.get_by_role("button", name="Send to agent").click()


def test_approve_answers_allow(project: Path, page: Page, started: list[Running]) -> None:
    with annotate.open(project) as store:  # a docs review under way meanwhile
        elsewhere = store.add_annotation(text_note())
    run = hook(project, PLAN_1, started)
    page.goto(run.url)
    wait_painted(page)
    expect(page.locator("main h1")).to_have_text("Migrate the store")
    send(page, "approve")
    code, out, err = run.finish()
    assert code == 0, err
    assert out == (
        '{"hookSpecificOutput": {"hookEventName": "PermissionRequest", '
        '"decision": {"behavior": "allow"}}}\n'
    )
    with annotate.open(project) as store:
        [plan] = store.plans.list()
        review = store.get_review(str(plan.latest.review_id))
        # The plan page's Send took its own notes (none), not the docs page's open note.
        assert review.annotations == () and review.decision == "approve"
        sent = [a.id for r in store.list_reviews() for a in r.annotations]
        assert elsewhere.id not in sent
    assert (plan.key, plan.latest.number, plan.latest.decision) == ("session:sess-1", 1, "approve")


def test_request_changes_then_a_second_revision_with_its_diff_and_carried_notes(
    project: Path, page: Page, started: list[Running]
) -> None:
    page.set_default_timeout(15_000)
    run = hook(project, PLAN_1, started)
    page.goto(run.url)
    wait_painted(page)
    note(page, "Copy every row", "comment", "In batches of 1000")
    note(page, "Drop the old table", "replace", "We need it to roll back", "Keep the old table")
    send(page, "request_changes", "Keep a way back.")
    code, out, err = run.finish()
    assert code == 0, err
    assert (
        out
        == json.dumps(
            {
                "hookSpecificOutput": {
                    "hookEventName": "PermissionRequest",
                    "decision": {
                        "behavior": "deny",
                        "message": "The reviewer requested changes to the plan (revision 1).\n"
                        "Notes (line numbers are the plan's):\n"
                        '1. [comment] line 4: "Copy every row"\n'
                        "   note: In batches of 1000\n"
                        '2. [replace] line 5: "Drop the old table"\n'
                        '   suggestion: "Keep the old table"\n'
                        "   note: We need it to roll back\n"
                        "Message: Keep a way back.\n"
                        "Revise the plan accordingly and present it again.",
                    },
                }
            }
        )
        + "\n"
    )

    # The agent revises the plan: revision 2 of the same session's plan, diffed against 1.
    run = hook(project, PLAN_2, started)
    page.goto(run.url)
    wait_painted(page)
    changes = page.get_by_role("region", name="What changed")
    expect(changes).to_contain_text("Since revision 1 (request_changes)")
    expect(changes.locator("del")).to_contain_text(["Drop"])
    expect(changes.locator("ins").first).to_contain_text("Keep")
    # The notes of revision 1 are on the page of revision 2: one still there, one stale.
    with annotate.open(project) as store:
        by_quote = {n.selected_text: n for n in store.list_annotations()}
    kept, gone = by_quote["Copy every row"], by_quote["Drop the old table"]
    assert kept.anchor_state == "anchored" and kept.source is not None
    assert kept.source.line_start == 4
    assert gone.anchor_state != "anchored"
    page.get_by_role("button", name="Review panel").click()
    expect(page.locator("#annotate-panel li.item")).to_have_count(2)

    note(page, "Keep the old table for a week", "comment", "Two weeks, please")
    send(page, "approve_with_notes")
    code, out, err = run.finish()
    assert code == 0, err
    with annotate.open(project) as store:
        plan = store.plans.list()[0]
        review_id = plan.latest.review_id
        assert [r.decision for r in plan.revisions] == ["request_changes", "approve_with_notes"]
        # The notes wait for the agent's wait_for_review.
        review = store.get_review(str(review_id))
    assert review.decision == "approve_with_notes" and review.status == "pending"
    assert [n.note for n in review.annotations] == ["Two weeks, please"]
    assert (
        out
        == json.dumps(
            {
                "hookSpecificOutput": {
                    "hookEventName": "PermissionRequest",
                    "decision": {"behavior": "allow"},
                },
                "systemMessage": "Plan approved with 1 note: the agent gets them with "
                f"wait_for_review (review {review_id}).",
            }
        )
        + "\n"
    )


def test_open_a_file_outside_docs_dir(project: Path, page: Page, started: list[Running]) -> None:
    run = Running(["open", "NOTES.md", "--wait", "--json", "--timeout", "120"], None, project)
    started.append(run)
    assert run.url.split("/", 3)[3] == "_annotate_files/NOTES.md/"
    page.goto(run.url)
    wait_painted(page)
    expect(page.locator("main input[type=checkbox]")).to_have_count(2)
    note(page, "write the plan", "comment", "Which plan?")
    send(page, "request_changes")
    code, out, err = run.finish()
    assert code == 0, err
    answer = json.loads(out)
    assert answer["decision"] == "request_changes"
    [brief] = answer["notes"]
    assert brief["note"] == "Which plan?" and brief["at"] == "NOTES.md:3"


def test_open_a_file_inside_docs_dir_as_its_site_page(
    project: Path, page: Page, started: list[Running]
) -> None:
    run = Running(["open", "docs/guide/install.md", "--timeout", "120"], None, project)
    started.append(run)
    assert run.url.split("/", 3)[3] == "guide/install/"
    page.goto(run.url)
    wait_painted(page)
    expect(page.locator("main table td")).to_have_count(2)
    note(page, "installer twice", "comment", "Once is enough")
    send(page, "approve_with_notes")
    code, out, err = run.finish()
    assert code == 0, err
    assert out == "approve_with_notes: docs/guide/install.md (revision 1)\n"
    with annotate.open(project) as store:
        [made] = store.list_annotations()
    # The same note a reviewer makes on the built site's page: its URL, its file and line.
    assert made.page_url == "/guide/install/"
    assert made.source is not None and made.source.lines == "docs/guide/install.md:3"

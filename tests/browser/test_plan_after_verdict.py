"""The plan page after its verdict (issue #29): the page's server ends with the hook, and the page
says the decision went out and stays readable, never a page gone offline."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from tests.browser.conftest import wait_painted
from tests.browser.test_plan_gate import PLAN_1, Running, hook, send

# The plan gate's fixtures, used here by name.
from tests.browser.test_plan_gate import project as project
from tests.browser.test_plan_gate import started as started


def test_the_page_says_the_decision_went_out_and_stays_readable(
    project: Path,
    page: Page,
    started: list[Running],
) -> None:
    failed: list[str] = []
    page.on("requestfailed", lambda r: failed.append(f"{r.url} {r.failure}"))
    run = hook(project, PLAN_1, started)
    page.goto(run.url)
    wait_painted(page)
    gate = page.locator("#annotate-gate")
    expect(gate).to_be_hidden()
    send(page, "approve_with_notes", "Fine, see the notes.")
    expect(gate).to_have_text("Decision sent: approve with notes — you can close this tab.")
    code, _, err = run.finish()  # the hook answered: its server has ended
    assert code == 0, err
    # Still the document, the decision said; the overlay stopped asking (its feed aborted,
    # nothing refused by a server that is gone: this module allows no ERR_CONNECTION_REFUSED).
    expect(page.locator("main h1")).to_have_text("Migrate the store")
    expect(gate).to_be_visible()
    expect(page.locator("#annotate-panel .badge.offline")).to_be_hidden()
    assert all("ERR_ABORTED" in f for f in failed), failed

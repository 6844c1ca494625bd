"""`annotate pr push` / `pr pull` on a GitLab merge request (issue #30 item 3) against an
emulated GitLab API (tests/gitlab_api.py) over the same real git repository and notes as
tests/test_pullrequests.py."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import annotate
from annotate import pullrequests
from annotate.cli import cli

from . import gitlab_api
from .github_api import PullRequest, git, serve_app
from .gitlab_api import TOKEN, GitLabState
from .test_pullrequests import add_notes, on, repo, text

BACKENDS = ("sqlite", "postgresql")
__all__ = ["on", "repo"]  # fixtures


@pytest.fixture
def gitlab(repo: Path) -> Iterator[tuple[GitLabState, str]]:
    # Two items a page: every listing must follow `Link: rel="next"`.
    state = GitLabState(
        repo, merge_requests={7: PullRequest(7, "docs-fix", "main")}, per_page_max=2
    )
    with serve_app(gitlab_api.create_app(state)) as url:
        yield state, url


@pytest.fixture
def store(repo: Path, db_url: str | None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("GITLAB_TOKEN", TOKEN)
    for name in ("GH_TOKEN", "GITHUB_TOKEN", "GL_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    s = annotate.open(repo, db=db_url)
    yield s
    s.close()


def by_marker(state: GitLabState, note: str) -> dict[str, Any]:
    return next(
        d["notes"][0] for d in state.discussions if f"annotate:{note} " in d["notes"][0]["body"]
    )


def posts(state: GitLabState) -> list[str]:
    return [path.rsplit("/", 1)[-1] for method, path, _, _ in state.log if method == "POST"]


def test_push_as_draft_notes_published_together(store: Any, gitlab: Any) -> None:
    state, url = gitlab
    ids = add_notes(store)
    context = store.add_annotation(text("That is all", "", ".", note="End with a link."))
    done = pullrequests.push(store, gitlab=url)
    assert done.target == "acme/docs#7"
    assert posts(state) == ["draft_notes"] * 7 + ["bulk_publish"]
    assert state.drafts == [] and len(state.discussions) == 7
    line = by_marker(state, ids["line"])
    assert line["position"]["new_line"] == 33 and "old_line" not in line["position"]
    assert (
        "```suggestion:-0+0\nAdd the plugin to mkdocs.yml, then reload the page.\n```"
        in line["body"]
    )
    # An unchanged line of the diff is placed by both its numbers.
    kept = by_marker(state, context.id)["position"]
    assert (kept["new_line"], kept["old_line"]) == (39, 35)
    assert by_marker(state, ids["span"])["position"]["new_line"] == 37
    assert by_marker(state, ids["outside"])["position"]["position_type"] == "file"
    assert by_marker(state, ids["page"])["position"] is None
    # Again: nothing twice.
    again = pullrequests.push(store, gitlab=url)
    assert again.sent == [] and len(again.already) == 7
    assert len(state.discussions) == 7 and posts(state).count("bulk_publish") == 1


def test_the_remote_host_picks_gitlab_and_approve(store: Any, gitlab: Any, repo: Path) -> None:
    state, url = gitlab
    git(repo, "remote", "set-url", "origin", "git@gitlab.example.com:acme/docs.git")
    add_notes(store)
    done = pullrequests.push(store, api_url=f"{url}/api/v4", event="approve")
    assert done.event == "APPROVE" and state.approvals == [7]
    # Found by its branch: GET …/merge_requests?source_branch=docs-fix&state=opened.
    assert any(q.startswith("source_branch=docs-fix") for _, _, q, _ in state.log)


def test_pull_replies_and_resolved_discussions(store: Any, gitlab: Any) -> None:
    state, url = gitlab
    ids = add_notes(store)
    pullrequests.push(store, gitlab=url)
    gitlab_api.reply(state, ids["page"], "A table of contents is in the theme.", "bob")
    gitlab_api.resolve(state, ids["outside"])
    done = pullrequests.pull(store, gitlab=url)
    assert done.replies == [
        {"note": ids["page"], "author": "bob", "remoteId": done.replies[0]["remoteId"]}
    ]
    assert done.addressed == [{"note": ids["outside"], "why": "thread resolved"}]
    page = store.get_page_note(ids["page"])
    assert [(r.author, r.message) for r in page.replies] == [
        ("bob (GitLab)", "A table of contents is in the theme.")
    ]
    again = pullrequests.pull(store, gitlab=url)
    assert again.replies == [] and again.addressed == []


def test_dry_run_and_errors_from_the_cli(
    store: Any, gitlab: Any, on: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    state, url = gitlab
    add_notes(store)
    dry = CliRunner().invoke(cli, ["pr", "push", "--gitlab", url, "--dry-run", *on])
    assert dry.exit_code == 0, dry.output
    requests = json.loads(dry.output)
    assert [r["url"].rsplit("/", 1)[-1] for r in requests] == ["draft_notes"] * 6 + ["bulk_publish"]
    assert TOKEN not in dry.output and state.drafts == []
    monkeypatch.setenv("GITLAB_TOKEN", "glpat-wrong")
    bad = CliRunner().invoke(cli, ["pr", "push", "--gitlab", url, *on])
    assert bad.exit_code == 1
    assert re.match(r"^Error: GitLab refused the token \(401: 401 Unauthorized\)", bad.output)
    monkeypatch.setenv("GITLAB_TOKEN", TOKEN)
    state.fault = (429, {"Retry-After": "12"})
    limited = CliRunner().invoke(cli, ["pr", "pull", "--gitlab", url, *on])
    assert limited.exit_code == 1
    assert limited.output.startswith("Error: GitLab's rate limit was reached (429): retry in 12 s;")
    state.fault = None
    missing = CliRunner().invoke(cli, ["pr", "push", "--gitlab", url, "--pr", "99", *on])
    assert missing.output.startswith("Error: GitLab knows no merge request !99 in acme/docs (404)")
    assert {a.status for a in store.list_annotations()} == {"open"}
    assert state.discussions == []


def test_the_agents_replies_go_to_the_discussion_once(store: Any, gitlab: Any) -> None:
    state, url = gitlab
    ids = add_notes(store)
    pullrequests.push(store, gitlab=url)
    store.add_agent_reply(ids["page"], "Added one.")
    done = pullrequests.push(store, gitlab=url)
    assert [r["note"] for r in done.replies] == [ids["page"]]
    d = next(d for d in state.discussions if f"annotate:{ids['page']} " in d["notes"][0]["body"])
    assert [n["body"].split("\n")[0] for n in d["notes"][1:]] == [
        "**the agent** (agent): Added one."
    ]
    assert pullrequests.push(store, gitlab=url).replies == []
    assert pullrequests.pull(store, gitlab=url).replies == []


def test_a_notes_screenshot_is_named_in_its_discussion(store: Any, gitlab: Any) -> None:
    # Named as on GitHub: the local server's link reaches no one on the host.
    state, url = gitlab
    ids = add_notes(store)
    shot = (Path(__file__).parent / "fixtures" / "screenshots" / "simple-lossy.webp").read_bytes()
    store.screenshots.attach(ids["line"], shot)
    pullrequests.push(store, gitlab=url)
    assert (
        f"Screenshot: `annotate screenshot {ids['line']}`" in by_marker(state, ids["line"])["body"]
    )
    assert "Screenshot:" not in by_marker(state, ids["span"])["body"]

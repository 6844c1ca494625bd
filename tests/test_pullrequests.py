"""`annotate pr push` / `pr pull` (issue #30) against an emulated GitHub API (tests/github_api.py)
on a real port, over a real git repository with a real branch and diff, with real notes in a
real store (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
import re
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import annotate
from annotate import pullrequests
from annotate.cli import cli
from annotate.pullrequests import hunks
from annotate.pullrequests.git import parse_remote

from .github_api import TOKEN, GitHubState, PullRequest, git, reply, serve

BACKENDS = ("sqlite", "postgresql")

FILLER = [f"Paragraph {i} says nothing new." for i in range(4, 30)]
MAIN = [
    "# Install",
    "",
    "Run pip install mkdocs-annotate in a shell.",
    *FILLER,
    "",
    "## Configure",
    "",
    "Add the plugin to mkdocs.yml and restart the server.",
    "",
    "That is all.",
]
# The branch's change: line 33 reworded, lines 34-37 added.
BRANCH = [
    *MAIN[:32],
    "Add the plugin to mkdocs.yml, then restart the server.",
    "This sentence is new and says nothing.",
    "",
    "A paragraph over",
    "two lines, also new.",
    *MAIN[33:],
]
OTHER = "# Other\n\nA page this pull request does not touch.\n"


def write(path: Path, lines: list[str]) -> None:
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository: `main` with the docs, branch `docs-fix` (checked out) changing them,
    its remote on github.com (never contacted: the API is the emulator)."""
    root = tmp_path / "docs-repo"
    (root / "docs" / "guide").mkdir(parents=True)
    (root / "mkdocs.yml").write_text("site_name: test\n")
    write(root / "docs" / "guide" / "install.md", MAIN)
    (root / "docs" / "other.md").write_text(OTHER)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "ada@example.com")
    git(root, "config", "user.name", "Ada")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "docs")
    git(root, "checkout", "-q", "-b", "docs-fix")
    write(root / "docs" / "guide" / "install.md", BRANCH)
    git(root, "commit", "-q", "-am", "reword")
    git(root, "remote", "add", "origin", "git@github.com:acme/docs.git")
    git(root, "config", "branch.docs-fix.remote", "origin")
    (root / ".gitignore").write_text(".annotate/\n")
    return root


@pytest.fixture
def github(repo: Path) -> Iterator[tuple[GitHubState, str]]:
    # Two items a page: every listing the client reads must follow `Link: rel="next"`.
    state = GitHubState(repo, pulls={7: PullRequest(7, "docs-fix", "main")}, per_page_max=2)
    with serve(state) as url:
        yield state, url


@pytest.fixture
def on(repo: Path, db_url: str | None) -> list[str]:
    """The CLI's options naming the test's project and store."""
    return ["--project", str(repo), *(["--db", db_url] if db_url else [])]


@pytest.fixture
def store(repo: Path, db_url: str | None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    s = annotate.open(repo, db=db_url)
    yield s
    s.close()


def text(
    exact: str, prefix: str, suffix: str, page: str = "/guide/install/", **more: Any
) -> dict[str, Any]:
    return {
        "type": "text",
        "pageUrl": page,
        "pageTitle": "Install",
        "note": more.pop("note", "Please look at this."),
        "selectedText": exact,
        "quote": {"exact": exact, "prefix": prefix, "suffix": suffix},
        **more,
    }


def add_notes(store: Any) -> dict[str, str]:
    """One note of each placement; their ids by role."""
    line = store.add_annotation(
        text(
            "then restart the server",
            "Add the plugin to mkdocs.yml, ",
            ".",
            note="Reloading is enough.",
            intent="replace",
            suggestion="then reload the page",
        )
    )
    gone = store.add_annotation(
        text("This sentence is new and says nothing.", "", "", note="", intent="delete")
    )
    outside = store.add_annotation(
        text("pip install mkdocs-annotate", "Run ", " in a shell", note="Mention pipx too.")
    )
    other = store.add_annotation(
        text(
            "does not touch",
            "A page this pull request ",
            ".",
            page="/other/",
            note="Say which pages it touches.",
        )
    )
    span = store.add_annotation(
        text("over two lines", "A paragraph ", ", also new.", note="One line is enough.")
    )
    page = store.add_page_note({"pageUrl": "/guide/install/", "note": "Add a table of contents."})
    assert span.source.lines == "docs/guide/install.md:36-37"
    assert line.source.lines == "docs/guide/install.md:33"
    assert gone.source.lines == "docs/guide/install.md:34"
    assert outside.source.lines == "docs/guide/install.md:3"
    return {
        "line": line.id,
        "gone": gone.id,
        "outside": outside.id,
        "other": other.id,
        "page": page.id,
        "span": span.id,
    }


def posts(state: GitHubState) -> list[str]:
    return [path for method, path, _, _ in state.log if method == "POST" and "graphql" not in path]


def by_marker(state: GitHubState, note: str) -> dict[str, Any]:
    return next(c for c in state.comments if f"<!-- annotate:{note} -->" in c["body"])


# -- push --------------------------------------------------------------------------------------


def test_push_posts_one_review_placed_by_the_diff(store: Any, github: Any) -> None:
    state, url = github
    ids = add_notes(store)
    done = pullrequests.push(store, api_url=url)
    # Found from the checkout: remote git@github.com:acme/docs.git, branch docs-fix.
    assert done.target == "acme/docs#7"
    assert (
        "GET",
        "/repos/acme/docs/pulls",
        "head=acme%3Adocs-fix&state=open",
        f"Bearer {TOKEN}",
    ) in state.log
    assert len(state.reviews) == 1 and state.reviews[0]["state"] == "COMMENTED"
    assert posts(state) == ["/repos/acme/docs/pulls/7/reviews", "/repos/acme/docs/pulls/7/comments"]
    placed = {s.note: s.placement for s in done.sent}
    assert placed == {
        ids["line"]: "line",
        ids["gone"]: "line",
        ids["outside"]: "file",
        ids["other"]: "body",
        ids["page"]: "body",
        ids["span"]: "line",
    }
    span = by_marker(state, ids["span"])
    assert (span["start_line"], span["line"]) == (36, 37)
    line = by_marker(state, ids["line"])
    assert (line["path"], line["line"], line["subject_type"]) == (
        "docs/guide/install.md",
        33,
        "line",
    )
    assert line["body"].startswith(
        "Reloading is enough.\n\n```suggestion\n"
        "Add the plugin to mkdocs.yml, then reload the page.\n```"
    )
    gone = by_marker(state, ids["gone"])
    assert gone["line"] == 34 and "```suggestion\n```" in gone["body"]
    outside = by_marker(state, ids["outside"])
    assert outside["subject_type"] == "file" and outside["line"] is None
    assert "**`docs/guide/install.md:3`**" in outside["body"]
    assert "> Run pip install mkdocs-annotate in a shell." in outside["body"]
    body = state.reviews[0]["body"]
    assert f"<!-- annotate:{ids['page']} -->" in body and "Add a table of contents." in body
    assert "**`docs/other.md:3`** (a file this pull request does not change)" in body
    # The notes are unchanged: still open, for the agent.
    assert {a.status for a in store.list_annotations()} == {"open"}


def test_push_again_posts_nothing_twice(store: Any, github: Any) -> None:
    state, url = github
    ids = add_notes(store)
    pullrequests.push(store, api_url=url)
    before = len(posts(state))
    again = pullrequests.push(store, api_url=url)
    assert again.sent == [] and sorted(again.already) == sorted(ids.values())
    assert len(posts(state)) == before and len(state.reviews) == 1
    # A new note goes alone.
    new = store.add_annotation(text("Paragraph 10", "", " says", note="Say something."))
    third = pullrequests.push(store, api_url=url)
    assert [s.note for s in third.sent] == [new.id]
    assert len(state.reviews) == 1  # a file-level comment needs no review
    assert sum(f"annotate:{new.id}" in c["body"] for c in state.comments) == 1


def test_a_push_cut_short_loses_nothing_and_repeats_nothing(store: Any, github: Any) -> None:
    state, url = github
    ids = add_notes(store)
    state.posts_left = 1  # the review is taken, the file-level comment hits the rate limit
    with pytest.raises(pullrequests.RateLimited, match=r"\(429\): retry in 60 s"):
        pullrequests.push(store, api_url=url)
    linked = store.pull_requests.links(pullrequests.Target(url, "acme/docs", 7))
    assert set(linked) == set(ids.values()) - {ids["outside"]}
    state.posts_left = None
    done = pullrequests.push(store, api_url=url)
    assert [s.note for s in done.sent] == [ids["outside"]]
    assert len(state.reviews) == 1
    assert sum(f"annotate:{ids['outside']}" in c["body"] for c in state.comments) == 1


@pytest.mark.sqlite_only
def test_notes_already_on_the_pull_request_are_found_by_their_marker(
    store: Any, github: Any
) -> None:
    # The host took the review but the links were never written (the process died between).
    state, url = github
    ids = add_notes(store)
    pullrequests.push(store, api_url=url)
    with store.db.conn:
        store.db.execute("DELETE FROM pr_links")
    before = len(posts(state))
    done = pullrequests.push(store, api_url=url)
    assert done.sent == [] and sorted(done.already) == sorted(ids.values())
    assert len(posts(state)) == before


def test_a_refused_line_comment_goes_as_a_file_comment(store: Any, github: Any) -> None:
    # GitHub's diff narrower at the post than the files read before (the pull request moved):
    # the review is refused for a context line; the push still posts every note, once.
    state, url = github
    state.review_context = 0
    ids = add_notes(store)
    context = store.add_annotation(text("That is all", "", ".", note="End with a link."))
    done = pullrequests.push(store, api_url=url)
    assert any("GitHub refused the line comments" in w for w in done.warnings)
    assert len(state.reviews) == 1
    demoted = by_marker(state, context.id)
    assert demoted["subject_type"] == "file" and "```text\n" not in demoted["body"]
    line = by_marker(state, ids["line"])
    assert line["subject_type"] == "file" and "```text\nAdd the plugin" in line["body"]
    assert sum(f"annotate:{context.id}" in c["body"] for c in state.comments) == 1
    assert set(store.pull_requests.links(pullrequests.Target(url, "acme/docs", 7))) == {
        *ids.values(),
        context.id,
    }


def test_the_emulator_refuses_a_whole_review_for_one_line_outside_the_diff(github: Any) -> None:
    # What `push` avoids by placing notes from the hunks first: GitHub's all-or-nothing 422.
    state, url = github
    import urllib.error
    import urllib.request

    head = git(state.repo, "rev-parse", "docs-fix")
    payload = {
        "commit_id": head,
        "event": "COMMENT",
        "body": "x",
        "comments": [
            {"path": "docs/guide/install.md", "line": 33, "side": "RIGHT", "body": "in"},
            {"path": "docs/guide/install.md", "line": 3, "side": "RIGHT", "body": "out"},
        ],
    }
    req = urllib.request.Request(
        f"{url}/repos/acme/docs/pulls/7/reviews",
        json.dumps(payload).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(req)
    assert refused.value.code == 422
    assert "must be part of the diff" in refused.value.read().decode()
    assert state.reviews == [] and state.comments == []


def test_event_from_the_option_and_from_a_decision(store: Any, github: Any) -> None:
    state, url = github
    add_notes(store)
    done = pullrequests.push(store, api_url=url, event="request-changes")
    assert done.event == "REQUEST_CHANGES" and state.reviews[0]["state"] == "CHANGES_REQUESTED"
    assert pullrequests.event_for("approve") == "APPROVE"
    assert pullrequests.event_for("approve_with_notes") == "APPROVE"
    assert pullrequests.event_for("request_changes") == "REQUEST_CHANGES"
    assert pullrequests.event_for(None) == "COMMENT"
    # Without --event, the verdict of the review sent last (issue #30 item 5).
    store.add_page_note({"pageUrl": "/guide/install/", "note": "Say which Python."})
    store.create_review({"mode": "edit", "decision": "request_changes"})
    assert store.reviews.latest_decision() == "request_changes"
    again = pullrequests.push(store, api_url=url)
    assert again.event == "REQUEST_CHANGES" and state.reviews[-1]["state"] == "CHANGES_REQUESTED"
    store.create_review({"mode": "edit", "decision": "approve"})
    assert store.reviews.latest_decision() == "approve"
    with pytest.raises(annotate.ValidationError, match="event must be one of"):
        pullrequests.push(store, api_url=url, event="merge")
    for bad in ("acme", "acme/docs/more", "../..", "acme/..", "acme/do cs"):
        with pytest.raises(annotate.ValidationError, match="--repo must be OWNER/NAME"):
            pullrequests.push(store, api_url=url, repo=bad, number=7)


def test_dry_run_prints_the_requests_sends_nothing_and_never_the_token(
    store: Any, github: Any, on: list[str]
) -> None:
    state, url = github
    ids = add_notes(store)
    result = CliRunner().invoke(cli, ["pr", "push", "--dry-run", "--api-url", url, *on])
    assert result.exit_code == 0, result.output
    assert TOKEN not in result.output
    requests = json.loads(result.output)
    assert [r["url"] for r in requests] == [
        f"{url}/repos/acme/docs/pulls/7/reviews",
        f"{url}/repos/acme/docs/pulls/7/comments",
    ]
    review = requests[0]["json"]
    assert review["event"] == "COMMENT" and len(review["comments"]) == 3
    assert requests[1]["json"]["subject_type"] == "file"
    assert f"annotate:{ids['outside']}" in requests[1]["json"]["body"]
    assert posts(state) == [] and state.reviews == []
    assert all(TOKEN not in query for _, _, query, _ in state.log)  # never in a URL


def test_push_from_the_cli(store: Any, github: Any, on: list[str]) -> None:
    url = github[1]
    add_notes(store)
    args = ["pr", "push", "--repo", "acme/docs", "--pr", "7", "--api-url", url, *on]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Posted 6 notes to acme/docs#7 (COMMENT).\n")
    assert ": file comment at docs/guide/install.md:3\n" in result.output
    again = CliRunner().invoke(cli, [*args, "--json"])
    data = json.loads(again.output)
    assert data["sent"] == [] and len(data["already"]) == 6


# -- pull --------------------------------------------------------------------------------------


def test_pull_brings_replies_and_resolutions_back_once(store: Any, github: Any, repo: Path) -> None:
    state, url = github
    ids = add_notes(store)
    pullrequests.push(store, api_url=url)
    first = by_marker(state, ids["line"])["id"]
    outside = by_marker(state, ids["outside"])["id"]
    reply(state, first, "Reload, really? The server restarts itself.", "bob")
    reply(state, outside, "Done in the next commit.", "carol")
    state.resolved.add(outside)
    done = pullrequests.pull(store, api_url=url)
    assert sorted((r["note"], r["author"]) for r in done.replies) == sorted(
        [(ids["line"], "bob"), (ids["outside"], "carol")]
    )
    assert done.addressed == [{"note": ids["outside"], "why": "thread resolved"}]
    line = store.get_annotation(ids["line"])
    assert [(r.role, r.author, r.message) for r in line.replies] == [
        ("reviewer", "bob (GitHub)", "Reload, really? The server restarts itself.")
    ]
    assert store.get_annotation(ids["outside"]).status == "addressed"
    assert store.get_annotation(ids["line"]).status == "open"
    # Idempotent.
    again = pullrequests.pull(store, api_url=url)
    assert again.replies == [] and again.addressed == []
    assert len(store.get_annotation(ids["line"]).replies) == 1
    # The suggestion applied on the branch: its note is addressed.
    write(
        repo / "docs" / "guide" / "install.md",
        [*BRANCH[:32], "Add the plugin to mkdocs.yml, then reload the page.", *BRANCH[33:]],
    )
    git(repo, "commit", "-q", "-am", "Apply suggestion from review")
    third = pullrequests.pull(store, api_url=url)
    assert third.addressed == [{"note": ids["line"], "why": "suggestion applied"}]
    assert store.get_annotation(ids["line"]).status == "addressed"


def test_pull_from_the_cli(store: Any, github: Any, on: list[str]) -> None:
    state, url = github
    ids = add_notes(store)
    pullrequests.push(store, api_url=url)
    reply(state, by_marker(state, ids["gone"])["id"], "Kept on purpose.", "bob")
    args = ["pr", "pull", "--api-url", url, *on]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert result.output == f"From acme/docs#7:\n{ids['gone']}: reply from bob\n"
    assert CliRunner().invoke(cli, args).output == "Nothing new on acme/docs#7.\n"


# -- errors: one line, exit 1, nothing lost --------------------------------------------------------


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("bad-token", r"^Error: GitHub refused the token \(401: Bad credentials\)"),
        ("no-pr", r"^Error: GitHub knows no pull request #99 in acme/docs \(404\)"),
        ("no-repo", r"^Error: GitHub knows no pull request #7 in acme/nope \(404\)"),
        ("rate-403", r"^Error: GitHub's rate limit was reached \(403\): retry in \d+ s;"),
        ("rate-429", r"^Error: GitHub's rate limit was reached \(429\): retry in 30 s;"),
        ("down", r"^Error: Cannot reach GitHub at http://127\.0\.0\.1:\d+ \("),
        ("no-token", r"^Error: No GitHub token: set GH_TOKEN or GITHUB_TOKEN"),
    ],
)
@pytest.mark.parametrize("verb", ["push", "pull"])
def test_errors_are_one_line_and_lose_nothing(
    store: Any,
    github: Any,
    repo: Path,
    on: list[str],
    monkeypatch: pytest.MonkeyPatch,
    verb: str,
    setup: str,
    message: str,
) -> None:
    import time

    state, url = github
    ids = add_notes(store)
    if verb == "pull":
        pullrequests.push(store, api_url=url)
        reply(state, by_marker(state, ids["line"])["id"], "A reply.", "bob")
    args = ["pr", verb, "--api-url", url, *on]
    if setup == "bad-token":
        monkeypatch.setenv("GH_TOKEN", "ghp_wrong")
    elif setup == "no-pr":
        args += ["--pr", "99"]
    elif setup == "no-repo":
        args += ["--repo", "acme/nope", "--pr", "7"]
    elif setup == "rate-403":
        reset = str(int(time.time()) + 120)
        state.fault = (403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": reset})
    elif setup == "rate-429":
        state.fault = (429, {"retry-after": "30"})
    elif setup == "down":
        args[3] = f"http://127.0.0.1:{closed_port()}"
    elif setup == "no-token":
        monkeypatch.delenv("GH_TOKEN")
        # git, and no gh to ask for a token.
        tools = repo.parent / "bin"
        tools.mkdir()
        (tools / "git").symlink_to(shutil.which("git") or "git")
        monkeypatch.setenv("PATH", str(tools))
    comments = len(state.comments)
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1
    assert re.match(message, result.output), result.output
    assert result.output.count("\n") == 1 and "Traceback" not in result.output
    assert "ghp_" not in result.output
    # Nothing lost: the notes as they were, nothing half-posted or half-pulled.
    assert {a.status for a in store.list_annotations()} == {"open"}
    assert all(not a.replies for a in store.list_annotations())
    assert len(state.comments) == comments


# -- the pure parts ------------------------------------------------------------------------------


def test_hunks_of_a_patch() -> None:
    patch = "@@ -30,7 +30,8 @@ x\n ctx\n-a\n+b\n@@ -50 +51 @@\n-c\n+d\n@@ -60,2 +62,0 @@\n-e\n-f\n"
    found = hunks.parse_patch(patch)
    assert found == [(30, 37), (51, 51)]
    assert hunks.inside(found, 33, 34) and not hunks.inside(found, 37, 51)
    assert hunks.parse_patch(None) == []


@pytest.mark.parametrize(
    ("url", "parsed"),
    [
        ("git@github.com:acme/docs.git", ("github.com", "acme/docs")),
        ("https://github.com/acme/docs", ("github.com", "acme/docs")),
        ("https://x-access-token:secret@GitHub.com/acme/docs.git", ("github.com", "acme/docs")),
        (
            "ssh://git@gitlab.example.com:2222/group/sub/docs.git",
            ("gitlab.example.com", "group/sub/docs"),
        ),
        ("/srv/git/docs.git", None),
    ],
)
def test_remote_urls(url: str, parsed: tuple[str, str] | None) -> None:
    assert parse_remote(url) == parsed


@pytest.mark.parametrize("verb", ["push", "pull"])
def test_each_command_is_one_library_call(
    store: Any, github: Any, on: list[str], verb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # tests/test_one_call.py's rule for the two commands that need the emulated host.
    url = github[1]
    real = getattr(pullrequests, verb)
    calls: list[dict[str, Any]] = []

    def recorded(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(pullrequests, verb, recorded)
    result = CliRunner().invoke(cli, ["pr", verb, "--api-url", url, "--pr", "7", *on])
    assert result.exit_code == 0, result.output
    assert len(calls) == 1 and calls[0]["number"] == 7 and calls[0]["api_url"] == url


def test_the_token_from_gh_when_the_environment_has_none(
    store: Any, github: Any, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GitHub's CLI stands in for the user's: an executable `gh` that answers `gh auth token`.
    state, url = github
    tools = repo.parent / "bin"
    tools.mkdir()
    (tools / "git").symlink_to(shutil.which("git") or "git")
    gh = tools / "gh"
    gh.write_text(f'#!/bin/sh\n[ "$1 $2" = "auth token" ] && echo {TOKEN}\n')
    gh.chmod(0o755)
    monkeypatch.delenv("GH_TOKEN")
    monkeypatch.setenv("PATH", str(tools))
    add_notes(store)
    done = pullrequests.push(store, api_url=url)
    assert len(done.sent) == 6
    assert {auth for *_, auth in state.log} == {f"Bearer {TOKEN}"}
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_from_the_environment")
    with pytest.raises(pullrequests.BadToken):
        pullrequests.push(store, api_url=url)  # the environment comes first


def test_pushing_again_with_an_event_posts_no_empty_review(store: Any, github: Any) -> None:
    state, url = github
    add_notes(store)
    pullrequests.push(store, api_url=url, event="approve")
    again = pullrequests.push(store, api_url=url, event="approve")
    assert again.sent == [] and again.review_id is None
    assert [r["state"] for r in state.reviews] == ["APPROVED"]


@pytest.mark.sqlite_only
def test_a_store_of_the_previous_version_gains_the_links(repo: Path) -> None:
    # A store written before pull requests (schema 11; 12 and 13 came after):
    # opening it adds the two tables.
    import sqlite3

    from annotate import schema

    annotate.open(repo).close()
    path = repo / ".annotate" / "annotations.db"
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE pr_links")
        conn.execute("DROP TABLE pr_replies")
        conn.execute("DROP TABLE review_sources")
        conn.execute("DROP TABLE line_versions")
        conn.execute("DELETE FROM schema_version WHERE version >= 11")
    conn.close()
    with annotate.open(repo) as store:
        assert store.schema_version == schema.LATEST
        target = pullrequests.Target("https://api.github.com", "acme/docs", 7)
        store.pull_requests.add(target, [pullrequests.Link("a_1", "line", "11")])
        assert store.pull_requests.links(target)["a_1"].comment_id == "11"


def test_the_agents_replies_go_to_the_pull_request_once(store: Any, github: Any) -> None:
    state, url = github
    ids = add_notes(store)
    pullrequests.push(store, api_url=url)
    first = by_marker(state, ids["line"])["id"]
    reply(state, first, "Why reload?", "bob")
    pullrequests.pull(store, api_url=url)
    store.add_agent_reply(ids["line"], "The server reloads by itself: reworded.")
    done = pullrequests.push(store, api_url=url)
    assert done.sent == [] and [r["note"] for r in done.replies] == [ids["line"]]
    answers = [c for c in state.comments if c["in_reply_to_id"] == first]
    # bob's reply, brought back by pull, is not posted back; the agent's is, once.
    assert [c["user"]["login"] for c in answers] == ["bob", "ada"]
    assert answers[1]["body"].startswith("**the agent** (agent): The server reloads by itself")
    again = pullrequests.push(store, api_url=url)
    assert again.replies == [] and len(state.comments) == 6
    # pull does not bring our own reply back
    assert pullrequests.pull(store, api_url=url).replies == []
    assert len(store.get_annotation(ids["line"]).replies) == 2


def test_a_redirect_to_another_host_never_carries_the_token(
    store: Any, github: Any, repo: Path
) -> None:
    state, url = github
    elsewhere = GitHubState(repo, pulls={7: PullRequest(7, "docs-fix", "main")})
    with serve(elsewhere) as other:
        state.moved_to = other.replace("127.0.0.1", "localhost")  # another origin
        with pytest.raises(pullrequests.BadToken):
            pullrequests.push(store, api_url=url, repo="acme/moved", number=7)
        # Same origin: followed with the token.
        state.moved_to = url
        done = pullrequests.push(store, api_url=url, repo="acme/moved", number=7, dry_run=True)
        assert done.target == "acme/moved#7"
    assert elsewhere.log and {auth for *_, auth in elsewhere.log} == {None}


def test_a_refusal_not_about_lines_stands(store: Any, github: Any, on: list[str]) -> None:
    # Approving one's own pull request: one line, exit 1, nothing posted in its stead.
    state, url = github
    state.pulls[7].user = "ada"
    add_notes(store)
    result = CliRunner().invoke(cli, ["pr", "push", "--event", "approve", "--api-url", url, *on])
    assert result.exit_code == 1
    assert result.output == (
        "Error: GitHub refused the request (422: Unprocessable Entity; "
        "Review Can not approve your own pull request)\n"
    )
    assert posts(state) == ["/repos/acme/docs/pulls/7/reviews"] and state.comments == []
    assert store.pull_requests.links(pullrequests.Target(url, "acme/docs", 7)) == {}


def test_page_notes_beyond_a_body_go_in_further_reviews(store: Any, github: Any) -> None:
    # GitHub refuses a review body over 65,536 characters (emulated): 8 page notes of 9,000.
    state, url = github
    ids = [
        store.add_page_note({"pageUrl": "/guide/install/", "note": f"{i} " + "word " * 1800}).id
        for i in range(8)
    ]
    done = pullrequests.push(store, api_url=url, event="request-changes")
    assert sorted(s.note for s in done.sent) == sorted(ids)
    assert [r["state"] for r in state.reviews] == ["CHANGES_REQUESTED", "COMMENTED"]
    assert all(len(r["body"]) <= 65536 for r in state.reviews)
    assert all(sum(f"annotate:{i} " in r["body"] for r in state.reviews) == 1 for i in ids)
    assert pullrequests.push(store, api_url=url).sent == []


def test_a_notes_screenshot_is_named_in_its_comment(store: Any, github: Any) -> None:
    # GitHub's review API takes no image: the comment says how to get it (issue #30 item 4).
    state, url = github
    ids = add_notes(store)
    shot = (Path(__file__).parent / "fixtures" / "screenshots" / "simple-lossy.webp").read_bytes()
    for role in ("line", "outside", "page"):
        store.screenshots.attach(ids[role], shot)
    pullrequests.push(store, api_url=url)
    line = f"Screenshot: `annotate screenshot {ids['line']}`\n\n<!-- annotate:{ids['line']} -->"
    assert by_marker(state, ids["line"])["body"].endswith(line)
    outside = by_marker(state, ids["outside"])["body"]
    assert outside.count("Screenshot: ") == 1
    assert f"Screenshot: `annotate screenshot {ids['outside']}`" in outside
    body = state.reviews[0]["body"]
    assert f"Screenshot: `annotate screenshot {ids['page']}`" in body
    # Only the notes with one.
    assert "Screenshot:" not in by_marker(state, ids["span"])["body"]
    assert f"annotate screenshot {ids['other']}" not in body

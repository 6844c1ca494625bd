"""The plan lane's commands and refusals (issue #29) and the verdict over CLI and REST (issue #30
item 5): `annotate setup --plan-gate`, `annotate hook plan`'s bad input and timeout, `annotate open`
refusing what it must not serve, `annotate plans`, `annotate send --decision`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

import annotate
from annotate import documents
from annotate.cli import cli
from annotate.web import create_app

from .conftest import text_note

ANNOTATE = Path(sys.executable).parent / "annotate"
PLAN_HOOK = {
    "matcher": "ExitPlanMode",
    "hooks": [{"type": "command", "command": "x hook plan", "timeout": 3060}],
}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    return folder


@pytest.fixture
def project(tmp_path: Path, home: Path) -> Path:
    root = tmp_path / "project"
    (root / "docs").mkdir(parents=True)
    (root / "mkdocs.yml").write_text("site_name: test\n")
    (root / "docs" / "index.md").write_text("# Home\n")
    (root / "plan.md").write_text("# A plan\n\nDo it.\n")
    return root


def invoke(project: Path, *args: str, code: int = 0) -> str:
    done = CliRunner().invoke(cli, [*args, "--project", str(project)])
    assert done.exit_code == code, done.output
    return done.output


# -- annotate setup --plan-gate ------------------------------------------------------------------


def test_setup_writes_the_plan_gate_and_uninstall_removes_only_it(project: Path) -> None:
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    theirs = {"matcher": "Bash", "hooks": [{"type": "command", "command": "check-bash"}]}
    settings.write_text(json.dumps({"hooks": {"PermissionRequest": [theirs]}, "model": "m"}))
    args = ("setup", "--agent", "claude", "--gate", "--plan-gate", "--command", "x")
    out = invoke(project, *args)
    assert f"wrote {settings}: plan gate (ExitPlanMode) for claude" in out
    data = json.loads(settings.read_text())
    assert data["hooks"]["PermissionRequest"] == [theirs, PLAN_HOOK]
    assert data["model"] == "m" and "Stop" in data["hooks"]
    assert f"unchanged {settings}: plan gate" in invoke(project, *args)
    assert json.loads(settings.read_text())["hooks"]["PermissionRequest"] == [theirs, PLAN_HOOK]

    out = invoke(project, "setup", "--agent", "claude", "--uninstall", "--plan-gate")
    assert out == f"removed {settings}: plan gate\n"
    data = json.loads(settings.read_text())
    assert data["hooks"]["PermissionRequest"] == [theirs]
    assert "Stop" in data["hooks"]  # the stop gate is another thing, left installed


def test_the_plan_gate_is_claude_codes_only(project: Path) -> None:
    out = invoke(project, "setup", "--agent", "codex", "--plan-gate", "--command", "x")
    assert "skipped" in out and "request_review" in out
    assert "PermissionRequest" not in (project / ".codex" / "config.toml").read_text()


def test_a_fresh_settings_file_goes_with_the_plan_gate(project: Path) -> None:
    invoke(project, "setup", "--agent", "claude", "--plan-gate", "--command", "x")
    settings = project / ".claude" / "settings.json"
    assert json.loads(settings.read_text()) == {"hooks": {"PermissionRequest": [PLAN_HOOK]}}
    invoke(project, "setup", "--agent", "claude", "--uninstall")
    assert not settings.exists()


# -- annotate hook plan: bad input, and a person who never answers -------------------------------


def hook(project: Path, stdin: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ANNOTATE), "hook", "plan", "--no-browser", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=project,
        timeout=60,
        env={**os.environ, "NO_COLOR": "1"},
    )


@pytest.mark.parametrize(
    ("stdin", "error"),
    [
        ("{not json", "Error: The hook's input is not JSON: Expecting property name"),
        ("[1]", "Error: The hook's input is not a JSON object"),
        (
            '{"tool_input": {"command": "ls"}}',
            "Error: The hook's input has no plan (tool_input.plan): register `annotate hook "
            "plan` for ExitPlanMode only",
        ),
        ('{"tool_input": {"plan": "  "}}', "Error: The hook's input has no plan"),
    ],
)
def test_bad_hook_input_is_one_line_and_exit_1(project: Path, stdin: str, error: str) -> None:
    done = hook(project, stdin)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.startswith(error) and done.stderr.count("\n") == 1


def test_no_decision_ends_at_the_timeout_with_a_clear_message(project: Path) -> None:
    payload = {"session_id": "s9", "cwd": str(project), "tool_input": {"plan": "# P\n\nGo.\n"}}
    done = hook(project, json.dumps(payload), "--timeout", "0.5")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert list(answer) == ["systemMessage"]
    assert answer["systemMessage"].startswith("annotate: no decision on the plan within 0.5 s")
    lines = done.stderr.splitlines()
    assert lines[0].startswith("Review revision 1 of session:s9 at http://127.0.0.1:")
    assert lines[1] == "No decision within 0.5 s: Claude Code asks as usual."
    with annotate.open(project) as store:
        [plan] = store.plans.list()
    assert plan.latest.decision is None and plan.latest.markdown == "# P\n\nGo.\n"
    # The plan's text is in the store's folder, not among the project's files.
    assert (project / ".annotate" / "plans" / f"{plan.id}.md").read_text() == "# P\n\nGo.\n"


# -- annotate open: what it refuses ---------------------------------------------------------------


def refused(project: Path, path: str | Path) -> str:
    done = CliRunner().invoke(
        cli, ["open", str(path), "--no-browser", "--timeout", "5", "--project", str(project)]
    )
    assert done.exit_code == 1, done.output
    assert done.output.count("\n") == 1 and done.output.startswith("Error: ")
    with pytest.raises(documents.DocumentRefused):
        documents.read_document(project, path)
    return done.output


def test_open_refuses_a_file_outside_the_project(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("# Secret\n")
    assert "is outside the project" in refused(project, outside)
    assert "is outside the project" in refused(project, project / ".." / "outside.md")


def test_open_refuses_a_symlink_out_of_the_project(project: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.md").write_text("# Secret\n")
    (project / "link.md").symlink_to(tmp_path / "secret.md")
    assert "through a symlink" in refused(project, project / "link.md")


def test_open_refuses_non_utf8_oversized_and_no_file(project: Path) -> None:
    (project / "latin1.md").write_bytes("# Caf\xe9\n".encode("latin-1"))
    assert "is not UTF-8 text" in refused(project, project / "latin1.md")
    (project / "big.md").write_text("x" * (documents.MAX_DOCUMENT_BYTES + 1))
    assert "the most a reviewed file may be is 1,000,000" in refused(project, project / "big.md")
    assert "is not a file" in refused(project, project / "docs")
    assert "is not a file" in refused(project, project / "missing.md")
    with annotate.open(project) as store:
        assert store.plans.list() == []  # nothing was stored, nothing served


def test_rendering_keeps_raw_html_as_text() -> None:
    html = documents.render("# T\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1))\n")
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert 'href="javascript:' not in html
    body = documents.render("- [x] done\n\n!!! note\n    Hi\n\n```python\nx = 1\n```\n")
    assert 'type="checkbox"' in body and "admonition" in body and "<span" in body


def test_the_word_diff_marks_insertions_and_deletions() -> None:
    html, added, removed = documents.word_diff_html("drop the <b> table", "keep the <b> table")
    assert html == "<del>drop</del><ins>keep</ins> the &lt;b&gt; table"
    assert (added, removed) == (1, 1)


def test_the_word_diff_folds_long_unchanged_passages() -> None:
    same = " ".join(f"w{i}" for i in range(100))
    old, new = f"# T\n\n{same}\n\nold end\n", f"# T\n\n{same}\n\nnew end\n"
    html, added, removed = documents.word_diff_html(old, new, context=5)
    assert '<details class="fold"><summary>… ' in html and " unchanged</summary>" in html
    assert html.endswith("<del>old</del><ins>new</ins> end\n") and (added, removed) == (1, 1)
    text = documents.word_diff_text(old, new, context=5)
    assert text is not None and " … " in text and text.endswith("[-old-]{+new+} end\n")
    assert documents.word_diff_text(old, old) is None


# -- annotate plans, plans show --------------------------------------------------------------------


def test_plans_and_plans_show(project: Path) -> None:
    with annotate.open(project) as store:
        first = store.plans.submit("session:a", "# P\n\nStep one.\n", title="P")
        store.plans.decide(first.plan_id, 1, "request_changes", "More detail")
        store.plans.submit("session:a", "# P\n\nStep one, in detail.\n")
    out = invoke(project, "plans")
    assert out == f"{first.plan_id}  session:a  2 revisions, last 2: waiting  (P)\n"
    shown = invoke(project, "plans", "show", first.plan_id)
    assert "  revision 1  " in shown and 'request_changes "More detail"' in shown
    assert "Changes since revision 1:\n" in shown and "{+, in detail+}" in shown
    assert shown.endswith("Revision 2:\n# P\n\nStep one, in detail.\n\n")
    data = json.loads(invoke(project, "plans", "show", first.plan_id, "--revision", "1", "--json"))
    assert data["shown"]["number"] == 1 and "changes" not in data
    assert invoke(project, "plans", "show", "pl_0000000000", code=1) == (
        'Error: Plan with ID "pl_0000000000" not found\n'
    )


# -- the verdict on a review (issue #30 item 5) ---------------------------------------------------


def test_send_with_a_decision_and_review_shows_it(project: Path) -> None:
    with annotate.open(project) as store:
        store.add_annotation(text_note())
    out = invoke(project, "send", "--decision", "request_changes", "-m", "Redo", "--json")
    sent = json.loads(out)
    assert sent["decision"] == "request_changes"
    shown = invoke(project, "review", sent["id"])
    assert "\ndecision: request_changes\n" in shown
    assert json.loads(invoke(project, "review", sent["id"], "--json"))["decision"] == (
        "request_changes"
    )
    assert "Invalid value for '--decision'" in invoke(
        project, "send", "--decision", "maybe", code=2
    )


def test_the_rest_api_takes_and_answers_a_decision(project: Path) -> None:
    with annotate.open(project) as store:
        app = create_app(store, token="t0123456789abcdef")
        with TestClient(
            app, base_url="http://127.0.0.1:8000", headers={"X-Annotate-Token": "t0123456789abcdef"}
        ) as client:
            made = client.post("/__annotate/api/reviews", json={"decision": "approve"})
            assert made.status_code == 201 and made.json()["decision"] == "approve"
            got = client.get(f"/__annotate/api/reviews/{made.json()['id']}")
            assert got.json()["decision"] == "approve"
            listed = client.get("/__annotate/api/reviews").json()["reviews"]
            assert [r["decision"] for r in listed] == ["approve"]
            bad = client.post("/__annotate/api/reviews", json={"decision": "ok"})
            assert bad.status_code == 400 and bad.json()["code"] == "invalid"
            spec = client.get("/__annotate/openapi.json").json()["components"]["schemas"]
            assert spec["Review"]["properties"]["decision"]["anyOf"][0]["enum"] == [
                "approve",
                "approve_with_notes",
                "request_changes",
            ]
            assert "decision" in spec["ReviewInput"]["properties"]


# -- request_review over MCP, with the SDK's client (issue #29) -----------------------------------


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_request_review_over_mcp(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent puts a plan up with request_review and waits; the reviewer, at the address the
    browser was sent to, makes a note on the served page and sends "request changes" through
    the page's API (what the overlay does); the tool answers the verdict and the note."""
    import re
    import threading

    import httpx
    from mcp import Client

    from annotate import plangate
    from annotate.mcp_server import build_server

    plan = "# Deploy\n\nStep one: build.\nStep two: push to production on Friday.\n"
    people: list[threading.Thread] = []
    seen: dict[str, str] = {}

    def reviewer(url: str) -> None:
        page = httpx.get(url)
        seen["page"] = page.text
        config = re.search(r'id="annotate-config"[^>]*>(.*?)</script>', page.text)
        assert config is not None
        token = json.loads(config.group(1))["token"]
        base = url.split("/_annotate_plans/")[0]
        path = "/" + url.split("/", 3)[3]
        headers = {"X-Annotate-Token": token}
        made = httpx.post(
            f"{base}/__annotate/api/annotations",
            headers=headers,
            json=text_note(
                pageUrl=path,
                pageTitle="Deploy",
                intent="replace",
                suggestion="on Tuesday",
                note="Never on a Friday",
                selectedText="on Friday",
                quote={"exact": "on Friday", "prefix": "push to production ", "suffix": "."},
                position={"start": 40, "end": 49},
            ),
        )
        assert made.status_code == 201, made.text
        sent = httpx.post(
            f"{base}/__annotate/api/reviews",
            headers=headers,
            json={"decision": "request_changes", "message": "Pick another day."},
        )
        assert sent.status_code == 201, sent.text

    def browser(url: str) -> bool:
        seen["url"] = url
        people.append(threading.Thread(target=reviewer, args=(url,)))
        people[-1].start()
        return True

    monkeypatch.delenv(plangate.NO_BROWSER_ENV, raising=False)
    monkeypatch.setattr(plangate.webbrowser, "open", browser)
    async with Client(build_server(project)) as client:
        result = await client.call_tool("request_review", {"markdown": plan, "timeout_s": 60})
        for p in people:
            p.join()
        assert not result.is_error, result.content
        answer = json.loads(result.content[0].text)  # type: ignore[union-attr]
        bad = await client.call_tool("request_review", {"timeout_s": 1})
        assert bad.is_error
        assert "Give either path" in bad.content[0].text  # type: ignore[union-attr]
        outside = await client.call_tool("request_review", {"path": "/etc/passwd"})
        assert outside.is_error
        assert "outside the project" in outside.content[0].text  # type: ignore[union-attr]
    assert "<h1>Deploy</h1>" in seen["page"]
    assert (answer["revision"], answer["decision"], answer["message"]) == (
        1,
        "request_changes",
        "Pick another day.",
    )
    [note] = answer["notes"]
    assert note["intent"] == "replace" and note["suggestion"] == "on Tuesday"
    assert note["at"].endswith(".md:4")  # the plan's line 4
    assert '1. [replace] line 4: "on Friday"' in answer["instructions"]
    assert answer["url"] == seen["url"]


# -- annotate export --html ------------------------------------------------------------------------


def test_export_html_is_one_self_contained_file(project: Path, tmp_path: Path) -> None:
    with annotate.open(project) as store:
        first = store.plans.submit("session:x", "# P <b>bold</b>\n\nDrop the table.\n")
        store.plans.decide(first.plan_id, 1, "request_changes", "<i>no</i>")
        store.plans.submit("session:x", "# P <b>bold</b>\n\nKeep the table.\n")
        url = f"{documents.PLANS_PREFIX}{first.plan_id}/"
        made = store.add_annotation(
            text_note(
                pageUrl=url,
                note="<script>alert(1)</script>",
                selectedText="Keep",
                quote={"exact": "Keep", "suffix": " the table"},
            )
        )
        store.add_agent_reply(made.id, "Done </li><img src=x>")
    out = tmp_path / "share.html"
    assert invoke(project, "export", "--html", str(out)) == f"Wrote {out}\n"
    html = out.read_text()
    assert "<script" not in html and "<img" not in html and "<b>bold" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "Done &lt;/li&gt;&lt;img src=x&gt;" in html
    assert "&lt;i&gt;no&lt;/i&gt;" in html  # the message of revision 1
    assert "<del>Drop</del><ins>Keep</ins>" in html
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    # Nothing to fetch: no URL of any resource in it.
    import re

    assert re.findall(r'(?:src|href)="([^"]*)"', html) == ["data:,"]  # the empty favicon
    assert "http:" not in html and "https:" not in html
    assert invoke(project, "export", "--html", str(out), "--plan", "pl_0000000000", code=1)


@pytest.mark.anyio
async def test_request_review_of_a_project_file_times_out_cleanly(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A path is the project's (the server may run elsewhere); no verdict: decision null, and
    asking again waits on the same revision."""
    from mcp import Client

    from annotate.mcp_server import build_server

    monkeypatch.setenv("ANNOTATE_NO_BROWSER", "1")
    async with Client(build_server(project)) as client:
        first = await client.call_tool("request_review", {"path": "plan.md", "timeout_s": 0.3})
        again = await client.call_tool("request_review", {"path": "plan.md", "timeout_s": 0.3})
    answers = [json.loads(r.content[0].text) for r in (first, again)]  # type: ignore[union-attr]
    for answer in answers:
        assert answer["decision"] is None and answer["notes"] == []
        assert answer["url"].endswith("/_annotate_files/plan.md/")
        assert "call request_review again" in answer["instructions"]
    assert answers[0]["revision"] == answers[1]["revision"] == 1
    assert answers[0]["planId"] == answers[1]["planId"]


def test_the_document_page_keeps_the_review_servers_guard(project: Path) -> None:
    """The page's server is `annotate serve`'s app: no token, a foreign Origin or Host, and
    nothing is decided; a review sent with the token decides the revision served."""
    import httpx

    from annotate.docserver import deciding, serve_document
    from annotate.tokens import TokenFile

    with annotate.open(project) as store:
        revision, page_url, source = plangate_submit(store)
        served = serve_document(
            store, {page_url: ("<html><body><main>x</main></body></html>", source)},
            page_url=page_url, on_review=deciding(store, revision),
        )  # fmt: skip
        try:
            api = served.url.split("/_annotate")[0] + "/__annotate/api/reviews"
            body = {"decision": "approve"}
            assert httpx.post(api, json=body).status_code in (401, 403)
            token = {"X-Annotate-Token": TokenFile(project)()}
            evil = {**token, "Origin": "http://evil.example"}
            assert httpx.post(api, json=body, headers=evil).status_code == 403
            host = {**token, "Host": "evil.example"}
            assert httpx.post(api, json=body, headers=host).status_code in (400, 403, 421)
            assert store.plans.get(revision.plan_id).latest.decision is None
            ok = httpx.post(api, json=body, headers=token)
            assert ok.status_code == 201 and ok.json()["decision"] == "approve"
            assert store.plans.get(revision.plan_id).latest.decision == "approve"
        finally:
            served.stop()


def plangate_submit(store: annotate.Store) -> tuple[object, str, str]:
    from annotate import plangate

    return plangate.submit_text(store, "session:g", "# G\n\nGo.\n")  # type: ignore[return-value]

"""The `annotate` command, through click's CliRunner, with exact output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import annotate
from annotate.cli import cli
from annotate.store import Store

from .conftest import element_note, text_note

FIXTURE = Path(__file__).parent / "fixtures" / "inline-review.json"


@pytest.fixture
def run(store: Store):  # type: ignore[no-untyped-def]
    runner = CliRunner()

    def invoke(*args: str, code: int = 0, stdout: bool = False) -> str:
        result = runner.invoke(cli, [*args, "--project", str(store.project_dir)])
        assert result.exit_code == code, result.output
        return result.stdout if stdout else result.output

    return invoke


def test_list_human(store: Store, run) -> None:  # type: ignore[no-untyped-def]
    a = store.add_annotation(text_note())
    e = store.add_annotation(element_note(intent="delete"))
    store.add_agent_reply(a.id, "On it")
    store.add_reply(a.id, "Thanks", role="reviewer")
    store.conn.execute(
        "UPDATE annotations SET source_path='docs/guide/install.md', source_line_start=45, "
        "source_line_end=47 WHERE id=?",
        (a.id,),
    )
    assert run("list") == (
        "2 notes (status=open,in_progress,addressed):\n"
        "\n"
        f"[{a.id}] /guide/install/ docs/guide/install.md:45-47 (status=open, anchor=anchored)\n"
        '  quote: "pip install mkdocs-annotate"\n'
        '  "Mention pipx as well."\n'
        "  2 replies, last reply from: reviewer\n"
        "\n"
        f"[{e.id}] /guide/install/ (status=open, anchor=orphaned, intent=delete)\n"
        "  element: article img:nth-of-type(2)\n"
        '  "This screenshot is out of date."\n'
        "  0 replies\n"
    )
    # A page with no notes says so, naming the closest pages with notes (issue #14).
    assert run("list", "--page", "/nowhere/") == (
        "No notes on page /nowhere/. Pages with notes closest to it: /guide/install/.\n"
        "No notes (status=open,in_progress,addressed, page=/nowhere/).\n"
    )
    # Every way of writing the page's address finds it.
    for page in ("/guide/install", "guide/install/", "/guide/install/index.html",
                 "http://127.0.0.1:8000/guide/install/"):  # fmt: skip
        assert run("list", "--page", page).startswith("2 notes"), page


def test_list_filters_and_json(store: Store, run) -> None:  # type: ignore[no-untyped-def]
    a = store.add_annotation(text_note())
    b = store.add_annotation(element_note())
    store.accept(b.id)
    data = json.loads(run("list", "--json"))
    assert [x["id"] for x in data] == [a.id]
    # Absent optional fields are left out (issue #14).
    full = store.get_annotation(a.id).to_dict()
    assert data[0] == {k: v for k, v in full.items() if v is not None and v != []}
    assert [x["id"] for x in json.loads(run("list", "--json", "--all"))] == [a.id, b.id]
    assert [x["id"] for x in json.loads(run("list", "--json", "--status", "resolved"))] == [b.id]
    assert json.loads(run("list", "--json", "--type", "element")) == []
    assert "Invalid value for '--status'" in run("list", "--status", "done", code=2)


def test_get_human(store: Store, run) -> None:  # type: ignore[no-untyped-def]
    a = store.add_annotation(text_note(intent="replace", suggestion="pipx install mkdocs-annotate"))
    store.add_agent_reply(a.id, "Done")
    item = store.get_annotation(a.id)
    assert run("get", a.id) == (
        f"[{a.id}] text annotation on /guide/install/ (Install)\n"
        "status: open\n"
        "anchor: anchored\n"
        'quote: "pip install mkdocs-annotate"\n'
        "intent: replace\n"
        "note:\n"
        "  Mention pipx as well.\n"
        "suggestion:\n"
        "  pipx install mkdocs-annotate\n"
        f"created: {item.created_at}, updated: {item.updated_at}\n"
        "replies (1):\n"
        f"  [agent {item.replies[0].created_at}] Done\n"
    )
    got = json.loads(run("get", a.id, "--json"))
    assert got == annotate.models.lean(item.to_dict())
    assert "author" not in got["replies"][0] and "addressedAt" not in got


def test_agent_workflow(store: Store, run) -> None:  # type: ignore[no-untyped-def]
    a = store.add_annotation(text_note())
    assert run("start", a.id) == f"Started {a.id} (status: in_progress)\n"
    assert run("target", a.id, "pipx install mkdocs-annotate") == f"Updated the target of {a.id}\n"
    assert run("address", a.id) == f"Addressed {a.id} (status: addressed)\n"
    assert run("reply", a.id, "Switched to pipx.") == (
        f"Replied to {a.id} as agent (1 reply, last reply from: agent)\n"
    )
    assert run("reply", a.id, "-m", "And fixed the link.") == (
        f"Replied to {a.id} as agent (2 replies, last reply from: agent)\n"
    )
    got = store.get_annotation(a.id)
    assert got.status == "addressed"
    assert got.replaced_text == "pipx install mkdocs-annotate"
    assert [r.message for r in got.replies] == ["Switched to pipx.", "And fixed the link."]
    assert run("reopen", a.id, "--note", "Keep pip too.") == f"Reopened {a.id} (status: open)\n"
    assert run("accept", a.id) == f"Accepted {a.id} (status: resolved)\n"
    # Errors stay one line on stderr, also with --json.
    assert run("address", a.id, "--json", code=1) == (
        f'Error: Cannot address: annotation "{a.id}" is resolved; reopen it first\n'
    )


def test_errors_are_one_line_exit_1(store: Store) -> None:
    runner = CliRunner()
    project = str(store.project_dir)
    a = store.add_annotation(element_note())
    cases = [
        (["get", "abc123"], 'Error: Annotation with ID "abc123" not found\n'),
        (["start", "abc123"], 'Error: Annotation with ID "abc123" not found\n'),
        (["reply", a.id, "  "], "Error: Reply message must not be empty\n"),
        (["address", a.id, "--replaced-text", ""], "Error: replacedText must not be empty\n"),
        (["address", a.id, "--replaced-text", "x"], "Error: not a text annotation\n"),
        (["reopen", a.id], f'Error: Annotation "{a.id}" is open; only addressed or resolved items can be reopened\n'),
        (["import", "/nonexistent.json"], "Error: /nonexistent.json does not exist\n"),
    ]  # fmt: skip
    for args, message in cases:
        result = runner.invoke(cli, [*args, "--project", project])
        assert (result.exit_code, result.stderr, result.stdout) == (1, message, ""), args


def test_usage_errors_exit_2(store: Store, run) -> None:  # type: ignore[no-untyped-def]
    assert "Missing argument 'ID'" in run("get", code=2)
    assert "Say what to purge: annotate purge --resolved" in run("purge", code=2)
    assert "Give the reply as an argument or with --message" in run("reply", "a_x", code=2)
    assert "No such command" in CliRunner().invoke(cli, ["frobnicate"]).output


def test_corrupt_database_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.db"
    bad.write_text("not sqlite")
    result = CliRunner().invoke(cli, ["list", "--db", str(bad)])
    assert result.exit_code == 1
    assert (
        result.stderr
        == f"Error: {bad} is not a readable annotation database (not an SQLite database)\n"
    )
    assert bad.read_text() == "not sqlite"


def test_db_option_uses_that_file(tmp_path: Path) -> None:
    db = tmp_path / "elsewhere.db"
    s = Store(db)
    a = s.add_annotation(text_note())
    result = CliRunner().invoke(cli, ["list", "--json", "--db", str(db)])
    assert [x["id"] for x in json.loads(result.output)] == [a.id]


def test_notes(store: Store, run) -> None:  # type: ignore[no-untyped-def]
    n = store.add_page_note({"pageUrl": "/guide/", "note": "Split this page."})
    assert run("notes") == (
        "1 page note (status=open,in_progress,addressed):\n"
        "\n"
        f"[{n.id}] /guide/ (page note, status=open)\n"
        '  "Split this page."\n'
        "  0 replies\n"
    )
    assert [x["id"] for x in json.loads(run("notes", "--json", "--page", "/guide/"))] == [n.id]
    assert json.loads(run("notes", "--json", "--page", "/other/", stdout=True)) == []


def test_delete(store: Store, run) -> None:  # type: ignore[no-untyped-def]
    a = store.add_annotation(text_note())
    n = store.add_page_note({"pageUrl": "/", "note": "x"})
    assert run("delete", a.id) == f"Deleted {a.id}\n"
    assert json.loads(run("delete", n.id, "--json")) == {"deleted": n.id}
    with pytest.raises(annotate.AnnotationNotFound):
        store.get_annotation(a.id)


def test_summary(store: Store, run) -> None:  # type: ignore[no-untyped-def]
    assert run("summary") == (
        "0 items waiting for the agent on 0 pages.\n"
        "annotations: 0 open, 0 in progress, 0 addressed, 0 resolved\n"
        "page notes: 0 open, 0 in progress, 0 addressed, 0 resolved\n"
        "anchors: 0 anchored, 0 stale, 0 orphaned, 0 removed\n"
    )
    a = store.add_annotation(text_note())
    store.add_page_note({"pageUrl": "/b/", "note": "x"})
    store.set_in_progress(a.id)
    store.create_review({"mode": "edit"})
    assert run("summary") == (
        "2 items waiting for the agent on 2 pages.\n"
        "annotations: 0 open, 1 in progress, 0 addressed, 0 resolved\n"
        "page notes: 1 open, 0 in progress, 0 addressed, 0 resolved\n"
        "anchors: 1 anchored, 0 stale, 0 orphaned, 0 removed\n"
        "1 review sent to the agent and not picked up yet.\n"
    )
    assert json.loads(run("summary", "--json")) == store.summary().to_dict()


def test_export(store: Store, run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    a = store.add_annotation(text_note())
    out = run("export")
    assert out.startswith("# Review feedback\n")
    assert f"(id: `{a.id}`)" in out
    assert json.loads(run("export", "--json"))["format"] == "mkdocs-annotate"
    assert json.loads(run("export", "--format", "w3c"))["type"] == "AnnotationCollection"
    target = tmp_path / "feedback.md"
    run("export", "-o", str(target))
    assert target.read_text().startswith("# Review feedback\n")


def test_import_and_purge(store: Store, run) -> None:  # type: ignore[no-untyped-def]
    assert run("import", str(FIXTURE)) == (
        f"Imported 4 annotations, 1 page notes, 3 replies from {FIXTURE} (0 already present)\n"
    )
    assert json.loads(run("import", str(FIXTURE), "--json"))["skipped"] == 8
    assert run("purge", "--resolved") == "Purged 1 resolved item\n"
    assert json.loads(run("purge", "--resolved", "--json")) == {"purged": 0}


def test_help_lists_every_command() -> None:
    out = CliRunner().invoke(cli, ["--help"]).output
    for name in ("list", "get", "start", "address", "target", "reply", "accept", "reopen", "delete",
                 "notes", "export", "import", "summary", "purge"):  # fmt: skip
        assert f"  {name} " in out, name


def test_newer_database_is_one_line(tmp_path: Path) -> None:
    import sqlite3

    from annotate import schema

    db = tmp_path / "new.db"
    Store(db).close()
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO schema_version VALUES (?, 'later')", (schema.LATEST + 1,))
    conn.commit()
    conn.close()
    result = CliRunner().invoke(cli, ["summary", "--db", str(db)])
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"Error: {db} was written by a newer mkdocs-annotate")


def test_version() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert result.output == f"annotate, version {annotate.__version__}\n"

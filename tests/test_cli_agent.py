"""The agent's CLI commands (issue #7): context, wait, reviews, review — each one library call,
through click's CliRunner with exact output."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import annotate
from annotate import agents
from annotate.cli import cli
from annotate.context import get_context

from .conftest import element_note, text_note, write_project

INSTALL_MD = """\
# Install

Some words first.

Run pip install mkdocs-annotate in a shell.

## Next

Then add the plugin.
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_project(tmp_path, INSTALL_MD)


@pytest.fixture
def store(project: Path) -> annotate.Store:
    s = annotate.open(project)
    yield s
    s.close()


@pytest.fixture
def run(project: Path):  # type: ignore[no-untyped-def]
    runner = CliRunner()

    def invoke(*args: str, code: int = 0) -> str:
        result = runner.invoke(cli, [*args, "--project", str(project)])
        assert result.exit_code == code, result.output
        return result.output

    return invoke


def test_context(store: annotate.Store, run) -> None:  # type: ignore[no-untyped-def]
    a = store.add_annotation(text_note())
    assert run("context", a.id, "--lines", "2") == (
        f"[{a.id}] text note on /guide/install/ — docs/guide/install.md:5 "
        "(status: open, anchor: anchored)\n"
        "intent: comment: do what the note says; a question gets a reply and no edit, then is "
        "addressed\n"
        "note: Mention pipx as well.\n"
        "quote: pip install mkdocs-annotate\n"
        "\n"
        "docs/guide/install.md, lines 3-7 (> marks the note's lines):\n"
        "  3 | Some words first.\n"
        "  4 |\n"
        "> 5 | Run pip install mkdocs-annotate in a shell.\n"
        "  6 |\n"
        "  7 | ## Next\n"
    )
    data = json.loads(run("context", a.id, "--json"))
    assert data == annotate.models.lean(get_context(store, a.id).to_dict())
    assert (data["firstLine"], data["lastLine"], data["lineStart"]) == (1, 9, 5)
    assert run("context", "a_nope", code=1) == 'Error: Annotation with ID "a_nope" not found\n'
    assert "--lines" in run("context", a.id, "--lines", "-1", code=2)


def test_context_warnings(project: Path, store: annotate.Store, run) -> None:  # type: ignore[no-untyped-def]
    a = store.add_annotation(text_note())
    e = store.add_annotation(element_note())
    out = run("context", e.id, "--lines", "0")
    assert out.endswith(
        "warning: An element annotation points at the rendered page (article "
        "img:nth-of-type(2)), not at Markdown lines: find the element in docs/guide/install.md. "
        "The top of the file is shown.\n"
        "\n"
        "docs/guide/install.md, lines 1-1:\n"
        "  1 | # Install\n"
    )
    (project / "docs" / "guide" / "install.md").unlink()
    out = run("context", a.id)
    assert (
        f"[{a.id}] text note on /guide/install/ — docs/guide/install.md "
        "(status: open, anchor: orphaned)" in out
    )
    assert out.endswith(
        "warning: The Markdown file docs/guide/install.md is gone (orphaned): find where the text "
        "moved before acting, or ask the reviewer.\n"
    )


def test_wait_takes_a_pending_review(store: annotate.Store, run) -> None:  # type: ignore[no-untyped-def]
    a = store.add_annotation(text_note())
    review = store.create_review({"mode": "edit", "message": "Please fix"})
    out = run("wait", "--timeout", "5")
    picked = store.get_review(review.id)
    assert picked.status == "picked_up"
    assert out == (
        f"Review {review.id} (edit mode, picked_up), sent {review.created_at}:\n"
        'message: "Please fix"\n' + agents.mode_instructions("edit", agents.CLI) + "\n\n"
        "Notes 1-1 of 1:\n"
        f"[{a.id}] docs/guide/install.md:5 (text, comment)\n"
        '  quote: "pip install mkdocs-annotate"\n'
        '  note: "Mention pipx as well."\n'
    )
    assert "`annotate start ID` → edit the Markdown" in out
    timed_out = run("wait", "--timeout", "0")
    assert timed_out == (
        "No review yet: the reviewer has not pressed Send to agent within 0 s. Run "
        "`annotate wait` again to keep waiting, or look at the open notes with `annotate list`.\n"
    )
    assert json.loads(run("wait", "--timeout", "0", "--json"))["review"] is None


def test_wait_blocks_until_sent(project: Path, store: annotate.Store, run) -> None:  # type: ignore[no-untyped-def]
    store.add_annotation(text_note())
    sent: list[float] = []

    def send() -> None:
        time.sleep(0.5)
        with annotate.open(project) as other:
            other.create_review({"mode": "review"})
        sent.append(time.monotonic())

    sender = threading.Thread(target=send)
    started = time.monotonic()
    sender.start()
    data = json.loads(run("wait", "--timeout", "20", "--json"))
    woke = time.monotonic()
    sender.join()
    assert woke - started >= 0.5 and woke - sent[0] < 1.0
    assert data["review"]["mode"] == "review"
    assert data["instructions"].startswith("Review mode:")
    assert "`annotate reply ID MESSAGE`" in data["instructions"]


def test_reviews_and_review(store: annotate.Store, run) -> None:  # type: ignore[no-untyped-def]
    assert run("reviews") == "No reviews.\n"
    store.add_annotation(text_note())
    store.add_page_note({"pageUrl": "/", "note": "Whole page"})
    first = store.create_review({"mode": "edit", "message": "Round one"})
    second = store.create_review({"mode": "review", "message": "Just a question"})
    store.claim_review()
    assert run("reviews") == (
        "2 reviews:\n"
        f'[{first.id}] edit mode, picked_up, 2 notes, sent {first.created_at} "Round one"\n'
        f"[{second.id}] review mode, pending, 0 notes, sent {second.created_at} "
        '"Just a question"\n'
    )
    assert run("reviews", "--pending").startswith(f"1 review:\n[{second.id}] review mode")
    listed = json.loads(run("reviews", "--json"))
    assert [(r["id"], r["notes"], r.get("waiting")) for r in listed] == [
        (first.id, 2, 2),
        (second.id, 0, 0),
    ]
    out = run("review", first.id)
    assert out.startswith(f"Review {first.id} (edit mode, picked_up), sent {first.created_at}:\n")
    assert "Notes 1-2 of 2:" in out and "(page)" in out
    assert json.loads(run("review", second.id, "--json"))["message"] == "Just a question"
    assert run("review", "rv_nope", code=1) == 'Error: Review with ID "rv_nope" not found\n'


def test_mcp_command_is_listed() -> None:
    result = CliRunner().invoke(cli, ["mcp", "--help"])
    assert result.exit_code == 0
    assert "Run the MCP server over stdio" in result.output
    assert "--db" in result.output

"""`annotate hook stop`, the Stop hook that keeps an agent at a review it took (issue #14, item 12).

The hook's input is what Claude Code and Codex send on stdin; its output is checked byte for byte.
Timing is measured by benchmarks/agent_round.py, never here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import annotate
from annotate import hook
from annotate.cli import cli

from .conftest import text_note, write_project

ANNOTATE = Path(sys.executable).parent / "annotate"
INSTALL_MD = "# Install\n\nRun pip install mkdocs-annotate in a shell.\n"
ADVICE = (
    "For each: do what its intent asks (answer a question in the reply, with no edit), then "
    "address_annotation with `message` (your reply) and, for a deletion you made, "
    "`deleted: true`; or `annotate address ID --message TEXT` from a shell. A note you cannot "
    "do: reply saying why and address it, or ask the user."
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_project(tmp_path, INSTALL_MD)


@pytest.fixture
def store(project: Path) -> annotate.Store:
    s = annotate.open(project)
    yield s
    s.close()


def taken_review(store: annotate.Store) -> tuple[str, str, str]:
    """A review with a replace note and a page note, picked up by an agent: (review, note, page)."""
    note = store.add_annotation(
        text_note(intent="replace", suggestion="pipx install mkdocs-annotate", note="Use pipx.")
    )
    page = store.add_page_note({"pageUrl": "/guide/install/", "note": "Add a section on uv."})
    review = store.create_review({"mode": "edit"})
    claimed = store.claim_review()
    assert claimed is not None and claimed.id == review.id
    return review.id, note.id, page.id


def run(project: Path, active: bool = False, session: str = "s1", **extra: Any) -> str:
    payload = {
        "session_id": session,
        "transcript_path": "/tmp/t.jsonl",
        "cwd": str(project),
        "hook_event_name": "Stop",
        "stop_hook_active": active,
        **extra,
    }
    result = CliRunner().invoke(cli, ["hook", "stop"], input=json.dumps(payload))
    assert result.exit_code == 0, result.output
    return result.output


def reason(review: str, lines: list[str], block: int) -> str:
    n = len(lines)
    return "\n".join(
        [
            "mkdocs-annotate: the review you took is not finished.",
            f"Review {review} (edit mode) has {n} note{'' if n == 1 else 's'} not addressed yet:",
            *lines,
            ADVICE,
            f"(Stop hook reminder {block} of 3 in a row; after 3 the stop goes through.)",
        ]
    )


def blocked(output: str) -> dict[str, Any]:
    assert output.endswith("\n") and output.count("\n") == 1  # one JSON line
    answer = json.loads(output)
    assert set(answer) == {"decision", "reason"} and answer["decision"] == "block"
    return answer


def test_blocks_with_the_notes_left(project: Path, store: annotate.Store) -> None:
    review, note, page = taken_review(store)
    store.set_in_progress(note)
    out = run(project)
    assert json.loads(out) == {
        "decision": "block",
        "reason": reason(
            review,
            [
                f'- {note} (replace, in progress) docs/guide/install.md:3 "pip install '
                'mkdocs-annotate": Use pipx. (suggestion: "pipx install mkdocs-annotate")',
                f"- {page} (page note) docs/guide/install.md: Add a section on uv.",
            ],
            1,
        ),
    }
    blocked(out)
    # Addressed and resolved notes are done; what is left is listed.
    store.address_annotation(note)
    assert blocked(run(project, active=True))["reason"] == reason(
        review, [f"- {page} (page note) docs/guide/install.md: Add a section on uv."], 2
    )
    store.accept(page)
    assert run(project, active=True) == ""  # nothing left: the agent may stop
    state = json.loads((project / ".annotate" / "hook-stop.json").read_text())
    assert state == {"sessions": {}}


def test_at_most_three_blocks_in_a_row(project: Path, store: annotate.Store) -> None:
    _, note, page = taken_review(store)
    first = blocked(run(project, active=False))
    assert first["reason"].endswith("(Stop hook reminder 1 of 3 in a row; after 3 the stop goes through.)")  # fmt: skip
    assert "reminder 2 of 3" in blocked(run(project, active=True))["reason"]
    assert "reminder 3 of 3" in blocked(run(project, active=True))["reason"]
    # The fourth stop in a row goes through, telling the user what is left.
    assert json.loads(run(project, active=True)) == {
        "systemMessage": f"mkdocs-annotate: 2 notes of a review the agent took are still not "
        f"addressed ({note}, {page}); the stop hook let the agent stop after 3 reminders in a row."
    }
    # The same notes never hold this session again, in this turn or a later one...
    assert run(project, active=True) == ""
    assert run(project, active=False) == ""
    # ...but another session is reminded, and so is this one once the work changes.
    assert "reminder 1 of 3" in blocked(run(project, session="s2"))["reason"]
    store.address_annotation(note)
    again = blocked(run(project, active=False))["reason"]
    assert f"- {page} (page note)" in again and note not in again and "reminder 1 of 3" in again


def test_a_new_turn_counts_again(project: Path, store: annotate.Store) -> None:
    taken_review(store)
    assert "reminder 1 of 3" in blocked(run(project, active=False))["reason"]
    assert "reminder 2 of 3" in blocked(run(project, active=True))["reason"]
    # stop_hook_active is false: the user spoke since; the count starts again.
    assert "reminder 1 of 3" in blocked(run(project, active=False))["reason"]


def test_nothing_to_gate(project: Path, store: annotate.Store, tmp_path: Path) -> None:
    # Notes, and a review nobody picked up: not the agent's work yet.
    store.add_annotation(text_note())
    store.create_review({"mode": "edit"})
    assert run(project) == ""
    # No store at all: no answer, and no store created.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert run(elsewhere) == ""
    assert not (elsewhere / ".annotate").exists()


def test_finds_the_store_above_the_working_folder(project: Path, store: annotate.Store) -> None:
    taken_review(store)
    blocked(run(project / "docs" / "guide"))
    result = CliRunner().invoke(
        cli, ["hook", "stop", "--project", str(project)], input=json.dumps({"cwd": "/"})
    )
    assert result.exit_code == 0
    blocked(result.output)


def test_the_project_is_found_as_every_command_finds_it(
    project: Path, store: annotate.Store
) -> None:
    # annotate/project.py: the nearest folder with a config file is the project, so a nested
    # project with no store of its own is not gated by the store of the one around it.
    taken_review(store)
    nested = project / "docs" / "sub"
    nested.mkdir()
    (nested / "mkdocs.yml").write_text("site_name: nested\n")
    assert run(nested / "docs") == ""
    assert not (nested / ".annotate").exists()
    # A working folder that is gone: nothing to say.
    assert run(project / "gone") == ""
    blocked(run(project / "docs"))


def test_many_notes_are_counted_not_listed(project: Path, store: annotate.Store) -> None:
    ids = [store.add_page_note({"pageUrl": f"/p{i}/", "note": f"Note {i}"}).id for i in range(23)]
    review = store.create_review({"mode": "review"})
    store.claim_review()
    text = blocked(run(project))["reason"]
    assert f"Review {review.id} (review mode) has 23 notes not addressed yet:" in text
    assert all(f"- {i} (page note)" in text for i in ids[:20])
    assert ids[20] not in text
    assert f"- … and 3 more: get_review {review.id} lists them all." in text


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        ("not json", "Error: The hook's input is not JSON: Expecting value: line 1 column 1 (char 0)"),
        ("[1, 2]", "Error: The hook's input must be a JSON object"),
        ('{"stop_hook_active": "yes"}', "Error: stop_hook_active must be true or false, got 'yes'"),
        ('{"session_id": 7}', "Error: session_id must be a string, got 7"),
    ],
)  # fmt: skip
def test_bad_input(project: Path, stdin: str, message: str) -> None:
    result = CliRunner().invoke(cli, ["hook", "stop", "--project", str(project)], input=stdin)
    assert result.exit_code == 1
    assert result.output == message + "\n"


def test_missing_project(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["hook", "stop", "--project", str(tmp_path / "nope")], input="{}"
    )
    assert result.exit_code == 1
    assert result.output == f"Error: Project folder {str(tmp_path / 'nope')!r} does not exist\n"


def test_as_the_agent_runs_it(project: Path, store: annotate.Store) -> None:
    """A subprocess with the hook's JSON on stdin, from a folder inside the project."""
    review, _, _ = taken_review(store)
    payload = {"session_id": "x", "cwd": str(project / "docs"), "stop_hook_active": False}
    proc = subprocess.run(
        [str(ANNOTATE), "hook", "stop"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        cwd=project / "docs",
        timeout=60,
    )
    assert (proc.returncode, proc.stderr) == (0, "")
    assert f"Review {review} (edit mode) has 2 notes" in blocked(proc.stdout)["reason"]


def test_decision_json() -> None:
    assert hook.Decision(True, reason="r").to_dict() == {"decision": "block", "reason": "r"}
    assert hook.Decision(False, message="m").to_dict() == {"systemMessage": "m"}
    assert hook.Decision(False).to_dict() is None


def test_a_damaged_state_file_starts_again(project: Path, store: annotate.Store) -> None:
    taken_review(store)
    state = project / ".annotate" / "hook-stop.json"
    state.write_text('{"sessions": {"s1": {"blocks": "many"}}}')
    assert "reminder 1 of 3" in blocked(run(project, active=True))["reason"]
    state.write_text("not json")
    assert "reminder 1 of 3" in blocked(run(project, active=True))["reason"]
    assert json.loads(state.read_text())["sessions"]["s1"]["blocks"] == 1

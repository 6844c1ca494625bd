"""Issue #27 item 8's small ones, as a user meets them: `TOKEN=$(annotate token add NAME)` holds
the token, a replaced phrase reads whole in the word diff, the docs say how to install the
PostgreSQL extra from a checkout."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import annotate
from annotate.diff import word_diff

from .conftest import text_note, write_project

ANNOTATE = str(Path(sys.executable).parent / "annotate")
DOCS = Path(__file__).parent.parent / "docs"


def test_token_add_prints_the_token_alone(tmp_path: Path) -> None:
    project = write_project(tmp_path, "# Install\n")
    done = subprocess.run(
        ["bash", "-c", f'TOKEN=$({ANNOTATE} token add ada --role agent) && printf %s "$TOKEN"'],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    token = done.stdout
    assert token.startswith("ann_") and token.isprintable() and " " not in token
    assert done.stderr == "(the token of ada, agent: shown once, keep it secret)\n"
    with annotate.open(project) as store:
        person = store.person_for_token(token)
    assert person is not None and person.name == "ada"


def test_a_replaced_phrase_is_shown_whole() -> None:
    before = "The quick brown fox jumps over the lazy dog."
    assert word_diff(before, "The slow red cat jumps over the lazy dog.") == (
        "The [-quick brown fox-]{+slow red cat+} jumps over the lazy dog."
    )
    # Punctuation between two changed words belongs to the one change too.
    assert word_diff("Run it, then stop.", "Start it, and go.") == (
        "[-Run-]{+Start+} it, [-then stop-]{+and go+}."
    )
    # An unchanged word between two changes still splits them.
    assert word_diff("a b c d e", "a x c y e") == "a [-b-]{+x+} c [-d-]{+y+} e"


def test_annotate_get_shows_the_replacement_whole(tmp_path: Path) -> None:
    project = write_project(tmp_path, "# Install\n\nRun pip install mkdocs-annotate in a shell.\n")
    with annotate.open(project) as store:
        note = store.add_annotation(text_note())
    md = project / "docs" / "guide" / "install.md"
    md.write_text("# Install\n\nRun uv tool install mkdocs-annotate in a shell.\n")

    def cli(*args: str) -> str:
        done = subprocess.run(
            [ANNOTATE, *args], cwd=project, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    cli("address", note.id, "--replaced-text", "uv tool install mkdocs-annotate")
    shown = cli("get", note.id)
    assert (
        "change in the Markdown ([-removed-]{+added+}):\n"
        "  Run [-pip-]{+uv tool+} install mkdocs-annotate in a shell.\n"
    ) in shown
    md.write_text("# Install\n\nRun uv add the-package in a shell.\n")
    cli("address", note.id, "--replaced-text", "uv add the-package")
    assert ("  Run [-pip install mkdocs-annotate-]{+uv add the-package+} in a shell.\n") in cli(
        "get", note.id
    )


def test_the_docs_say_how_to_install_the_extra_from_a_checkout() -> None:
    for page in ("storage.md", "cli.md"):
        text = (DOCS / page).read_text()
        assert "pip install 'mkdocs-annotate[postgres]'" in text, page
        assert "pip install -e '.[postgres]'" in text, page

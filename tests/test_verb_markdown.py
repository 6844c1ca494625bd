"""When a verb reads the Markdown (docs/architecture.md; issue #28, item 6): a verb that locates an
existing note parses its Markdown file before it takes the write lock, which every writer (on
PostgreSQL every server's) waits for; inside the lock, locating it is a lookup in that parse."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import annotate
from annotate.anchoring import markdown as anchoring_markdown

PARAGRAPHS = [f"Paragraph {n} of the install page, with a few words of its own." for n in range(40)]
PAGE = "# Install\n\n" + "\n\n".join(PARAGRAPHS) + "\n"


def parsed_texts() -> int:
    return anchoring_markdown.haystack_of.cache_info().misses


def wait_for(condition: Callable[[], bool], seconds: float = 5.0) -> bool:
    """Whether `condition` came true within `seconds` (polled; less than the store's busy
    timeout, so a verb blocked on the lock is still waiting when this gives up)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


@pytest.mark.parametrize("verb", ["address_annotation", "update_annotation_target"])
def test_a_verb_parses_the_edited_markdown_before_the_write_lock(tmp_path: Path, verb: str) -> None:
    (tmp_path / "mkdocs.yml").write_text("site_name: Test\nnav:\n  - install.md\n")
    (tmp_path / "docs").mkdir()
    md = tmp_path / "docs" / "install.md"
    md.write_text(PAGE)
    store = annotate.open(tmp_path)
    exact = PARAGRAPHS[20]
    note = store.add_annotation(
        {
            "pageUrl": "/install/",
            "note": "Reword.",
            "selectedText": exact,
            "quote": {"exact": exact},
        }
    )
    before = md.stat().st_mtime
    md.write_text(PAGE + f"\nA line {verb} never saw.\n")  # the agent's edit: a new text
    os.utime(md, (before + 5, before + 5))
    holder = sqlite3.connect(str(store.path), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the write lock
    misses = parsed_texts()
    answers: list[annotate.Annotation] = []
    thread = threading.Thread(
        target=lambda: answers.append(getattr(store, verb)(note.id, exact))  # type: ignore[arg-type]
    )
    thread.start()
    try:
        parsed_while_waiting = wait_for(lambda: parsed_texts() > misses)
    finally:
        holder.rollback()
        holder.close()
    thread.join(30)
    assert parsed_while_waiting
    (answer,) = answers
    assert answer.source is not None and answer.source.line_start == 43  # 3 + 2 * 20
    assert answer.anchor_state == "anchored"
    store.close()

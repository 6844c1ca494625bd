"""Re-locating many notes at once (`Sources.reconcile_rows`, issue #31): which plans are still
current is read in one go under the write lock, the updates and the change rows then go in
batches, on both backends; on PostgreSQL a branch switch is a few round trips, not one per note."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import annotate

from .conftest import text_note
from .test_pg_batch import round_trips  # noqa: F401  (the fixture)

BACKENDS = ("sqlite", "postgresql")
NOTES = 12


def paragraph(i: int) -> str:
    return f"Paragraph {i} says to run tool{i} with option{i} before the build."


def write(root: Path, lead: str = "") -> None:
    page = root / "docs" / "guide" / "install.md"
    page.write_text("# Install\n\n" + lead + "\n\n".join(paragraph(i) for i in range(NOTES)) + "\n")
    at = time.time() + (1000 if lead else 0)
    os.utime(page, (at, at))


def project(root: Path, db: str | None) -> annotate.Store:
    (root / "mkdocs.yml").write_text("site_name: test\n")
    (root / "docs" / "guide").mkdir(parents=True)
    write(root)
    return annotate.open(root, db=db)


@pytest.fixture
def store(tmp_path: Path, db_url: str | None) -> Iterator[annotate.Store]:
    made = project(tmp_path, db_url)
    yield made
    made.close()


@pytest.fixture
def pg_store(tmp_path: Path, pg_url: str) -> Iterator[annotate.Store]:
    made = project(tmp_path, pg_url)
    yield made
    made.close()


def note(i: int) -> dict[str, Any]:
    quote = f"run tool{i} with option{i}"
    return text_note(
        selectedText=quote,
        quote={"exact": quote, "prefix": f"Paragraph {i} says to ", "suffix": " before"},
        position={"start": 0, "end": len(quote)},
    )


def test_a_plan_made_stale_meanwhile_is_not_written(store: annotate.Store) -> None:
    """Every note moved two lines down; one was checked again by another connection between
    the plan and its write: that one keeps the newer answer and gets no change row."""
    made = [store.add_annotation(note(i)) for i in range(NOTES)]
    assert [a.source.line_start for a in made] == [3 + 2 * i for i in range(NOTES)]  # type: ignore[union-attr]
    write(store.project_dir, lead="A new first paragraph.\n\n")
    rows = [dict(r) for r in store.conn.execute("SELECT * FROM annotations ORDER BY rowid")]
    _, seq = store.changes(0)
    store.conn.execute(
        "UPDATE annotations SET source_mtime = 1.5, source_line_start = 99 WHERE id = ?",
        (made[0].id,),
    )
    assert store.sources.reconcile_rows(rows) == NOTES
    lines = dict(store.conn.execute("SELECT id, source_line_start FROM annotations").fetchall())
    assert lines == {a.id: 99 if k == 0 else 5 + 2 * k for k, a in enumerate(made)}
    feed, _ = store.changes(seq)
    assert [(c["id"], c["action"]) for c in feed] == [(a.id, "anchor") for a in made[1:]]
    # Nothing left to re-locate but the one another connection claimed with a made-up mtime.
    assert store.reconcile() == 1


def test_a_branch_switch_is_a_few_round_trips_on_postgresql(
    pg_store: annotate.Store,
    round_trips: list[str],  # noqa: F811
) -> None:
    """All notes moved: the read of the notes (and its COMMIT), one of which plans are current
    (with BEGIN and the write lock), one for the batched updates, the change rows and COMMIT;
    it was one more per note."""
    store = pg_store
    for i in range(NOTES):
        store.add_annotation(note(i))
    write(store.project_dir, lead="A new first paragraph.\n\n")
    round_trips.clear()
    assert store.reconcile() == NOTES
    assert len(round_trips) <= 4  # was 15 (3 + one per note)

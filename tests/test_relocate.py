"""Issue #31: re-location after an edit costs the lines that changed, and a branch switch's notes are
answered `pending` and located in the background (annotate/linemove.py, annotate/relocator.py)."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

import annotate
from annotate import linemove, lineversions, reconcile, relocator
from annotate.export import render
from annotate.importing import import_data
from annotate.store import Store
from annotate.tables import Tables

# Each test taking `db_url` runs on both (tests/conftest.py).
BACKENDS = ("sqlite", "postgresql")

WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
]
PAGES = relocator.INLINE_FILES + 2  # more changed files than a read locates before answering


def paragraph(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) + str(rng.randrange(1000)) for _ in range(12))


def site(root: Path, pages: int, rng: random.Random) -> list[list[str]]:
    """`pages` pages of a title and six paragraphs each, registered as the plugin would."""
    (root / "mkdocs.yml").write_text("site_name: Test\n")
    (root / "docs").mkdir()
    texts = []
    for i in range(pages):
        lines = [f"# Page {i}"]
        for _ in range(6):
            lines += ["", paragraph(rng)]
        (root / "docs" / f"p{i}.md").write_text("\n".join(lines) + "\n")
        texts.append(lines)
    return texts


def note(page: int, text: str) -> dict[str, object]:
    words = text.split()
    return {
        "pageUrl": f"/p{page}/",
        "note": "Reword this.",
        "selectedText": " ".join(words[3:7]),
        "quote": {
            "exact": " ".join(words[3:7]),
            "prefix": " ".join(words[:3]) + " ",
            "suffix": " " + " ".join(words[7:9]),
        },
    }


def write(path: Path, lines: list[str], bump: int) -> None:
    path.write_text("\n".join(lines) + "\n")
    at = path.stat().st_mtime + bump
    os.utime(path, (at, at))


def opened(root: Path, db_url: str | None, notes_per_page: int = 2) -> tuple[Store, list[str]]:
    rng = random.Random(7)
    texts = site(root, PAGES, rng)
    store = annotate.open(root, db=db_url)
    store.register_pages({f"/p{i}/": f"docs/p{i}.md" for i in range(PAGES)})
    ids = []
    for i, lines in enumerate(texts):
        for k in range(notes_per_page):
            ids.append(store.add_annotation(note(i, lines[4 + 2 * k])).id)
    return store, ids


def switch(root: Path, bump: int = 10) -> None:
    """Another branch: a paragraph above the others on every page, so every note moves 2 lines."""
    for i in range(PAGES):
        path = root / "docs" / f"p{i}.md"
        lines = path.read_text().rstrip("\n").split("\n")
        write(path, [lines[0], "", "A new first paragraph on this branch.", *lines[1:]], bump)


def test_listing_after_a_switch_answers_pending_then_the_background_locates(
    tmp_path: Path, db_url: str | None
) -> None:
    store, ids = opened(tmp_path, db_url)
    before = {a.id: a.source.line_start for a in store.list_annotations() if a.source}
    _, cursor = store.changes()
    switch(tmp_path)
    with store.sources.relocator.paused():
        listed = json.loads(store.list_annotations(as_json=True))
        # Answered before any note was located again: every one says so, at its last known lines.
        assert {a["anchorState"] for a in listed} == {"pending"}
        assert all(a["source"]["lastKnown"] for a in listed)
        assert {a["id"]: a["source"]["lineStart"] for a in listed} == before
    assert store.sources.relocator.wait(timeout=60)
    after = store.list_annotations()
    assert {a.anchor_state for a in after} == {"anchored"}
    assert {a.id: a.source.line_start for a in after if a.source} == {
        id: line + 2 for id, line in before.items()
    }
    # The change feed says which notes moved, once each.
    events, _ = store.changes(cursor)
    assert sorted(e["id"] for e in events if e["action"] == "anchor") == sorted(ids)
    # Nothing pending: the answer is as it always was.
    listed = json.loads(store.list_annotations(as_json=True))
    assert all(a["anchorState"] == "anchored" and "lastKnown" not in a["source"] for a in listed)
    store.close()


def test_a_write_racing_the_background_pass_is_kept(tmp_path: Path, db_url: str | None) -> None:
    store, ids = opened(tmp_path, db_url)
    switch(tmp_path)
    with store.sources.relocator.paused() as waiting:
        store.list_annotations()
        # The pass has read the notes it will locate and waits to write them.
        assert waiting.wait(timeout=60)
        deleted = store.address_annotation(ids[0], deleted=True)
        assert deleted.anchor_state == "removed"
    assert store.sources.relocator.wait(timeout=60)
    assert store.get_annotation(ids[0]).anchor_state == "removed"
    assert {store.get_annotation(id).anchor_state for id in ids[1:]} == {"anchored"}
    store.close()


def test_a_read_racing_a_verb_does_not_overwrite_it(tmp_path: Path, db_url: str | None) -> None:
    """The guard of every read's write: a note a verb wrote between the read's look at it and
    its write keeps the verb's answer (here: deleted as asked, the file's time unchanged)."""
    store, ids = opened(tmp_path, db_url)
    path = tmp_path / "docs" / "p0.md"
    write(path, ["", "One line above.", *path.read_text().rstrip("\n").split("\n")], 10)
    # What a read took to locate again, as it stood before the verb.
    with store._tx(write=False) as conn:
        rows = Tables(store._file).query(conn, "SELECT * FROM annotations WHERE id = ?", [ids[0]])
    store.address_annotation(ids[0], deleted=True)
    store.sources.reconcile_rows(rows)
    assert store.get_annotation(ids[0]).anchor_state == "removed"
    store.close()


def edits(lines: list[str], rng: random.Random) -> list[tuple[str, list[str]]]:
    """Edits of a page, each named: plain prose ones the line diff carries notes through, and
    ones that change how the lines around them render, which it must leave to the search."""
    para = [i for i, line in enumerate(lines) if line and not line.startswith("#")]
    a, b = para[1], para[-2]
    return [
        ("word appended", [*lines[:a], lines[a] + " more", *lines[a + 1 :]]),
        ("paragraph inserted", [*lines[:a], paragraph(rng), "", *lines[a:]]),
        ("paragraph deleted", [*lines[: a - 1], *lines[a + 1 :]]),
        ("lines added at the top", [lines[0], "", paragraph(rng), *lines[1:]]),
        (
            "two edits",
            [*lines[:a], "x " + lines[a], *lines[a + 1 : b], lines[b] + " y", *lines[b + 1 :]],
        ),
        ("fence opened", [*lines[:a], "```", *lines[a:]]),
        ("quote copied", [*lines[:a], lines[b], *lines[a + 1 :]]),
        ("list item", [*lines[:a], "- " + lines[a], *lines[a + 1 :]]),
        ("link defined", [*lines[:a], "[x]: http://example.com", *lines[a + 1 :]]),
        ("blank line removed", [*lines[: a - 1], *lines[a:]]),
    ]


EDITS = [name for name, _ in edits(["# T", "", "a", "", "b", "", "c"], random.Random(1))]


@pytest.mark.parametrize("name", EDITS)
def test_the_line_diff_answers_what_the_search_does(tmp_path: Path, name: str) -> None:
    """Every note of an edited page is where the search would find it, and a note the edit did
    not touch costs no parse of the page."""
    rng = random.Random(3)
    (tmp_path / "mkdocs.yml").write_text("site_name: Test\n")
    (tmp_path / "docs").mkdir()
    lines = ["# Page"]
    for _ in range(30):
        lines += ["", paragraph(rng)]
    path = tmp_path / "docs" / "p.md"
    write(path, lines, 0)
    store = annotate.open(tmp_path)
    ids = [store.add_annotation(note_on(lines[i])).id for i in range(2, len(lines), 2)]
    edited = dict(edits(lines, rng))[name]
    write(path, edited, 10)
    with store._tx(write=False) as conn:
        rows = Tables(store._file).query(conn, "SELECT * FROM annotations")
    moves = linemove.moves("\n".join(lines) + "\n", path.read_text())
    if name in {"fence opened", "list item", "link defined"}:
        assert moves is None  # lines around it may render otherwise: every note searched
    else:
        assert moves is not None
        carried = [
            r["id"]
            for r in rows
            if moves.move(r["source_line_start"], r["source_line_end"], r["quote_exact"])
        ]
        # Those near the edit are searched; the others are carried, no parse of the page.
        assert len(ids) - 6 <= len(carried) < len(ids)
    locator = store.sources.locator()
    moved = reconcile.plan(rows, locator)
    linemove.forget()
    searched = reconcile.plan(rows, store.sources.locator())
    # The same columns written (the line diff leaves out those that keep their value); a note
    # not even moved is not written: its version's row says which version it is at now.
    for row in rows:
        if row["id"] in moved:
            assert {**row, **moved[row["id"]]} == {**row, **searched[row["id"]]}
        else:
            assert {**row, **searched[row["id"]]} == {
                **row,
                "source_mtime": path.stat().st_mtime,
                "source_lines": searched_key(path),
            }
    kept = len(ids) - len(moved)
    assert dict(locator.unmoved) == ({rows[0]["source_lines"]: (searched_key(path), kept)}
                                     if kept else {})  # fmt: skip
    store.close()


def searched_key(path: Path) -> str:
    return lineversions.key("docs/p.md", reconcile.line_hashes(path.read_text()))


def note_on(text: str) -> dict[str, object]:
    return {**note(0, text), "pageUrl": "/p/"}


def test_an_export_taken_while_pending_imports(tmp_path: Path) -> None:
    """A note exported `pending` is imported anchored, and located on the next read."""
    store, ids = opened(tmp_path, None)
    switch(tmp_path)
    with store.sources.relocator.paused():
        store.list_annotations()
        exported = json.loads(render(store, "json"))
    assert exported["annotations"][0]["anchorState"] == "pending"
    assert store.sources.relocator.wait(timeout=60)
    other = annotate.open(tmp_path, db=tmp_path / "other.db")
    import_data(other, exported)
    assert {a.anchor_state for a in other.list_annotations()} == {"anchored"}
    assert other.get_annotation(ids[0]).source == store.get_annotation(ids[0]).source
    other.close()
    store.close()

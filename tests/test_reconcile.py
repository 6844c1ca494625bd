"""Lazy reconciliation: `source`, `anchorState` and `anchorScore` follow the Markdown on every read."""

from __future__ import annotations

from pathlib import Path

import pytest

import annotate
from annotate import sourcemap
from annotate.anchoring import markdown as anchoring_markdown
from annotate.export import render
from annotate.store import Store

from .conftest import touch_write, write_install_page

# Each test taking `db_url` runs on both (tests/conftest.py).
BACKENDS = ("sqlite", "postgresql")

PAGE = """\
# Install

Some introduction to the install page, which tells you what you need
before you start.

## With pip

Run `pip install mkdocs-annotate` in a shell, then add the plugin to
your **mkdocs.yml** file under `plugins:`.

## With pipx

Use pipx when you want the tool isolated from your other packages.
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_install_page(tmp_path, PAGE)


def quote(selected: str, prefix: str = "", suffix: str = "") -> dict:
    return {
        "pageUrl": "/install/",
        "note": "Check this.",
        "selectedText": selected,
        "quote": {"exact": selected, "prefix": prefix, "suffix": suffix},
    }


def test_source_on_create(project: Path, db_url: str | None) -> None:
    store = annotate.open(project, db=db_url)
    # Rendered text: the browser shows no backticks and no asterisks.
    a = store.add_annotation(
        quote("Run pip install mkdocs-annotate in a shell, then add the plugin to your mkdocs.yml")
    )
    assert a.source is not None
    assert (a.source.path, a.source.line_start, a.source.line_end) == ("docs/install.md", 8, 9)
    assert "pip install mkdocs-annotate" in a.source.excerpt
    assert a.anchor_state == "anchored"
    assert a.anchor_score is not None and a.anchor_score >= 90


def test_theme_text_has_no_source(project: Path, db_url: str | None) -> None:
    store = annotate.open(project, db=db_url)
    a = store.add_annotation(quote("Made with Material for MkDocs"))
    assert a.source is None
    assert a.anchor_state == "anchored"
    b = store.add_annotation({**quote("Install"), "pageUrl": "/nowhere/"})
    assert b.source is None


def test_lines_added_above_move_the_source(project: Path, db_url: str | None) -> None:
    store = annotate.open(project, db=db_url)
    a = store.add_annotation(quote("Use pipx when you want the tool isolated"))
    assert a.source.line_start == 13
    page = project / "docs" / "install.md"
    touch_write(page, "!!! note\n    New admonition.\n\n" + PAGE)
    got = store.get_annotation(a.id)
    assert (got.source.line_start, got.anchor_state) == (16, "anchored")
    # list and get agree, and the change is in the feed for open pages.
    assert store.list_annotations()[0].source == got.source
    events, _ = store.changes(0)
    assert ("anchor", a.id) in {(e["action"], e["id"]) for e in events}


def test_small_edit_inside_the_quote_stays_anchored(project: Path, db_url: str | None) -> None:
    store = annotate.open(project, db=db_url)
    a = store.add_annotation(
        quote("Use pipx when you want the tool isolated from your other packages.")
    )
    page = project / "docs" / "install.md"
    touch_write(page, PAGE.replace("tool isolated from", "tool kept apart from"))
    got = store.get_annotation(a.id)
    assert got.anchor_state == "anchored"
    assert got.source.line_start == 13
    assert got.anchor_score < 100


def test_rewritten_text_is_stale_and_keeps_last_lines(project: Path, db_url: str | None) -> None:
    store = annotate.open(project, db=db_url)
    a = store.add_annotation(
        quote("Use pipx when you want the tool isolated from your other packages.")
    )
    page = project / "docs" / "install.md"
    touch_write(page, PAGE.replace(
        "Use pipx when you want the tool isolated from your other packages.",
        "Homebrew users can run brew install for a system-wide copy instead.",
    ))  # fmt: skip
    got = store.get_annotation(a.id)
    assert got.anchor_state == "stale"
    assert got.source.line_start == 13  # where it was last seen
    assert store.summary().anchor_states["stale"] == 1
    assert [x.id for x in store.list_annotations(anchor_state="stale")] == [a.id]


def test_replaced_text_reanchors(project: Path, db_url: str | None) -> None:
    store = annotate.open(project, db=db_url)
    a = store.add_annotation(
        quote("Use pipx when you want the tool isolated from your other packages.")
    )
    page = project / "docs" / "install.md"
    new = "Prefer pipx: it installs the command in an environment of its own, away from your projects."
    touch_write(
        page,
        PAGE.replace("Use pipx when you want the tool isolated from your other packages.", new),
    )
    assert store.get_annotation(a.id).anchor_state == "stale"
    # The agent says what replaced the quote: found again at once, same mtime or not.
    got = store.update_annotation_target(a.id, new)
    assert (got.anchor_state, got.source.line_start) == ("anchored", 13)
    done = store.address_annotation(a.id, replaced_text=new)
    assert done.anchor_state == "anchored" and done.status == "addressed"


def test_deleted_file_orphans(project: Path, db_url: str | None) -> None:
    store = annotate.open(project, db=db_url)
    a = store.add_annotation(quote("Use pipx when you want the tool isolated"))
    (project / "docs" / "install.md").unlink()
    got = store.get_annotation(a.id)
    assert got.anchor_state == "orphaned"
    assert got.source.path == "docs/install.md"  # last known place, never dropped
    assert [x.id for x in store.list_annotations()] == [a.id]


def test_renamed_file_orphans(project: Path, db_url: str | None) -> None:
    store = annotate.open(project, db=db_url)
    a = store.add_annotation(quote("Use pipx when you want the tool isolated"))
    (project / "docs" / "install.md").rename(project / "docs" / "setup.md")
    assert store.get_annotation(a.id).anchor_state == "orphaned"


def test_page_now_built_from_another_file(project: Path, db_url: str | None) -> None:
    store = annotate.open(project, db=db_url)
    a = store.add_annotation(quote("Use pipx when you want the tool isolated"))
    (project / "docs" / "install").mkdir()
    (project / "docs" / "install.md").rename(project / "docs" / "install" / "index.md")
    got = store.get_annotation(a.id)
    assert (got.anchor_state, got.source.path) == ("anchored", "docs/install/index.md")


def test_unchanged_files_cost_nothing(
    project: Path, db_url: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = annotate.open(project, db=db_url)
    for i in range(5):
        store.add_annotation(quote("Use pipx when you want the tool isolated", suffix=str(i)))
    calls: list[str] = []
    real = sourcemap.locate_in_markdown
    monkeypatch.setattr(
        sourcemap, "locate_in_markdown", lambda *a, **k: calls.append("x") or real(*a, **k)
    )
    store.list_annotations()
    store.summary()
    render(store, "markdown")
    assert calls == []
    touch_write(project / "docs" / "install.md", PAGE + "\nMore.\n")
    store.list_annotations()
    assert len(calls) == 5
    store.list_annotations()
    assert len(calls) == 5


def test_registered_pages_win(project: Path, db_url: str | None) -> None:
    (project / "docs" / "other.md").write_text(
        "# Other\n\nUse pipx when you want the tool isolated.\n"
    )
    store = annotate.open(project, db=db_url)
    store.register_pages({"/install/": "docs/other.md"})
    a = store.add_annotation(quote("Use pipx when you want the tool isolated"))
    assert (a.source.path, a.source.line_start) == ("docs/other.md", 3)


def test_paths_outside_the_project_are_never_read(
    project: Path, tmp_path_factory: pytest.TempPathFactory, db_url: str | None
) -> None:
    outside = tmp_path_factory.mktemp("outside") / "secret.md"
    outside.write_text("Use pipx when you want the tool isolated\n")
    store = annotate.open(project, db=db_url)
    store.register_pages({"/a/": str(outside), "/b/": "../" + outside.name})
    (project / "docs" / "link.md").symlink_to(outside)
    store.register_pages({"/c/": "docs/link.md"})
    for url in ("/a/", "/b/", "/c/"):
        a = store.add_annotation(
            {**quote("Use pipx when you want the tool isolated"), "pageUrl": url}
        )
        assert a.source is None, url


def test_docs_dir_from_mkdocs_yml(tmp_path: Path) -> None:
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: X\ndocs_dir: 'content'  # ours\nmarkdown_extensions:\n"
        "  - pymdownx.emoji:\n      emoji_index: !!python/name:material.extensions.emoji.twemoji\n"
    )
    (tmp_path / "content" / "guide").mkdir(parents=True)
    (tmp_path / "content" / "guide" / "index.md").write_text("# Guide\n\nRead this first.\n")
    store = Store(tmp_path / ".annotate" / "annotations.db")
    a = store.add_annotation({**quote("Read this first."), "pageUrl": "/guide/"})
    assert (a.source.path, a.source.line_start) == ("content/guide/index.md", 3)


def test_reconcile_all(project: Path, db_url: str | None) -> None:
    store = annotate.open(project, db=db_url)
    store.add_annotation(quote("Use pipx when you want the tool isolated"))
    assert store.reconcile() == 0
    assert store.reconcile(force=True) == 1


def test_prepare_page_parses_ahead_of_the_first_note(project: Path, db_url: str | None) -> None:
    store = annotate.open(project, db=db_url)
    (project / "docs" / "install.md").write_text(PAGE + "\nA page nobody parsed yet.\n")
    assert store.prepare_page("/missing/") is False
    assert store.prepare_page("/install/") is True
    before = anchoring_markdown.haystack_of.cache_info().misses
    a = store.add_annotation(quote("Use pipx when you want the tool isolated"))
    assert anchoring_markdown.haystack_of.cache_info().misses == before  # nothing parsed on create
    assert a.source is not None and a.source.line_start == 13
    store.close()


def test_anchoring_a_page_prepares_its_markdown(project: Path, db_url: str | None) -> None:
    from starlette.testclient import TestClient

    from annotate.web import create_app

    store = annotate.open(project, db=db_url)
    (project / "docs" / "install.md").write_text(PAGE + "\nAnother edit nobody parsed.\n")
    with TestClient(create_app(store, token="t" * 32), base_url="http://127.0.0.1") as client:
        answer = client.post(
            "/__annotate/api/anchor",
            json={"pageUrl": "/install/", "text": "Install"},
            headers={"X-Annotate-Token": "t" * 32},
        )
        assert answer.status_code == 200 and answer.json() == {"anchors": []}
        before = anchoring_markdown.haystack_of.cache_info().misses
        store.add_annotation(quote("Use pipx when you want the tool isolated"))
        assert anchoring_markdown.haystack_of.cache_info().misses == before
    store.close()


def test_prepare_page_parses_a_file_again_only_after_it_changed(
    project: Path, db_url: str | None
) -> None:
    store = annotate.open(project, db=db_url)
    anchoring_markdown.haystack_of.cache_clear()  # the other backend's run parsed the same texts
    md = project / "docs" / "install.md"
    touch_write(md, PAGE + "\nOne more line.\n")
    assert store.prepare_page("/install/")
    misses = anchoring_markdown.haystack_of.cache_info().misses
    assert store.prepare_page("/install/")
    assert anchoring_markdown.haystack_of.cache_info().misses == misses  # unchanged: no work
    touch_write(md, PAGE + "\nAnother line.\n")
    assert store.prepare_page("/install/")
    assert anchoring_markdown.haystack_of.cache_info().misses == misses + 1
    store.close()


# -- issue #26 item 3: a stale note's last known lines follow the edits around them ---------------


def long_page() -> str:
    """A reference page with its heading of interest on line 177."""
    lines = ["# Options", ""]
    n = 0
    while len(lines) < 176:
        n += 1
        lines += [f"## Option number {n}", "", f"Option {n} sets the value of setting {n}.", ""]
    lines = [*lines[:176], "## The colour of the background", "", "Sets the colour behind text."]
    lines += ["", "## Last option", "", "The last option of the page.", ""]
    return "\n".join(lines)


HEADING = "The colour of the background"


def test_a_stale_note_moves_with_lines_inserted_above(project: Path, db_url: str | None) -> None:
    """Three lines inserted above a heading reworded beyond recognition: its last known line
    moves from 177 to 180, still marked as last known."""
    page = project / "docs" / "install.md"
    text = long_page()
    touch_write(page, text)
    assert text.split("\n")[176] == f"## {HEADING}"
    store = annotate.open(project, db=db_url)
    a = store.add_annotation(quote(HEADING, suffix="\nSets the colour behind text."))
    assert (a.anchor_state, a.source.line_start) == ("anchored", 177)
    edited = text.replace("# Options\n", "# Options\n\nA new introduction.\nIn two lines.\n", 1)
    edited = edited.replace(f"## {HEADING}", "## Backdrop", 1)
    touch_write(page, edited)
    got = store.get_annotation(a.id)
    assert got.anchor_state == "stale" and got.source.last_known
    assert (got.source.line_start, got.source.line_end) == (180, 180)
    assert edited.split("\n")[179] == "## Backdrop"
    assert got.to_dict()["source"]["lastKnown"] is True
    # Edited again (two lines deleted above): carried again, from where it was carried to.
    touch_write(page, edited.replace("A new introduction.\nIn two lines.\n", "", 1))
    again = store.get_annotation(a.id)
    assert (again.anchor_state, again.source.line_start) == ("stale", 178)
    store.close()


def test_a_stale_note_whose_lines_were_deleted_points_after_them(
    project: Path, db_url: str | None
) -> None:
    store = annotate.open(project, db=db_url)
    a = store.add_annotation(
        quote("Use pipx when you want the tool isolated from your other packages.")
    )
    assert a.source.line_start == 13
    page = project / "docs" / "install.md"
    edited = PAGE.replace("## With pip\n\n", "", 1).replace(
        "Use pipx when you want the tool isolated from your other packages.\n",
        "Homebrew users can run brew install for a system-wide copy instead.\n",
    )
    touch_write(page, "Added first.\n" + edited)
    got = store.get_annotation(a.id)
    assert got.anchor_state == "stale"
    # Line 13 was replaced: its replacement, one line down for the added line and two up for
    # the deleted heading and blank line.
    assert got.source.line_start == 12
    assert (project / "docs" / "install.md").read_text().split("\n")[11].startswith("Homebrew")
    store.close()


def test_map_lines_carries_ranges_through_a_diff() -> None:
    from annotate.reconcile import map_lines

    old = ["a", "b", "c", "d", "e"]
    assert map_lines(old, old, 2, 4) == (2, 4)
    assert map_lines(old, ["x", "y", *old], 2, 4) == (4, 6)  # inserted above
    assert map_lines(old, ["a", "b", "C", "d", "e"], 3, 3) == (3, 3)  # replaced in place
    assert map_lines(old, ["a", "b", "d", "e"], 3, 3) == (3, 3)  # deleted: the line after it
    assert map_lines(old, ["a", "b"], 4, 5) == (2, 2)  # deleted to the end: the last line
    assert map_lines(old, [], 1, 5) == (1, 1)
    assert map_lines(old, ["e", "d", "c", "b", "a"], 1, 2)[0] >= 1


def test_a_note_located_before_the_hashes_keeps_its_lines(
    project: Path, db_url: str | None
) -> None:
    """A note whose file's lines as they were are not known (made by an earlier release, or
    imported) keeps its last known lines as before."""
    store = annotate.open(project, db=db_url)
    a = store.add_annotation(
        quote("Use pipx when you want the tool isolated from your other packages.")
    )
    with store._tx(write=True) as conn:
        conn.execute("UPDATE annotations SET source_lines = NULL WHERE id = ?", (a.id,))
    page = project / "docs" / "install.md"
    rewritten = "Homebrew users can run brew install for a system-wide copy instead."
    touch_write(page, "New.\nLines.\n" + PAGE.replace(
        "Use pipx when you want the tool isolated from your other packages.", rewritten
    ))  # fmt: skip
    got = store.get_annotation(a.id)
    assert (got.anchor_state, got.source.line_start) == ("stale", 13)
    store.close()


# -- issue #31: re-location costs the files that changed, once each ------------------------------


def test_reconcile_parses_each_changed_file_once_whatever_the_order_of_its_notes(
    project: Path, db_url: str | None
) -> None:
    # More files than the parse cache holds (128), their notes made round-robin: in the rows'
    # order every note's file was evicted by the time the next note on it came.
    pages = 130
    for i in range(pages):
        (project / "docs" / f"p{i}.md").write_text(f"# Page {i}\n\nPage {i} says hello {i}.\n")
    store = annotate.open(project, db=db_url)
    for _ in range(2):
        for i in range(pages):
            store.add_annotation({**quote(f"Page {i} says hello"), "pageUrl": f"/p{i}/"})
    for i in range(pages):
        touch_write(
            project / "docs" / f"p{i}.md", f"# Page {i}\n\nNew.\n\nPage {i} says hello {i}.\n"
        )
    anchoring_markdown.haystack_of.cache_clear()
    assert store.reconcile() == 2 * pages
    assert anchoring_markdown.haystack_of.cache_info().misses == pages
    notes = store.list_annotations(include_resolved=True)
    assert {(a.source.line_start if a.source else None) for a in notes} == {5}
    store.close()


def test_a_file_saved_unchanged_is_not_parsed_again(project: Path, db_url: str | None) -> None:
    store = annotate.open(project, db=db_url)
    a = store.add_annotation(quote("Use pipx when you want the tool isolated"))
    md = project / "docs" / "install.md"
    touch_write(md, PAGE + "\nOne more line.\n")  # located again: the text is new
    assert store.get_annotation(a.id).source.line_start == 13  # type: ignore[union-attr]
    touch_write(md, PAGE + "\nOne more line.\n")  # saved again as it was
    anchoring_markdown.haystack_of.cache_clear()
    got = store.get_annotation(a.id)
    assert anchoring_markdown.haystack_of.cache_info().misses == 0
    assert got.source is not None and got.source.line_start == 13 and got.anchor_state == "anchored"
    # The new mtime is recorded: the next read costs a stat, and a real edit is still seen.
    touch_write(md, "# Install\n\nAbove.\n\n" + PAGE.split("\n", 1)[1] + "\nOne more line.\n")
    assert store.get_annotation(a.id).source.line_start == 16  # type: ignore[union-attr]
    store.close()


def test_prepare_page_parses_again_a_page_gone_from_the_parse_cache(
    project: Path, db_url: str | None
) -> None:
    # A site of more pages than the cache holds: the page the overlay loads again was parsed
    # once, long ago, and its first note must not pay the parse.
    store = annotate.open(project, db=db_url)
    assert store.prepare_page("/install/")
    anchoring_markdown.haystack_of.cache_clear()  # what a thousand other pages would do
    assert store.prepare_page("/install/")
    assert anchoring_markdown.haystack_of.cache_info().misses == 1
    store.add_annotation(quote("Use pipx when you want the tool isolated"))
    assert anchoring_markdown.haystack_of.cache_info().misses == 1  # saved without a parse
    store.close()


def test_notes_without_a_file_yet_are_located_page_by_page(
    project: Path, db_url: str | None
) -> None:
    # Notes made before their pages' Markdown existed have no file: they are located in their
    # page's file, each parsed once, whatever the order the notes were made in.
    pages = 130
    store = annotate.open(project, db=db_url)
    for _ in range(2):
        for i in range(pages):
            store.add_annotation({**quote(f"Page {i} says hello"), "pageUrl": f"/p{i}/"})
    for i in range(pages):
        (project / "docs" / f"p{i}.md").write_text(f"# Page {i}\n\nPage {i} says hello {i}.\n")
    anchoring_markdown.haystack_of.cache_clear()
    assert store.reconcile() == 2 * pages
    assert anchoring_markdown.haystack_of.cache_info().misses == pages
    notes = store.list_annotations(include_resolved=True)
    assert {(a.source.line_start if a.source else None) for a in notes} == {3}
    store.close()

"""Source fidelity on patterns seen on real sites (issue #13): every note on the right lines.

Each fixture reproduces a pattern of a real documentation page (a reference page that shows
Markdown in a fence and then its rendered result, keys, a deleted passage, images, tables, …);
none is copied from one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils

import annotate
from annotate import schema, sourcemap
from annotate.context import get_context
from annotate.errors import ValidationError
from annotate.schema import LATEST
from annotate.store import Store

from .conftest import touch_write

# A reference page: the Markdown of an example in a fence, then the example rendered.
REFERENCE = """\
# Footnotes

Footnotes add a reference to a passage, which is shown at the bottom.

``` markdown title="Text with footnote references"
The gadget spins twice per second.[^1]

- The gadget keeps a count of its turns
- The widget resets the count at midnight

[^1]: Measured on a calm day with the lid closed.
```

<div class="result" markdown>

The gadget spins twice per second.[^1]

- The gadget keeps a count of its turns
- The widget resets the count at midnight

</div>

[^1]: Measured on a calm day with the lid closed.
"""


def line_of(source: str, needle: str, *, nth: int = 0) -> int:
    """The 1-based line of the `nth` line holding `needle` (a plain search, not the tool)."""
    found = [n for n, line in enumerate(source.split("\n"), 1) if needle in line]
    return found[nth]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "mkdocs.yml").write_text("site_name: Test\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "ref.md").write_text(REFERENCE)
    return tmp_path


def text_note(exact: str, prefix: str = "", suffix: str = "", **more: Any) -> dict[str, Any]:
    return {
        "pageUrl": "/ref/",
        "note": "Check this.",
        "selectedText": exact,
        "quote": {"exact": exact, "prefix": prefix, "suffix": suffix},
        **more,
    }


# -- class 1: the same words in a code example and in its rendered result -------------------------

# As the page shows them: the fence shows `[^1]`, the result a superscript 1.
FOOTNOTE = "Measured on a calm day with the lid closed."
ITEM = "The gadget keeps a count of its turns"


def test_a_quote_selected_in_the_result_never_maps_into_the_example() -> None:
    # The context matches both copies equally: only the kind of text tells them apart.
    prose = line_of(REFERENCE, ITEM, nth=1)
    fence = line_of(REFERENCE, ITEM, nth=0)
    got = sourcemap.locate_in_markdown(REFERENCE, ITEM, suffix="\nThe widget", in_code=False)
    assert got is not None and (got.line_start, got.line_end) == (prose, prose)
    got = sourcemap.locate_in_markdown(REFERENCE, ITEM, suffix="\nThe widget", in_code=True)
    assert got is not None and got.line_start == fence


def test_the_nth_occurrence_maps_to_the_nth_in_source_order() -> None:
    # Fence first, rendered definition last: counted per kind, in page order.
    fence, prose = (line_of(REFERENCE, FOOTNOTE, nth=n) for n in (0, 1))
    got = sourcemap.locate_in_markdown(REFERENCE, FOOTNOTE, in_code=False, occurrence=0)
    assert got is not None and got.line_start == prose
    got = sourcemap.locate_in_markdown(REFERENCE, FOOTNOTE, in_code=True, occurrence=0)
    assert got is not None and got.line_start == fence
    twice = "Spin the gadget.\n\nSome text.\n\nSpin the gadget.\n"
    for n, line in ((0, 1), (1, 5)):
        got = sourcemap.locate_in_markdown(twice, "Spin the gadget.", in_code=False, occurrence=n)
        assert got is not None and got.line_start == line


def test_the_other_kind_is_used_only_when_the_page_kind_has_no_copy() -> None:
    source = "Run it:\n\n```\nmkdocs serve --strict\n```\n"
    # Selected as prose (say, inline code the overlay saw differently): the only copy is code.
    got = sourcemap.locate_in_markdown(source, "mkdocs serve --strict", in_code=False)
    assert got is not None and got.line_start == 4


def test_old_notes_without_the_fields_prefer_prose_for_prose_context() -> None:
    prose = line_of(REFERENCE, "The gadget spins twice per second.", nth=1)
    got = sourcemap.locate_in_markdown(
        REFERENCE, "The gadget spins twice per second.", suffix="1\nThe gadget keeps"
    )
    assert got is not None and got.line_start == prose
    # Markup in the context says the selection was in the example.
    fence = line_of(REFERENCE, "The gadget spins twice per second.", nth=0)
    got = sourcemap.locate_in_markdown(
        REFERENCE, "The gadget spins twice per second.", suffix="[^1]\n\n- The gadget keeps"
    )
    assert got is not None and got.line_start == fence


def test_in_code_and_occurrence_are_stored_and_used(project: Path) -> None:
    store = annotate.open(project)
    assert store.schema_version == LATEST
    a = store.add_annotation(text_note(FOOTNOTE, inCode=False, occurrence=0))
    b = store.add_annotation(text_note(FOOTNOTE, inCode=True, occurrence=0))
    assert a.source.line_start == line_of(REFERENCE, FOOTNOTE, nth=1)
    assert b.source.line_start == line_of(REFERENCE, FOOTNOTE, nth=0)
    row = store.conn.execute("SELECT in_code, occurrence FROM annotations WHERE id = ?", (a.id,))
    assert tuple(row.fetchone()) == (0, 0)
    # Lines added above: each note follows its own copy.
    page = project / "docs" / "ref.md"
    touch_write(page, "Two new lines.\n\n" + REFERENCE)
    assert store.get_annotation(a.id).source.line_start == line_of(REFERENCE, FOOTNOTE, nth=1) + 2
    assert store.get_annotation(b.id).source.line_start == line_of(REFERENCE, FOOTNOTE, nth=0) + 2


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("inCode", "yes", "inCode must be true or false"),
        ("inCode", 1, "inCode must be true or false"),
        ("occurrence", -1, "occurrence must be between 0"),
        ("occurrence", 1.5, "occurrence must be a whole number"),
        ("occurrence", True, "occurrence must be a whole number"),
    ],
)
def test_bad_in_code_or_occurrence_is_refused(
    project: Path, field: str, value: Any, message: str
) -> None:
    store = annotate.open(project)
    with pytest.raises(ValidationError, match=message) as info:
        store.add_annotation(text_note(FOOTNOTE, **{field: value}))
    assert info.value.field == field


def test_in_code_is_for_text_notes_only(project: Path) -> None:
    store = annotate.open(project)
    element = {"type": "element", "pageUrl": "/ref/", "note": "x", "inCode": True}
    element["elementSelector"] = {"cssSelector": "h1"}
    with pytest.raises(ValidationError, match="inCode is only used with type 'text'"):
        store.add_annotation(element)


# -- class 2: context ranks, never rejects a unique exact occurrence ------------------------------

KEYS = """\
# Keyboard

Press these keys while reading:

* ++f++, ++s++, ++slash++ : open the search dialog
* ++p++, ++comma++ : go to previous page
* ++n++, ++period++ : go to next page
"""


def test_a_unique_exact_quote_is_found_whatever_its_context() -> None:
    # The stored context is nowhere in the Markdown (a page script rewrote it, say), yet the
    # quote occurs once.
    got = sourcemap.locate_in_markdown(
        KEYS, ": go to previous page", prefix="Quite other words here ", suffix=" and more unlike"
    )
    assert got is not None and got.line_start == line_of(KEYS, "go to previous page")
    assert got.score < 100  # the context disagrees: a lower score, not a miss


def test_repeated_text_without_telling_context_gets_no_guess() -> None:
    source = "Spin the gadget.\n\nMore text.\n\nSpin the gadget.\n"
    assert sourcemap.locate_in_markdown(source, "Spin the gadget.", prefix="zzzz qqqq ") is None


def test_an_untouched_quote_stays_anchored_when_a_paragraph_is_inserted_just_above(
    project: Path,
) -> None:
    page = project / "docs" / "ref.md"
    page.write_text(KEYS)
    store = annotate.open(project)
    a = store.add_annotation(
        text_note("go to previous page", prefix="search dialog\nP , , : ", suffix="\nN , .")
    )
    assert a.source.line_start == 6
    touch_write(page, KEYS.replace("* ++p++", "* ++b++ : go back in history\n* ++p++"))
    got = store.get_annotation(a.id)
    assert (got.anchor_state, got.source.line_start) == ("anchored", 7)
    assert got.source.excerpt == "* ++p++, ++comma++ : go to previous page"


# -- class 5: a stale note never points at its neighbour --------------------------------------------

PASSAGES = """\
# Passages

The first paragraph says what the page is about, in a sentence or two.

The second paragraph is the one a reviewer wants deleted from this page.

The third paragraph stays where it is, after the second one.
"""


def test_a_deleted_passage_keeps_its_last_known_lines_and_marks_nothing(project: Path) -> None:
    page = project / "docs" / "ref.md"
    page.write_text(PASSAGES)
    store = annotate.open(project)
    a = store.add_annotation(text_note("The second paragraph is the one a reviewer wants deleted"))
    assert (a.source.line_start, a.source.last_known) == (5, False)
    assert "lastKnown" not in a.to_dict()["source"]
    touch_write(page, PASSAGES.replace(
        "The second paragraph is the one a reviewer wants deleted from this page.\n\n", ""
    ))  # fmt: skip
    got = store.get_annotation(a.id)
    assert got.anchor_state == "stale"
    assert got.source.line_start == 5 and got.source.last_known
    # The excerpt is the passage as last seen, not the third paragraph that moved up.
    assert "second paragraph" in got.source.excerpt
    assert got.to_dict()["source"]["lastKnown"] is True
    listed = json.loads(store.list_annotations(as_json=True))[0]
    assert listed["source"] == got.to_dict()["source"]
    context = get_context(store, a.id, lines=2)
    assert "third paragraph" in context.numbered()
    assert not any(line.startswith(">") for line in context.numbered().split("\n"))
    assert context.to_dict()["lastKnown"] is True
    assert "no line is marked" in (context.warning or "")


def test_an_orphaned_note_keeps_its_last_known_lines(project: Path) -> None:
    store = annotate.open(project)
    a = store.add_annotation(text_note(ITEM, inCode=False))
    (project / "docs" / "ref.md").unlink()
    got = store.get_annotation(a.id)
    assert got.anchor_state == "orphaned"
    assert got.to_dict()["source"]["lastKnown"] is True
    assert json.loads(store.list_annotations(as_json=True))[0]["source"]["lastKnown"] is True


def test_a_passage_found_again_is_anchored_and_no_longer_last_known(project: Path) -> None:
    page = project / "docs" / "ref.md"
    page.write_text(PASSAGES)
    store = annotate.open(project)
    a = store.add_annotation(text_note("The third paragraph stays where it is"))
    touch_write(page, "# Passages\n")
    assert store.get_annotation(a.id).source.last_known
    touch_write(page, PASSAGES)
    got = store.get_annotation(a.id)
    assert got.anchor_state == "anchored" and not got.source.last_known
    assert got.source.line_start == 7
    assert ">" in get_context(store, a.id, lines=0).numbered()


# -- class 7: element notes map to the Markdown they were rendered from -----------------------------

ELEMENTS = """\
# Elements

Intro text for the elements page.

![Review panel with two notes](img/panel.png){ width="300" }

| Option | Default |
| ------ | ------- |
| `db_path` | `.annotate/annotations.db` |
| `enabled` | `true` |

!!! warning "Mind the gap"

    The platform edge is slippery when wet.

```python
print("hello from a fence")
```

See the [install guide](guide/install.md) first.

## A heading of its own
"""


def element(tag: str, preview: str, **attributes: str) -> dict[str, Any]:
    return {
        "type": "element",
        "pageUrl": "/ref/",
        "note": "Look at this element.",
        "elementSelector": {
            "cssSelector": f"article {tag}",
            "tagName": tag,
            "attributes": attributes,
            "outerHtmlPreview": preview,
        },
    }


@pytest.mark.parametrize(
    ("note", "first", "last"),
    [
        # An image, as the browser shows it: MkDocs rewrote the relative src for the page URL.
        (
            element(
                "img",
                '<img alt="Review panel with two notes" src="../img/panel.png" width="300">',
                alt="Review panel with two notes",
                src="../img/panel.png",
            ),
            "![Review panel",
            "![Review panel",
        ),
        (
            element(
                "table",
                "<table><thead><tr><th>Option</th><th>Default</th></tr></thead><tbody><tr>"
                "<td><code>db_path</code></td><td><code>.annotate/annotations.db</code></td>",
            ),
            "| Option |",
            "| `enabled` |",
        ),
        (
            element(
                "div",
                '<div class="admonition warning"><p class="admonition-title">Mind the gap</p>'
                "<p>The platform edge is slippery when wet.</p></div>",
                **{"class": "admonition warning"},
            ),
            "!!! warning",
            "The platform edge",
        ),
        (
            element(
                "pre",
                '<pre><code class="language-python">print("hello from a fence")</code></pre>',
            ),
            "```python",
            'print("hello from a fence")\n```',  # the closing fence too
        ),
        (
            element("h2", '<h2 id="a-heading-of-its-own">A heading of its own</h2>'),
            "## A heading",
            "## A heading",
        ),
        (
            element(
                "a",
                '<a href="../guide/install/">install guide</a>',
                href="../guide/install/",
            ),
            "[install guide]",
            "[install guide]",
        ),
    ],
)
def test_element_notes_map_to_their_markdown(
    project: Path, note: dict[str, Any], first: str, last: str
) -> None:
    (project / "docs" / "ref.md").write_text(ELEMENTS)
    store = annotate.open(project)
    a = store.add_annotation(note)
    assert a.source is not None, note
    lines = (a.source.line_start, a.source.line_end)
    last_line = line_of(ELEMENTS, last.split("\n")[0]) + last.count("\n")
    assert lines == (line_of(ELEMENTS, first), last_line)
    assert a.anchor_state == "anchored"
    # Lines added above: the element note follows.
    touch_write(project / "docs" / "ref.md", "New line.\n\n" + ELEMENTS)
    got = store.get_annotation(a.id)
    assert (got.source.line_start, got.source.line_end) == (lines[0] + 2, lines[1] + 2)


def test_an_element_not_in_the_markdown_is_never_anchored(project: Path) -> None:
    (project / "docs" / "ref.md").write_text(ELEMENTS)
    store = annotate.open(project)
    a = store.add_annotation(
        element("nav", '<nav class="md-footer">Previous Next</nav>', **{"class": "md-footer"})
    )
    assert a.source is None
    assert a.anchor_state == "orphaned" and a.anchor_score == 0
    listed = json.loads(store.list_annotations(as_json=True))[0]
    assert (listed["source"], listed["anchorState"]) == (None, "orphaned")


def test_a_deleted_image_leaves_its_element_note_stale(project: Path) -> None:
    page = project / "docs" / "ref.md"
    page.write_text(ELEMENTS)
    store = annotate.open(project)
    a = store.add_annotation(
        element("img", '<img src="../img/panel.png">', src="../img/panel.png", alt="")
    )
    assert a.source.line_start == 5
    touch_write(
        page, ELEMENTS.replace('![Review panel with two notes](img/panel.png){ width="300" }', "")
    )
    got = store.get_annotation(a.id)
    assert got.anchor_state == "stale" and got.source.last_known


def test_an_old_store_is_migrated(tmp_path: Path) -> None:
    # A store written before issue #13 (two migrations) gains the columns on open.
    path = tmp_path / "old.db"
    db = sqlite_utils.Database(path)
    db.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TEXT)")
    for version, migrate in enumerate(schema.MIGRATIONS[:2], 1):
        migrate(db)
        db.execute("INSERT INTO schema_version VALUES (?, '2026-01-01T00:00:00Z')", [version])
    db.conn.commit()
    db.conn.close()
    store = Store(path, project_dir=tmp_path)
    assert store.schema_version == LATEST
    columns = {c.name for c in store.db["annotations"].columns}
    assert {"in_code", "occurrence", "source_kind", "source_object"} <= columns


# -- class 3 at the source side: one word changed inside a short quote ------------------------------

SHORT = """\
# Short

Some text first, to give the page a paragraph.

The agent edits the documentation.

Set the configuration in mkdocs.yml.

More text after, to close the page.
"""


@pytest.mark.parametrize(
    ("quote", "old", "new"),
    [
        ("The agent edits the documentation.", "documentation", "docs"),
        ("Set the configuration in mkdocs.yml.", "configuration", "settings"),
        ("Set the configuration in mkdocs.yml.", "Set", "Put"),
    ],
)
def test_one_word_changed_in_a_quote_of_30_chars_stays_anchored(
    project: Path, quote: str, old: str, new: str
) -> None:
    page = project / "docs" / "ref.md"
    page.write_text(SHORT)
    store = annotate.open(project)
    a = store.add_annotation(text_note(quote))
    line = a.source.line_start
    touch_write(page, SHORT.replace(quote, quote.replace(old, new)))
    got = store.get_annotation(a.id)
    assert (got.anchor_state, got.source.line_start, got.source.line_end) == (
        "anchored",
        line,
        line,
    )
    assert 0 < got.anchor_score < 100


def test_two_words_changed_in_a_short_quote_is_stale(project: Path) -> None:
    page = project / "docs" / "ref.md"
    page.write_text(SHORT)
    store = annotate.open(project)
    a = store.add_annotation(text_note("The agent edits the documentation."))
    touch_write(page, SHORT.replace("agent edits the documentation", "reviewer reads the docs"))
    got = store.get_annotation(a.id)
    assert got.anchor_state == "stale" and got.source.last_known


def test_a_deleted_heading_does_not_move_to_the_same_words_in_other_case(project: Path) -> None:
    page = project / "docs" / "ref.md"
    text = "# Guide\n\n## Table of contents\n\nThe page shows a table of contents on the right.\n"
    page.write_text(text)
    store = annotate.open(project)
    a = store.add_annotation(text_note("Table of contents", prefix="Guide\n", suffix="\nThe page"))
    assert a.source.line_start == 3
    touch_write(page, text.replace("## Table of contents\n\n", ""))
    got = store.get_annotation(a.id)
    assert got.anchor_state == "stale" and got.source.last_known


def test_an_edited_passage_does_not_jump_to_a_copy_of_it_far_away(project: Path) -> None:
    # Reference pages repeat the same example text (and so the same context) many times.
    example = "Sed sagittis eleifend rutrum. Donec vitae suscipit est. Nullam tempus."
    filler = "\n\n".join(f"Filler paragraph number {n} with some words." for n in range(60))
    text = f"# Lists\n\n{example}\n\n{filler}\n\n{example}\n"
    page = project / "docs" / "ref.md"
    page.write_text(text)
    store = annotate.open(project)
    a = store.add_annotation(text_note(example, inCode=False, occurrence=0))
    assert a.source.line_start == 3
    touch_write(page, text.replace("vitae suscipit", "vitae revised", 1))
    got = store.get_annotation(a.id)
    assert (got.anchor_state, got.source.line_start) == ("anchored", 3)
    assert got.anchor_score < 100


def test_keys_are_projected_as_the_page_shows_them() -> None:
    source = "# Keys\n\n* ++arrow-down++ , ++arrow-up++ : select next / previous result\n"
    assert "Down , Up : select next / previous result" in sourcemap.project_markdown(source).text
    got = sourcemap.locate_in_markdown(source, ", Up : select next / previous result")
    assert got is not None and (got.line_start, got.score) == (3, 100)
    got = sourcemap.locate_in_markdown("Press ++ctrl+alt+del++ now.\n", "Ctrl+Alt+Del now")
    assert got is not None and got.line_start == 1


def test_a_reworded_result_does_not_move_into_the_example_above_it(project: Path) -> None:
    page = project / "docs" / "ref.md"
    page.write_text(REFERENCE)
    store = annotate.open(project)
    a = store.add_annotation(text_note(ITEM, suffix="\nThe widget", inCode=False, occurrence=0))
    line = line_of(REFERENCE, ITEM, nth=1)
    assert a.source.line_start == line
    lines = REFERENCE.split("\n")
    lines[line - 1] = lines[line - 1].replace("count", "tally")
    touch_write(page, "\n".join(lines))
    got = store.get_annotation(a.id)
    assert (got.anchor_state, got.source.line_start) == ("anchored", line)


DEFINITIONS = """\
# Modes

<!-- md:option mode:search -->

:   This mode is active when the search is focused. It provides several key
    bindings to make search navigable via keyboard:

    * ++arrow-down++ , ++arrow-up++ : select next / previous result
    * ++esc++ , ++tab++ : close search dialog
"""


def test_a_definition_after_an_html_term_is_not_code() -> None:
    # Python-Markdown's def_list takes it; markdown-it sees no term and would read the indented
    # list as a code block.
    got = sourcemap.locate_in_markdown(
        DEFINITIONS, ", Up : select next / previous result", in_code=False
    )
    assert got is not None and (got.line_start, got.score) == (8, 100)


def test_text_after_keys_stays_anchored_when_a_paragraph_is_inserted_above(project: Path) -> None:
    page = project / "docs" / "ref.md"
    page.write_text(DEFINITIONS)
    store = annotate.open(project)
    a = store.add_annotation(
        text_note(
            ", Up : select next / previous result",
            prefix="navigable via keyboard:  Down ",
            suffix=" Esc , Tab : close search dialog",
            inCode=False,
            occurrence=0,
        )
    )
    assert a.source.line_start == 8
    touch_write(
        page,
        DEFINITIONS.replace("    * ++arrow-down++", "    A new paragraph.\n\n    * ++arrow-down++"),
    )
    got = store.get_annotation(a.id)
    assert (got.anchor_state, got.source.line_start) == ("anchored", 10)

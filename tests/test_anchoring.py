"""Re-anchoring quotes in a rendered page after the page changed (annotate.anchoring)."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest

from annotate.anchoring import (
    CONTEXT_LENGTH,
    Match,
    PageIndex,
    Selector,
    TextIndex,
    build_selector,
    locate,
    locate_many,
)
from annotate.anchoring.index import forget_shared, shared
from annotate.anchoring.tuning import SHARED_INDEX_MIN_CHARS, SHARED_INDEXES

# The text of a rendered Material page, as the overlay reads it: headings, paragraphs wrapped like
# their Markdown source, a code block, and the same admonition twice.
PAGE = """\
Getting started
This guide walks you through installing the plugin, adding it to your site and
leaving your first review note. It assumes a working MkDocs project with a
mkdocs.yml file at its root.
Installation
Install the package from PyPI into the same environment as MkDocs itself:
pip install mkdocs-annotate
Then enable the plugin in mkdocs.yml, next to the search plugin that MkDocs
enables by default:
plugins:
  - search
  - annotate
Note
Plugins listed in mkdocs.yml replace the default list, so keep search in the
list if you still want the search box.
Configuration
The plugin works without any options. The most useful ones are described
below; every option can also be set through an environment variable, which
is handy on a build server.
Note
Plugins listed in mkdocs.yml replace the default list, so keep search in the
list if you still want the search box.
Reviewing a page
Run mkdocs serve and open any page of the site. Select a passage, write a note
and press Save: the note is stored in .annotate/annotations.db next to the
mkdocs.yml file, and every note of the page is listed in the review panel.
Handing notes to an agent
Export the open notes as Markdown and paste them into a chat, or let the agent
read them itself through the MCP server. The agent marks each note as addressed
once it has changed the Markdown source, and you resolve it after checking.
"""


def select(text: str, quote: str, occurrence: int = 0) -> dict[str, Any]:
    """The selector of the `occurrence`-th appearance of `quote` in `text`."""
    start = -1
    for _ in range(occurrence + 1):
        start = text.index(quote, start + 1)
    return build_selector(text, start, start + len(quote))


def where(text: str, passage: str, occurrence: int = 0) -> tuple[int, int]:
    start = -1
    for _ in range(occurrence + 1):
        start = text.index(passage, start + 1)
    return start, start + len(passage)


def span(match: Match | None) -> tuple[int, int] | None:
    return None if match is None else (match.start, match.end)


QUOTE = "write a note\nand press Save"


# -- Unchanged text ---------------------------------------------------------------------------------


def test_quote_still_at_its_position_scores_100() -> None:
    match = locate(PAGE, **select(PAGE, QUOTE))
    assert match == Match(*where(PAGE, QUOTE), score=100.0, method="position")


def test_found_by_quote_alone_without_context_or_position() -> None:
    match = locate(PAGE, "every note of the page")
    assert span(match) == where(PAGE, "every note of the page")
    assert (match.score, match.method) == (100.0, "exact")


# -- Edit patterns ----------------------------------------------------------------------------------


def test_lines_added_above() -> None:
    added = "Tip\nRead the changelog before upgrading from an older release.\n"
    page = PAGE.replace("Installation\n", "Installation\n" + added)
    match = locate(page, **select(PAGE, QUOTE))
    assert span(match) == where(page, QUOTE)
    assert (match.score, match.method) == (100.0, "exact")


def test_lines_removed_above() -> None:
    page = PAGE.replace("pip install mkdocs-annotate\n", "")
    assert span(locate(page, **select(PAGE, QUOTE))) == where(page, QUOTE)


def test_paragraph_reflowed_keeps_a_full_score() -> None:
    # Same words, new line breaks: whitespace never counts.
    page = PAGE.replace("write a note\nand press Save:", "write a\nnote and press Save:")
    match = locate(page, **select(PAGE, QUOTE))
    assert span(match) == where(page, "write a\nnote and press Save")
    assert match.score == 100.0


def test_paragraph_reflowed_with_indentation_keeps_a_full_score() -> None:
    # Runs of whitespace change the length: found approximately, still scored as unchanged.
    page = PAGE.replace("write a note\nand press Save:", "write a note\n    and press Save:")
    match = locate(page, **select(PAGE, QUOTE))
    assert span(match) == where(page, "write a note\n    and press Save")
    assert (match.score, match.method) == (100.0, "fuzzy")


def test_word_changed_inside_the_quote() -> None:
    quote = "Select a passage, write a note\nand press Save"
    page = PAGE.replace("Select a passage, write", "Select some text, write")
    match = locate(page, **select(PAGE, quote))
    assert span(match) == where(page, "Select some text, write a note\nand press Save")
    assert match.method == "fuzzy"
    assert 75 <= match.score < 100


def test_word_added_inside_the_quote_near_its_start() -> None:
    quote = "The agent marks each note as addressed"
    page = PAGE.replace("The agent marks each", "The agent then marks each")
    match = locate(page, **select(PAGE, quote))
    assert span(match) == where(page, "The agent then marks each note as addressed")


def test_sentence_inserted_right_before_the_quote_is_left_out() -> None:
    quote = "The plugin works without any options."
    page = PAGE.replace(quote, "It is fast. " + quote)
    assert span(locate(page, **select(PAGE, quote))) == where(page, quote)


def test_first_word_replaced_by_two_starts_at_the_context_not_inside_a_word() -> None:
    # Found by the property tests: the quote's edge matched "ga ca doru" (the end of the new word
    # "tega") as well as the text after the context, at the same cost. An edge found only with
    # edits was itself edited: the quote starts where its context ends.
    quote = (
        "zu ca doru bavikivu be gi givurulo gu gugu cufecusa bego belugufu bemebe betutele bevu "
        "bi bidime biferu bipofe bitahu biti bige bihepupo"
    )
    before = "coma dile fosu hake nuro obuki keku lebinihi bamo peta pokiti bareci zusuneli gakicu "
    old = before + quote + " bimici bito bizeca bo bobi boco ba bace bodezi bume caro"
    page = old.replace("zu ca doru", "badocedi tega ca doru")
    match = locate(page, **select(old, quote))
    assert span(match) == where(page, "badocedi tega " + quote[3:])


def test_section_moved() -> None:
    section = PAGE[PAGE.index("Handing notes to an agent") :]
    page = PAGE.replace(section, "").replace("Installation\n", section + "Installation\n")
    quote = "let the agent\nread them itself through the MCP server"
    match = locate(page, **select(PAGE, quote))
    assert span(match) == where(page, quote)
    assert match.method == "exact"


def test_section_moved_and_edited() -> None:
    section = PAGE[PAGE.index("Handing notes to an agent") :]
    edited = section.replace("paste them into a chat", "paste them into your chat")
    page = PAGE.replace(section, "").replace("Installation\n", edited + "Installation\n")
    quote = "Export the open notes as Markdown and paste them into a chat, or let the agent"
    match = locate(page, **select(PAGE, quote))
    assert span(match) == where(
        page, "Export the open notes as Markdown and paste them into your chat, or let the agent"
    )
    assert match.method == "fuzzy"


def test_heading_renamed_inside_the_quote() -> None:
    quote = "Handing notes to an agent"
    page = PAGE.replace(quote, "Handing notes to a coding agent")
    match = locate(page, **select(PAGE, quote))
    assert span(match) == where(page, "Handing notes to a coding agent")


def test_heading_renamed_in_the_context() -> None:
    quote = "The plugin works without any options."
    page = PAGE.replace("Configuration\n", "Options\n")
    match = locate(page, **select(PAGE, quote))
    assert span(match) == where(page, quote)
    assert match.score == 100.0


def test_long_quote_with_edits() -> None:
    quote = PAGE[PAGE.index("Configuration") : PAGE.index("Handing notes")]
    page = (
        PAGE.replace("The most useful ones", "The useful ones")
        .replace("Run mkdocs serve", "Run mkdocs serve --dirty")
        .replace("Getting started\n", "Getting started\nA first paragraph was added here.\n")
    )
    match = locate(page, **select(PAGE, quote))
    start, _ = where(page, "Configuration")
    assert span(match) == (start, page.index("Handing notes"))


# -- Repeated passages ------------------------------------------------------------------------------

NOTE = "replace the default list, so keep search"  # its 32-character context repeats too


def test_repeated_quote_context_decides() -> None:
    # The quote "Note" occurs twice; its prefix tells them apart.
    page = "Intro\n" + PAGE
    for occurrence in (0, 1):
        match = locate(page, **select(PAGE, "Note\nPlugins", occurrence))
        assert span(match) == where(page, "Note\nPlugins", occurrence)


def test_repeated_quote_same_context_old_position_decides() -> None:
    page = "A new first line.\n" + PAGE
    for occurrence in (0, 1):
        match = locate(page, **select(PAGE, NOTE, occurrence))
        assert span(match) == where(page, NOTE, occurrence)
        assert match.method == "exact"


def test_repeated_quote_one_copy_edited_the_other_one_in_context_is_kept() -> None:
    # The annotated sentence changed; an identical copy elsewhere has a different context.
    quote = "every option can also be set through an environment variable"
    page = PAGE.replace(quote, "every option can also be set by an environment variable")
    page += "In short, every option can also be set through an environment variable.\n"
    match = locate(page, **select(PAGE, quote))
    assert span(match) == where(page, "every option can also be set by an environment variable")


def test_locate_many_uses_neighbours_to_follow_a_drifted_repeated_passage() -> None:
    # Text added above moved everything by more than half the distance between the two copies:
    # alone, the old position points at the wrong copy; the page's other quotes show the shift.
    page = ("A long new introduction paragraph. " * 12) + PAGE
    others = ["Getting started", QUOTE, "Export the open notes", "The plugin works without any"]
    quotes = [select(PAGE, NOTE, 1), *(select(PAGE, quote) for quote in others)]
    assert span(locate(page, **quotes[0])) == where(page, NOTE, 0)  # the wrong copy
    found = locate_many(page, quotes)
    assert span(found[0]) == where(page, NOTE, 1)


def test_locate_many_checks_the_shifted_position_before_searching() -> None:
    # A paragraph added on top moves every quote by its length: each is found right there (an
    # exact hit, not the stored position), and the repeated admonition too, at its shifted copy.
    intro = "A new introduction paragraph, written after the review started.\n"
    quotes = [select(PAGE, q) for q in ("Getting started", QUOTE, "Export the open notes")]
    quotes.append(select(PAGE, NOTE, 1))
    found = locate_many(intro + PAGE, quotes)
    shifted = [(q["start"] + len(intro), q["end"] + len(intro)) for q in quotes]
    assert [span(m) for m in found] == shifted
    assert {m.method for m in found if m} == {"exact"}
    assert [m.method for m in locate_many(PAGE, quotes) if m] == ["position"] * 4


def test_repeated_quote_whose_place_was_deleted_is_not_guessed() -> None:
    # The annotated copy went with its section; the two left are in other contexts, and nothing
    # says which one the note was about.
    body = "Plugins listed in mkdocs.yml replace the default list, so keep search in the\nlist"
    old = PAGE + "FAQ\nWhy did my search box disappear? " + body + " That is why.\n"
    assert locate(PAGE, **select(old, body, 2)) is None


def test_unique_quote_found_in_another_context_is_taken_as_moved() -> None:
    body = "Export the open notes as Markdown and paste them into a chat"
    old = "Summary: " + body + ". That is all.\n"
    match = locate(PAGE, **select(old, body))
    assert span(match) == where(PAGE, body)


# -- Not found --------------------------------------------------------------------------------------


def test_quote_deleted_is_not_found() -> None:
    quote = "which\nis handy on a build server"
    page = PAGE.replace(", which\nis handy on a build server.", ".")
    assert locate(page, **select(PAGE, quote)) is None


def test_paragraph_deleted_is_not_found() -> None:
    paragraph = PAGE[PAGE.index("Run mkdocs serve") : PAGE.index("Handing notes")]
    page = PAGE.replace(paragraph, "")
    assert locate(page, **select(PAGE, "the note is stored in .annotate/annotations.db")) is None


def test_quote_rewritten_beyond_recognition_is_not_found() -> None:
    quote = "The most useful ones are described\nbelow"
    page = PAGE.replace(quote, "Here is a table of all settings")
    assert locate(page, **select(PAGE, quote)) is None


def test_replaced_text_is_found_when_the_quote_is_gone() -> None:
    quote = "The most useful ones are described\nbelow"
    replacement = "The options are listed in the table below"
    page = PAGE.replace(quote, replacement)
    match = locate(page, **select(PAGE, quote), replaced_text=replacement)
    assert span(match) == where(page, replacement)
    assert (match.score, match.method) == (100.0, "replaced")


def test_quote_is_preferred_over_replaced_text() -> None:
    quote = "write a note\nand press Save"
    page = "The button reads: save your note.\n" + PAGE
    match = locate(page, **select(PAGE, quote), replaced_text="save your note")
    assert span(match) == where(page, quote)
    assert match.method == "exact"


# -- Empty and short quotes ---------------------------------------------------------------------


@pytest.mark.parametrize("quote", ["", "   ", "\n"])
def test_empty_quote_is_not_found(quote: str) -> None:
    assert locate(PAGE, quote, start=0, end=len(quote)) is None


def test_short_quote_is_found_next_to_its_context() -> None:
    page = "New first line.\n" + PAGE
    match = locate(page, **select(PAGE, "Save"))
    assert span(match) == where(page, "Save")


def test_short_quote_whose_context_changed_is_not_guessed() -> None:
    # "note" occurs many times; with its context rewritten no occurrence is the right one.
    page = PAGE.replace("leaving your first review note. It", "writing a first comment. Then")
    selector = select(PAGE, "note", 0)
    assert selector["prefix"].endswith("your first review ")
    assert locate(page, **selector) is None


def test_short_quote_is_not_matched_approximately() -> None:
    selector = select(PAGE, "Save")
    page = PAGE.replace("press Save", "press Sve")
    assert locate(page, **selector) is None


# -- Text shapes ------------------------------------------------------------------------------------


def test_non_ascii_text_and_no_break_spaces() -> None:
    page = PAGE.replace("MkDocs itself", "MkDocs itself — naïvely\u00a0fast").replace(
        "write a note\nand", "write a note\u00a0and"
    )
    assert span(locate(page, **select(PAGE, QUOTE))) == where(
        page, "write a note\u00a0and press Save"
    )


def test_text_index_can_be_shared_and_gives_the_same_answers() -> None:
    page = PAGE.replace("Select a passage", "Select some text") + "More text.\n"
    index = TextIndex(page)
    quotes = ["Select a passage, write a note", QUOTE, "Export the open notes as Markdown"]
    for quote in quotes * 2:  # later calls reuse the index, then index everything
        assert locate(index, **select(PAGE, quote)) == locate(page, **select(PAGE, quote))
    assert index.build() is index


# -- locate_many ------------------------------------------------------------------------------------


EDITS = {
    "Select a passage": "Select one passage",
    "write a note\nand press Save:": "write a\nnote and press Save:",
    "The most useful ones are described\nbelow": "The options are listed below",
    "which\nis handy on a build server": "which helps in CI",
}


def edited_page() -> str:
    page = "Changelog\nVersion 2 renames the review panel.\n" + PAGE
    for old, new in EDITS.items():
        page = page.replace(old, new)
    return page


QUOTES = [
    QUOTE,
    "Select a passage, write a note",
    "The most useful ones are described\nbelow",
    "which\nis handy on a build server",
    "every note of the page is listed in the review panel",
    "Handing notes to an agent",
    "Getting started",
    "Save",
]


def test_locate_many_equals_locate_one_by_one() -> None:
    page = edited_page()
    selectors = [select(PAGE, quote) for quote in QUOTES]
    expected = [locate(page, **selector) for selector in selectors]
    assert locate_many(page, selectors) == expected
    assert sum(match is None for match in expected) == 2  # the rewritten and deleted quotes


def test_locate_many_looks_near_the_neighbours_before_searching_the_whole_text() -> None:
    # A paragraph added on top, then edits inside two quotes: each edited quote is found
    # approximately where the quote before it moved to, without indexing the whole text, and
    # where `locate` finds it by searching everywhere.
    intro = "A new introduction paragraph, written after the review started.\n"
    quotes = [
        "Install the package from PyPI",
        "Then enable the plugin in mkdocs.yml, next to the search plugin",
        "The plugin works without any options. The most useful ones are described",
        "Select a passage, write a note",
    ]
    page = intro + PAGE.replace("next to the search", "beside the search").replace(
        "works without any options", "works without options"
    )
    selectors = [select(PAGE, quote) for quote in quotes]
    index = TextIndex(page)
    found = locate_many(index, selectors)
    assert found == [locate(page, **selector) for selector in selectors]
    assert [m.method for m in found if m] == ["exact", "fuzzy", "fuzzy", "exact"]
    assert not index.searched  # no word pair was looked up


def test_locate_many_follows_a_run_of_edited_quotes_from_the_first_one_found() -> None:
    # A line added on top and the first quotes edited, the first one's context too: it is found
    # by searching the whole text and places the next one; the deleted one is still not found,
    # and the one after it, moved by the deletion, is found by searching the whole text.
    page = "Preface\n" + PAGE
    for old, new in {
        "Getting started\nThis guide walks": "Getting going\nThis guide takes",
        "adding it to your site": "adding it to the site",
        "It assumes a working MkDocs project with a\n": "",
        "from PyPI into the same": "from PyPI into the very same",
    }.items():
        page = page.replace(old, new)
    quotes = [
        "This guide walks you through installing the plugin",
        "adding it to your site and\nleaving your first",
        "It assumes a working MkDocs project with a",
        "Install the package from PyPI into the same environment",
        "pip install mkdocs-annotate",
    ]
    selectors = [select(PAGE, quote) for quote in quotes]
    found = locate_many(page, selectors)
    assert found == [locate(page, **selector) for selector in selectors]
    assert [m and m.method for m in found] == ["fuzzy", "fuzzy", None, "fuzzy", "exact"]


@dataclass
class Quote:
    exact: str
    prefix: str
    suffix: str


@dataclass
class Position:
    start: int
    end: int


@dataclass
class Note:
    """Shaped like annotate.Annotation: quote and position objects, replaced_text."""

    quote: Quote | None
    position: Position | None
    replaced_text: str | None = None


def test_locate_many_accepts_every_selector_shape() -> None:
    page = edited_page()
    plain = select(PAGE, "The most useful ones are described\nbelow")
    replaced = "The options are listed below"
    shapes = [
        {**plain, "replaced_text": replaced},
        {
            "quote": {key: plain[key] for key in ("exact", "prefix", "suffix")},
            "position": {"start": plain["start"], "end": plain["end"]},
            "replacedText": replaced,
        },
        Note(
            Quote(plain["exact"], plain["prefix"], plain["suffix"]),
            Position(plain["start"], plain["end"]),
            replaced,
        ),
        Selector(**plain, replaced_text=replaced),
    ]
    expected = locate(page, **plain, replaced_text=replaced)
    assert expected is not None and expected.method == "replaced"
    assert locate_many(page, shapes) == [expected] * len(shapes)


def test_locate_many_without_a_quote_gives_none() -> None:
    element_note = Note(quote=None, position=None)
    assert locate_many(PAGE, [element_note, {}]) == [None, None]


def test_locate_many_on_an_empty_list() -> None:
    assert locate_many(PAGE, []) == []


# -- PageIndex --------------------------------------------------------------------------------------


def versions_of_the_page() -> list[str]:
    """The page as a web server sees it over a review: lines added, removed, duplicated and
    edited, a counter line changing on every load, and once without any line break."""
    edited = edited_page()
    lines = edited.split("\n")
    return [
        PAGE,
        PAGE + "\n1",
        edited + "\n2",
        edited + "\n3",
        "\n".join(lines[:10] + lines[14:]) + "\n4",  # a paragraph removed
        "\n".join(lines[:20] + lines[5:9] + lines[20:]),  # lines repeated
        "\n".join(line.replace("the", "THE") for line in lines),  # every line edited
        edited.replace("\n", " "),  # one line
        "",
        PAGE,
    ]


def test_page_index_gives_what_a_fresh_text_gives_across_versions() -> None:
    page = PageIndex()
    selectors = [select(PAGE, quote) for quote in QUOTES]
    for text in versions_of_the_page():
        assert page.locate_many(text, selectors) == locate_many(text, selectors)
        page.index(text).lookup([0])  # brought up to date by a lookup (all quotes may hold)
        # Only the latest text's lines (none for one long line: a fresh TextIndex serves it).
        assert set(page._lines) == (set(text.split("\n")) if "\n" in text or not text else set())


def test_page_index_reuses_the_lines_it_has_seen() -> None:
    page = PageIndex()
    selectors = [select(PAGE, quote) for quote in QUOTES]
    # A text of new lines is answered with a fresh index (cheaper than indexing it by lines)...
    assert page.locate_many(edited_page(), selectors) == locate_many(edited_page(), selectors)
    assert page._lines == {}
    page.catch_up()  # ... and indexed by lines after the answer
    kept = dict(page._lines)
    assert set(kept) == set(edited_page().split("\n"))
    page.locate_many(edited_page() + "\nOne more line.", selectors)
    assert set(page._lines) - set(kept) == {"One more line."}
    assert all(page._lines[line] is entry for line, entry in kept.items())


def test_page_index_without_catch_up_indexes_a_second_text_like_the_last() -> None:
    page = PageIndex()
    selectors = [select(PAGE, quote) for quote in QUOTES]
    page.locate_many(edited_page(), selectors)
    assert page._lines == {}
    text = edited_page() + "\nOne more line."
    assert page.locate_many(text, selectors) == locate_many(text, selectors)
    assert set(page._lines) == set(text.split("\n"))


def test_page_index_catch_up_skips_a_text_that_needed_no_search() -> None:
    page = PageIndex()
    selectors = [select(PAGE, quote) for quote in QUOTES]
    page.locate_many(PAGE, selectors)  # every quote where it was: no index needed
    page.catch_up()
    assert page._lines == {}


def test_page_index_is_shared_by_threads() -> None:
    page = PageIndex()
    selectors = [select(PAGE, quote) for quote in QUOTES]
    texts = [edited_page() + f"\n{n}" for n in range(40)]
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda text: page.locate_many(text, selectors), texts))
    assert answers == [locate_many(text, selectors) for text in texts]


def test_every_whitespace_character_but_the_space_is_unprintable() -> None:
    # `text.fold` leaves a printable string as it is.
    assert not [
        c
        for c in map(chr, range(sys.maxunicode + 1))
        if c.isspace() and c.isprintable() and c != " "
    ]


# -- build_selector ---------------------------------------------------------------------------------


def test_build_selector_keeps_32_characters_of_context() -> None:
    start, end = where(PAGE, QUOTE)
    selector = build_selector(PAGE, start, end)
    assert selector == {
        "exact": QUOTE,
        "prefix": PAGE[start - CONTEXT_LENGTH : start],
        "suffix": PAGE[end : end + CONTEXT_LENGTH],
        "start": start,
        "end": end,
    }
    assert CONTEXT_LENGTH == 32


def test_build_selector_at_the_edges_of_the_text() -> None:
    assert build_selector("Hello world", 0, 5) == {
        "exact": "Hello",
        "prefix": "",
        "suffix": " world",
        "start": 0,
        "end": 5,
    }


@pytest.mark.parametrize(("start", "end"), [(-1, 3), (5, 3), (0, 999)])
def test_build_selector_rejects_a_span_outside_the_text(start: int, end: int) -> None:
    with pytest.raises(ValueError, match=f"Span {start}:{end} is not inside a text of 11"):
        build_selector("Hello world", start, end)


# -- Indexes of texts seen before (locate called quote by quote) ------------------------------------


def long_text(n: int) -> str:
    """A text long enough for `locate` to keep its index."""
    return "\n".join(f"Paragraph {n}-{i}: {PAGE}" for i in range(SHARED_INDEX_MIN_CHARS // 500))


def test_locate_keeps_the_index_of_a_long_text_for_the_next_call() -> None:
    forget_shared()
    text = long_text(0)
    index = shared(text)
    assert len(text) >= SHARED_INDEX_MIN_CHARS
    assert shared(text) is index
    assert shared("".join(text)) is index  # an equal text, another string object
    assert shared(PAGE) is not shared(PAGE)  # a short text: indexing it costs less


def test_kept_indexes_are_bounded() -> None:
    forget_shared()
    first = long_text(0)
    index = shared(first)
    for n in range(1, SHARED_INDEXES + 1):
        shared(long_text(n))
    assert shared(first) is not index


def test_locate_one_by_one_on_a_bare_text_answers_as_on_a_built_index() -> None:
    forget_shared()
    text = long_text(0) + "\n" + edited_page()
    selectors = [select(PAGE, quote) for quote in QUOTES]
    built = TextIndex(text).build()
    expected = [locate(built, **selector) for selector in selectors]
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda selector: locate(text, **selector), selectors * 3))
    assert answers == expected * 3

"""Quotes through the edits that lost them on real sites (issue #13): context ranks occurrences
instead of rejecting them (class 2), and one word rewritten inside a short quote keeps it
anchored (class 3), on page text and in Markdown; deleted quotes still anchor nowhere."""

from __future__ import annotations

from pathlib import Path

import pytest

import annotate
from annotate.anchoring import PageIndex, build_selector, locate, locate_many
from annotate.sourcemap import locate_in_markdown, normalise, project_markdown

from .conftest import touch_write

# The text of a rendered page with keyboard shortcuts as pymdownx.keys shows them (`++p++ ,
# ++comma++` becomes "P , , "), as the overlay reads it.
KEYS_PAGE = """\
Keyboard shortcuts
Press the keys below anywhere on a page, outside a text field.
P , , : go to previous page
N , . : go to next page
S , / : open the search
"""
KEYS_QUOTE = ": go to previous page"


def where(text: str, quote: str) -> tuple[int, int]:
    start = text.index(quote)
    return start, start + len(quote)


def select(text: str, quote: str) -> dict:
    return build_selector(text, *where(text, quote))


# -- Class 2: context ranks, it does not reject --------------------------------------------------


def test_a_unique_quote_is_found_whatever_its_context_says() -> None:
    # The stored context shares nothing with the text around the quote now.
    match = locate(
        KEYS_PAGE,
        KEYS_QUOTE,
        prefix="A paragraph that is gone. P , , ",
        suffix="\nSomething else entirely, gone too",
    )
    assert match is not None
    assert (match.start, match.end) == where(KEYS_PAGE, KEYS_QUOTE)
    assert match.method == "exact"
    assert 50 <= match.score < 100  # found, and the score says the context disagrees


def test_a_paragraph_inserted_just_above_keeps_an_untouched_quote() -> None:
    heading = "Keyboard shortcuts"
    selectors = [select(KEYS_PAGE, KEYS_QUOTE), select(KEYS_PAGE, heading)]
    # A paragraph inserted just above rewrites the quote's prefix; the line below it changed too.
    edited = KEYS_PAGE.replace(
        "P , , ", "Shortcuts work in every browser since version 9.2 of the theme.\nP , , "
    ).replace("N , . : go to next page", "N : next")
    expected = where(edited, KEYS_QUOTE)
    for match in (
        locate(edited, **selectors[0]),
        locate_many(edited, selectors)[0],
        PageIndex().locate_many(edited, selectors)[0],
    ):
        assert match is not None
        assert (match.start, match.end) == expected
        assert match.score < 100


def test_context_still_chooses_between_occurrences() -> None:
    text = "Install the plugin. Read the guide first.\nUpgrade the plugin. Read the guide first.\n"
    second = text.rindex("Read the guide first.")
    match = locate(text, "Read the guide first.", prefix="Upgrade the plugin. ", suffix="\n")
    assert match is not None and match.start == second
    assert match.score == 100


def test_occurrences_that_no_context_tells_apart_are_not_guessed() -> None:
    text = "Install the plugin. Read the guide first.\nUpgrade the plugin. Read the guide first.\n"
    assert locate(text, "Read the guide first.", prefix="Remove the theme. ", suffix="!") is None


def test_a_short_unique_word_out_of_context_is_not_taken() -> None:
    # "Search" occurs once, in unrelated context: too short to trust without its context.
    text = "Search\nThe box at the top of every page.\n"
    assert locate(text, "Search", prefix="Open the menu, then ", suffix=" settings.") is None


# -- Class 3: one word rewritten inside a short quote --------------------------------------------

# (quote, the word, what replaced it): quotes of 30-39 characters, words short and long.
ONE_WORD_EDITS = [
    ("Navigation tabs are rendered below", "rendered", "shown"),
    ("Use the search plugin to index pages", "index", "crawl"),
    ("The palette toggle switches colors", "toggle", "selector"),
    ("Instant loading avoids full reloads", "Instant", "Fast"),
    ("Set the language in your mkdocs.yml", "language", "locale"),
    ("Code annotations are placed in comments", "annotations", "notes"),
]


def page_with(sentence: str) -> str:
    return (
        "Setup\nBefore you start, install the theme and open your configuration.\n"
        f"{sentence}, as the next sections explain in detail.\n"
        "Customization\nEvery option has a default that works for most sites.\n"
    )


@pytest.mark.parametrize(("quote", "word", "new"), ONE_WORD_EDITS)
def test_one_word_rewritten_inside_a_short_quote_keeps_it_anchored(
    quote: str, word: str, new: str
) -> None:
    assert 30 <= len(quote) < 40
    before = page_with(quote)
    selector = select(before, quote)
    after = page_with(quote.replace(word, new))
    expected = where(after, quote.replace(word, new))
    for match in (
        locate(after, **selector),
        locate_many(after, [selector])[0],
        PageIndex().locate_many(after, [selector])[0],
    ):
        assert match is not None
        assert (match.start, match.end) == expected
        assert match.method == "fuzzy" and 70 <= match.score < 100


@pytest.mark.parametrize(("quote", "word", "new"), ONE_WORD_EDITS)
def test_a_deleted_short_quote_anchors_nowhere(quote: str, word: str, new: str) -> None:
    before = page_with(quote)
    selector = select(before, quote)
    # The sentence is gone; a look-alike of it stands elsewhere, out of its context.
    after = page_with("See below").replace(
        "Every option", f"{quote.replace(word, new).lower()}; every option"
    )
    assert locate(after, **selector) is None
    assert locate_many(after, [selector]) == [None]


def test_a_deleted_setting_does_not_land_on_its_sibling() -> None:
    # A settings reference repeats its sentences with a few words changed: when one setting is
    # deleted, its sibling is not an edit of it (two runs of words differ, not one).
    author = "site_author\nSet the name of the author. This adds a meta tag to the page header.\n"
    description = (
        "site_description\nSet the site description. This adds a meta tag to the page header.\n"
    )
    page = f"Settings\n{author}{description}Theme\nChoose a theme for the whole site.\n"
    quote = "of the author. This adds a meta tag to the page header."
    selector = select(page, quote)
    after = page.replace(author, "")
    assert locate(after, **selector) is None
    assert locate_many(after, [selector]) == [None]
    # The same sentence with one run of its words rewritten is an edit, and is followed.
    edited = page.replace("of the author", "of the site's author")
    match = locate(edited, **selector)
    assert match is not None and match.start == edited.index("of the site's author")


def test_a_rewritten_short_quote_anchors_nowhere() -> None:
    quote = "Navigation tabs are rendered below"
    selector = select(page_with(quote), quote)
    after = page_with("Sections appear as a row of links")
    assert locate(after, **selector) is None


# -- In Markdown --------------------------------------------------------------------------------

KEYS_MARKDOWN = """\
# Keyboard shortcuts

Press the keys below anywhere on a page, outside a text field.

- ++p++ , ++comma++: go to previous page
- ++n++ , ++period++: go to next page
- ++s++ , ++slash++: open the search
"""


def in_markdown(source: str, exact: str, prefix: str = "", suffix: str = "") -> tuple[int, int]:
    """Lines of `exact` found by `locate` in the text `sourcemap` makes of `source` (projected
    and normalised), the search `locate_in_markdown` runs; (0, 0) if not found."""
    projected = project_markdown(source)
    text, index = normalise(projected.text)
    quote, before, after = (normalise(part)[0] for part in (exact, prefix, suffix))
    match = locate(text, quote.strip(), prefix=before, suffix=after)
    if match is None:
        return 0, 0
    span = [projected.offsets[index[i]] for i in range(match.start, match.end)]
    return source.count("\n", 0, min(span)) + 1, source.count("\n", 0, max(span)) + 1


def test_markdown_keys_line_is_found_with_the_rendered_prefix() -> None:
    # The page's prefix ends in "P , , ", the Markdown says "++p++ , ++comma++".
    rendered_prefix = "e, outside a text field.\nP , , "
    assert in_markdown(KEYS_MARKDOWN, KEYS_QUOTE, rendered_prefix, "\nN , . : go to next pa") == (
        5,
        5,
    )


def test_markdown_quote_stays_when_a_paragraph_is_inserted_just_above() -> None:
    quote = "Press the keys below anywhere on a page"
    prefix, suffix = "Keyboard shortcuts\n", ", outside a text field.\nP , , "
    edited = KEYS_MARKDOWN.replace(
        "Press the keys", "Shortcuts need JavaScript.\n\nPress the keys"
    ).replace("outside a text field.", "unless a text field has the focus.")
    assert in_markdown(edited, quote, prefix, suffix) == (5, 5)
    match = locate_in_markdown(edited, quote, prefix=prefix, suffix=suffix)
    assert match is not None and match.line_start == 5


GUIDE_MARKDOWN = """\
# Setup

Before you start, install the theme and open your configuration.
{sentence}, as the next
sections explain in detail.

## Customization

Every option has a default that works for most sites.
"""


@pytest.mark.parametrize(("quote", "word", "new"), ONE_WORD_EDITS)
def test_markdown_one_word_rewritten_inside_a_short_quote(quote: str, word: str, new: str) -> None:
    prefix = "d open your configuration.\n"
    suffix = ", as the next sections explain in"
    edited = GUIDE_MARKDOWN.format(sentence=quote.replace(word, new))
    assert in_markdown(edited, quote, prefix, suffix) == (4, 4)


@pytest.mark.parametrize(("quote", "word", "new"), ONE_WORD_EDITS)
def test_markdown_deleted_short_quote_is_not_found(quote: str, word: str, new: str) -> None:
    prefix = "d open your configuration.\n"
    suffix = ", as the next sections explain in"
    edited = GUIDE_MARKDOWN.format(sentence="See below")
    assert in_markdown(edited, quote, prefix, suffix) == (0, 0)
    assert locate_in_markdown(edited, quote, prefix=prefix, suffix=suffix) is None


def test_stored_note_stays_anchored_through_a_one_word_edit(tmp_path: Path) -> None:
    (tmp_path / "mkdocs.yml").write_text("site_name: Test\nnav:\n  - guide.md\n")
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "guide.md"
    quote = "Set the language in your mkdocs.yml"
    page.write_text(GUIDE_MARKDOWN.format(sentence=quote))
    store = annotate.open(tmp_path)
    note = store.add_annotation(
        {
            "pageUrl": "/guide/",
            "note": "Say which file.",
            "selectedText": quote,
            "quote": {
                "exact": quote,
                "prefix": "d open your configuration.\n",
                "suffix": ", as the next sections explain in",
            },
        }
    )
    assert note.source is not None and note.source.line_start == 4
    touch_write(page, GUIDE_MARKDOWN.format(sentence=quote.replace("language", "locale")))
    got = store.get_annotation(note.id)
    assert got.anchor_state == "anchored"
    assert got.source is not None and got.source.line_start == 4
    assert got.anchor_score is not None and 70 <= got.anchor_score < 100
    touch_write(page, GUIDE_MARKDOWN.format(sentence="See below"))
    gone = store.get_annotation(note.id)
    assert gone.anchor_state == "stale"

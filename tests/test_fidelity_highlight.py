"""Notes keep their whole passage on the page and follow edits their neighbours measure (issue #26):
an approximate match never takes a piece of a letter-for-letter hit, a quote between two notes
that moved apart is near where either says, and a long passage moved away is found though its
old neighbours stayed."""

from __future__ import annotations

from annotate.anchoring import PageIndex, build_selector, locate, locate_many
from annotate.sourcemap import locate_in_markdown, project_markdown

# A page of a site whose HTML is minified (Material's docs): the theme's spaces, the h1, then the
# first paragraph, its Markdown line break now a space; the overlay's selection of its first line.
QUOTE = "While images are first-class citizens of Markdown and part of the core syntax, it can be"
PAGE = (
    f"   Images {QUOTE} difficult to work with them. Material for MkDocs makes working with "
    "images more comfortable, providing styles for image alignment and image captions. "
)
INSERTED = "An agent inserted this paragraph near the top of the page. "


def spans(page: str, selectors: list[dict]) -> list[list[tuple[int, int] | None]]:
    """Where `locate`, `locate_many` and a `PageIndex` (the anchor route) find each quote."""
    found = [
        [locate(page, **selector) for selector in selectors],
        locate_many(page, selectors),
        PageIndex().locate_many(page, selectors),
    ]
    return [[None if m is None else (m.start, m.end) for m in row] for row in found]


def test_a_first_paragraphs_note_keeps_its_whole_highlight_after_an_insert_above_it() -> None:
    # Its short prefix (the h1) is gone from beside it; its suffix frames a piece of it, found
    # approximately: that piece outranked the whole quote, letter for letter, and the page's
    # highlight covered another text than the note's (Material's reference/images page).
    start = PAGE.index(QUOTE)
    selector = build_selector(PAGE, start, start + len(QUOTE))
    assert selector["prefix"] == "   Images "
    for edited in (
        PAGE.replace("Images ", "Images " + INSERTED),
        PAGE.replace("Images ", "Images\n\n" + INSERTED.strip() + "\n\n"),
    ):
        at = edited.index(QUOTE)
        assert spans(edited, [selector]) == [[(at, at + len(QUOTE))]] * 3


def test_two_notes_on_a_first_paragraph_keep_their_whole_highlights_after_inserts() -> None:
    # Two notes on one paragraph (a sentence and its first words), a paragraph inserted under
    # the h1 and another just above: the second note, placed where the first moved, took an
    # approximate match starting 11 characters into its words (Material's admonitions page).
    start = PAGE.index(QUOTE)
    short = QUOTE[:61]
    selectors = [
        build_selector(PAGE, start, start + len(QUOTE)),
        build_selector(PAGE, start, start + len(short)),
    ]
    edited = PAGE.replace("Images ", "Images " + INSERTED + "An agent added this one just above. ")
    at = edited.index(QUOTE)
    for order in (selectors, selectors[::-1]):
        for row in spans(edited, order):
            assert sorted(row) == [(at, at + len(short)), (at, at + len(QUOTE))]


def paragraph(n: int) -> str:
    """A paragraph of about 400 characters, its words its own."""
    words = " ".join(f"w{n}x{k}" for k in range(60))
    return f"Paragraph {n} says {words}."


def test_an_edited_quote_between_notes_that_moved_apart_keeps_its_note() -> None:
    # A block of 700 characters inserted between two notes moves the one below it and not the
    # one above; the edited quote below it, a word of its context changed too, is where the note
    # below says, not where the note above says (more than FRAMED_REACH from it).
    paragraphs = [paragraph(n) for n in range(12)]
    old = "\n\n".join(paragraphs)
    quotes = [p[10:110] for p in paragraphs]
    selectors = [build_selector(old, old.index(q), old.index(q) + len(q)) for q in quotes]
    edited_quote = quotes[6].replace("w6x3 ", "w6x3 changed ").replace("w6x9", "w6y9")
    new_paragraphs = list(paragraphs)
    new_paragraphs[6] = paragraphs[6].replace(quotes[6], edited_quote).replace("w6x20", "w6z20")
    new_paragraphs.insert(6, "Inserted " + "block text " * 64)
    new = "\n\n".join(new_paragraphs)
    at = new.index(edited_quote)
    for row in spans(new, selectors)[1:]:  # one call at a time has no neighbours
        found = row[6]
        assert (
            found is not None
            and abs(found[0] - at) <= 10
            and abs(found[1] - at - len(edited_quote)) <= 10
        )
        for n in (0, 11):
            assert row[n] == (new.index(quotes[n]), new.index(quotes[n]) + len(quotes[n]))


def test_a_long_passage_moved_far_and_edited_is_found_though_its_neighbours_stayed() -> None:
    # Its prefix moved with it; its suffix, the paragraph after it, stayed at the old place: a
    # look-alike of a deleted passage shows the same, but not 2,000 characters this close.
    paragraphs = [paragraph(n) for n in range(40)]
    old = "\n\n".join(paragraphs)
    passage = "\n\n".join(paragraphs[3:8])  # ~2,000 characters
    start = old.index(passage)
    selector = build_selector(old, start, start + len(passage))
    moved = passage.replace("w4x10", "w4y10").replace("w6x30", "w6y30")
    rest = paragraphs[:3] + paragraphs[8:]
    # Its prefix goes with it: the last words of the paragraph before it.
    before = paragraphs[2]
    new = "\n\n".join([*rest[:30], before, moved, *rest[30:]])
    at = new.index(moved)
    for row in spans(new, [selector]):
        assert row[0] is not None and abs(row[0][0] - at) <= 10


CALLOUT = """\
# Recipes

On this page you will find recipes, tips and tricks for the plugin and for Markdown.

## Automatic code reference pages

TIP: **[autoapi](https://example.org/autoapi) and its friends write the API pages for you.**

The plugin inserts documentation for any object into Markdown pages.
"""


def test_a_callout_titled_by_bold_words_is_projected_without_its_kind() -> None:
    # markdown-callouts shows `TIP: **Title.**` as the title alone: "TIP:" stood in the Markdown's
    # text between a reworded heading and its suffix, and the heading's note took its line.
    assert "TIP" not in project_markdown(CALLOUT).text
    selector = {
        "exact": "Automatic code reference pages",
        "prefix": "for the plugin and for Markdown.\n",
        "suffix": "\n\nautoapi and its friends write ",
    }
    edited = CALLOUT.replace("code reference pages", "code revised pages")
    match = locate_in_markdown(edited, **selector, hint_line=5, in_code=False, occurrence=0)
    assert match is not None and (match.line_start, match.line_end) == (5, 5)


# A reference page: a code block shows an example's Markdown (its definition's continuation line
# indented), then the rendered result; the theme's spaces around the term, which fills the rest of
# the stored prefix.
SENTENCE = "Keep your lantern lit at dusk. Fold the maps before rain. Carry spare wicks for the"
EXAMPLE = (
    "Definition lists pair a term with its description, as shown here.\n"
    "`Lantern care for the night`\n\n:   Keep your lantern lit at dusk. Fold the maps before rain. Carry spare\n"
    "    wicks for the night walk, and oil for the return.\n\n"
    "`Map reading`\n\n:   Hold the map level and north up.\n"
    f"   Lantern care for the night  {SENTENCE} night walk, and oil for the return.\n"
    "   Map reading  Hold the map level and north up.\n"
)


def test_a_reworded_example_result_keeps_its_note_beside_its_markdown_in_a_code_block() -> None:
    # The note is on the rendered result; a word of it is reworded, the code block above keeps
    # the old words in the same frame (the term before, "night walk" after). The frame
    # standing there read as the passage rewritten past recognition, and the note, framed whole
    # on both sides where it was, went unanchored on the page (Material's reference/lists page).
    start = EXAMPLE.index(SENTENCE)
    selector = build_selector(EXAMPLE, start, start + len(SENTENCE))
    revised = SENTENCE.replace("Fold", "Stow")
    edited = EXAMPLE.replace(f"night  {SENTENCE}", f"night  {revised}")
    at = edited.index(revised)
    assert spans(edited, [selector]) == [[(at, at + len(revised))]] * 3

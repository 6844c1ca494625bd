"""Plain paragraphs read without markdown-it (annotate/plaintext.py) read as markdown-it reads them.

Random pages made of the constructs documentation uses, edited at random one version after
another in one process (so the skeleton cache is warm with the last versions): every version's
tokens, projection and haystack must equal those of a whole parse of it.
"""

from __future__ import annotations

from array import array

from hypothesis import given, settings
from hypothesis import strategies as st

from annotate import mdparse, plaintext
from annotate.anchoring.markdown import haystack_of
from annotate.anchoring.normalise import normalise
from annotate.mdparse import line_starts, parse, parse_full
from annotate.projection import ProjectedText, _Projector, project_markdown

SETTINGS = settings(max_examples=200, deadline=None, derandomize=True)

PLAIN = [
    "Plain words of a paragraph, with punctuation: and digits 42!",
    "Another line of the same kind (with brackets) and a slash / here.",
    "Überall grüne Wörter, und noch ein Satz.",
    "Ends with a question?",
    "x",
]
# Lines like plain ones but for a character that markdown-it or the projection reads.
NEAR_PLAIN = [
    "Trailing spaces make a hard break  ",
    "Trailing space ",
    "Trailing\ttab",
    "Non\xa0breaking space",
    "Ends with a no-break space\xa0",
    "A line separator\u2028inside",
    "Nul\x00here",
    "Back\\slash escapes\\",
    "Press ++ctrl+c++ to copy",
    "Attributes {: .class }",
    "Ampersand &amp; entity",
    "Angle <b>bracket</b>",
    "Under_score and *star*",
    "Tilde ~~struck~~",
    "Pipe | in a line",
    "Bracket [link][ref]",
    "Footnote[^1] here",
    "An inline footnote^[Its text.] here",
    "Code `span` here",
    "9 starts with a digit",
    "_Starts with markup_",
]
# Lines that are not plain, or that make the lines around them something else.
MARKUP = [
    "Use `code` here and *emphasis* there.",
    "See [the reference][ref] and a footnote[^1].",
    "A [link](https://example.com) and <b>html</b> &amp; an entity.",
    "Trailing spaces make a hard break  ",
    "\tA tab first",
    "Non\xa0breaking space",
    "Press ++ctrl+c++ to copy {: .class }",
    "  Indented by two",
    "    Indented code",
    "1. An ordered item",
    "- A bullet item",
    "> A quote",
    "# A heading",
    "Setext",
    "===",
    "---",
    "***",
    "Term",
    ":   A definition",
    '--8<-- "snippet.md"',
    "NOTE: **Title.** A callout",
    "[ref]: https://example.com/ref",
    "[^1]: The footnote text.",
    "| Column | Other |",
    "| --- | --- |",
    "| `a|b` | cell |",
    "```",
    "~~~~",
    "```python",
    "<!--",
    "-->",
    "<pre>",
    "</pre>",
    "<div markdown>",
    "</div>",
    '!!! note "Title"',
    '=== "Tab one"',
    "",
]
BLOCKS = [
    ["```", "Plain words inside a fence", "", "More plain words", "```"],
    ["<!--", "", "Plain words in a comment", "", "-->"],
    ["<pre>", "Plain words", "", "in a pre block", "</pre>"],
    ['!!! note "Title"', "", "    Body of the note.", "", "    More body."],
    ['=== "pip"', "", "    Install with pip.", "", '=== "uv"', "", "    Install with uv."],
    ["| Column | Other |", "| --- | --- |", "| one | two |"],
    ["- item one", "", "    Continued paragraph", "", "- item two"],
    ["Term", ":   Definition text", "    more of it"],
    ["[^1]: The footnote text.", "", "    Its second paragraph."],
    ["[ref]: https://example.com/ref"],
    ["Title", "====="],
    ["Words", "- a list right after"],
]
FRONT_MATTER = ["---", "title: A page", "tags: [a, b]", "---"]

lines_st = st.sampled_from(PLAIN + NEAR_PLAIN + MARKUP)


@st.composite
def pages(draw: st.DrawFn) -> list[str]:
    out: list[str] = list(FRONT_MATTER) if draw(st.booleans()) else []
    for _ in range(draw(st.integers(1, 14))):
        kind = draw(st.integers(0, 9))
        if kind < 5:  # a paragraph of plain lines, the common case
            out += draw(st.lists(st.sampled_from(PLAIN), min_size=1, max_size=3))
        elif kind == 5:  # a paragraph with one line that is nearly plain
            lines = draw(st.lists(st.sampled_from(PLAIN), min_size=0, max_size=2))
            lines.insert(draw(st.integers(0, len(lines))), draw(st.sampled_from(NEAR_PLAIN)))
            out += lines
        elif kind < 8:
            out += draw(st.sampled_from(BLOCKS))
        else:
            out += draw(st.lists(lines_st, min_size=1, max_size=3))
        out.append("" if draw(st.integers(0, 5)) else draw(lines_st))
    return out


@st.composite
def edits(draw: st.DrawFn) -> list[tuple[str, int, str]]:
    kinds = st.sampled_from(["replace", "insert", "delete", "append"])
    return draw(
        st.lists(
            st.tuples(kinds, st.integers(0, 200), lines_st | st.sampled_from(PLAIN)),
            min_size=1,
            max_size=6,
        )
    )


def edited(lines: list[str], edit: tuple[str, int, str]) -> list[str]:
    kind, at, line = edit
    lines = list(lines)
    at %= len(lines) + 1
    if kind == "insert" or at == len(lines):
        lines.insert(at, line)
    elif kind == "replace":
        lines[at] = line
    elif kind == "delete":
        del lines[at]
    else:  # a word more on the line: a paragraph's text changes, its lines do not
        lines[at] += " more"
    return lines or [""]


def whole(source: str) -> ProjectedText:
    """The projection of `source` from a parse of the whole file."""
    projector = _Projector(source)
    projector.walk(parse_full(source))
    return projector.result()


def assert_read_as_whole(source: str) -> None:
    assert parse(source) == parse_full(source)
    projected = whole(source)
    assert project_markdown(source) == projected
    folded, index = normalise(projected.text)
    haystack = haystack_of(source)
    assert haystack.text == folded
    assert haystack.offsets == array("q", [projected.offsets[i] for i in index])
    assert haystack.shown == "".join(projected.text[i] for i in index)
    assert haystack.code == bytes(projected.code[i] for i in index) or not projected.code
    assert haystack.line_starts == line_starts(source)


@SETTINGS
@given(pages(), edits(), st.booleans())
def test_read_as_markdown_it_reads_every_version(
    page: list[str], changes: list[tuple[str, int, str]], final_newline: bool
) -> None:
    versions = [page]
    for change in changes:
        versions.append(edited(versions[-1], change))
    for lines in versions:
        assert_read_as_whole("\n".join(lines) + ("\n" if final_newline else ""))


def test_an_edit_inside_plain_paragraphs_reuses_the_skeleton() -> None:
    """Words changed in a plain paragraph: markdown-it parses nothing again."""
    before = "# Title\n\nSome words here.\n\n- a list\n\nMore words.\n"
    after = before.replace("Some words", "Other words")
    parse(before)
    hits = plaintext._skeleton.cache_info().hits
    assert parse(after) == parse_full(after)
    assert plaintext._skeleton.cache_info().hits == hits + 1


def test_plain_lines_rewritten_for_parsing_are_left_to_markdown_it() -> None:
    """A definition's line is dedented before parsing: its text is not where the file has it."""
    source = "Term\n:   Its definition, in plain words\n\nPlain words.\n"
    assert mdparse.read(source).paragraphs  # the last paragraph only
    assert_read_as_whole(source)


def test_paragraphs_read_together_read_as_alone() -> None:
    """New paragraphs with markup are read in one parse; an inline footnote numbers the notes
    of the page, so the paragraphs are then read one by one."""
    source = "Some `code` here.\n\nAn inline^[note] footnote.\n\nMore^[again] of them.\n"
    plaintext._kept.cache_clear()
    assert_read_as_whole(source)
    assert all(p.alone for run in mdparse.read(source).paragraphs.values() for p in run)


def test_a_placeholder_inside_a_construct_the_scan_missed_falls_back() -> None:
    """An HTML block of kind 4 (`<!X`) runs over blank lines: the scan does not know it, the
    placeholder's check does, and the file is parsed whole."""
    source = "<!DOCTYPE\n\nPlain words inside.\n\n>\n\nAfter it.\n"
    assert not mdparse.read(source).paragraphs
    assert_read_as_whole(source)

"""annotate/folding.py: `normalise`'s fold made by slices must be `normalise`, character for
character and index for index, and the haystack gathered by slices the one gathered by index."""

from __future__ import annotations

from array import array

from hypothesis import given, settings
from hypothesis import strategies as st

from annotate.anchoring.normalise import DROPPED, FOLDED, normalise
from annotate.folding import fold, folded_projection
from annotate.projection import project_markdown

SETTINGS = settings(max_examples=1500, deadline=None, derandomize=True)

# What the fold treats specially: every ASCII whitespace (\x1c-\x1f are whitespace to Python),
# runs of dashes and dots, dropped and folded characters, one that casefolds into two, other
# whitespace, and plain letters of both cases.
ALPHABET = (
    " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f-.aZ9_"
    + "".join(DROPPED)
    + "".join(FOLDED)
    + "ßİﬁé\u00a0\u2003\u3000"
)


def expanded(slices: list[tuple[int, int]]) -> list[int]:
    return [i for start, end in slices for i in range(start, end)]


@SETTINGS
@given(st.text(alphabet=ALPHABET, max_size=60))
def test_fold_is_normalise(text: str) -> None:
    folded, slices = fold(text)
    assert (folded, expanded(slices)) == normalise(text)


@SETTINGS
@given(st.text(alphabet=" \n-.ab", max_size=80))
def test_fold_of_ascii_is_normalise(text: str) -> None:
    folded, slices = fold(text)
    assert (folded, expanded(slices)) == normalise(text)


def test_slices_join_what_follows_and_repeat_an_expansion() -> None:
    """A page of plain words is one slice; `ß` folded into `ss` is its slice twice."""
    assert fold("Plain words.\nMore words.") == ("plain words. more words.", [(0, 24)])
    assert fold("Maß  und") == ("mass und", [(0, 3), (2, 4), (5, 8)])


def test_folded_projection_is_the_projection_gathered_at_the_index() -> None:
    source = (
        "# Title\n\nSome “quoted” words -- and ... more.\n\n```py\nx  =  1\n```\n\n"
        "Straße with ﬁ and a `code   span`.\n"
    )
    projected = project_markdown(source)
    folded, index = normalise(projected.text)
    text, offsets, code, shown = folded_projection(source)
    assert text == folded
    assert offsets == array("q", [projected.offsets[i] for i in index])
    assert code == bytes(projected.code[i] for i in index)
    assert shown == "".join(projected.text[i] for i in index)

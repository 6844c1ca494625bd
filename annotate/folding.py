"""The haystack a Markdown file is searched in: `normalise` applied to the text its page shows
(`projection.project_markdown`), with each folded character's source offset, code flag and shown
character, gathered as slices of the projection rather than one Python object per character
(issue #31).

`normalise` (anchoring/normalise.py) keeps a stretch of ASCII as the slices between the runs it
collapses, and folds other characters one by one. `fold` folds the same way but says which
slices of the text each part of the result comes from, so that a page of plain paragraphs is
gathered in a few copies. `fold` must equal `normalise` (tests/test_folding.py), and
`folded_projection` a gather of the projection at `normalise`'s index (tests/test_plaintext.py).
"""

from __future__ import annotations

import re
from array import array

from .anchoring.normalise import DROPPED, FOLDED, RUNS
from .projection import project_markdown

__all__ = ["fold", "folded_projection"]

# normalise's own (its private names, not imported: docs/architecture.md, "The floors"); a
# difference shows in tests/test_folding.py.
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
_LEADING_SPACE = re.compile(r"\s+")
_ASCII_SPACES = str.maketrans(dict.fromkeys("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f", " "))


def _add(slices: list[tuple[int, int]], start: int, end: int) -> None:
    """Append slice [start, end), joined to the last one when it ends where this starts."""
    if slices and slices[-1][1] == start:
        slices[-1] = (slices[-1][0], end)
    else:
        slices.append((start, end))


def fold(text: str) -> tuple[str, list[tuple[int, int]]]:
    """`normalise(text)`, its index given as the [start, end) slices of `text` whose indexes it
    lists one after another (a character folded into several is its slice repeated)."""
    out: list[str] = []
    slices: list[tuple[int, int]] = []
    if text.isascii():
        if text:
            _fold_ascii(text, 0, len(text), "", out, slices)
        return "".join(out), slices
    last = ""
    at = 0
    for m in _NON_ASCII.finditer(text):
        if m.start() > at:
            last = _fold_ascii(text, at, m.start(), last, out, slices)
        last = _fold_other(text, m.start(), m.end(), last, out, slices)
        at = m.end()
    if at < len(text):
        _fold_ascii(text, at, len(text), last, out, slices)
    return "".join(out), slices


def _fold_ascii(
    text: str, start: int, end: int, last: str, out: list[str], slices: list[tuple[int, int]]
) -> str:
    """normalise's `_fold_ascii`, its index as slices. The stretch is lowered and its whitespace
    made spaces first (one character for one), so the runs that collapse are found by `find`
    rather than by `\\s\\s+`, which tests every character of a page (0.5 ms for 27 kB)."""
    first = text[start]
    if last == " " and first.isspace() and (spaces := _LEADING_SPACE.match(text, start, end)):
        start = spaces.end()
    elif first == last and first in RUNS:
        while start < end and text[start] == first:
            start += 1
    if start == end:
        return last
    stretch = text[start:end].lower().translate(_ASCII_SPACES)
    runs: list[tuple[int, int]] = []
    for pair, rest in _PAIRS:
        at = stretch.find(pair)
        while at >= 0:
            run_end = rest.match(stretch, at).end()  # type: ignore[union-attr]
            runs.append((at, run_end))
            at = stretch.find(pair, run_end)
    runs.sort()
    at = 0
    for run_start, run_end in runs:
        keep = run_start + 1  # a run keeps its first character
        out.append(stretch[at:keep])
        _add(slices, start + at, start + keep)
        at = run_end
    if at < len(stretch):
        out.append(stretch[at:])
        _add(slices, start + at, end)
    return out[-1][-1]


# The runs `normalise` collapses (its `_ASCII_RUNS`) in a stretch whose whitespace is all spaces:
# where one starts, and what reaches its end.
_PAIRS = ((" " * 2, re.compile(" +")), ("--", re.compile("-+")), ("..", re.compile(r"\.+")))


def _fold_other(
    text: str, start: int, end: int, last: str, out: list[str], slices: list[tuple[int, int]]
) -> str:
    """normalise's `_fold_other`, its index as slices."""
    for at in range(start, end):
        ch = text[at]
        if ch in DROPPED:
            continue
        if ch.isspace():
            if last != " ":
                out.append(" ")
                _add(slices, at, at + 1)
                last = " "
            continue
        folded = FOLDED.get(ch, ch)
        if folded in RUNS and last == folded:
            continue
        folded = folded.casefold()
        out.append(folded)
        _add(slices, at, at + 1)
        for _ in range(len(folded) - 1):
            slices.append((at, at + 1))
        last = folded[-1]
    return last


def folded_projection(source: str) -> tuple[str, array[int], bytes, str]:
    """The projection of Markdown `source` (line ends `\\n`) folded: the folded text, the source
    offset and code flag of each of its characters, and the projected character each was folded
    from (`anchoring.markdown.Haystack`)."""
    projected = project_markdown(source)
    shown, offsets, code = projected.text, projected.offsets, projected.code
    text, slices = fold(shown)
    if slices == [(0, len(shown))]:  # nothing dropped or collapsed: a page of plain paragraphs
        return text, offsets[:], code, shown
    gathered: array[int] = array("i")
    flags = bytearray()
    parts: list[str] = []
    for start, end in slices:
        gathered += offsets[start:end]
        flags += code[start:end]
        parts.append(shown[start:end])
    return text, gathered, bytes(flags) if code else b"", "".join(parts)

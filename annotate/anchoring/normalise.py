"""Rendered text folded for matching: what renderers change is made the same on both sides.

`normalise` folds the text a page shows and the text a Markdown file's projection shows
(`projection.project_markdown`) alike, keeping for each folded character its index in the text.
"""

from __future__ import annotations

import re

__all__ = ["DROPPED", "FOLDED", "RUNS", "normalise"]

# Characters the rendered page adds or changes and the source does not have (or the reverse).
DROPPED = frozenset("¶↩\u200b\u200c\u200d\u2060\ufeff\xad\ufe0e\ufe0f")
FOLDED = {
    **dict.fromkeys("‘’‚‛′´", "'"),
    **dict.fromkeys("“”„‟″", '"'),
    **dict.fromkeys("‐‑‒–—―−", "-"),
    "…": ".",
}
RUNS = frozenset("-.")  # `--`/`---`/`...` become one dash or ellipsis under smarty


# Text is folded a stretch at a time: ASCII stretches by slicing between the runs that collapse to
# their first character, other characters one by one. A page of Markdown is mostly ASCII.
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
# Runs that keep only their first character; three patterns scan faster than one alternation.
_ASCII_RUNS = (re.compile(r"\s\s+"), re.compile(r"--+"), re.compile(r"\.\.+"))
_LEADING_SPACE = re.compile(r"\s+")
_ASCII_SPACES = str.maketrans(dict.fromkeys("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f", " "))


def normalise(text: str) -> tuple[str, list[int]]:
    """Fold `text` for matching and return it with, for each character, its index in `text`.

    Whitespace runs become one space, permalink/backref marks are dropped, curly quotes become
    straight ones, dashes and ellipses collapse (smarty writes `--` as – and `...` as …), and case is folded (`!!! note`
    renders the title "Note").
    """
    out: list[str] = []
    index: list[int] = []
    if text.isascii():  # known without reading the text
        if text:
            _fold_ascii(text, 0, len(text), "", out, index)
        return "".join(out), index
    last = ""  # the last character written, for collapsing runs across stretches
    at = 0
    for m in _NON_ASCII.finditer(text):
        if m.start() > at:
            last = _fold_ascii(text, at, m.start(), last, out, index)
        last = _fold_other(text, m.start(), m.end(), last, out, index)
        at = m.end()
    if at < len(text):
        _fold_ascii(text, at, len(text), last, out, index)
    return "".join(out), index


def _fold_ascii(
    text: str, start: int, end: int, last: str, out: list[str], index: list[int]
) -> str:
    """Fold ASCII `text[start:end]` after `last`; return the new last character written."""
    first = text[start]
    if last == " " and first.isspace() and (spaces := _LEADING_SPACE.match(text, start, end)):
        start = spaces.end()
    elif first == last and first in RUNS:
        while start < end and text[start] == first:
            start += 1
    if start == end:
        return last
    at = start
    runs = sorted(m.span() for pattern in _ASCII_RUNS for m in pattern.finditer(text, start, end))
    for run_start, run_end in runs:
        keep = run_start + 1  # a run keeps its first character
        out.append(text[at:keep].lower().translate(_ASCII_SPACES))
        index.extend(range(at, keep))
        at = run_end
    if at < end:
        out.append(text[at:end].lower().translate(_ASCII_SPACES))
        index.extend(range(at, end))
    return out[-1][-1]


def _fold_other(
    text: str, start: int, end: int, last: str, out: list[str], index: list[int]
) -> str:
    """Fold non-ASCII `text[start:end]` one character at a time after `last`."""
    for at in range(start, end):
        ch = text[at]
        if ch in DROPPED:
            continue
        if ch.isspace():
            if last != " ":
                out.append(" ")
                index.append(at)
                last = " "
            continue
        folded = FOLDED.get(ch, ch)
        if folded in RUNS and last == folded:
            continue
        folded = folded.casefold()
        out.append(folded)
        index.extend([at] * len(folded))
        last = folded[-1]
    return last

"""Text helpers every part of anchoring shares: whitespace folding, word pairs, exact search.

Whitespace never counts: every whitespace character compares as a space (so offsets do not move)
and similarities are computed with whitespace runs collapsed, so a reflowed paragraph still matches.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from itertools import accumulate, count
from operator import add

from rapidfuzz.distance import Indel

from .tuning import MAX_EXACT_HITS

__all__ = [
    "collapse",
    "context_similarity",
    "find_all",
    "fold",
    "starts",
    "word_pairs",
]

# Every whitespace character but the space itself, replaced one by one in long texts (`fold`):
# `str.translate` is far slower on non-ASCII text, where it leaves its ASCII fast path.
_WHITESPACE = tuple(chr(c) for c in range(0x3001) if chr(c).isspace() and c != 0x20)
# The same characters (re's `\s` is `str.isspace`), replaced in one pass: faster on short strings.
_OTHER_WHITESPACE = re.compile(r"[^\S ]")
FOLD_BY_REGEX_BELOW = 512


def fold(text: str) -> str:
    """Every whitespace character becomes a space; offsets do not move."""
    if len(text) < FOLD_BY_REGEX_BELOW:
        # Every whitespace character but the space is unprintable (checked in the tests), and
        # the check takes half the time of the regex: most quotes and contexts are one line.
        return text if text.isprintable() else _OTHER_WHITESPACE.sub(" ", text)
    for char in _WHITESPACE:
        if char in text:
            text = text.replace(char, " ")
    return text


def collapse(text: str) -> str:
    """Whitespace runs as one space, none at the ends."""
    return " ".join(text.split())


def context_similarity(expected: str, actual: str) -> float:
    """How alike two contexts are (Indel, whitespace collapsed), 0-1."""
    if expected == actual:  # unchanged context, the common case
        return 1.0
    return Indel.normalized_similarity(collapse(expected), collapse(actual))


def starts(parts: Iterable[str]) -> Iterator[int]:
    """Where each of `parts` starts when they are joined by a one-character separator (words by
    a space, lines by a line break): the letters before it and one separator each."""
    return map(add, accumulate(map(len, parts), initial=0), count())


def word_pairs(text: str) -> list[tuple[int, int]]:
    """(key, offset) of each pair of whole words in `text`, as the indexes key them.

    The first and last words may be cut, so only pairs strictly inside are used.
    """
    words = fold(text).split(" ")
    offsets = list(starts(words))
    return [
        (hash((words[i], words[i + 1])), offsets[i])
        for i in range(1, len(words) - 2)
        if words[i] and words[i + 1]
    ]


def find_all(text: str, needle: str) -> list[int]:
    """Where `needle` occurs in `text`, in order (at most MAX_EXACT_HITS)."""
    hits: list[int] = []
    hit = text.find(needle)
    while hit != -1 and len(hits) < MAX_EXACT_HITS:
        hits.append(hit)
        hit = text.find(needle, hit + 1)
    return hits

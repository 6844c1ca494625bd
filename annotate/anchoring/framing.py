"""What frames a match: whether the stored context of a quote stands next to a span found for it,
and where it stands instead (issue #26). `matching` asks these to tell an edited passage, framed by
its own context near its old place, from a look-alike framed by other text."""

from __future__ import annotations

from rapidfuzz.distance import Levenshtein

from .selectors import Query
from .text import collapse, context_similarity
from .tuning import (
    CONTEXT_EVIDENCE_REACH,
    CONTEXT_FRAMES,
    CONTEXT_HOLDS,
    CONTEXT_PROBE_LENGTH,
    MIN_CONTEXT_EVIDENCE,
)

__all__ = ["NEXT_TO", "WHOLE", "context_elsewhere", "frame_stands_elsewhere", "framing", "trimmed"]


def frame_stands_elsewhere(
    text: str, query: Query, expected: int | None, start: int, end: int
) -> bool:
    """Whether the quote's whole stored context, both sides, still stands near `expected`
    around other text at least half as long as the quote, and not around the match: the
    passage is there, rewritten past recognition, and the match is a look-alike (an options
    entry's twin below it, spelt closer to the quote than the rewritten sentence)."""
    if expected is None:
        return False
    prefix, suffix = query.prefix.strip(), query.suffix.strip()
    if len(prefix) < MIN_CONTEXT_EVIDENCE or len(suffix) < MIN_CONTEXT_EVIDENCE:
        return False
    length = len(query.quote)
    lo = max(0, expected - CONTEXT_EVIDENCE_REACH - len(prefix))
    hi = expected + CONTEXT_EVIDENCE_REACH
    at = text.find(prefix, lo, hi)
    while at != -1:
        inner = at + len(prefix)
        after = text.find(suffix, inner + length // 2, inner + 2 * length + len(suffix))
        if after != -1 and not (inner - CONTEXT_FRAMES <= start and end <= after + CONTEXT_FRAMES):
            return True
        at = text.find(prefix, at + 1, hi)
    return False


def trimmed(
    quote: str, text: str, start: int, end: int, similarity: float
) -> tuple[tuple[int, int], float]:
    """The span without the words at its ends that make it less like the quote: a span placed
    by a context that still frames it stretches over a paragraph inserted between them
    ("Read this first. Tables inside tabs …" for "Tables inside lists …")."""
    # `text` is folded: every whitespace character is a space.
    while (cut := text.find(" ", start, end)) != -1:
        head = cut + len(text[cut:end]) - len(text[cut:end].lstrip(" "))
        shorter = Levenshtein.normalized_similarity(quote, collapse(text[head:end]))
        if shorter <= similarity:
            break
        start, similarity = head, shorter
    while (cut := text.rfind(" ", start, end)) != -1:
        tail = start + len(text[start:cut].rstrip(" "))
        shorter = Levenshtein.normalized_similarity(quote, collapse(text[start:tail]))
        if shorter <= similarity:
            break
        end, similarity = tail, shorter
    return (start, end), similarity


WHOLE, NEXT_TO = 2, 1  # how a side of the context frames a match (`framing`)


def framing(text: str, query: Query, start: int, end: int, near: bool) -> tuple[int, int] | None:
    """How each side of the stored context (prefix, suffix) frames `text[start:end]`: WHOLE
    next to it, letter for letter (whitespace runs aside, within CONTEXT_FRAMES characters of
    its edge), or, `near` the old place, its CONTEXT_PROBE_LENGTH characters next to the quote
    so and the rest holding (CONTEXT_HOLDS); NEXT_TO if only those characters are there (or if the side is shorter than
    MIN_CONTEXT_EVIDENCE, and not there or not `near`); else 0. `None` if a side stands inside
    the match (and not in the quote): the match is the text next to a deleted passage, now
    where it stood."""
    levels = []
    inside = collapse(text[start:end])
    for side, before in ((query.prefix, True), (query.suffix, False)):
        words = collapse(side)
        reach = 2 * len(side) + CONTEXT_FRAMES
        if before:
            around = collapse(text[max(0, start - reach) : start + CONTEXT_FRAMES])
            probe = words[-CONTEXT_PROBE_LENGTH:]
        else:
            around = collapse(text[max(0, end - CONTEXT_FRAMES) : end + reach])
            probe = words[:CONTEXT_PROBE_LENGTH]
        if len(words) < MIN_CONTEXT_EVIDENCE:
            # A side this short (at the page's edge, or a list item's) frames a match `near`
            # the old place if it is there (elsewhere it stands too often); if not, it says
            # nothing.
            levels.append(WHOLE if near and words and words in around else NEXT_TO)
            continue
        if words in inside and words not in query.collapsed:
            return None
        if words in around:
            levels.append(WHOLE)
        elif probe in around:
            # Its far end may reach into a neighbour that changed: whole if it holds as well,
            # near the old place (far from it, a sibling's template differs there: "See also:
            # Issue #186" after one "Please upgrade to version 0.14 or higher.", "#193" after
            # another).
            edge = (
                text[max(0, start - len(side)) : start] if before else text[end : end + len(side)]
            )
            holds = near and context_similarity(side, edge) >= CONTEXT_HOLDS
            levels.append(WHOLE if holds else NEXT_TO)
        else:
            levels.append(0)
    return levels[0], levels[1]


def context_elsewhere(
    text: str, length: int, prefix: str, suffix: str, old: int | None, start: int, end: int
) -> bool:
    """Whether an approximate match `text[start:end]` of a quote of `length` characters, last
    seen at `old`, is a look-alike of a deleted passage: a side of the stored context still
    stands intact nearer `old` than the match (where the passage stood next to it), and does
    not frame the match. The suffix is asked first, and one that frames the match speaks for
    it: an edited passage keeps the text after it, while a paragraph inserted just above it
    leaves its prefix where it stood. A sibling section repeats the text before its quote, so
    the prefix speaks only where the suffix says nothing."""
    if old is None:
        return False
    prefix, suffix = prefix.strip(), suffix.strip()
    distance = min(abs(start - old), CONTEXT_EVIDENCE_REACH)
    if len(suffix) >= MIN_CONTEXT_EVIDENCE:
        if text.find(suffix, max(0, end - CONTEXT_FRAMES), end + len(suffix) + CONTEXT_FRAMES) >= 0:
            return False
        # where the quote would start before an occurrence of the suffix, nearer `old`
        at = old + length
        if text.find(suffix, max(0, at - distance + 1), max(0, at + distance + len(suffix))) >= 0:
            return True
    if len(prefix) >= MIN_CONTEXT_EVIDENCE:
        if (
            text.find(prefix, max(0, start - len(prefix) - CONTEXT_FRAMES), start + CONTEXT_FRAMES)
            >= 0
        ):
            return False
        lo = old - distance - len(prefix) + 1
        return text.find(prefix, max(0, lo), max(0, old + distance)) >= 0
    return False

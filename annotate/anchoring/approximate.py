"""Approximate search: the likely windows of a quote in a text, and its ends inside one.

Approximate matches are only looked for in a few windows of the text, voted for by the word pairs
of the quote and its context that still occur there (`windows`, from an `index.Index`); in each
window the quote's ends are placed by approximate matching of its edges and context (Myers'
algorithm, `search`). Never a scan of the whole text with an approximate matcher: measurements in
benchmarks/anchoring.py.
"""

from __future__ import annotations

from heapq import nlargest
from itertools import repeat
from operator import itemgetter
from statistics import median_low
from typing import NamedTuple

from rapidfuzz.distance import Levenshtein

from .selectors import Query
from .text import find_all, word_pairs
from .tuning import (
    EDGE_LENGTH,
    GUESS_VOTES,
    HINT_WINDOW_MAX_QUOTE,
    MAX_EDGE_ERRORS,
    MAX_POSTINGS,
    MAX_QUERY_ANCHORS,
    MAX_WINDOW_SLACK,
    MAX_WINDOWS,
    MIN_WINDOW_VOTES,
    WINDOW_SLACK,
)

__all__ = ["Window", "anchors", "search", "slack", "span", "windows"]


def anchors(query: Query) -> list[tuple[int, int]]:
    """(key, offset from the quote's start) of word pairs of prefix + quote + suffix."""
    anchors = [
        (key, offset - len(query.prefix))
        for key, offset in word_pairs(query.prefix + query.quote + query.suffix)
    ]
    if len(anchors) > MAX_QUERY_ANCHORS:
        # A long quote: pairs spread evenly over it are as good as all of them, and cheaper.
        last = len(anchors) - 1
        picks = sorted(
            {round(i * last / (MAX_QUERY_ANCHORS - 1)) for i in range(MAX_QUERY_ANCHORS)}
        )
        anchors = [anchors[i] for i in picks]
    return anchors


class Window(NamedTuple):
    """Where the quote probably starts and ends, and how far off each guess may be."""

    start: int
    end: int
    start_slack: int
    end_slack: int


def slack(distance: int) -> int:
    # Edits between an anchor and the quote's end move the end by up to a quarter of that distance.
    return min(MAX_WINDOW_SLACK, WINDOW_SLACK + abs(distance) // 4)


def windows(
    query: Query,
    pairs: list[tuple[int, int]],
    postings: dict[int, list[int]],
    text_length: int,
) -> list[Window]:
    """Likely places of the quote, best supported first, plus the old position."""
    length = len(query.quote)
    # (start of the quote if this pair did not move in it, pair's offset, weight): a rare pair
    # (a unique phrase) says more than one found in every copy of a repeated paragraph.
    votes: list[tuple[int, int, float]] = []
    for key, offset in pairs:
        starts = postings.get(key, ())
        if 0 < (n := len(starts)) <= MAX_POSTINGS:
            weights = repeat(1.0 / n, n)
            votes.extend(zip(map(offset.__rsub__, starts), repeat(offset, n), weights, strict=True))
    votes.sort()
    gap = WINDOW_SLACK + length // 4
    # A cluster is a run of votes less than `gap` apart: (support, first vote, end).
    clusters: list[tuple[float, int, int]] = []
    first, support, previous = 0, 0.0, 0
    for i, (at, _, weight) in enumerate(votes):
        if i and at - previous <= gap:
            support += weight
        else:
            if i:
                clusters.append((support, first, i))
            first, support = i, weight
        previous = at
    if votes:
        clusters.append((support, first, len(votes)))
    best = nlargest(MAX_WINDOWS, clusters, key=itemgetter(0))
    found = []
    for support, first, end in best:
        if support < MIN_WINDOW_VOTES * best[0][0]:
            break
        found.append(_window(votes[first:end], length))
    hint = query.start
    if (
        hint is not None
        and 0 <= hint <= text_length
        and length <= HINT_WINDOW_MAX_QUOTE
        and not any(abs(window.start - hint) <= gap for window in found)
    ):
        found.append(Window(hint, hint + length, WINDOW_SLACK, slack(length)))
    return found


def _window(cluster: list[tuple[int, int, float]], length: int) -> Window:
    """Where a cluster of votes says the quote starts and ends, and how far off that may be.

    Each end is guessed from the pairs nearest to it (fewer edits lie in between): the median of
    a few, each pair counted once, at its occurrence nearest the cluster's consensus, so neither
    a pair that merely occurs nearby nor a copy of a repeated paragraph throws the guess.
    """
    if len(cluster) == 1:  # most clusters, and what the lines below come to for one vote
        start, offset, _ = cluster[0]
        return Window(start, start + length, slack(offset), slack(offset - length))
    consensus = median_low(vote[0] for vote in cluster)
    pairs: dict[int, tuple[int, int, float]] = {}
    for vote in cluster:
        kept = pairs.get(vote[1])
        if kept is None or abs(vote[0] - consensus) < abs(kept[0] - consensus):
            pairs[vote[1]] = vote
    guesses = []
    for offset in (0, length):
        nearest = sorted(pairs.values(), key=lambda vote: abs(vote[1] - offset))[:GUESS_VOTES]
        distance = max(abs(vote[1] - offset) for vote in nearest)
        guesses.append((median_low(vote[0] for vote in nearest), slack(distance)))
    (start, start_slack), (end, end_slack) = guesses
    return Window(start, end + length, start_slack, end_slack)


def span(query: Query, text: str, window: Window) -> tuple[int, int] | None:
    """The quote's start and end near a window's guesses.

    Each end is found twice, by the context next to it and by the quote's own edge, both matched
    approximately (`search`), then reconciled by `_boundary`.
    """
    head = query.quote[:EDGE_LENGTH]
    tail = query.quote[-EDGE_LENGTH:]
    prefix = query.prefix[-EDGE_LENGTH:]
    suffix = query.suffix[:EDGE_LENGTH]
    guess, slack = window.start, window.start_slack
    start = _find_near(prefix + head, text, guess - len(prefix), slack)
    if start is not None:
        start += len(prefix)  # both sides of the boundary unchanged: no need to search
    else:
        quote_start = _search_start(head, text, guess - slack, guess + len(head) + slack, guess)
        prefix_end = _search_end(prefix, text, guess - len(prefix) - slack, guess + slack, guess)
        start = _boundary(head, text, prefix_end, quote_start, guess)
    guess, slack = window.end, window.end_slack
    end = _find_near(tail + suffix, text, guess - len(tail), slack)
    if end is not None:
        end += len(tail)
    else:
        quote_end = _search_end(tail, text, guess - len(tail) - slack, guess + slack, guess)
        suffix_start = _search_start(
            suffix, text, guess - slack, guess + len(suffix) + slack, guess
        )
        end = _boundary(tail, text, suffix_start, quote_end, guess, at_end=True)
    start, end = max(0, start), min(len(text), end)
    return (start, end) if start < end else None


def _boundary(
    edge: str,
    text: str,
    by_context: int | None,
    by_quote: int | None,
    guess: int,
    at_end: bool = False,
) -> int:
    """Reconcile where the context says the quote ends (starts) with where its own edge does.

    If the edge's match lies inside the context's, the text between is either an insertion next
    to the quote (outside it) or an edit inside its edge: whichever costs fewer edits. On a tie,
    outside if the edge is there letter for letter, else inside. If it lies outside, the quote's
    edge was deleted or rewritten: the context's.
    """
    if by_context is None:
        return guess if by_quote is None else by_quote
    if by_quote is None:
        return by_context
    gap = by_context - by_quote if at_end else by_quote - by_context
    if gap <= 0:
        return by_context
    if at_end:
        inside = Levenshtein.distance(edge, text[by_quote - len(edge) : by_context])
        errors = Levenshtein.distance(edge, text[by_quote - len(edge) : by_quote])
    else:
        inside = Levenshtein.distance(edge, text[by_context : by_quote + len(edge)])
        errors = Levenshtein.distance(edge, text[by_quote : by_quote + len(edge)])
    outside = gap + errors
    # On a tie, an edge found letter for letter had text added next to it, outside the quote;
    # an edge found with edits was itself edited, up to the context: inside.
    return by_context if inside < outside or (inside == outside and errors) else by_quote


def _find_near(needle: str, text: str, at: int, slack: int) -> int | None:
    """Where `needle` occurs exactly within `slack` characters of `at`, if it does."""
    found = text.find(needle, max(0, at - slack), at + slack + len(needle))
    return None if found == -1 else found


def _search_end(pattern: str, text: str, lo: int, hi: int, target: int) -> int | None:
    """Where the best approximate match of `pattern` in `text[lo:hi]` ends (nearest `target`)."""
    lo, hi = max(0, lo), min(len(text), hi)
    if not pattern or hi <= lo:
        return None
    errors, end = search(pattern, text[lo:hi], target - lo)
    return lo + end if errors <= MAX_EDGE_ERRORS * len(pattern) else None


def _search_start(pattern: str, text: str, lo: int, hi: int, target: int) -> int | None:
    """Where the best approximate match of `pattern` in `text[lo:hi]` starts (nearest `target`)."""
    lo, hi = max(0, lo), min(len(text), hi)
    if not pattern or hi <= lo:
        return None
    # A match's start is the end of the reversed pattern's match in the reversed text.
    errors, end = search(pattern[::-1], text[lo:hi][::-1], hi - target)
    return hi - end if errors <= MAX_EDGE_ERRORS * len(pattern) else None


def search(pattern: str, text: str, target: int) -> tuple[int, int]:
    """(errors, end) of the best match of `pattern` anywhere in `text`, by edit distance.

    Myers' bit-parallel algorithm (J. ACM 46(3), 1999), one Python int as the bit vector: about a
    dozen integer operations per character of `text`. Of equally good ends, the one nearest
    `target` wins.
    """
    # Without errors, the best matches are the exact occurrences: found by `str.find`, whose
    # loop runs in C (most contexts are unchanged).
    hits = find_all(text, pattern)
    if hits:
        ends = [hit + len(pattern) for hit in hits]
        return 0, min(ends, key=lambda end: (abs(end - target), end))
    length = len(pattern)
    masks: dict[str, int] = {}
    for i, char in enumerate(pattern):
        masks[char] = masks.get(char, 0) | 1 << i
    full = (1 << length) - 1
    top = 1 << (length - 1)
    plus, minus, errors = full, 0, length  # vertical deltas of the last column; its bottom value
    best_errors, best_distance, best_end = length + 1, 0, 0
    mask = masks.get
    for j, char in enumerate(text, 1):
        eq = mask(char, 0)
        xv = eq | minus
        xh = (((eq & plus) + plus) ^ plus) | eq
        hplus = minus | (~(xh | plus) & full)
        hminus = plus & xh
        if hplus & top:
            errors += 1
        elif hminus & top:
            errors -= 1
        # No carry into the first row: a match may start anywhere in `text`.
        hplus = (hplus << 1) & full
        hminus = (hminus << 1) & full
        plus = hminus | (~(xv | hplus) & full)
        minus = hplus & xv
        # Fewer errors, else nearer the target (a later end is never nearer on a tie). Plain
        # ints: a tuple per character took a third of the time.
        if errors <= best_errors:
            distance = abs(j - target)
            if errors < best_errors or distance < best_distance:
                best_errors, best_distance, best_end = errors, distance, j
    return best_errors, best_end

"""Re-anchoring: where is a quoted passage now, in a text that may have changed since? (SPEC §5)

`locate` tries, in order: the stored position still holds the quote; exact occurrences of the quote
(or of the text an agent put in its place), ranked by context and distance from the old position;
approximate matches inside a few candidate windows; else `None`. As in hypothesis/client
`match-quote.ts`, candidates are ranked by a weighted sum of quote, prefix and suffix similarity,
the old position breaks ties, and a quote less similar than `MIN_QUOTE_SIMILARITY` is not found:
no answer beats a wrong answer.

Whitespace never counts: every whitespace character compares as a space (so offsets do not move)
and similarities are computed with whitespace runs collapsed, so a reflowed paragraph still matches.

Approximate matches are only looked for in a few windows of the text, voted for by the word pairs
of the quote and its context that still occur there (`TextIndex`, built once per text and only
when some quote is not found exactly); in each window the quote's ends are placed by approximate
matching of its edges and context (Myers' algorithm), and rapidfuzz scores the span. Never a scan
of the whole text with an approximate matcher: measurements in notes/FACTS.md and
benchmarks/anchoring.py.

`locate_many` does the same for all quotes of a page at once, and where a quote fits several places
equally well (a repeated paragraph) it follows the shift measured on the page's other quotes. Walking
the page in order, it looks for each quote first where the quote before it moved to: letter for
letter, then approximately (taken only if the context on both sides agrees), and searches the whole
text only for the quotes not found there.

A web server re-anchors the notes of a page on every load, and the page changes little between
two loads: keep an `annotate.pageindex.PageIndex` per page and call its `locate_many`, and the
whole-text index costs only the lines that changed.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from functools import cached_property
from heapq import nlargest
from itertools import accumulate, compress, count, islice, repeat
from operator import add, itemgetter
from statistics import median_low
from typing import Any, Literal, NamedTuple

from rapidfuzz.distance import Indel, Levenshtein

__all__ = [
    "CONTEXT_LENGTH",
    "MIN_QUOTE_SIMILARITY",
    "Match",
    "Selector",
    "TextIndex",
    "build_selector",
    "locate",
    "locate_many",
]

Method = Literal["position", "exact", "replaced", "fuzzy"]

# Ranking of candidates, as in hypothesis/client match-quote.ts: the quote's similarity dominates,
# the context decides between look-alikes, the distance from the old position breaks ties.
QUOTE_WEIGHT = 50.0
PREFIX_WEIGHT = 20.0
SUFFIX_WEIGHT = 20.0
TOTAL_WEIGHT = QUOTE_WEIGHT + PREFIX_WEIGHT + SUFFIX_WEIGHT
# Candidates scoring within this of the best are a tie, and the one nearest the old position wins.
# Copies of a boilerplate paragraph differ only in the far ends of their 32-character contexts:
# a fixed position weight (Hypothesis: 2 of 92) loses to that noise once positions have drifted.
TIE_MARGIN = 0.05
SAME_PLACE = 32  # candidates starting closer than this are one place, not a tie
# `locate_many` breaks such ties by how far the text moved around the quote, measured on the
# page's other quotes: those found without a tie that kept their order, if there are this many.
MIN_NEIGHBOURS = 3

# A quote less similar than this (Levenshtein, whitespace collapsed) is not found. Measured on
# 1 MB: it rejects every deleted quote and loses no correct anchor (notes/FACTS.md).
MIN_QUOTE_SIMILARITY = 0.75
# Shorter quotes look like too many places to be matched approximately: exact hits next to a piece
# of their old context only.
MIN_FUZZY_LENGTH = 8
CONTEXT_PROBE_LENGTH = 8
# A quote shorter than this is only found where one side of its context still agrees.
CONTEXT_REQUIRED_BELOW = 32
# Measured on 1 MB: the context at the right place agrees >= 0.85 (99 %), at random places
# <= 0.55 (99 %), 0.62 (99.9 %).
MIN_CONTEXT_SIMILARITY = 0.65
# An exact hit whose context agrees this well (mean of both sides) is taken at once; otherwise an
# edited copy in the right context may still beat it.
GOOD_CONTEXT_SIMILARITY = 0.75
# Characters of context kept on each side of a quote (SPEC §5).
CONTEXT_LENGTH = 32
# Bounds the work for a quote that occurs very often.
MAX_EXACT_HITS = 1000

# Approximate search. Candidate windows are voted for by the word pairs of prefix, quote and suffix
# that still occur in the text; pairs more frequent than MAX_POSTINGS say nothing about where.
MAX_QUERY_ANCHORS = 64
MAX_POSTINGS = 64
MAX_WINDOWS = 5
GUESS_VOTES = 3  # pairs whose median places each end of a window
MIN_WINDOW_VOTES = 0.25  # share of the best window's support a window needs to be looked at
WINDOW_SLACK = 16  # characters searched either side of a guessed end, plus a quarter of ...
MAX_WINDOW_SLACK = 256  # ... the distance to the word pair it was guessed from, up to this
HINT_WINDOW_MAX_QUOTE = 512  # longer quotes always leave anchors; no blind look at the old place
# A window whose guessed span is less similar than this is not refined. Measured on 1 MB: right
# windows score >= 0.8 before refinement, windows of unrelated text 0.23 (median).
MIN_ROUGH_SIMILARITY = 0.6
# The ends of a window are placed by matching this much of the context and of the quote's edges,
# each allowed this share of errors.
EDGE_LENGTH = 32
MAX_EDGE_ERRORS = 0.35
# After this many partial scans of the text, index every word pair at once.
SCANS_BEFORE_FULL_INDEX = 2

# Every whitespace character but the space itself; `str.translate` is 100x slower on non-ASCII.
_WHITESPACE = tuple(chr(c) for c in range(0x3001) if chr(c).isspace() and c != 0x20)
# The same characters (re's `\s` is `str.isspace`), replaced in one pass: faster on short strings.
_OTHER_WHITESPACE = re.compile(r"[^\S ]")
FOLD_BY_REGEX_BELOW = 512


class Match(NamedTuple):
    """Where a quote is now: `text[start:end]`, how sure (0–100), and which step found it.

    `score` is the similarity of the found text to the quote (or to the replacement text, for
    method "replaced"), whitespace ignored: 100 means the passage is unchanged.
    """

    start: int
    end: int
    score: float
    method: Method


class Selector(NamedTuple):
    """What is known about an annotated passage: quote, context, old position, replacement.

    A named tuple, not a dataclass: a page load builds one per note (200 in 0.06 ms, not 0.36).
    """

    exact: str
    prefix: str = ""
    suffix: str = ""
    start: int | None = None
    end: int | None = None
    replaced_text: str | None = None

    @classmethod
    def coerce(cls, value: Any) -> Selector:
        """A selector from a mapping or object, snake_case or the JSON shape `{quote, position,
        replacedText}` (an `Annotation` works too)."""
        if isinstance(value, Selector):
            return value
        quote = _field(value, "quote")
        position = _field(value, "position")
        source = value if quote is None else quote
        where = value if position is None else position
        replaced = _field(value, "replaced_text")
        if replaced is None:
            replaced = _field(value, "replacedText")
        return cls(
            exact=_field(source, "exact") or "",
            prefix=_field(source, "prefix") or "",
            suffix=_field(source, "suffix") or "",
            start=_field(where, "start"),
            end=_field(where, "end"),
            replaced_text=replaced or None,
        )


def _field(value: Any, name: str) -> Any:
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


class TextIndex:
    """One text, its whitespace folded once, and an index of its word pairs built on demand.

    Pass the same `TextIndex` to many `locate` calls to share the work; `locate_many` does so.
    It fills itself in lazily, so share it between threads only after `build()`. Keys are Python
    hashes: an index is only valid inside the process that built it.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self._postings: dict[int, list[int]] = {}
        self._known: set[int] = set()
        self._complete = False
        self._scans = 0

    @cached_property
    def folded(self) -> str:
        """The text with every whitespace character replaced by a space (same offsets)."""
        return _fold(self.text)

    @cached_property
    def _words(self) -> list[str]:
        return self.folded.split(" ")

    @cached_property
    def _keys(self) -> list[int]:
        # Key of word i: hash of (word i, word i + 1); C-level iteration keeps this ~10 ms per MB.
        words = self._words
        return list(map(hash, zip(words, islice(words, 1, None), strict=False)))

    @cached_property
    def _ends(self) -> list[int]:
        # Word i starts at _ends[i - 1] + i: the letters before it plus one space per word.
        return list(accumulate(map(len, self._words)))

    def lookup(self, keys: Iterable[int], limit: int | None = None) -> dict[int, list[int]]:
        """Start offsets of the word pairs with these keys (see `_word_pairs`), in text order.

        With a `limit`, a key found more often than that may be left out, as if not found (an
        index that has to assemble postings, such as `PageIndex`'s, skips the frequent ones).
        The first calls scan the text for just the keys asked for (one pass for a whole page in
        `locate_many`); after `SCANS_BEFORE_FULL_INDEX` of them every pair is indexed at once.
        """
        wanted = set(keys)
        if not self._complete:
            missing = wanted - self._known
            if missing:
                if self._scans >= SCANS_BEFORE_FULL_INDEX:
                    self.build()
                else:
                    self._scan(missing)
        postings = self._postings
        return {key: postings[key] for key in wanted if key in postings}

    def prefetch(self, keys: Iterable[int]) -> None:
        """Look these keys up in one pass over the text, before `lookup` asks for them one by one."""
        self.lookup(keys)

    def build(self) -> TextIndex:
        """Index every word pair now; worth it before many `locate` calls one by one."""
        if not self._complete:
            postings: defaultdict[int, list[int]] = defaultdict(list)
            for key, start in zip(self._keys, _starts(self._words), strict=False):
                postings[key].append(start)
            self._postings = postings
            self._complete = True
        return self

    def occurrences(self, needle: str) -> list[int]:
        """Where folded `needle` occurs in the folded text (at most MAX_EXACT_HITS, in order)."""
        pairs = _word_pairs(needle) if self._complete else []
        if not pairs:
            return _find_all(self.folded, needle)
        # Every occurrence holds each word pair of the needle: check where the rarest one is,
        # instead of reading the whole text.
        offset, starts = self._rarest(pairs)
        text = self.folded
        hits = [
            start - offset
            for start in starts
            if start >= offset and text.startswith(needle, start - offset)
        ]
        return hits[:MAX_EXACT_HITS]

    def _rarest(self, pairs: list[tuple[int, int]]) -> tuple[int, list[int]]:
        """The offset and the postings of the pair of `pairs` found least often (any would do)."""
        postings = self.lookup(key for key, _ in pairs)
        key, offset = min(pairs, key=lambda pair: len(postings.get(pair[0], ())))
        return offset, postings.get(key, [])

    def _scan(self, keys: set[int]) -> None:
        all_keys, ends, postings = self._keys, self._ends, self._postings
        for i in compress(count(), map(keys.__contains__, all_keys)):
            postings.setdefault(all_keys[i], []).append(ends[i - 1] + i if i else 0)
        self._known |= keys
        self._scans += 1


def _starts(parts: Iterable[str]) -> Iterator[int]:
    """Where each of `parts` starts when they are joined by a one-character separator (words by
    a space, lines by a line break): the letters before it and one separator each."""
    return map(add, accumulate(map(len, parts), initial=0), count())


def _word_pairs(text: str) -> list[tuple[int, int]]:
    """(key, offset) of each pair of whole words in `text`, as `TextIndex` keys them.

    The first and last words may be cut, so only pairs strictly inside are used.
    """
    words = _fold(text).split(" ")
    starts = list(_starts(words))
    return [
        (hash((words[i], words[i + 1])), starts[i])
        for i in range(1, len(words) - 2)
        if words[i] and words[i + 1]
    ]


class _Query(NamedTuple):
    """A selector folded for search."""

    quote: str
    prefix: str
    suffix: str
    replaced: str | None
    start: int | None
    end: int | None
    collapsed: str  # the quote with whitespace runs collapsed, for similarity

    @classmethod
    def of(cls, selector: Selector) -> _Query:
        quote = _fold(selector.exact)
        return cls(
            quote=quote,
            prefix=_fold(selector.prefix),
            suffix=_fold(selector.suffix),
            replaced=_fold(selector.replaced_text) if selector.replaced_text else None,
            start=selector.start,
            end=selector.end,
            collapsed=_collapse(quote),
        )


class _Candidate(NamedTuple):
    start: int
    end: int
    similarity: float  # of the found text to the quote (or to the replacement)
    prefix: float | None  # similarity of the context; None when none was stored
    suffix: float | None
    score: float  # weighted similarity of quote and context, 0–1
    method: Method

    def match(self) -> Match:
        return Match(self.start, self.end, 100.0 * self.similarity, self.method)


def locate(
    text: str | TextIndex,
    exact: str,
    *,
    prefix: str = "",
    suffix: str = "",
    start: int | None = None,
    end: int | None = None,
    replaced_text: str | None = None,
) -> Match | None:
    """Where the quote `exact` (with its old context and position) is in `text` now, or `None`.

    >>> locate("A new line.\\nHello world, again.", "world", prefix="Hello ", start=6, end=11)
    Match(start=18, end=23, score=100.0, method='exact')
    """
    index = text if isinstance(text, TextIndex) else TextIndex(text)
    query = _Query.of(Selector(exact, prefix, suffix, start, end, replaced_text))
    candidates, done = _exact_step(index, query)
    if not done:
        candidates = _fuzzy_step(index, query, _anchors(query), candidates)
    return _answer(*_choose(candidates, query.start))


def locate_many(text: str | TextIndex, selectors: Iterable[Any]) -> list[Match | None]:
    """`locate` for every selector of one page (mappings or objects, see `Selector.coerce`), in
    order, sharing one `TextIndex` and one scan of the text for all approximate searches.

    One difference: where a quote fits several places equally well (a repeated paragraph), the
    place nearest its old position shifted as much as its nearest neighbours on the page moved
    wins, rather than the place nearest its old position: edits above drift every offset.
    """
    index = text if isinstance(text, TextIndex) else TextIndex(text)
    coerced = [Selector.coerce(selector) for selector in selectors]
    finalists = _page_steps(index, coerced)
    chosen = [
        _choose(candidates, selector.start)
        for candidates, selector in zip(finalists, coerced, strict=True)
    ]
    # Edits above a quote move it; its neighbours that kept their order (a moved section did
    # not) show by how much.
    chain = _in_order(
        (selector.start, found.start)
        for (found, ambiguous), selector in zip(chosen, coerced, strict=True)
        if found is not None and not ambiguous and selector.start is not None
    )
    if len(chain) >= MIN_NEIGHBOURS:
        for i, (_, ambiguous) in enumerate(chosen):
            old = coerced[i].start
            if ambiguous and old is not None:
                chosen[i] = _choose(finalists[i], _expected(chain, old))
    return [_answer(found, ambiguous) for found, ambiguous in chosen]


Step = tuple[list[_Candidate], bool]  # candidates, and whether they are final


def _page_steps(index: TextIndex, selectors: list[Selector]) -> list[list[_Candidate]]:
    """The candidates of every quote: exact hits, else approximate matches near where the quote
    should be, else anywhere (SPEC order).

    Both passes walk the page in order and look for each quote first where its old position
    lands after the shift of the quote found before it: an edit above moves everything below by
    the same amount, and one check there spares a search of the whole text per quote. Quotes are
    folded only when needed.
    """
    queries: dict[int, _Query] = {}  # of the quotes not found letter for letter
    steps: list[Step] = [([], True)] * len(selectors)
    moved_by: list[int | None] = [None] * len(selectors)  # of the quotes found without a doubt
    order = sorted(range(len(selectors)), key=lambda i: selectors[i].start or 0)
    shift = 0
    for i in order:
        selector = selectors[i]
        held = _held(index.text, selector)
        if held is not None:
            steps[i], moved_by[i], shift = ([held], True), 0, 0
            continue
        moved = _moved(index, selector, shift) if shift else None
        if moved is not None:
            steps[i], moved_by[i] = ([moved], True), shift
            continue
        query = queries[i] = _Query.of(selector)
        steps[i] = candidates, done = _exact_step(index, query, shift)
        if done and query.start is not None:
            shift = _shift(candidates, query.start, shift, moved_by, i)
    _approximate_steps(index, queries, steps, moved_by, order)
    return [candidates for candidates, _ in steps]


def _shift(
    candidates: list[_Candidate], old: int, shift: int, moved_by: list[int | None], i: int
) -> int:
    """The shift measured on quote `i` if it was found without a doubt (noted in `moved_by`),
    else the one measured before it."""
    found, ambiguous = _choose(candidates, old + shift)
    if found is None or ambiguous:
        return shift
    moved_by[i] = found.start - old
    return found.start - old


def _approximate_steps(
    index: TextIndex,
    queries: dict[int, _Query],
    steps: list[Step],
    moved_by: list[int | None],
    order: list[int],
) -> None:
    """Approximate matches for the quotes not found exactly: near where the quote found before
    it says it is now (`_near`), else anywhere (`_fuzzy_step`).

    A quote found here places the next one, so a run of edited quotes is followed from its
    start, and the whole-text index is only needed for the quotes found nowhere near.
    """
    anchors: dict[int, list[tuple[int, int]]] = {}
    shift = 0
    for i in order:
        if steps[i][1]:
            shift = shift if moved_by[i] is None else moved_by[i]
            continue
        query = queries[i]
        candidates = steps[i][0]
        near = _near(index, query, shift)
        if near is not None and query.start is not None:
            steps[i] = [*candidates, near], True
            # Its context agrees: its start measures the shift as well as an exact hit.
            shift = moved_by[i] = near.start - query.start
            continue
        if not anchors:
            # One scan of the text for the word pairs of every quote still to be looked for.
            anchors = {j: _anchors(queries[j]) for j in order if not steps[j][1]}
            index.prefetch(key for pairs in anchors.values() for key, _ in pairs)
        candidates = _fuzzy_step(index, query, anchors[i], candidates)
        steps[i] = candidates, True
        if query.start is not None:
            shift = _shift(candidates, query.start, shift, moved_by, i)


def _held(text: str, selector: Selector) -> _Candidate | None:
    """The stored position when the quote and its whole context are still there letter for
    letter, as on most page loads: what `_exact_step` finds there, without folding or scoring."""
    start, end, exact = selector.start, selector.end, selector.exact
    if start is None or end != start + len(exact):
        return None
    return _intact(text, exact, selector.prefix, selector.suffix, start, "position")


def _moved(index: TextIndex, selector: Selector, shift: int) -> _Candidate | None:
    """What `_exact_step` finds at the stored position moved by `shift` when the quote and its
    whole context are there (whitespace folded), without its scoring: `None` if they are not,
    or if the quote is still at the stored position (`_exact_step` looks there first)."""
    start, end = selector.start, selector.end
    if start is None:
        return None
    # Folded: a reflow elsewhere in the paragraph turns spaces of the context into line breaks.
    exact, text = _fold(selector.exact), index.folded
    if end != start + len(exact) or (start >= 0 and text.startswith(exact, start)):
        return None
    prefix, suffix = _fold(selector.prefix), _fold(selector.suffix)
    return _intact(text, exact, prefix, suffix, start + shift, "exact")


def _intact(
    text: str, exact: str, prefix: str, suffix: str, at: int, method: Method
) -> _Candidate | None:
    """The quote at `at` with a full score when it and its whole context are there letter for
    letter (`_held`, `_moved`), else `None`."""
    end = at + len(exact)
    if (
        at < len(prefix)
        or not exact.strip()
        or not text.startswith(exact, at)
        or not text.startswith(suffix, end)
        or not text.startswith(prefix, at - len(prefix))
    ):
        return None
    return _Candidate(at, end, 1.0, 1.0 if prefix else None, 1.0 if suffix else None, 1.0, method)


def build_selector(
    text: str, start: int, end: int, context: int = CONTEXT_LENGTH
) -> dict[str, Any]:
    """The selector of `text[start:end]`: exact, `context` characters of prefix and suffix, position."""
    if not 0 <= start <= end <= len(text):
        raise ValueError(
            f"Span {start}:{end} is not inside a text of {len(text)} characters; "
            "it needs 0 <= start <= end <= length."
        )
    return {
        "exact": text[start:end],
        "prefix": text[max(0, start - context) : start],
        "suffix": text[end : end + context],
        "start": start,
        "end": end,
    }


# -- Steps ----------------------------------------------------------------------------------------


def _exact_step(index: TextIndex, query: _Query, shift: int = 0) -> tuple[list[_Candidate], bool]:
    """Candidates from the stored position (or that position moved by `shift`) or exact hits,
    and whether they are final."""
    if not query.collapsed:
        return [], True
    start, end = query.start, query.end
    if start is not None and end == start + len(query.quote):
        places: tuple[tuple[int, Method], ...] = ((start, "position"),)
        if shift:
            places += ((start + shift, "exact"),)
        for at, method in places:
            # The folded text keeps the offsets of the text.
            if at >= 0 and index.folded.startswith(query.quote, at):
                held = _candidate(
                    index, query, at, at + len(query.quote), 1.0, method, len(query.collapsed)
                )
                if held is not None and _context_agrees(held):
                    return [held], True
    candidates = _exact_candidates(index, query, query.quote, "exact")
    best, _ = _choose(candidates, query.start)
    if best is not None and _context_agrees(best):
        return candidates, True
    if query.replaced and _collapse(query.replaced):
        # The quote is gone (or out of context): maybe an agent put this text in its place.
        candidates += _exact_candidates(index, query, query.replaced, "replaced")
        best, _ = _choose(candidates, query.start)
        if best is not None and _context_agrees(best):
            return candidates, True
    return candidates, len(query.collapsed) < MIN_FUZZY_LENGTH


def _fuzzy_step(
    index: TextIndex, query: _Query, anchors: list[tuple[int, int]], candidates: list[_Candidate]
) -> list[_Candidate]:
    """The exact hits plus the approximate matches found in the candidate windows."""
    candidates = list(candidates)
    # `_windows` does not use the pairs found more than MAX_POSTINGS times.
    postings = index.lookup((key for key, _ in anchors), MAX_POSTINGS)
    for window in _windows(query, anchors, postings, len(index.text)):
        candidate = _approximate(index, query, window)
        if candidate is not None:
            candidates.append(candidate)
    return candidates


def _near(index: TextIndex, query: _Query, shift: int) -> _Candidate | None:
    """An approximate match where the quote's neighbour says it is now (old position + `shift`)
    whose context agrees, if there is one: as sure as any found by searching the whole text."""
    if query.start is None:
        return None
    at, length = query.start + shift, len(query.quote)
    if not 0 <= at <= len(index.text):
        return None
    # The window `_windows` adds at the old position, moved by the shift.
    candidate = _approximate(index, query, _Window(at, at + length, WINDOW_SLACK, _slack(length)))
    if candidate is None or not _context_agrees(candidate):
        return None
    # A window placed too far off still finds a similar span, with a misplaced end: the context
    # next to that end is then a poor match (measured on benchmarks/anchoring.py: 0.51).
    sides = (candidate.prefix, candidate.suffix)
    return (
        candidate if all(side is None or side >= MIN_CONTEXT_SIMILARITY for side in sides) else None
    )


def _approximate(index: TextIndex, query: _Query, window: _Window) -> _Candidate | None:
    """The approximate match of the quote in a window, if it is similar enough."""
    guess = _collapse(index.folded[max(0, window.start) : window.end])
    if (
        Levenshtein.normalized_similarity(query.collapsed, guess, score_cutoff=MIN_ROUGH_SIMILARITY)
        < MIN_ROUGH_SIMILARITY
    ):
        return None
    span = _span(query, index.folded, window)
    if span is None:
        return None
    found = _collapse(index.folded[span[0] : span[1]])
    similarity = Levenshtein.normalized_similarity(
        query.collapsed, found, score_cutoff=MIN_QUOTE_SIMILARITY
    )
    if similarity < MIN_QUOTE_SIMILARITY:
        return None
    return _candidate(index, query, *span, similarity, "fuzzy", len(query.collapsed))


Expected = tuple[int, int, int]  # where a quote should now start: (lowest, highest, likeliest)


def _choose(
    candidates: list[_Candidate], expected: int | Expected | None
) -> tuple[_Candidate | None, bool]:
    """The best candidate, and whether another one as good lies elsewhere.

    Among candidates within TIE_MARGIN of the best score the one nearest the `expected` start
    (the old position, or a range from `_expected`) wins, then the better score, then an exact
    hit over an approximate one.
    """
    if not candidates:
        return None, False
    if len(candidates) == 1:  # the common case, without the ranking below
        return candidates[0], False
    if isinstance(expected, int):
        expected = (expected, expected, expected)
    top = max(candidate.score for candidate in candidates)
    tied = [candidate for candidate in candidates if candidate.score >= top - TIE_MARGIN]

    def rank(c: _Candidate) -> tuple[int, int, float, bool]:
        if expected is None:
            return 0, 0, -c.score, c.method == "fuzzy"
        low, high, likeliest = expected
        outside = max(0, low - c.start, c.start - high)
        return outside, abs(c.start - likeliest), -c.score, c.method == "fuzzy"

    chosen = min(tied, key=rank)
    return chosen, any(abs(c.start - chosen.start) > SAME_PLACE for c in tied)


def _answer(chosen: _Candidate | None, ambiguous: bool) -> Match | None:
    # Several places fit as well, and no side of the context speaks for this one: no answer.
    if chosen is None or (ambiguous and not _context_supports(chosen)):
        return None
    return chosen.match()


def _in_order(pairs: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest run of (old, new) positions increasing in both: the quotes that did not move."""
    pairs = sorted(pairs)
    tails: list[int] = []  # new position ending the best run of each length
    ends: list[int] = []  # index in pairs of that end
    previous = [-1] * len(pairs)
    for i, (_, new) in enumerate(pairs):
        at = bisect_left(tails, new)
        previous[i] = ends[at - 1] if at else -1
        if at == len(tails):
            tails.append(new)
            ends.append(i)
        else:
            tails[at], ends[at] = new, i
    chain, i = [], ends[-1] if ends else -1
    while i != -1:
        chain.append(pairs[i])
        i = previous[i]
    return chain[::-1]


def _expected(chain: list[tuple[int, int]], old: int) -> Expected:
    """Where `old` is now, judged by its neighbours in `chain` (sorted (old, new) pairs).

    The text moved between the two neighbours by as much as they disagree; within that range,
    the likeliest place moved like the nearer one.
    """
    at = bisect_left(chain, (old,))
    neighbours = chain[max(0, at - 1) : at + 1]
    shifts = [new - was for was, new in neighbours]
    nearest = min(neighbours, key=lambda pair: abs(pair[0] - old))
    return old + min(shifts), old + max(shifts), old + nearest[1] - nearest[0]


# -- Exact hits -----------------------------------------------------------------------------------


def _exact_candidates(
    index: TextIndex, query: _Query, needle: str, method: Method
) -> list[_Candidate]:
    text = index.folded
    size = len(_collapse(needle))
    if size < MIN_FUZZY_LENGTH and (query.prefix or query.suffix):
        # A short quote occurs everywhere: only look where a piece of its context is still next
        # to it (and find far fewer hits).
        starts: set[int] = set()
        if query.prefix:
            probe = query.prefix[-CONTEXT_PROBE_LENGTH:]
            starts.update(hit + len(probe) for hit in _find_all(text, probe + needle))
        if query.suffix:
            starts.update(_find_all(text, needle + query.suffix[:CONTEXT_PROBE_LENGTH]))
        hits = sorted(starts)
    else:
        hits = index.occurrences(needle)
    candidates = []
    for hit in hits:
        candidate = _candidate(index, query, hit, hit + len(needle), 1.0, method, size)
        if candidate is not None:
            candidates.append(candidate)
    return candidates


def _find_all(text: str, needle: str) -> list[int]:
    hits: list[int] = []
    hit = text.find(needle)
    while hit != -1 and len(hits) < MAX_EXACT_HITS:
        hits.append(hit)
        hit = text.find(needle, hit + 1)
    return hits


def _candidate(
    index: TextIndex,
    query: _Query,
    start: int,
    end: int,
    similarity: float,
    method: Method,
    size: int,
) -> _Candidate | None:
    """Score a span; `None` for a short quote whose context agrees on neither side."""
    text = index.folded
    prefix = (
        _context_similarity(query.prefix, text[max(0, start - len(query.prefix)) : start])
        if query.prefix
        else None
    )
    suffix = (
        _context_similarity(query.suffix, text[end : end + len(query.suffix)])
        if query.suffix
        else None
    )
    candidate = _Candidate(start, end, similarity, prefix, suffix, 0.0, method)
    if size < CONTEXT_REQUIRED_BELOW and not _context_supports(candidate):
        return None
    score = (
        QUOTE_WEIGHT * similarity
        + PREFIX_WEIGHT * (1.0 if prefix is None else prefix)
        + SUFFIX_WEIGHT * (1.0 if suffix is None else suffix)
    ) / TOTAL_WEIGHT
    return candidate._replace(score=score)


def _context_supports(candidate: _Candidate) -> bool:
    sides = [side for side in (candidate.prefix, candidate.suffix) if side is not None]
    return not sides or max(sides) >= MIN_CONTEXT_SIMILARITY


def _context_agrees(candidate: _Candidate) -> bool:
    sides = [side for side in (candidate.prefix, candidate.suffix) if side is not None]
    return not sides or sum(sides) / len(sides) >= GOOD_CONTEXT_SIMILARITY


# -- Approximate matches --------------------------------------------------------------------------


def _anchors(query: _Query) -> list[tuple[int, int]]:
    """(key, offset from the quote's start) of word pairs of prefix + quote + suffix."""
    anchors = [
        (key, offset - len(query.prefix))
        for key, offset in _word_pairs(query.prefix + query.quote + query.suffix)
    ]
    if len(anchors) > MAX_QUERY_ANCHORS:
        # A long quote: pairs spread evenly over it are as good as all of them, and cheaper.
        last = len(anchors) - 1
        picks = sorted(
            {round(i * last / (MAX_QUERY_ANCHORS - 1)) for i in range(MAX_QUERY_ANCHORS)}
        )
        anchors = [anchors[i] for i in picks]
    return anchors


class _Window(NamedTuple):
    """Where the quote probably starts and ends, and how far off each guess may be."""

    start: int
    end: int
    start_slack: int
    end_slack: int


def _slack(distance: int) -> int:
    # Edits between an anchor and the quote's end move the end by up to a quarter of that distance.
    return min(MAX_WINDOW_SLACK, WINDOW_SLACK + abs(distance) // 4)


def _windows(
    query: _Query,
    anchors: list[tuple[int, int]],
    postings: dict[int, list[int]],
    text_length: int,
) -> list[_Window]:
    """Likely places of the quote, best supported first, plus the old position."""
    length = len(query.quote)
    # (start of the quote if this pair did not move in it, pair's offset, weight): a rare pair
    # (a unique phrase) says more than one found in every copy of a repeated paragraph.
    votes: list[tuple[int, int, float]] = []
    for key, offset in anchors:
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
    windows = []
    for support, first, end in best:
        if support < MIN_WINDOW_VOTES * best[0][0]:
            break
        windows.append(_window(votes[first:end], length))
    hint = query.start
    if (
        hint is not None
        and 0 <= hint <= text_length
        and length <= HINT_WINDOW_MAX_QUOTE
        and not any(abs(window.start - hint) <= gap for window in windows)
    ):
        windows.append(_Window(hint, hint + length, WINDOW_SLACK, _slack(length)))
    return windows


def _window(cluster: list[tuple[int, int, float]], length: int) -> _Window:
    """Where a cluster of votes says the quote starts and ends, and how far off that may be.

    Each end is guessed from the pairs nearest to it (fewer edits lie in between): the median of
    a few, each pair counted once, at its occurrence nearest the cluster's consensus, so neither
    a pair that merely occurs nearby nor a copy of a repeated paragraph throws the guess.
    """
    if len(cluster) == 1:  # most clusters, and what the lines below come to for one vote
        start, offset, _ = cluster[0]
        return _Window(start, start + length, _slack(offset), _slack(offset - length))
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
        guesses.append((median_low(vote[0] for vote in nearest), _slack(distance)))
    (start, start_slack), (end, end_slack) = guesses
    return _Window(start, end + length, start_slack, end_slack)


def _span(query: _Query, text: str, window: _Window) -> tuple[int, int] | None:
    """The quote's start and end near a window's guesses.

    Each end is found twice, by the context next to it and by the quote's own edge, both matched
    approximately (`_search`), then reconciled by `_boundary`.
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
    errors, end = _search(pattern, text[lo:hi], target - lo)
    return lo + end if errors <= MAX_EDGE_ERRORS * len(pattern) else None


def _search_start(pattern: str, text: str, lo: int, hi: int, target: int) -> int | None:
    """Where the best approximate match of `pattern` in `text[lo:hi]` starts (nearest `target`)."""
    lo, hi = max(0, lo), min(len(text), hi)
    if not pattern or hi <= lo:
        return None
    # A match's start is the end of the reversed pattern's match in the reversed text.
    errors, end = _search(pattern[::-1], text[lo:hi][::-1], hi - target)
    return hi - end if errors <= MAX_EDGE_ERRORS * len(pattern) else None


def _search(pattern: str, text: str, target: int) -> tuple[int, int]:
    """(errors, end) of the best match of `pattern` anywhere in `text`, by edit distance.

    Myers' bit-parallel algorithm (J. ACM 46(3), 1999), one Python int as the bit vector: about a
    dozen integer operations per character of `text`. Of equally good ends, the one nearest
    `target` wins.
    """
    # Without errors, the best matches are the exact occurrences: found by `str.find`, whose
    # loop runs in C (most contexts are unchanged).
    hits = _find_all(text, pattern)
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


# -- Text helpers ---------------------------------------------------------------------------------


def _fold(text: str) -> str:
    """Every whitespace character becomes a space; offsets do not move."""
    if len(text) < FOLD_BY_REGEX_BELOW:
        # Every whitespace character but the space is unprintable (checked in the tests), and
        # the check takes half the time of the regex: most quotes and contexts are one line.
        return text if text.isprintable() else _OTHER_WHITESPACE.sub(" ", text)
    for char in _WHITESPACE:
        if char in text:
            text = text.replace(char, " ")
    return text


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _context_similarity(expected: str, actual: str) -> float:
    if expected == actual:  # unchanged context, the common case
        return 1.0
    return Indel.normalized_similarity(_collapse(expected), _collapse(actual))

"""A quote the page shows, found in a Markdown file: the search and ranking of `sourcemap`.

The file's projection (`projection.project_markdown`, the text the rendered page shows) is folded
by `normalise`; exact occurrences of the quote in it are ranked here by what the page reported
(code or not, which occurrence), their context and the old place, with `tuning`'s weights; else
`locate`'s approximate match is taken, the same search that re-anchors quotes in pages, with the
one rule of the Markdown side: the quote with one word changed near where it was last seen.
"""

from __future__ import annotations

import bisect
import re
from array import array
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate
from typing import NamedTuple

from rapidfuzz.distance import Indel

from ..folding import folded_projection
from ..mdparse import NEWLINES, line_starts
from .matching import context_elsewhere, framed, locate
from .normalise import normalise
from .text import find_all
from .tuning import (
    CASE_DIFFERS,
    FUZZY_CONTEXT_REQUIRED_BELOW,
    GOOD_CONTEXT_SIMILARITY,
    MIN_CONTEXT_SIMILARITY,
    MIN_ONE_WORD_QUOTE,
    MIN_ONE_WORD_WORDS,
    MIN_SHORT_QUOTE_SCORE,
    ONE_WORD_NEAR,
    ONE_WORD_REACH,
    PREFIX_WEIGHT,
    QUOTE_WEIGHT,
    SUFFIX_WEIGHT,
    TIE_MARGIN,
    TOTAL_WEIGHT,
)

__all__ = [
    "MAX_EXCERPT_CHARS",
    "Haystack",
    "SourceMatch",
    "excerpt",
    "haystack_of",
    "locate_in_markdown",
    "prepare",
]

MAX_EXCERPT_CHARS = 500


@dataclass(frozen=True)
class SourceMatch:
    """Where a quote is in a Markdown file: 1-based inclusive lines, score 0-100, and the
    [start, end) offsets in the source with line ends made `\\n`."""

    line_start: int
    line_end: int
    start: int
    end: int
    excerpt: str
    score: int


class _Hit(NamedTuple):
    start: int
    end: int
    score: int
    exact: bool = False  # the quote itself, not an approximate match
    supported: bool = True  # its context agrees with the stored context on one side at least


class Haystack:
    """The normalised projection of a source, where to find it, and what answers line hints fast."""

    __slots__ = ("_masked", "_reach", "code", "line_starts", "offsets", "shown", "text")

    def __init__(
        self,
        text: str,
        offsets: array[int],
        line_starts: list[int],
        code: bytes = b"",
        shown: str = "",
    ) -> None:
        self.shown = shown  # shown[i]: the projected character text[i] was folded from
        self.text = text
        self.offsets = offsets  # the source offset of each character of `text`
        self.line_starts = line_starts  # source offset of each line's first character
        self.code = code or bytes(len(text))  # 1 where the character is shown as code
        self._reach: array[int] | None = None
        self._masked: dict[bool, str] = {}

    @property
    def reach(self) -> array[int]:
        """reach[i] = max(offsets[: i + 1]): non-decreasing, so bisectable.

        Made on the first line hint (a new note has none): a running maximum costs as much as
        the rest of a page's preparation, and most pages need none (their offsets are sorted).
        """
        if self._reach is None:
            offsets = self.offsets
            self._reach = (
                offsets
                if sorted(offsets) == offsets.tolist()
                else array("q", accumulate(offsets, max))
            )
        return self._reach

    def index_of_line(self, line: int) -> int:
        """The first character of `text` that comes from line `line` (1-based) or later.

        Offsets are not sorted (footnotes and tab labels move), but the first index whose offset
        reaches a value is also the first whose running maximum does.
        """
        at = self.line_starts[min(max(line, 1), len(self.line_starts)) - 1]
        return bisect.bisect_left(self.reach, at)

    def in_code(self, at: int) -> bool:
        return at < len(self.code) and self.code[at] == 1

    def masked(self, in_code: bool) -> str:
        """`text` with every character of the other kind (code, or not code) blanked out, so an
        approximate search cannot land there; offsets are unchanged."""
        if in_code not in self._masked:
            keep = 1 if in_code else 0
            self._masked[in_code] = "".join(
                ch if flag == keep else _BLANK
                for ch, flag in zip(self.text, self.code, strict=True)
            )
        return self._masked[in_code]


# Stands for blanked-out text: validation refuses NUL in quotes, so it never matches one.
_BLANK = "\x00"


# Keyed by the whole source text: a page edited and saved is a new key. 128 pages of ~30 kB cost
# ~30 MB; the compact arrays keep that far below a tuple of int objects.
@lru_cache(maxsize=128)
def haystack_of(source: str) -> Haystack:
    """The haystack of Markdown `source` (line ends `\\n`), made once per text: the projection
    folded by slices (annotate/folding.py), not a Python object per character."""
    text, offsets, code, shown = folded_projection(source)
    return Haystack(text, offsets, line_starts(source), code, shown)


class _Where(NamedTuple):
    """What the page said about the selection (issue #13): whether it starts inside `<pre>` or
    `<code>`, and which occurrence of the quote among those of the same kind it is."""

    in_code: bool | None = None
    occurrence: int | None = None


def _side(expected: str, actual: str) -> float | None:
    return None if not expected else Indel.normalized_similarity(expected, actual)


def _looks_like_markup(context: str) -> bool:
    """Whether page text around a quote holds Markdown syntax: then it was selected in a code
    example that shows Markdown, not in the rendered result."""
    return bool(_MARKUP.search(context))


_MARKUP = re.compile(r"[`*_\[\]{}|<>]|^\s*(?:!!!|\?\?\?|===|#|-|\d+\.)\s|\]\(|\]:")


def _exact(
    haystack: Haystack,
    hits: list[int],
    quote: str,
    before: str,
    after: str,
    hint: int | None,
    where: _Where,
) -> _Hit | None:
    """The best exact occurrence of `quote`, or None when there is none or no way to choose.

    A unique occurrence is found whatever the context says (issue #13, class 2): context ranks
    occurrences and lowers the score, never rejects the only one. Between occurrences, the
    kind the page reported (code or not) comes first: a quote selected in prose never maps
    into a code example while the prose holds it too (class 1).
    """
    text = haystack.text
    kinds = [haystack.in_code(h) for h in hits]
    occurrence = where.occurrence
    if where.in_code is not None:
        same = [h for h, k in zip(hits, kinds, strict=True) if k == where.in_code]
        if same:
            hits, kinds = same, [where.in_code] * len(same)
        else:
            occurrence = None  # counted among occurrences the Markdown does not have
    scored: list[tuple[int, int, float, bool, bool, bool]] = []
    first, last = len(text) - len(text.lstrip()), len(text.rstrip())
    for n, hit in enumerate(hits):
        end = hit + len(quote)
        # At an edge of the Markdown the page's context is the theme's (the header before a
        # page's first heading, the footer after its last line): no evidence either way, not
        # a disagreement (issue #26: `# Formatting` got null).
        p_edge = hit == 0 or (hit <= first and bool(before.strip()))
        s_edge = end == len(text) or (end >= last and bool(after.strip()))
        p = None if p_edge else _side(before, text[max(0, hit - len(before)) : hit])
        s = None if s_edge else _side(after, text[end : end + len(after)])
        sides = [x for x in (p, s) if x is not None]
        weighted = (
            QUOTE_WEIGHT
            + PREFIX_WEIGHT * (1.0 if p is None else p)
            + SUFFIX_WEIGHT * (1.0 if s is None else s)
        ) / TOTAL_WEIGHT
        agrees = not sides or sum(sides) / len(sides) >= GOOD_CONTEXT_SIMILARITY
        # An edge is no evidence for a copy either: only context that was compared supports.
        compared = bool(sides) or not ((before and p_edge) or (after and s_edge))
        supports = max(sides) >= MIN_CONTEXT_SIMILARITY if sides else compared
        scored.append((hit, n, weighted, agrees, supports, compared))
    if len(scored) == 1:
        hit, _, weighted, agrees, supports, _ = scored[0]
        score = 100 if agrees else round(100 * weighted)
        return _Hit(hit, hit + len(quote), score, True, supports)
    top = max(item[2] for item in scored)
    tied = [item for item in scored if item[2] >= top - TIE_MARGIN]
    # Old notes carry no kind: prose-looking context prefers the rendered text over an example.
    prefer_prose = where.in_code is None and not _looks_like_markup(before + " " + after)

    def rank(item: tuple[int, int, float, bool, bool, bool]) -> tuple[int, int, int, int, int]:
        hit, n = item[0], item[1]
        return (
            0 if hint is None else abs(hit - hint),
            0 if occurrence is None else int(n != occurrence),
            int(not item[5]),  # context compared and agreeing, before an edge's benefit of doubt
            int(prefer_prose and haystack.in_code(hit)),
            hit,
        )

    hit, n, weighted, agrees, supports, compared = min(tied, key=rank)
    told = occurrence is not None and n == occurrence
    if (len(tied) > 1 or not compared) and not (supports or told or hint is not None):
        # Several places fit, or the best is at an edge of the Markdown where its context could
        # not be compared, and nothing speaks for one: no guess.
        return None
    score = 100 if agrees else round(100 * weighted)
    return _Hit(hit, hit + len(quote), score, True, supports)


def _one_word_changed(
    haystack: Haystack,
    quote: str,
    prefix: str,
    suffix: str,
    hint: int,
    kind: bool | None = None,
) -> _Hit | None:
    """The quote with one of its words changed (into one or two others), near where it was
    last seen: the edit an agent makes most (issue #13, class 3). A similarity threshold rejects
    it in short quotes where the word is long ("the documentation" → "the docs"); requiring
    every other word, in order, next to the old place keeps it from matching other text, and
    `anchoring.framed` (what `locate` decides on its own matches) from taking a one-word twin
    of a passage rewritten in more words (issue #26)."""
    words = quote.split(" ")
    if len(quote) < MIN_ONE_WORD_QUOTE or len(words) < MIN_ONE_WORD_WORDS:
        return None
    lo = max(0, hint - ONE_WORD_NEAR)
    text = haystack.text if kind is None else haystack.masked(kind)
    window = text[lo : hint + len(quote) + ONE_WORD_NEAR]
    found: set[tuple[int, int]] = set()
    for replacement in (r"[^ \x00]+", r"[^ \x00]+ [^ \x00]+"):  # one word, else two
        for i in range(len(words)):
            pattern = " ".join(
                [*map(re.escape, words[:i]), replacement, *map(re.escape, words[i + 1 :])]
            )
            found.update(m.span() for m in re.finditer(pattern, window))
        if found:
            break
    if len(found) != 1:
        return None  # not there, or several places: no guess
    start, end = next(iter(found))
    selector = {"exact": quote, "prefix": prefix, "suffix": suffix, "start": hint}
    if not framed(haystack.text, selector, lo + start, lo + end):
        return None
    score = round(100 * Indel.normalized_similarity(quote, window[start:end]))
    return _Hit(lo + start, lo + end, score)


def _same_case(haystack: Haystack, hit: _Hit, original: str) -> bool:
    """Whether the letters shown at `hit` are the quote's, case included."""
    if not haystack.shown:
        return True
    shown = haystack.shown[hit.start : hit.end]
    return [c for c in shown if c.isalpha()] == [c for c in original if c.isalpha()]


def _case_differs(haystack: Haystack, hit: _Hit, original: str) -> bool:
    """Whether words shown at `hit` are the quote's in other letter case: a heading in title
    case ("Backward Incompatible Changes") is not an edit of the prose that said it ("backward
    incompatible changes have"). A one-word edit leaves the other words' case, but its new word
    may happen to be one of the quote's in other case: two such words, not one."""
    if not haystack.shown:
        return False
    words = set(original.split())
    folded = {word.casefold() for word in words}
    recased = [
        word
        for word in haystack.shown[hit.start : hit.end].split()
        if word not in words and word.casefold() in folded
    ]
    return len(recased) >= CASE_DIFFERS


def _search(
    haystack: Haystack,
    quote: str,
    prefix: str,
    suffix: str,
    hint: int | None,
    where: _Where,
    original: str = "",
) -> _Hit | None:
    """Find `quote` in the haystack (all normalised): exact occurrences first, ranked here by
    the page's report, context and the hint; else `anchoring.locate`'s approximate match (the
    one re-anchoring algorithm, docs/architecture.md), kept to the reported kind of text."""
    hits = find_all(haystack.text, quote)
    kind = where.in_code
    if (
        hits
        and hint is not None
        and kind is not None
        and not any(haystack.in_code(h) == kind for h in hits)
    ):
        # Re-locating: the passage of the reported kind, edited, before a copy of the other
        # kind (a reworded result must not move into the example above it).
        near = _approximate(haystack, quote, prefix, suffix, hint, kind)
        if near is not None:
            return near
    if hits:  # when nothing tells which copy, no answer: never a guess
        hit = _exact(haystack, hits, quote, prefix, suffix, hint, where)
        far = hit is not None and hint is not None and abs(hit.start - hint) > ONE_WORD_REACH
        # `far` implies a hint; mypy does not follow that through the bool.
        if (
            far
            and hint is not None
            and (near := _one_word_changed(haystack, quote, prefix, suffix, hint, kind)) is not None
        ):
            return near  # the note's own passage, edited, not a copy of it elsewhere
        if hit is None:
            return None
        if hint is not None and hit.score < 100:
            # A copy whose context does not agree, while the note's own passage, edited, may
            # stand where it was, framed by its context (a code line repeated in three fences,
            # one word of the noted copy changed): `locate` decides, as on the page, where a
            # framed match outranks a copy elsewhere.
            own = _approximate(haystack, quote, prefix, suffix, hint, kind)
            if own is not None and haystack.text[own.start : own.end] != quote:
                return own
        # Other words in the same letters ("Built-in privacy plugin", a deleted heading, vs
        # "the built-in privacy plugin" in prose) are taken only where the context agrees.
        if hit.score < 100 and not _same_case(haystack, hit, original):
            return None
        # Nothing around it is as it was, far from where the note was last seen: a copy
        # elsewhere of a passage that was deleted.
        return None if far and not hit.supported else hit
    hit = _approximate(haystack, quote, prefix, suffix, hint, kind)
    if hit is None:
        return None
    if len(quote) < FUZZY_CONTEXT_REQUIRED_BELOW and _case_differs(haystack, hit, original):
        return None
    # A look-alike of a deleted passage (`context_elsewhere`).
    if context_elsewhere(haystack.text, len(quote), prefix, suffix, hint, hit.start, hit.end):
        return None
    return hit


def _approximate(
    haystack: Haystack, quote: str, prefix: str, suffix: str, hint: int | None, kind: bool | None
) -> _Hit | None:
    """`anchoring.locate`'s approximate match, of the reported kind (code or not) when known;
    else, near where the note was last seen, the quote with one word changed."""
    end = None if hint is None else hint + len(quote)
    match = locate(haystack.text, quote, prefix=prefix, suffix=suffix, start=hint, end=end)
    if match is not None and kind is not None and haystack.in_code(match.start) != kind:
        other = match
        masked = haystack.masked(kind)
        match = locate(masked, quote, prefix=prefix, suffix=suffix, start=hint, end=end)
        if match is None and hint is not None and abs(other.start - hint) <= ONE_WORD_NEAR:
            # Nothing of the reported kind, and the other kind where the note was last seen:
            # its own passage, edited, which the page reported wrongly (a code line reported
            # as prose by a page whose text changed after load). The page's highlight follows
            # it; so does the note.
            match = other
    if match is None:
        return (
            None if hint is None else _one_word_changed(haystack, quote, prefix, suffix, hint, kind)
        )
    return _Hit(match.start, match.end, round(match.score))


def excerpt(source: str, line_start: int, line_end: int) -> str:
    return _excerpt(source.split("\n")[line_start - 1 : line_end])


def _excerpt(lines: list[str]) -> str:
    # NUL becomes U+FFFD, as CommonMark renders it: no stored text holds a NUL (SQLite's JSON
    # functions, which write the web API's listings, would cut the string there).
    excerpt = "\n".join(lines).replace("\x00", "\ufffd")
    if len(excerpt) > MAX_EXCERPT_CHARS:
        excerpt = excerpt[: MAX_EXCERPT_CHARS - 1] + "…"
    return excerpt


# A page's notes are located again after every edit of it: their quotes and contexts are the same
# strings each time, folded once.
@lru_cache(maxsize=8192)
def _folded(part: str) -> str:
    return normalise(part)[0]


class _Source(NamedTuple):
    """A Markdown file as `locate_in_markdown` reads it: line ends made `\\n`, and its lines."""

    text: str
    lines: list[str]


# Keyed by the text as read (the same object for every note of a file in one pass, so a lookup
# costs no hashing), and `text` is then the same object for `haystack_of`'s key: the notes of a
# page are located without one pass over the page each.
@lru_cache(maxsize=128)
def _source(source: str) -> _Source:
    text = NEWLINES.sub("\n", source)
    return _Source(text, text.split("\n"))


def prepare(source: str) -> None:
    """Project and fold `source` now, so the next `locate_in_markdown` in it is fast."""
    haystack_of(_source(source).text)


def locate_in_markdown(
    source: str,
    exact: str,
    *,
    prefix: str = "",
    suffix: str = "",
    hint_line: int | None = None,
    in_code: bool | None = None,
    occurrence: int | None = None,
) -> SourceMatch | None:
    """Find rendered text `exact` in Markdown `source`; None when it is not there (theme text).

    `prefix`/`suffix` (the text shown before and after it) break ties between repeated text;
    `hint_line` (1-based) prefers the occurrence nearest to where the quote was last seen;
    `in_code` (the selection starts inside `<pre>`/`<code>`) and `occurrence` (its index among
    the page's occurrences of the quote of that kind) say which copy the reviewer selected.
    """
    quote, before, after = _folded(exact), _folded(prefix), _folded(suffix)
    # Whitespace at the quote's edges belongs to its context, where the search looks for it.
    if quote.startswith(" "):
        before = before.rstrip() + " "
    if quote.endswith(" "):
        after = " " + after.lstrip()
    quote = quote.strip()
    if not quote:
        return None
    read = _source(source)
    haystack = haystack_of(read.text)
    offsets = haystack.offsets
    hint = None if hint_line is None else haystack.index_of_line(hint_line)
    hit = _search(haystack, quote, before, after, hint, _Where(in_code, occurrence), exact.strip())
    if hit is None or hit.end <= hit.start:
        return None
    near = hint is not None and abs(hit.start - hint) <= ONE_WORD_NEAR
    if (
        not (hit.exact or near)
        and len(quote) < FUZZY_CONTEXT_REQUIRED_BELOW
        and hit.score < MIN_SHORT_QUOTE_SCORE
    ):
        return None  # a new note's short quote resembling other text (theme text)
    span = offsets[hit.start : hit.end]
    start, end = min(span), max(span) + 1
    # The lines before an offset: the line starts at or before it (the first is 0).
    line_start = bisect.bisect_right(haystack.line_starts, start)
    line_end = bisect.bisect_right(haystack.line_starts, end - 1)
    return SourceMatch(
        line_start=line_start,
        line_end=line_end,
        start=start,
        end=end,
        excerpt=_excerpt(read.lines[line_start - 1 : line_end]),
        score=hit.score,
    )

"""Re-anchoring: where is a quoted passage now, in a text that may have changed since?

`locate` tries, in order: the stored position still holds the quote; exact occurrences of the quote
(or of the text an agent put in its place), ranked by context and distance from the old position;
approximate matches inside a few candidate windows (`approximate`); else `None`. As in
hypothesis/client `match-quote.ts`, candidates are ranked by a weighted sum of quote, prefix and
suffix similarity (`tuning`), the old position breaks ties, and a quote less similar than
`MIN_QUOTE_SIMILARITY` is not found: no answer beats a wrong answer. Context ranks, it does not
reject: an occurrence of the quote found nowhere else is taken whatever its context says, with a
lower score (issue #13).

`locate_many` does the same for all quotes of a page at once, and where a quote fits several
places equally well (a repeated paragraph) it follows the shift measured on the page's other quotes. Walking
the page in order, it looks for each quote first where the quote before it moved to: letter for
letter, then approximately (taken only if the context on both sides agrees), and searches the whole
text only for the quotes not found there.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from typing import Any, NamedTuple

from rapidfuzz.distance import Levenshtein

from . import approximate
from .approximate import Window
from .framing import (
    WHOLE,
    context_elsewhere,
    frame_stands_elsewhere,
    framing,
    trimmed,
)
from .index import Index, TextIndex, shared
from .selectors import Match, Method, Query, Selector
from .text import collapse, context_similarity, find_all, fold
from .tuning import (
    CONTEXT_HOLDS,
    CONTEXT_PROBE_LENGTH,
    CONTEXT_REQUIRED_BELOW,
    FRAMED_REACH,
    FUZZY_CONTEXT_REQUIRED_BELOW,
    GOOD_CONTEXT_SIMILARITY,
    MAX_POSTINGS,
    MIN_CONTEXT_SIMILARITY,
    MIN_FUZZY_LENGTH,
    MIN_NEIGHBOURS,
    MIN_QUOTE_SIMILARITY,
    MIN_QUOTE_SIMILARITY_IN_CONTEXT,
    MIN_ROUGH_SIMILARITY,
    MIN_SIMILARITY_ANY_EDIT,
    MIN_UNIQUE_LENGTH,
    PREFIX_WEIGHT,
    QUOTE_WEIGHT,
    SAME_PLACE,
    SIBLING_MAX_QUOTE,
    SUFFIX_WEIGHT,
    TIE_MARGIN,
    TOTAL_WEIGHT,
    TRIM_MAX_QUOTE,
    WINDOW_SLACK,
)

__all__ = ["context_elsewhere", "framed", "locate", "locate_many"]


class _Candidate(NamedTuple):
    start: int
    end: int
    similarity: float  # of the found text to the quote (or to the replacement)
    prefix: float | None  # similarity of the context; None when none was stored
    suffix: float | None
    score: float  # weighted similarity of quote and context, 0–1
    method: Method
    # An approximate match next to a side of its stored context, near where the quote should be
    # (`_approximate`): the passage itself, edited, before any closer spelling elsewhere.
    framed: bool = False

    def match(self) -> Match:
        """The answer: 100 for the quote letter for letter where its context supports it;
        otherwise the weighted similarity of the quote and of the context sides that were
        stored (none stored: the quote's alone), so an edited quote, or one out of its
        context, scores less (selectors.Match)."""
        # `score` is 1 for the quote and its whole context unchanged: most answers, no lists.
        if self.score == 1.0 or (self.similarity == 1.0 and _context_supports(self)):
            return Match(self.start, self.end, 100.0, self.method)
        total, weight = QUOTE_WEIGHT * self.similarity, QUOTE_WEIGHT
        for side, side_weight in ((self.prefix, PREFIX_WEIGHT), (self.suffix, SUFFIX_WEIGHT)):
            if side is not None:
                total, weight = total + side_weight * side, weight + side_weight
        return Match(self.start, self.end, 100.0 * total / weight, self.method)


def locate(
    text: str | Index,
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
    index = shared(text) if isinstance(text, str) else text
    query = Query.of(Selector(exact, prefix, suffix, start, end, replaced_text))
    candidates, done = _exact_step(index, query)
    if not done:
        windows = _windows(index, query, approximate.anchors(query))
        candidates = _fuzzy_step(index, query, windows, candidates, query.start)
    return _answer(*_choose(candidates, query.start))


def locate_many(text: str | Index, selectors: Iterable[Any]) -> list[Match | None]:
    """`locate` for every selector of one page (mappings or objects, see `Selector.coerce`), in
    order, sharing one `TextIndex` and one scan of the text for all approximate searches.

    One difference: where a quote fits several places equally well (a repeated paragraph), the
    place nearest its old position shifted as much as its nearest neighbours on the page moved
    wins, rather than the place nearest its old position: edits above drift every offset.
    """
    # One call per page: an index of its own, not one kept for the next call (`locate` keeps
    # one; a page's next version needs a `PageIndex`).
    index = TextIndex(text) if isinstance(text, str) else text
    coerced = [Selector.coerce(selector) for selector in selectors]
    finalists = _page_steps(index, coerced)
    chosen = [
        _choose(candidates, selector.start)
        for candidates, selector in zip(finalists, coerced, strict=True)
    ]
    # Edits above a quote move it; its neighbours that kept their order (a moved section did
    # not) show by how much. Only an ambiguous quote asks (most page loads have none).
    if not any(ambiguous for _, ambiguous in chosen):
        return [_answer(found, False) for found, _ in chosen]
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


def _page_steps(index: Index, selectors: list[Selector]) -> list[list[_Candidate]]:
    """The candidates of every quote: exact hits, else approximate matches near where the quote
    should be, else anywhere (the order of `locate`, above).

    Both passes walk the page in order and look for each quote first where its old position
    lands after the shift of the quote found before it: an edit above moves everything below by
    the same amount, and one check there spares a search of the whole text per quote. Quotes are
    folded only when needed.
    """
    queries: dict[int, Query] = {}  # of the quotes not found letter for letter
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
        query = queries[i] = Query.of(selector)
        steps[i] = candidates, done = _exact_step(index, query, shift)
        if done and query.start is not None:
            shift = _shift(candidates, query.start, shift, moved_by, i)
    starts = [selector.start for selector in selectors]
    _approximate_steps(index, queries, steps, moved_by, order, starts)
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
    index: Index,
    queries: dict[int, Query],
    steps: list[Step],
    moved_by: list[int | None],
    order: list[int],
    starts: list[int | None],
) -> None:
    """Approximate matches for the quotes not found exactly: near where the quote found before
    it says it is now (`_near`), else anywhere (`_fuzzy_step`).

    A quote found here places the next one, so a run of edited quotes is followed from its
    start, and the whole-text index is only needed for the quotes found nowhere near.
    """
    if not queries:
        return  # every quote found where it was: nothing to search (most page loads)
    anchors: dict[int, list[tuple[int, int]]] = {}
    windows: dict[int, list[Window]] = {}
    # The quotes found letter for letter that kept their order (a moved one did not): where
    # an edit between two of them moved the text, a quote between them moved by as much as
    # one of them, or by something in between.
    chain = _in_order(
        (start, start + moved)
        for start, moved in zip(starts, moved_by, strict=True)
        if start is not None and moved is not None
    )
    shift = 0
    for i in order:
        if steps[i][1]:
            moved = moved_by[i]
            shift = shift if moved is None else moved
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
            anchors = {j: approximate.anchors(queries[j]) for j in order if not steps[j][1]}
            index.prefetch(key for pairs in anchors.values() for key, _ in pairs)
        expected = None if query.start is None else query.start + shift
        between = None
        if query.start is not None and chain:
            low, high, _ = _expected(chain, query.start)
            between = low, high
        # Kept for the second pass below, which asks the same windows with another range.
        windows[i] = _windows(index, query, anchors[i])
        candidates = _fuzzy_step(index, query, windows[i], candidates, expected, between)
        steps[i] = candidates, True
        if query.start is not None:
            shift = _shift(candidates, query.start, shift, moved_by, i)
    # A quote found nowhere may lie between neighbours found approximately since (the quotes
    # after it on the page, edited as well): once more, with the range those allow.
    lost = [i for i in order if i in queries and not steps[i][0] and windows.get(i)]
    if lost:
        chain = _in_order(
            (start, start + moved)
            for start, moved in zip(starts, moved_by, strict=True)
            if start is not None and moved is not None
        )
        for i in lost:
            query = queries[i]
            if query.start is not None and chain:
                low, high, likeliest = _expected(chain, query.start)
                found = _fuzzy_step(index, query, windows[i], [], likeliest, (low, high))
                steps[i] = found, True


def _held(text: str, selector: Selector) -> _Candidate | None:
    """The stored position when the quote and its whole context are still there letter for
    letter, as on most page loads: what `_exact_step` finds there, without folding or scoring."""
    start, end, exact = selector.start, selector.end, selector.exact
    if start is None or end != start + len(exact):
        return None
    return _intact(text, exact, selector.prefix, selector.suffix, start, "position")


def _moved(index: Index, selector: Selector, shift: int) -> _Candidate | None:
    """What `_exact_step` finds at the stored position moved by `shift` when the quote and its
    whole context are there (whitespace folded), without its scoring: `None` if they are not,
    or if the quote is still at the stored position (`_exact_step` looks there first)."""
    start, end = selector.start, selector.end
    if start is None:
        return None
    # Folded: a reflow elsewhere in the paragraph turns spaces of the context into line breaks.
    exact, text = fold(selector.exact), index.folded
    if end != start + len(exact) or (start >= 0 and text.startswith(exact, start)):
        return None
    prefix, suffix = fold(selector.prefix), fold(selector.suffix)
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


# -- Steps ----------------------------------------------------------------------------------------


def _exact_step(index: Index, query: Query, shift: int = 0) -> tuple[list[_Candidate], bool]:
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
    if query.replaced and collapse(query.replaced):
        # The quote is gone (or out of context): maybe an agent put this text in its place.
        candidates += _exact_candidates(index, query, query.replaced, "replaced")
        best, _ = _choose(candidates, query.start)
        if best is not None and _context_agrees(best):
            return candidates, True
    return candidates, len(query.collapsed) < MIN_FUZZY_LENGTH


def _windows(index: Index, query: Query, anchors: list[tuple[int, int]]) -> list[Window]:
    """The candidate windows of a quote's word pairs (`anchors`) in the text."""
    # `windows` does not use the pairs found more than MAX_POSTINGS times.
    postings = index.lookup((key for key, _ in anchors), MAX_POSTINGS)
    return list(approximate.windows(query, anchors, postings, len(index.text)))


def _fuzzy_step(
    index: Index,
    query: Query,
    windows: list[Window],
    candidates: list[_Candidate],
    expected: int | None,
    between: tuple[int, int] | None = None,
) -> list[_Candidate]:
    """The exact hits plus the approximate matches found in the candidate windows (`expected`:
    where the quote should start now, `between`: the range its neighbours allow, `_approximate`)."""
    candidates = list(candidates)
    for window in windows:
        candidate = _approximate(index, query, window, expected, between)
        if candidate is not None:
            candidates.append(candidate)
    return candidates


def _near(index: Index, query: Query, shift: int) -> _Candidate | None:
    """An approximate match where the quote's neighbour says it is now (old position + `shift`)
    whose context agrees, if there is one: as sure as any found by searching the whole text."""
    if query.start is None:
        return None
    at, length = query.start + shift, len(query.quote)
    if not 0 <= at <= len(index.text):
        return None
    # The window `windows` adds at the old position, moved by the shift.
    candidate = _approximate(
        index, query, Window(at, at + length, WINDOW_SLACK, approximate.slack(length)), at
    )
    if candidate is None or not _context_agrees(candidate):
        return None
    # A window placed too far off still finds a similar span, with a misplaced end: the context
    # next to that end is then a poor match (measured on benchmarks/anchoring.py: 0.51).
    sides = (candidate.prefix, candidate.suffix)
    return (
        candidate if all(side is None or side >= MIN_CONTEXT_SIMILARITY for side in sides) else None
    )


def _approximate(
    index: Index,
    query: Query,
    window: Window,
    expected: int | None,
    between: tuple[int, int] | None = None,
) -> _Candidate | None:
    """The approximate match of the quote in a window, if it is similar enough and its frame
    says it is the passage (issue #26).

    Similar enough: at least MIN_QUOTE_SIMILARITY, or MIN_QUOTE_SIMILARITY_IN_CONTEXT where the
    context on both sides holds (one word rewritten inside a short quote, issue #13). The frame
    (`framing`): a sentence revised in two or three places is the passage where a side of its
    stored context still stands whole next to it; a look-alike elsewhere, framed by other text,
    is not. Farther than FRAMED_REACH from `expected` (where the quote should start now), its
    other side must not be a near copy of the stored one either (a sibling entry's). A quote of
    SIBLING_MAX_QUOTE characters or more, matched at MIN_SIMILARITY_ANY_EDIT or better, needs
    only the words of one side next to it; with no context stored, a match needs that
    similarity. A match holding a side of the context inside it is the deleted passage's
    neighbour.
    """
    guess = collapse(index.folded[max(0, window.start) : window.end])
    if (
        Levenshtein.normalized_similarity(query.collapsed, guess, score_cutoff=MIN_ROUGH_SIMILARITY)
        < MIN_ROUGH_SIMILARITY
    ):
        return None
    ends = approximate.span(query, index.folded, window)
    if ends is None:
        return None
    found = collapse(index.folded[ends[0] : ends[1]])
    similarity = Levenshtein.normalized_similarity(
        query.collapsed, found, score_cutoff=MIN_QUOTE_SIMILARITY_IN_CONTEXT
    )
    if similarity < MIN_SIMILARITY_ANY_EDIT and len(query.collapsed) <= TRIM_MAX_QUOTE:
        shorter, closer = trimmed(query.collapsed, index.folded, *ends, similarity)
        if shorter != ends:
            # The trimmed span if it is taken, else the span as found (a rewritten first word
            # that its context frames is the quote's).
            candidate = _accepted(index, query, shorter, closer, expected, between)
            if candidate is not None:
                return candidate
    return _accepted(index, query, ends, similarity, expected, between)


def _accepted(
    index: Index,
    query: Query,
    ends: tuple[int, int],
    similarity: float,
    expected: int | None,
    between: tuple[int, int] | None = None,
) -> _Candidate | None:
    """The candidate at `ends` if `_approximate`'s rules take it (`between`: the lowest and
    highest start the quote's neighbours on the page allow, `locate_many`)."""
    if similarity < MIN_QUOTE_SIMILARITY_IN_CONTEXT:
        return None
    size = len(query.collapsed)
    candidate = _candidate(index, query, *ends, similarity, "fuzzy", size)
    if candidate is None:
        return None
    short = size < FUZZY_CONTEXT_REQUIRED_BELOW
    if (short or similarity < MIN_QUOTE_SIMILARITY) and not _context_holds(candidate):
        return None
    # Near where the quote should be: where its neighbours moved it, or where it was.
    near = (
        expected is None
        or any(
            at is not None and abs(ends[0] - at) <= FRAMED_REACH for at in (expected, query.start)
        )
        or (
            between is not None
            and between[0] - FRAMED_REACH <= ends[0] <= between[1] + FRAMED_REACH
        )
    )
    whole = _frames(index.folded, query, candidate, similarity, expected, near)
    if whole is None:
        return None
    return candidate._replace(framed=whole and near)


def _frames(
    text: str,
    query: Query,
    candidate: _Candidate,
    similarity: float,
    expected: int | None,
    near: bool,
) -> bool | None:
    """`_approximate`'s frame rules for `candidate`: `None` where they refuse it, else whether
    a side of the stored context stands whole next to it."""
    ends, size = (candidate.start, candidate.end), len(query.collapsed)
    frame = framing(text, query, *ends, near)
    if frame is None:
        return None
    whole = frame.count(WHOLE)
    if not (query.prefix.strip() or query.suffix.strip()):
        # No context stored: nothing frames anything, and only a close match is taken.
        if similarity < MIN_SIMILARITY_ANY_EDIT:
            return None
    elif size >= SIBLING_MAX_QUOTE and similarity >= MIN_SIMILARITY_ANY_EDIT:
        if not any(frame):
            return None
    elif not whole or (
        not near
        and any(
            level == 0 and side is not None and MIN_CONTEXT_SIMILARITY <= side < CONTEXT_HOLDS
            for level, side in zip(frame, (candidate.prefix, candidate.suffix), strict=True)
        )
    ):
        # A sentence needs one side of its stored context; far off, its other side must not be
        # like that one but other (a sibling entry's, whose sentence says the same after its
        # own heading): a moved passage's other side is other text altogether, or the same
        # with a word changed.
        return None
    # A long passage this like the quote, a side of its context whole next to it, is the
    # passage moved, whatever its old neighbours say: a deleted passage has no such look-alike.
    long_and_close = size >= SIBLING_MAX_QUOTE and similarity >= MIN_SIMILARITY_ANY_EDIT
    # Both sides of the context whole around it where the quote should be: the passage itself,
    # though the same frame stands around a copy nearby (a rendered example's sentence, the
    # code block above it showing its Markdown, Material's reference/lists page).
    in_place = near and frame == (WHOLE, WHOLE)
    if (
        not (long_and_close and whole)
        and context_elsewhere(
            text, len(query.quote), query.prefix, query.suffix, query.start, *ends
        )
    ) or (not in_place and frame_stands_elsewhere(text, query, expected, *ends)):
        return None
    return bool(whole)


def framed(text: str | Index, selector: Any, start: int, end: int) -> bool:
    """Whether `text[start:end]`, a span found for the selector's quote by a rule of its own
    (sourcemap's "one word changed near where it was"), is the quote's passage, edited, by what
    frames it: the decision `locate` makes on its approximate matches (issue #26), the span's
    likeness to the quote left to that rule. A look-alike whose stored context stands elsewhere
    around other text (the passage rewritten past recognition, its one-word twin below) is not.
    """
    index = shared(text) if isinstance(text, str) else text
    query = Query.of(Selector.coerce(selector))
    if not 0 <= start < end <= len(index.text):
        return False
    # Likeness vouched for: every side of the context is compared, none required to agree.
    candidate = _candidate(index, query, start, end, 1.0, "fuzzy", len(query.collapsed), True)
    near = query.start is None or abs(start - query.start) <= FRAMED_REACH
    return (
        candidate is not None
        and _frames(index.folded, query, candidate, 1.0, query.start, near) is not None
    )


Expected = tuple[int, int, int]  # where a quote should now start: (lowest, highest, likeliest)


def _choose(
    candidates: list[_Candidate], expected: int | Expected | None
) -> tuple[_Candidate | None, bool]:
    """The best candidate, and whether another one as good lies elsewhere.

    Among candidates within TIE_MARGIN of the best score, and approximate matches framed by
    their stored context near where the quote should be (old position and context outrank a
    closer spelling elsewhere, issue #26), a framed one wins, then the one nearest the
    `expected` start (the old position, or a range from `_expected`), then the better score,
    then an exact hit over an approximate one.
    """
    if not candidates:
        return None, False
    if len(candidates) == 1:  # the common case, without the ranking below
        return candidates[0], False
    hits = [(c.start, c.end) for c in candidates if c.method != "fuzzy"]
    if hits and len(hits) < len(candidates):
        # An approximate match overlapping a hit of the quote letter for letter is that hit, cut
        # short (its context, edited above it, framed a part of it): the page's highlight must
        # not shrink to it (a first paragraph's note after a paragraph inserted under the h1).
        candidates = [
            c
            for c in candidates
            if c.method != "fuzzy" or not any(c.start < e and s < c.end for s, e in hits)
        ]
    if isinstance(expected, int):
        expected = (expected, expected, expected)
    top = max(candidate.score for candidate in candidates)
    tied = [c for c in candidates if c.score >= top - TIE_MARGIN or c.framed]

    def rank(c: _Candidate) -> tuple[bool, int, int, float, bool]:
        if expected is None:
            return not c.framed, 0, 0, -c.score, c.method == "fuzzy"
        low, high, likeliest = expected
        outside = max(0, low - c.start, c.start - high)
        return not c.framed, outside, abs(c.start - likeliest), -c.score, c.method == "fuzzy"

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


def _exact_candidates(index: Index, query: Query, needle: str, method: Method) -> list[_Candidate]:
    text = index.folded
    size = len(collapse(needle))
    if size < MIN_FUZZY_LENGTH and (query.prefix or query.suffix):
        # A short quote occurs everywhere: only look where a piece of its context is still next
        # to it (and find far fewer hits).
        starts: set[int] = set()
        if query.prefix:
            probe = query.prefix[-CONTEXT_PROBE_LENGTH:]
            starts.update(hit + len(probe) for hit in find_all(text, probe + needle))
        if query.suffix:
            starts.update(find_all(text, needle + query.suffix[:CONTEXT_PROBE_LENGTH]))
        hits = sorted(starts)
        unique = False
    else:
        hits = index.occurrences(needle)
        # Found nowhere else: its context ranks it, but cannot reject it (issue #13).
        unique = len(hits) == 1 and size >= MIN_UNIQUE_LENGTH
    candidates = []
    for hit in hits:
        candidate = _candidate(index, query, hit, hit + len(needle), 1.0, method, size, unique)
        if candidate is not None:
            candidates.append(candidate)
    return candidates


def _candidate(
    index: Index,
    query: Query,
    start: int,
    end: int,
    similarity: float,
    method: Method,
    size: int,
    unique: bool = False,
) -> _Candidate | None:
    """Score a span; `None` for a short quote whose context agrees on neither side, unless it
    is the `unique` occurrence of the quote."""
    text = index.folded
    prefix = (
        context_similarity(query.prefix, text[max(0, start - len(query.prefix)) : start])
        if query.prefix
        else None
    )
    suffix = (
        context_similarity(query.suffix, text[end : end + len(query.suffix)])
        if query.suffix
        else None
    )
    candidate = _Candidate(start, end, similarity, prefix, suffix, 0.0, method)
    if size < CONTEXT_REQUIRED_BELOW and not unique and not _context_supports(candidate):
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


def _context_holds(candidate: _Candidate) -> bool:
    """The context was stored and every side of it is (nearly) unchanged."""
    sides = [side for side in (candidate.prefix, candidate.suffix) if side is not None]
    return bool(sides) and min(sides) >= CONTEXT_HOLDS


def _context_agrees(candidate: _Candidate) -> bool:
    sides = [side for side in (candidate.prefix, candidate.suffix) if side is not None]
    return not sides or sum(sides) / len(sides) >= GOOD_CONTEXT_SIMILARITY


# -- Approximate matches

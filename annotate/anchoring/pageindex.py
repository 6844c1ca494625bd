"""A page's word-pair index kept from one version of its text to the next (`PageIndex`).

The overlay anchors a page on every load (`locate_many`), and a rebuilt page's text differs from
the last one in a few lines. `PageIndex` keeps the word pairs of each line of the page's latest
text, so a new version costs the lines that appeared; a text of mostly new lines gets a fresh
`TextIndex` (cheaper) and is indexed by lines afterwards (`catch_up`). Answers are those of a
fresh `TextIndex`.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from functools import cached_property
from itertools import compress, count, islice
from operator import ne, not_, sub
from typing import Any, NamedTuple

from .index import Index, TextIndex, occurrences_at
from .matching import locate_many
from .selectors import Match
from .text import find_all, fold, word_pairs
from .text import starts as joined_starts
from .tuning import LONG_LINE, MAX_CACHED_POSTINGS, MAX_CHANGED_LINES

__all__ = ["PageIndex"]


class PageIndex:
    """The word-pair index of one page, kept from one version of its text to the next.

    A page's text changes little between two requests, so the index is kept per line (split at
    "\\n"): a line's word pairs are computed once and reused while that line is in the text, and
    a new text costs the lines that appeared, plus a pass over its lines to place them. The pairs
    spanning a line break are recomputed for every text (one per line). A text without line
    breaks (or of very long lines, see LONG_LINE) gets a fresh `TextIndex`: nothing to reuse.

    Answers are the same as with a fresh `TextIndex`. Memory: the lines of the latest text
    looked up only, about 25 bytes per character of that text (tracemalloc: 3.2 MB for a 140 kB
    page, 23 MB for the 1 MB page of benchmarks/anchoring.py), plus the postings it looked up
    (at most MAX_CACHED_POSTINGS keys, kept while a new text changes only its last lines), so
    bound the number of pages kept.

    A text most of whose lines are new is answered with a fresh `TextIndex` (cheaper than
    indexing it by lines); `catch_up`, called after answering, indexes it by lines for next time.

    Thread safety: `locate_many` and `catch_up` hold the page's lock for the whole call (calls
    for one page wait for each other). `index` does not lock: the index it gives updates this
    object on its first lookup, so use it under a lock of your own.
    """

    def __init__(self) -> None:
        self._lines: dict[str, _Line] = {}  # every distinct line of the latest text
        self._where: dict[int, str | list[str]] = {}  # pair key: the line(s) holding it
        self._text: str | None = None  # the text `_starts` and `_spanning` describe
        # Where each line starts in the text (a list for a line found more than once), and the
        # pairs spanning a line break (the last word of a line and the first of the next).
        self._starts: dict[str, int | list[int]] = {}
        self._spanning: dict[int, int | list[int]] = {}
        self._lines_in_order: list[str] = []  # of the text
        self._cache: dict[int, list[int]] = {}  # postings looked up, kept while still right
        self._behind: TextIndex | None = None  # the last text answered without this index
        self._lock = threading.Lock()

    def locate_many(self, text: str, selectors: Iterable[Any]) -> list[Match | None]:
        """`locate_many(text, selectors)`, with this page's index reused and kept up to date."""
        with self._lock:
            return locate_many(self.index(text), selectors)

    def index(self, text: str) -> Index:
        """A complete `Index` of `text` built from this page's lines (not locked, see above); a
        fresh `TextIndex` for a text of very long lines, which would not be reused.

        A text most of whose lines are new (a page's first text, a rebuild that re-wrapped every
        paragraph) also gets a fresh one: indexing its lines one by one costs more than one pass
        over the whole text. Its lines are indexed by `catch_up`, or, if that is not called,
        when a next text shares most of them.
        """
        if text.count("\n") * LONG_LINE < len(text):
            self._clear()  # only the lines of the latest text are kept
            return TextIndex(text)
        lines = text.split("\n")
        if _shared(lines, self._lines) * 2 < len(lines):
            behind, self._behind = self._behind, TextIndex(text)
            if behind is None or _shared(lines, set(behind.text.split("\n"))) * 2 < len(lines):
                return self._behind
            self._clear()  # a second text like the last one: worth indexing by lines now
        self._behind = None
        return _LineIndex(text, self)

    def catch_up(self) -> None:
        """Index by lines the last text that got a fresh index (see `index`), so that the next
        version of it costs its new lines only. Worth calling after answering, off the clock."""
        with self._lock:
            behind = self._behind
            # Only if the text was searched as a whole: a page whose quotes were all where they
            # were needs no index, now or, most likely, next time.
            if behind is not None and behind.searched:
                self._behind = None
                self._clear()  # starting again costs less than forgetting most lines one by one
                self._update(behind.text)

    def _clear(self) -> None:
        self._lines, self._where, self._text = {}, {}, None
        self._starts, self._spanning, self._lines_in_order, self._cache = {}, {}, [], {}

    def postings(self, text: str, key: int, limit: int | None = None) -> list[int]:
        """Where the word pair with this key starts in `text`, in order (`TextIndex.lookup`);
        none if it is in more than `limit` lines."""
        if text is not self._text:
            self._update(text)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        found = self._where.get(key)
        spanning = self._spanning.get(key)
        hits = [] if spanning is None else [spanning] if isinstance(spanning, int) else [*spanning]
        if found is None:
            return hits
        if type(found) is str:
            found = [found]
        elif limit is not None and len(found) > limit:
            return []
        lines, starts = self._lines, self._starts
        for line in found:
            held, base = lines[line].starts[key], starts[line]
            if type(held) is int and type(base) is int:  # the common case: once, in one line
                hits.append(base + held)
            else:
                offsets = (held,) if isinstance(held, int) else held
                bases = (base,) if isinstance(base, int) else base
                hits.extend(at + offset for at in bases for offset in offsets)
        if len(hits) > 1:
            hits.sort()
        if len(self._cache) < MAX_CACHED_POSTINGS:
            self._cache[key] = hits
        return hits

    def spread(self, text: str, key: int) -> int:
        """In how many places of `text` (distinct lines, line breaks) the word pair with this
        key is found: 0 if it is not there."""
        if text is not self._text:
            self._update(text)
        found = self._where.get(key)
        spanning = self._spanning.get(key)
        return (0 if found is None else 1 if isinstance(found, str) else len(found)) + (
            0 if spanning is None else 1 if isinstance(spanning, int) else len(spanning)
        )

    def _update(self, text: str) -> None:
        lines = text.split("\n")
        counts = Counter(lines)
        gone = self._lines.keys() - counts.keys()
        if len(gone) * 2 > len(self._lines):
            # Most lines gone: forgetting each pair of each line costs more than starting again.
            self._clear()
            gone = set()
        known = self._lines
        for line in gone:
            self._forget(line)
        for line in counts.keys() - known.keys():
            self._learn(line)
        offsets = list(joined_starts(lines))
        starts: dict[str, int | list[int]] = dict(zip(lines, offsets, strict=False))
        if len(starts) < len(lines):  # repeated lines: keep every start of those with pairs
            repeated: dict[str, list[int]] = {
                line: [] for line, n in counts.items() if n > 1 and known[line].starts
            }
            for line, at in zip(lines, offsets, strict=False):
                if line in repeated:
                    repeated[line].append(at)
            starts.update(repeated)
        entries = list(map(known.__getitem__, lines))
        self._spanning = _spanning(entries, offsets)
        self._keep_postings(lines, entries, offsets)
        self._text, self._starts, self._lines_in_order = text, starts, lines

    def _keep_postings(self, lines: list[str], entries: list[_Line], offsets: list[int]) -> None:
        """Keep the postings still right in the new text (`lines`): a page is usually loaded
        again with a change at its end (a counter line), and the same quotes are looked for."""
        old, cache = self._lines_in_order, self._cache
        same = next(compress(count(), map(ne, old, lines)), min(len(old), len(lines)))
        if same == 0 or len(lines) - same > MAX_CHANGED_LINES:
            cache.clear()
            return
        # Postings starting before the last unchanged line do not reach the changed ones; a
        # pair of the changed lines (or their line breaks) may add a posting to any key.
        before = offsets[same - 1]
        added = {key for entry in entries[same:] for key in entry.starts}
        added.update(_spanning(entries[same - 1 :], offsets[same - 1 :]))
        for key in [key for key, hits in cache.items() if key in added or hits[-1] >= before]:
            del cache[key]

    def _learn(self, line: str) -> None:
        entry = self._lines[line] = _Line.of(line)
        where = self._where
        shared = entry.starts.keys() & where.keys()
        if len(shared) < len(entry.starts):  # most pairs are in one line: no list
            where.update(dict.fromkeys(entry.starts.keys() - shared, line))
        for key in shared:
            held = where[key]
            if isinstance(held, str):
                where[key] = [held, line]
            else:
                held.append(line)

    def _forget(self, line: str) -> None:
        entry = self._lines.pop(line)
        where = self._where
        for key in entry.starts:
            held = where[key]
            if isinstance(held, str):
                del where[key]
            else:
                held.remove(line)
                if len(held) == 1:
                    where[key] = held[0]


def _shared(lines: list[str], known: Mapping[str, Any] | set[str]) -> int:
    """How many of `lines` are in `known`."""
    return sum(map(known.__contains__, lines))


def _spanning(lines: list[_Line], offsets: list[int]) -> dict[int, int | list[int]]:
    """The pairs of the last word of each line and the first of the next, and where they start
    (`offsets`: where each line starts); none with an empty word."""
    lasts = [line.last for line in lines]
    firsts = [line.first for line in lines[1:]]
    both = list(map(min, map(len, lasts), map(len, firsts)))  # 0 if a word is empty
    keys = list(compress(map(hash, zip(lasts, firsts, strict=False)), both))
    # The last word of line i starts its length and a line break before line i + 1.
    starts = list(compress(map(sub, islice(offsets, 1, None), map(len, lasts)), both))
    spanning: dict[int, int | list[int]] = dict(zip(keys, map((-1).__add__, starts), strict=True))
    if len(spanning) < len(keys):  # a pair found at several line breaks: all of them
        spanning.update(_repeated(keys, [start - 1 for start in starts]))
    return spanning


def _repeated(keys: list[int], starts: list[int]) -> dict[int, list[int]]:
    """Every start of each key found more than once, in one pass (not one per key)."""
    repeated: dict[int, list[int]] = {key: [] for key, n in Counter(keys).items() if n > 1}
    for key, start in zip(keys, starts, strict=False):
        if key in repeated:
            repeated[key].append(start)
    return repeated


class _Line(NamedTuple):
    """The pairs of whole words of one line, keyed as `TextIndex` keys them, and its first and
    last word (for the pairs spanning line breaks). Pairs with an empty word (a run of
    whitespace) are left out: `_word_pairs` never looks for one."""

    starts: dict[int, int | tuple[int, ...]]  # key: where the pair starts in the line
    first: str
    last: str

    @classmethod
    def of(cls, line: str) -> _Line:
        # Whole-line operations in C (fold, split, map): no Python loop over the words.
        words = fold(line).split(" ")
        offsets = list(joined_starts(words))
        keys = list(map(hash, zip(words, islice(words, 1, None), strict=False)))
        starts: dict[int, int | tuple[int, ...]] = dict(zip(keys, offsets, strict=False))
        if len(starts) < len(keys):  # a pair found again in the line ("of the")
            starts.update((key, tuple(at)) for key, at in _repeated(keys, offsets).items())
        if "" in words:  # whitespace runs: the pairs with an empty word go
            for i in compress(count(), map(not_, words)):
                for key in keys[max(0, i - 1) : i + 1]:
                    starts.pop(key, None)
        return cls(starts, words[0], words[-1])


class _LineIndex:
    """An `Index` whose word pairs come from a `PageIndex` (brought up to date with this text
    on the first lookup, so never stale)."""

    def __init__(self, text: str, page: PageIndex) -> None:
        self.text = text
        self._page = page

    @cached_property
    def folded(self) -> str:
        return fold(self.text)

    def lookup(self, keys: Iterable[int], limit: int | None = None) -> dict[int, list[int]]:
        page, text, found = self._page, self.text, {}
        for key in set(keys):
            postings = page.postings(text, key, limit)
            if postings and (limit is None or len(postings) <= limit):
                found[key] = postings
        return found

    def prefetch(self, keys: Iterable[int]) -> None:
        """Nothing to do: each lookup costs the lines holding the pair only."""

    def occurrences(self, needle: str) -> list[int]:
        pairs = word_pairs(needle)
        if not pairs:
            return find_all(self.folded, needle)
        # Counting the places of each pair is enough to choose: one posting list to build, and
        # a pair found in one place at most is as rare as any.
        page, text = self._page, self.text
        best, fewest = pairs[0], -1
        for pair in pairs:
            places = page.spread(text, pair[0])
            if fewest == -1 or places < fewest:
                best, fewest = pair, places
                if places <= 1:
                    break
        return occurrences_at(self.folded, needle, best[1], page.postings(text, best[0]))

"""Where the word pairs of a text are: the index approximate search asks for candidate windows.

`Index` is what matching needs from one (a protocol); `TextIndex` indexes one text, on demand;
`pageindex.PageIndex` keeps a page's index from one version of its text to the next. `shared`
hands `locate` the index of a text it saw recently, so a script re-anchoring quotes one by one
in one text pays for one index, not one per call (issue #13).
"""

from __future__ import annotations

import threading
from collections import OrderedDict, defaultdict
from collections.abc import Iterable
from functools import cached_property
from itertools import accumulate, compress, count, islice
from typing import Protocol

from .text import find_all, fold, starts, word_pairs
from .tuning import (
    MAX_EXACT_HITS,
    SCANS_BEFORE_FULL_INDEX,
    SHARED_INDEX_CHARS,
    SHARED_INDEX_MIN_CHARS,
    SHARED_INDEXES,
)

__all__ = ["Index", "TextIndex", "occurrences_at", "shared"]


class Index(Protocol):
    """One text, whitespace folded, and where its word pairs are (keys as `text.word_pairs`)."""

    @property
    def text(self) -> str: ...

    @property
    def folded(self) -> str:
        """The text with every whitespace character replaced by a space (same offsets)."""
        ...

    def lookup(self, keys: Iterable[int], limit: int | None = None) -> dict[int, list[int]]:
        """Start offsets of the word pairs with these keys, in text order; with a `limit`, a
        key found more often than that may be left out, as if not found."""
        ...

    def prefetch(self, keys: Iterable[int]) -> None:
        """A hint: these keys will be looked up one by one soon."""
        ...

    def occurrences(self, needle: str) -> list[int]:
        """Where folded `needle` occurs in the folded text (at most MAX_EXACT_HITS, in order)."""
        ...


def occurrences_at(folded: str, needle: str, offset: int, postings: list[int]) -> list[int]:
    """The occurrences of `needle` in `folded`, given where one of its word pairs is (`offset`
    into the needle) in the text: every occurrence holds each pair, so checking where the
    rarest one is beats reading the whole text."""
    hits = [
        start - offset
        for start in postings
        if start >= offset and folded.startswith(needle, start - offset)
    ]
    return hits[:MAX_EXACT_HITS]


class TextIndex:
    """One text, its whitespace folded once, and an index of its word pairs built on demand.

    Pass the same `TextIndex` to many `locate` calls to share the work; `locate_many` does so.
    Safe to share between threads (lookups that fill it in hold its lock). Keys are Python
    hashes: an index is only valid inside the process that built it.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self._postings: dict[int, list[int]] = {}
        self._known: set[int] = set()
        self._complete = False
        self._scans = 0
        self._lock = threading.Lock()

    @cached_property
    def folded(self) -> str:
        """The text with every whitespace character replaced by a space (same offsets)."""
        return fold(self.text)

    @property
    def searched(self) -> bool:
        """Whether a word pair was looked up: the text was searched as a whole."""
        return self._complete or bool(self._known)

    @property
    def complete(self) -> bool:
        """Whether every word pair is indexed (see `build`)."""
        return self._complete

    @cached_property
    def _words(self) -> list[str]:
        return self.folded.split(" ")

    @cached_property
    def _keys(self) -> list[int]:
        # Key of word i: hash of (word i, word i + 1); map and zip iterate in C, not in Python.
        words = self._words
        return list(map(hash, zip(words, islice(words, 1, None), strict=False)))

    @cached_property
    def _ends(self) -> list[int]:
        # Word i starts at _ends[i - 1] + i: the letters before it plus one space per word.
        return list(accumulate(map(len, self._words)))

    def lookup(self, keys: Iterable[int], limit: int | None = None) -> dict[int, list[int]]:
        """Start offsets of the word pairs with these keys (see `text.word_pairs`), in order.

        The first calls scan the text for just the keys asked for (one pass for a whole page in
        `locate_many`); after `SCANS_BEFORE_FULL_INDEX` of them every pair is indexed at once.
        `limit` is not needed here: every posting is at hand.
        """
        wanted = set(keys)
        if not self._complete:
            with self._lock:
                missing = wanted - self._known
                if missing and not self._complete:
                    if self._scans >= SCANS_BEFORE_FULL_INDEX:
                        self._build()
                    else:
                        self._scan(missing)
        postings = self._postings
        return {key: postings[key] for key in wanted if key in postings}

    def prefetch(self, keys: Iterable[int]) -> None:
        """Look these keys up in one pass over the text, before `lookup` asks for them one by
        one."""
        self.lookup(keys)

    def build(self) -> TextIndex:
        """Index every word pair now; worth it before many `locate` calls one by one."""
        if not self._complete:
            with self._lock:
                self._build()
        return self

    def _build(self) -> None:
        if self._complete:
            return
        postings: defaultdict[int, list[int]] = defaultdict(list)
        for key, start in zip(self._keys, starts(self._words), strict=False):
            postings[key].append(start)
        self._postings = postings
        self._complete = True
        # Only the postings are needed from now on: the words and keys cost as much again.
        for name in ("_words", "_keys", "_ends"):
            self.__dict__.pop(name, None)
        self._known = set()

    def occurrences(self, needle: str) -> list[int]:
        """Where folded `needle` occurs in the folded text (at most MAX_EXACT_HITS, in order)."""
        pairs = word_pairs(needle) if self._complete else []
        if not pairs:
            return find_all(self.folded, needle)
        postings = self._postings
        key, offset = min(pairs, key=lambda pair: len(postings.get(pair[0], ())))
        return occurrences_at(self.folded, needle, offset, postings.get(key, []))

    def _scan(self, keys: set[int]) -> None:
        all_keys, ends, postings = self._keys, self._ends, self._postings
        for i in compress(count(), map(keys.__contains__, all_keys)):
            postings.setdefault(all_keys[i], []).append(ends[i - 1] + i if i else 0)
        self._known |= keys
        self._scans += 1


_shared: OrderedDict[str, TextIndex] = OrderedDict()
_shared_lock = threading.Lock()


def shared(text: str) -> TextIndex:
    """The index of `text` kept from an earlier call with an equal text, else a new one, kept
    for the next call (the SHARED_INDEXES texts seen last, SHARED_INDEX_CHARS in all).

    A short text gets a new index every time: indexing it costs less than remembering it.
    """
    if len(text) < SHARED_INDEX_MIN_CHARS or len(text) > SHARED_INDEX_CHARS:
        return TextIndex(text)
    with _shared_lock:
        index = _shared.get(text)
        if index is not None:
            _shared.move_to_end(text)
            return index
        index = _shared[text] = TextIndex(text)
        held = sum(map(len, _shared))
        while len(_shared) > SHARED_INDEXES or held > SHARED_INDEX_CHARS:
            dropped, _ = _shared.popitem(last=False)
            held -= len(dropped)
        return index


def forget_shared() -> None:
    """Drop the indexes `shared` keeps (a benchmark measuring cold calls, a test)."""
    with _shared_lock:
        _shared.clear()

"""The anchor route's work: where each text annotation of a page is in the text the overlay sent.

The overlay asks on every page load, and the text only changes when the site is rebuilt, so answers
are remembered: the key is the page, the text and every selector involved, so an edited page or an
edited note never gets a stale answer (no invalidation needed). Only the selector columns are read,
without replies or Markdown reconciliation: positions in the page text do not depend on them.

A rebuilt page's text differs from the last one in a few lines, so each recently anchored page
keeps its word-pair index (`pageindex.PageIndex`): anchoring an edited page costs the lines that
changed, not an index of the whole text.

The store is anything with `text_selector_rows(page_url, include_resolved=...)` (`Store`'s):
anchoring imports nothing of the store.
"""

from __future__ import annotations

import hashlib
import pickle
import re
import sys
import threading
import time
from bisect import bisect_left
from collections import OrderedDict
from typing import Any, Protocol

import pydantic_core

from .pageindex import PageIndex
from .selectors import Selector
from .tuning import CACHE_SIZE, INDEXED_PAGES

__all__ = ["Anchors", "SelectorRows"]

_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
# A page reloaded within this long of its last preparation is not prepared again: its parse is
# still among the 128 kept (`sourcemap`) unless as many other pages were parsed meanwhile, and
# then its first note pays the parse, as before the page was opened.
PREPARED_S = 10.0


class SelectorRows(Protocol):
    """Where the cache reads a page's text notes: `(id, exact, prefix, suffix, start, end,
    replaced_text)` rows (`Store.text_selector_rows`)."""

    def text_selector_rows(
        self, page_url: str, *, include_resolved: bool = ...
    ) -> list[tuple[Any, ...]]: ...


class Anchors:
    """The anchor route's answers, remembered, and the word-pair indexes of recent pages."""

    def __init__(self, store: SelectorRows, size: int = CACHE_SIZE) -> None:
        self.store = store
        self.size = size
        self._cache: OrderedDict[bytes, bytes] = OrderedDict()
        self._indexes: OrderedDict[str, PageIndex] = OrderedDict()
        self._prepared: OrderedDict[str, float] = OrderedDict()  # page: when, time.monotonic()
        # Per (page, include_resolved): its notes' selectors as last read, if all stood in place.
        self._held: OrderedDict[tuple[str, bool], _Held] = OrderedDict()
        self._lock = threading.Lock()

    def due(self, page_url: str, remembered: bool) -> bool:
        """Whether to prepare the page's Markdown after this answer (`Store.prepare_page`, which
        parses it unless parsed already): not for a remembered answer (the same text and notes)
        within PREPARED_S of the last time, when its Markdown was parsed; a reload of an
        unchanged page then costs no read of its file."""
        now = time.monotonic()
        with self._lock:
            last = self._prepared.get(page_url)
            if remembered and last is not None and now - last < PREPARED_S:
                return False
            self._prepared[page_url] = now
            self._prepared.move_to_end(page_url)
            while len(self._prepared) > self.size:
                self._prepared.popitem(last=False)
        return True

    def catch_up(self, page_url: str) -> None:
        """Index the page's last text by lines if it was answered without (`PageIndex.index`):
        called after the answer is sent, so the first load after a rebuild is not slowed."""
        with self._lock:
            index = self._indexes.get(page_url)
        if index is not None:
            index.catch_up()

    def locate(self, page_url: str, text: str, include_resolved: bool) -> tuple[bytes, bool]:
        """`{"anchors": [...]}` as JSON bytes, one entry per text annotation of the page, and
        whether the answer was remembered (the same text and notes as before)."""
        rows = self.store.text_selector_rows(page_url, include_resolved=include_resolved)
        page = (page_url, include_resolved)
        with self._lock:
            held = self._held.get(page)
            if held is not None:
                self._held.move_to_end(page)
        if held is not None and held.rows == rows and held.holds(text):
            same = held.text == text  # a reload; else a rebuilt page, its quotes where they were
            held.text = text
            return held.answer, same
        # pickle is injective: equal bytes mean equal selectors (equal ones may, rarely, differ in
        # bytes through its memo: a needless miss, never a wrong answer).
        key = hashlib.sha256(pickle.dumps((page_url, include_resolved, rows), protocol=5))
        key.update(b"\x00")
        key.update(text.encode("utf-8", "surrogatepass"))
        digest = key.digest()
        with self._lock:
            if digest in self._cache:
                self._cache.move_to_end(digest)
                return self._cache[digest], True
            index = self._indexes.pop(page_url, None) or PageIndex()
            self._indexes[page_url] = index  # the most recently used last
            while len(self._indexes) > INDEXED_PAGES:
                self._indexes.popitem(last=False)
        # Selector objects only now: building 200 costs more than the remembered answer.
        selectors = [Selector(*row[1:]) for row in rows]
        # The overlay's offsets count UTF-16 units (a JavaScript string's), the text's here code
        # points: past an emoji ("📁 docs/") they differ by one per such character.
        astral = _astral(text)
        if astral:
            units = [at + k for k, at in enumerate(astral)]  # each one's offset in UTF-16 units
            selectors = [
                s._replace(start=_points(s.start, units), end=_points(s.end, units))
                for s in selectors
            ]
        matches = index.locate_many(text, selectors)
        anchors = [
            {
                "id": id,
                "start": m.start + bisect_left(astral, m.start),
                "end": m.end + bisect_left(astral, m.end),
                "score": m.score,
                "method": m.method,
            }
            if m is not None
            else {"id": id, "start": None, "end": None, "score": None, "method": None}
            for (id, *_), m in zip(rows, matches, strict=True)
        ]
        answer = pydantic_core.to_json({"anchors": anchors})
        with self._lock:
            self._cache[digest] = answer
            while len(self._cache) > self.size:
                self._cache.popitem(last=False)
            if not astral:
                found = _Held.of(rows, answer, text)
                if found is not None and found.holds(text):
                    self._held[page] = found
                    self._held.move_to_end(page)
                    while len(self._held) > INDEXED_PAGES:
                        self._held.popitem(last=False)
        return answer, False


class _Held:
    """A page's notes whose quotes all stood where they were selected, with their context, the
    last time (most page loads): a next text where each still does gets the same answer, every
    note found at its stored position with a score of 100 (`matching._held`, which
    `locate_many` takes first; tests/test_anchor_held.py pins the two answers equal). Checking
    costs a comparison of the rows read and one `startswith` per note, in C: no index, no
    scoring, no JSON, no hash of the selectors or of the text."""

    __slots__ = ("answer", "los", "quotes", "rows", "text")

    def __init__(
        self,
        rows: list[tuple[Any, ...]],
        quotes: list[str],
        los: list[int],
        answer: bytes,
        text: str,
    ) -> None:
        self.rows, self.quotes, self.los, self.answer, self.text = rows, quotes, los, answer, text

    @classmethod
    def of(cls, rows: list[tuple[Any, ...]], answer: bytes, text: str) -> _Held | None:
        """From the selector rows, if each can be held at its position (`matching._held`'s
        conditions that do not depend on the text), else None."""
        quotes, los = [], []
        for _, exact, prefix, suffix, start, end, _ in rows:
            if start is None or end != start + len(exact) or start < len(prefix):
                return None
            if not exact.strip():
                return None
            quotes.append(prefix + exact + suffix)
            los.append(start - len(prefix))
        return cls(rows, quotes, los, answer, text)

    def holds(self, text: str) -> bool:
        """Whether every quote is still at its position with both sides of its context: then
        `locate_many` answers each with its stored position (a text with characters outside the
        BMP shifts offsets, and is left to it)."""
        return all(map(text.startswith, self.quotes, self.los)) and not _astral(text)


def _points(offset: int | None, units: list[int]) -> int | None:
    """A UTF-16 offset into the text as an offset in code points (`units`: where each character
    outside the BMP starts, in UTF-16 units)."""
    return None if offset is None else offset - bisect_left(units, offset)


def _astral(text: str) -> list[int]:
    """Where the characters outside the BMP are in `text` (usually nowhere)."""
    # CPython keeps a str with such a character at 4 bytes a character (PEP 393), one without at
    # 1 or 2: a page of 150 kB is told apart without a scan.
    if text.isascii() or (len(text) > 100 and sys.getsizeof(text) < 3 * len(text)):
        return []
    return [m.start() for m in _ASTRAL.finditer(text)]

"""Notes moved by a line diff (issue #31): re-location after an edit costs the lines that changed.

A text note located in a file keeps the version of the file's lines (`source_lines`, the key of
annotate/lineversions.py). When the file
is edited, a note whose lines — and the text around them — the edit did not touch is where it was,
its lines carried through the diff of the old and new lines (`reconcile.map_lines`' diff): no
projection of the page, no search. Only notes in or near what changed are searched again.

The shortcut must answer what the search would, so it is taken only where the search could not
answer otherwise:

- the note was found exactly (`anchor_score` 100, not by a replacement) in the Markdown itself, in
  the text whose lines it keeps, and that text is known to this process (`remember`: the last
  texts located in), so the lines the edit removed can be read;
- every changed line, removed or added, is plain prose (starts with a letter or digit, not a list
  marker, indented less than 4): such a line cannot open or close a block (a fence, a list, an HTML
  block, a table) nor define a link, so the lines around it render as they did;
- the note's lines are outside the blocks the edit touched and the margin of page text around
  them that a quote's context reaches (`MARGIN` characters of plain lines each side);
- its quote is not in the changed lines (a copy added or removed could change which copy is
  chosen), and its lines moved less than `tuning.ONE_WORD_NEAR` characters, within which the
  search's hint (the old line number) and its choice among copies stay as they were.
"""

from __future__ import annotations

import difflib
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache

from .anchoring.markdown import excerpt as markdown_excerpt
from .anchoring.normalise import normalise
from .anchoring.selectors import CONTEXT_LENGTH
from .anchoring.tuning import ONE_WORD_NEAR

__all__ = ["Moves", "forget", "known", "moves", "remember"]

# How many texts (files as they were when notes were located in them) are kept to read the lines
# an edit removed: a page is ~30 kB, so ~8 MB at most.
MAX_TEXTS = 256
# Page text each side of an edit whose notes are searched again: a quote's context is
# CONTEXT_LENGTH characters, and its neighbours' too.
MARGIN = 2 * CONTEXT_LENGTH
# A changed middle longer than this (lines) is left to the search.
MAX_CHANGED_LINES = 2_000

_texts: OrderedDict[str, str] = OrderedDict()
_lock = threading.Lock()

# Prose: a letter or digit first (not an ordered-list marker), indented less than a code block.
_PLAIN = re.compile(r" {0,3}(?![0-9]+[.)](?:\s|$))[^\W_]")
# What a plain line holds that the page does not show: link targets and HTML tags.
_HIDDEN = re.compile(r"\]\([^)]*\)|<[^>]*>")


def remember(key: str, text: str) -> None:
    """Keep `text` as the file version `key` names (a note was located in it)."""
    with _lock:
        _texts[key] = text
        _texts.move_to_end(key)
        while len(_texts) > MAX_TEXTS:
            _texts.popitem(last=False)


def known(key: str) -> str | None:
    """The text of the file version `key` names, when this process located notes in it lately."""
    with _lock:
        return _texts.get(key)


def forget() -> None:
    """Forget every text kept: each note of an edited file is then searched for."""
    with _lock:
        _texts.clear()


def _plain(line: str) -> bool:
    return not line.strip() or _PLAIN.match(line) is not None


def _shown(line: str) -> int:
    """At most how many characters of page text a line shows: none unless it is prose."""
    if not line.strip() or _PLAIN.match(line) is None:
        return 0
    return len(_HIDDEN.sub("", line).strip())


@dataclass(frozen=True)
class Moves:
    """Where each line of an old text is in the new one, and which new lines the edit touched."""

    new: list[str]
    mapped: list[int]  # old line (0-based) -> new line (0-based), -1 where changed
    touched: bytearray  # 1 for each new line in or near a change
    changed: str  # the changed lines, old and new, folded: a quote found here is searched
    starts_old: list[int]  # each old line's offset
    starts_new: list[int]

    def move(self, start: int, end: int, quote: str) -> tuple[int, int] | None:
        """Lines `start`-`end` (1-based) of the old text in the new one, when the note there is
        where it was (module docstring); None when it must be searched for."""
        if start < 1 or end < start or end > len(self.mapped):
            return None
        first, last = self.mapped[start - 1], self.mapped[end - 1]
        if first < 0 or last - first != end - start:
            return None
        if any(self.touched[first : last + 1]):
            return None
        if abs(self.starts_new[first] - self.starts_old[start - 1]) > ONE_WORD_NEAR:
            return None
        folded = _folded(quote)
        if not folded or folded in self.changed:
            return None
        return first + 1, last + 1

    def excerpt(self, start: int, end: int) -> str:
        """The excerpt of new lines `start`-`end` (1-based), as the search makes it."""
        return markdown_excerpt("\n".join(self.new[start - 1 : end]), 1, end - start + 1)


# A page's notes are moved after every edit of it: their quotes are the same strings each time.
@lru_cache(maxsize=8192)
def _folded(quote: str) -> str:
    return normalise(quote)[0].strip()


def _lines(text: str) -> list[str]:
    return text.split("\n")


def _starts(lines: list[str]) -> list[int]:
    out, at = [], 0
    for line in lines:
        out.append(at)
        at += len(line) + 1
    return out


# Keyed by both texts: every note of a page shares one diff.
@lru_cache(maxsize=32)
def moves(old_text: str, new_text: str) -> Moves | None:
    """The line moves from `old_text` to `new_text`, or None when the edit is not plain prose
    (then every note of the file is searched)."""
    if "\r" in old_text or "\r" in new_text:
        return None  # lines counted differently from the search's: leave it to the search
    old, new = _lines(old_text), _lines(new_text)
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    if max(len(old), len(new)) - head - tail > MAX_CHANGED_LINES:
        return None
    ops = difflib.SequenceMatcher(
        None, old[head : len(old) - tail], new[head : len(new) - tail], autojunk=True
    ).get_opcodes()
    mapped = list(range(head)) + [-1] * (len(old) - head)
    for i in range(tail):
        mapped[len(old) - 1 - i] = len(new) - 1 - i
    touched = bytearray(len(new))
    changed: list[str] = []
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal":
            for k in range(i2 - i1):
                mapped[head + i1 + k] = head + j1 + k
            continue
        gone, added = old[head + i1 : head + i2], new[head + j1 : head + j2]
        if not all(map(_plain, gone)) or not all(map(_plain, added)):
            return None
        changed += gone + added
        _touch(new, touched, head + j1, head + j2)
    return Moves(
        new,
        mapped,
        touched,
        normalise("\n".join(changed))[0],
        _starts(old),
        _starts(new),
    )


def _touch(new: list[str], touched: bytearray, lo: int, hi: int) -> None:
    """Mark new lines [lo, hi) touched, with their blocks and MARGIN characters of plain text
    each side (a line that is not plain prose may show nothing: it counts for none)."""
    # The blocks the change is in or next to.
    while lo > 0 and new[lo - 1].strip():
        lo -= 1
    while hi < len(new) and new[hi].strip():
        hi += 1
    need = MARGIN
    while lo > 0 and need > 0:
        lo -= 1
        need -= _shown(new[lo])
    need = MARGIN
    while hi < len(new) and need > 0:
        need -= _shown(new[hi])
        hi += 1
    touched[lo:hi] = b"\x01" * (hi - lo)

"""Which lines of a pull request's files take a line comment: the lines of its diff's hunks on
the new side (RIGHT), context and added lines alike. GitHub refuses a whole review for one
comment outside them (422), so every note is checked here before anything is posted."""

from __future__ import annotations

import re

__all__ = ["Hunks", "inside", "old_lines", "parse_patch"]

_HEADER = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", re.MULTILINE)

# A file's hunks: inclusive (first, last) line ranges on the new side.
Hunks = list[tuple[int, int]]


def parse_patch(patch: str | None) -> Hunks:
    """The new-side line ranges of a unified diff's hunks (`@@ -a,b +c,d @@`: lines c to
    c+d-1; d omitted means 1, d = 0 a hunk that only removes lines, with none to comment)."""
    ranges: Hunks = []
    for found in _HEADER.finditer(patch or ""):
        start = int(found[1])
        count = 1 if found[2] is None else int(found[2])
        if count > 0:
            ranges.append((start, start + count - 1))
    return ranges


def inside(hunks: Hunks, first: int, last: int) -> bool:
    """Whether lines `first` to `last` all lie in one hunk (a range across two hunks spans
    lines outside the diff)."""
    return any(lo <= first and last <= hi for lo, hi in hunks)


def old_lines(patch: str | None) -> dict[int, int | None]:
    """Each new-side line of the hunks -> its old-side line (None for an added line): GitLab
    places a comment on an unchanged line by both numbers."""
    out: dict[int, int | None] = {}
    new = old = 0
    in_hunk = False
    for line in (patch or "").split("\n"):
        found = re.match(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@", line)
        if found:
            old, new, in_hunk = int(found[1]), int(found[2]), True
            continue
        if not in_hunk or line.startswith("\\"):
            continue
        if line.startswith("+"):
            out[new] = None
            new += 1
        elif line.startswith("-"):
            old += 1
        elif line.startswith(" "):
            out[new] = old
            new += 1
            old += 1
    return out

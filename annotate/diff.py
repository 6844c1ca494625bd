"""A small word diff of a note's Markdown lines then and now, for the reviewer (issue #14).

A text note keeps its `originalSource` (the lines as when it was made); once the agent addressed it,
`word_diff(original excerpt, current excerpt)` shows what changed, in the style of
`git diff --word-diff=plain`: `[-removed-]{+added+}`, a replaced phrase whole (issue #27),
unchanged stretches cut to a few words of context. The Markdown export and `annotate get` show it; the overlay draws its own from the same two
excerpts.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

from .models import Annotation

__all__ = ["CONTEXT_WORDS", "annotation_change", "change", "word_diff"]

# Unchanged words kept either side of a change; a longer unchanged stretch becomes " … ".
CONTEXT_WORDS = 6
Opcode = tuple[str, int, int, int, int]  # difflib's: (tag, i1, i2, j1, j2)
_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")


def _is_word(token: str) -> bool:
    return token[0].isalnum() or token[0] == "_"


def _keep(tokens: list[str], head: bool, tail: bool) -> str:
    """An unchanged stretch: whole when short, else its first and/or last words around "…"."""
    words = [i for i, t in enumerate(tokens) if _is_word(t)]
    keep = CONTEXT_WORDS * (head + tail)
    if len(words) <= keep + CONTEXT_WORDS:  # cutting would save little
        return "".join(tokens)
    out = []
    if head:
        out.append("".join(tokens[: words[CONTEXT_WORDS]]).rstrip())
    out.append("…")
    if tail:
        out.append("".join(tokens[words[-CONTEXT_WORDS] :]).lstrip())
    return " ".join(p for p in out if p)


def word_diff(before: str, after: str) -> str | None:
    """`before` → `after` as one text with `[-…-]` and `{+…+}` marks; None when equal."""
    if before == after:
        return None
    a, b = _TOKEN.findall(before), _TOKEN.findall(after)
    ops = _phrases(a, difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes())
    out: list[str] = []
    for n, (op, i1, i2, j1, j2) in enumerate(ops):
        if op == "equal":
            out.append(_keep(a[i1:i2], head=n > 0, tail=n < len(ops) - 1))
            continue
        if i2 > i1:
            out.append(f"[-{''.join(a[i1:i2])}-]")
        if j2 > j1:
            out.append(f"{{+{''.join(b[j1:j2])}+}}")
    return "".join(out)


def _phrases(a: list[str], ops: Sequence[tuple[str, int, int, int, int]]) -> list[Opcode]:
    """`ops` with changes that only spaces or punctuation separate joined into one: a replaced
    phrase reads `[-quick brown fox-]{+slow red cat+}`, not interleaved word by word (issue #27).
    Two deletions (or two insertions) stay apart: joined, the gap would show as inserted."""
    out: list[Opcode] = []
    for op in ops:
        tag, i1, i2, j1, j2 = op
        if (
            tag != "equal"
            and len(out) >= 2
            and out[-2][0] != "equal"
            and out[-1][0] == "equal"
            and not any(_is_word(t) for t in a[out[-1][1] : out[-1][2]])
            and (out[-2][2] > out[-2][1] or i2 > i1)
            and (out[-2][4] > out[-2][3] or j2 > j1)
        ):
            # The stretch between belongs to both sides of the joined change.
            start = out[-2]
            del out[-2:]
            op = ("replace", start[1], i2, start[3], j2)
        out.append(op)
    return out


def change(status: str, anchor_state: str, original: str | None, current: str | None) -> str | None:
    """The word diff to show for a note, or None: only once it is addressed (or resolved) and
    its lines were known when it was made. A removed note's text is gone entirely."""
    if status not in ("addressed", "resolved") or not original:
        return None
    if anchor_state == "removed":
        return f"[-{original}-]"
    if current is None:
        return None
    return word_diff(original, current)


def annotation_change(item: Annotation) -> str | None:
    """`change` of an annotation object."""
    return change(
        item.status,
        item.anchor_state,
        item.original_source.excerpt if item.original_source else None,
        item.source.excerpt if item.source else None,
    )

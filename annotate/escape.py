"""One function makes every user string safe where it is shown (issue #17, issue #27 item 6).

Notes, replies, quotes, page titles, selectors and paths come from browsers and agents. Each
surface that writes them into a text of its own — the Markdown export, the inline markers, the
context text (`annotate context`, the MCP tool) — passes every such string through `escape`,
naming where it goes; tests/test_escape.py fills every field with arbitrary text and checks that
no surface gains or loses a piece of its own structure.

- `INLINE`: inside a line of Markdown: it opens no emphasis, code span, link, image, autolink or
  raw HTML (`\\*`, `\\[`, …; `_` only where it can open or close emphasis), and a line break in
  it is shown as an escape (callers fold long text with `one_line` first).
- `QUOTED`: the same between our double quotes, which it cannot close either.
- `LINE`: one line of user text that starts a Markdown line (after our indent or `> `): also
  opens no block (heading, list item, quote, fence, table row, definition).
- `CODE`: a code span holding the text on one line, its fence longer than any backtick run inside.
- `FENCED`: one line inside our fence (the caller makes the fence longer than any run inside).
- `PLAIN`: one line of plain text (the context text): line breaks and every character that acts
  instead of printing are spelled out (`\\x0a`, `\\u202e`), so a value never starts a line.
- `MARKER`: the JSON text of an inline marker, which stands in a link reference definition's
  title: `(`, `)`, `<`, `>` and hidden characters become JSON escapes (`\\u0028`), which any JSON
  reader turns back into the same text.

In every form, characters that act instead of printing (annotate/visible.py) are shown as escapes.
"""

from __future__ import annotations

import re
from typing import Literal, get_args

from .visible import HIDDEN, visible

__all__ = ["CODE", "FENCED", "INLINE", "LINE", "MARKER", "PLAIN", "QUOTED", "Form", "escape"]

Form = Literal["inline", "quoted", "line", "code", "fenced", "plain", "marker"]
INLINE: Form = "inline"
QUOTED: Form = "quoted"
LINE: Form = "line"
CODE: Form = "code"
FENCED: Form = "fenced"
PLAIN: Form = "plain"
MARKER: Form = "marker"

# Inline: a backslash that would escape what follows it, and the characters that open emphasis,
# code spans, links, images, autolinks and raw HTML. `_` only where it can open or close
# emphasis (never inside a word, so snake_case stays as it is).
_INLINE = re.compile(r"\\(?=[!-/:-@\[-`{-~]|$)|[`*\[\]<]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_QUOTED = re.compile(r"\\(?=[!-/:-@\[-`{-~]|$)|[`*\[\]<\"]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
# A line that starts like a block: heading, list item, quote, fence, setext underline, thematic
# break, table row, definition.
_BLOCK_START = re.compile(r"^(\s*)([#+\-=>|~:]|\d+(?=[.)]))")
# Whether a printable string needs escaping inline (anything not printable takes the slow path:
# `str.isprintable()` is False for every HIDDEN character and every line break).
_INLINE_CHARS = re.compile(r"[\\`*_\[\]<]")
_QUOTED_CHARS = re.compile(r'[\\`*_\[\]<"]')
# In a marker's JSON: what could end the definition's title or read as HTML, and hidden characters.
_MARKER_UNSAFE = re.compile(f"[()<>]|{HIDDEN.pattern}")


def escape(text: str, form: Form) -> str:
    """`text` made safe where `form` says it goes (see the module docstring)."""
    if form == INLINE:
        return _inline(text)
    if form == QUOTED:
        return _inline(text, quoted=True)
    if form == LINE:
        return _line(text)
    if form == CODE:
        return _code(text)
    if form == FENCED:
        return visible(text)
    if form == PLAIN:
        return text if text.isprintable() else visible(text, keep="\t")
    if form == MARKER:
        return _MARKER_UNSAFE.sub(_json_escape, text)
    raise ValueError(f"form must be one of {', '.join(get_args(Form))}, got {form!r}")


def one_line(text: str, limit: int = 300) -> str:
    """`text` on one line (runs of whitespace, line breaks included, as one space), cut at
    `limit` characters with `…`."""
    return _one_line(text, limit)


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _inline(text: str, quoted: bool = False) -> str:
    if text.isprintable() and not (_QUOTED_CHARS if quoted else _INLINE_CHARS).search(text):
        return text  # the common case, in two C-speed scans
    text = (_QUOTED if quoted else _INLINE).sub(lambda m: "\\" + m[0], text)
    # No line break may pass: it would start a line of ours.
    return visible(text, keep="\t") if HIDDEN.search(text) else text


def _line(text: str) -> str:
    # The caller splits lines first; a line break left inside is shown as an escape by `_inline`.
    # Spaces and tabs at either end go first: leading ones indent into a code block, and a
    # backslash they follow would end the line (a hard break) once the line is trimmed.
    text = _inline(text.strip(" \t"))
    first = text[:1]
    if first and (first in "#+-=>|~:" or first.isspace() or first.isdigit()):
        return _BLOCK_START.sub(_neutral_start, text, count=1)
    return text


def _neutral_start(m: re.Match[str]) -> str:
    # `1.` becomes `1\.`, `#` becomes `\#`: read as text, not as a list item or heading.
    space, mark = m[1], m[2]
    return f"{space}{mark}\\" if mark[0].isdigit() else f"{space}\\{mark}"


def _code(text: str) -> str:
    # CommonMark 6.1: nothing inside a code span whose fence is longer than any backtick run in
    # it can close it.
    if text and text.isprintable() and "`" not in text:
        return f"`{text}`"  # the common path or selector
    text = _one_line(text, limit=len(text) + 1)
    if not text:
        return "` `"  # `` `` would open a span that nothing closes
    text = visible(text) if HIDDEN.search(text) else text
    ticks = "`"
    while ticks in text:
        ticks += "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _json_escape(m: re.Match[str]) -> str:
    code = ord(m[0])
    if code < 0x10000:
        return f"\\u{code:04x}"
    # JSON spells a character beyond the BMP as its UTF-16 surrogate pair.
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"

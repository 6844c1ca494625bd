"""Characters that act instead of printing, spelled out so a reader sees them (issue #17).

A note or reply is text from a browser or an agent. Printed raw, `\\x1b[8m` hides what follows from
the person at the terminal while an agent still reads it, `\\x1b]0;…\\x07` retitles the window and
`\\u202e` reverses the line. `visible` writes every such character as its Python escape (`\\x1b`,
`\\u202e`, `\\U000e0041`); `visible_json` does the same inside JSON text, where `\\u001b` keeps the
document's meaning.
"""

from __future__ import annotations

import re

__all__ = ["HIDDEN", "visible", "visible_json"]

# Every character of Unicode categories Cc (controls, C0 and C1), Cf (format: bidi overrides,
# zero-width spaces, tag characters), Zl, Zp (line and paragraph separators) and Cs (lone
# surrogates), except the zero-width joiners that emoji and Indic scripts need (U+200C, U+200D).
# tests/test_attack_text.py checks this list against `unicodedata`.
HIDDEN = re.compile(
    "[\x00-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b\u200e\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
    "\ud800-\udfff\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)
KEEP = "\n\t"


def _escape(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _json_escape(char: str) -> str:
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    # JSON spells a character beyond the BMP as its UTF-16 surrogate pair.
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def visible(text: str, keep: str = KEEP) -> str:
    """`text` with every hidden character but those in `keep` written as its escape."""
    return HIDDEN.sub(lambda m: m[0] if m[0] in keep else _escape(m[0]), text)


def visible_json(text: str) -> str:
    """JSON text (from `json.dumps`) with hidden characters inside its strings escaped.

    `json.dumps(ensure_ascii=False)` already escapes C0 controls; raw hidden characters left in
    its output can only be inside strings, where `\\uXXXX` means the same character.
    """
    return HIDDEN.sub(lambda m: m[0] if m[0] in "\n" else _json_escape(m[0]), text)

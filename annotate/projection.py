"""The text a rendered page shows for a Markdown file, each character mapped to its source offset.

`project_markdown` walks the tokens `mdparse.parse` reads and aligns the text they carry with the
source characters: inline text, code, HTML blocks, footnotes (in Python-Markdown's order), content
tabs (labels first, as Material shows them), keys (pymdownx.keys) and attr_list blocks dropped.
"""

from __future__ import annotations

import bisect
import html
import re
import string
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from html.parser import HTMLParser
from typing import Any

from markdown_it.token import Token

from .mdparse import NEWLINES, TAB_TAG, continues_tab_set, line_starts, read
from .plaintext import Paragraph, placed

__all__ = ["HTMLText", "ProjectedText", "project_markdown"]

# How far ahead character-wise alignment looks for the next character of a text token.
FIRST_CHAR_LOOKAHEAD = 80
NEXT_CHAR_LOOKAHEAD = 8

_ESCAPABLE = frozenset(string.punctuation)
_ENTITY = re.compile(r"&(?:#[xX][0-9a-fA-F]{1,6}|#[0-9]{1,7}|[A-Za-z][A-Za-z0-9]{1,31});")
# attr_list blocks (`{#id}`, `{ .class key=value }`) that Python-Markdown removes from the output.
_ATTR_ITEM = r"""(?:[#.][^\s{}]+|[\w:-]+=(?:"[^"]*"|'[^']*'|[^\s{}]+))"""
_ATTR_LIST = re.compile(
    r"[ \t]*\{:?[ \t]*" + _ATTR_ITEM + r"(?:[ \t]+" + _ATTR_ITEM + r")*[ \t]*:?\}"
)
_FOOTNOTE_DEF = re.compile(r"^[ \t]{0,3}\[\^([^\]\n]+)\]:", re.MULTILINE)
_FENCE_TITLE = re.compile(r'\btitle="([^"]*)"')


# Source offsets are kept as machine integers (`array("i")`, 32 bits: a file read is at most 8 MB),
# copied in slices of `_iota`: a run of source characters shown as they are (a plain paragraph, a
# code line) costs one copy, not a Python object per character (issue #31).
_IOTA: array[int] = array("i")


def _iota(n: int) -> array[int]:
    """0, 1, 2, … at least up to `n`: the offsets of any run of a source of `n` characters are a
    slice of it. Grown, never changed: a thread holding the old one keeps a valid one."""
    global _IOTA
    iota = _IOTA
    if len(iota) < n:
        iota = _IOTA = array("i", range(max(n, 2 * len(iota), 1 << 16)))
    return iota


@dataclass(frozen=True)
class ProjectedText:
    """The text a page shows, with `offsets[i]` the source offset of `text[i]`."""

    source: str
    text: str
    offsets: array[int]
    # code[i] is 1 where text[i] is shown inside `<pre>` or `<code>` (fenced, indented or inline code).
    code: bytes = b""

    def line_of(self, offset: int) -> int:
        """1-based line of a source offset."""
        return self.source.count("\n", 0, offset) + 1


class _View:
    """A region of the source as a string, with the source offset of each character."""

    def __init__(self, text: str, offsets: Sequence[int]) -> None:
        self.text = text
        self.offsets = offsets

    @classmethod
    def raw(cls, source: str, start: int, end: int) -> _View:
        return cls(source[start:end], _iota(end)[start:end])

    @classmethod
    def decoded(cls, source: str, start: int, end: int) -> _View:
        """The region with backslash escapes and HTML entities decoded, as markdown-it reports text."""
        if "\\" not in source[start:end] and "&" not in source[start:end]:
            return cls.raw(source, start, end)
        chars: list[str] = []
        offsets: list[int] = []
        i = start
        while i < end:
            ch = source[i]
            if ch == "\\" and i + 1 < end and source[i + 1] in _ESCAPABLE:
                chars.append(source[i + 1])
                offsets.append(i + 1)
                i += 2
                continue
            if ch == "&" and (m := _ENTITY.match(source, i, end)):
                value = html.unescape(m.group())
                if value != m.group():
                    for c in value:
                        chars.append(c)
                        offsets.append(i)
                    i = m.end()
                    continue
            chars.append(ch)
            offsets.append(i)
            i += 1
        return cls("".join(chars), offsets)


class HTMLText(HTMLParser):
    """Text nodes of an HTML block, as a browser would show them, and whether each is code."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[tuple[str, bool]] = []
        self._skip = 0
        self._code = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        elif tag in ("pre", "code"):
            self._code += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._skip:
            self._skip -= 1
        elif tag in ("pre", "code") and self._code:
            self._code -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append((data, self._code > 0))


class _Projector:
    """Walks markdown-it tokens and aligns the text they carry with the source characters."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.line_starts = line_starts(source)
        # The text shown so far, in pieces (one slice per plain paragraph), its length and last
        # character; `_flat` joins the pieces where a character inside is needed.
        self.pieces: list[str] = []
        self.length = 0
        self.last = ""
        self.offsets: array[int] = array("i")
        self.code_flags = bytearray()  # 1 for each character shown as code
        self.iota = _iota(len(source) + 1)
        self.cursor = 0
        self.region = (0, 0)
        self._decoded: _View | None = None
        self._raw: _View | None = None
        # `[^` first: the multi-line pattern alone tries every character of the page.
        defs = [m.group(1) for m in _FOOTNOTE_DEF.finditer(source)] if "[^" in source else []
        # Python-Markdown numbers footnotes by definition order (USE_DEFINITION_ORDER, default).
        self.footnote_number = {label: n for n, label in enumerate(dict.fromkeys(defs), 1)}

    # -- regions and alignment -------------------------------------------------------------

    def _line_offset(self, line: int) -> int:
        return self.line_starts[line] if line < len(self.line_starts) else len(self.source)

    def enter(self, first_line: int, end_line: int) -> None:
        """Align the next texts inside source lines [first_line, end_line)."""
        start = self._line_offset(first_line)
        end = self._line_offset(max(end_line, first_line + 1))
        if self.region == (start, end) and start <= self.cursor <= end:
            return  # table cells of one row share the row's line: keep moving right
        self.region = (start, end)
        self.cursor = start
        self._decoded = self._raw = None

    def _view(self, raw: bool) -> _View:
        start, end = self.region
        if raw:
            if self._raw is None:
                self._raw = _View.raw(self.source, start, end)
            return self._raw
        if self._decoded is None:
            self._decoded = _View.decoded(self.source, start, end)
        return self._decoded

    def align(self, piece: str, *, raw: bool = False) -> Sequence[int]:
        """Source offsets of the characters of `piece`, found from the cursor on."""
        view = self._view(raw)
        pos = bisect.bisect_left(view.offsets, self.cursor)
        found = view.text.find(piece, pos) if piece else -1
        if found >= 0:
            found_offsets = view.offsets[found : found + len(piece)]
            self.cursor = found_offsets[-1] + 1
            return found_offsets
        # Not there verbatim (a generated admonition title, a code span over a line break, a link
        # text markdown-it normalised): align character by character, never far ahead.
        offsets: list[int] = []
        lookahead = FIRST_CHAR_LOOKAHEAD
        for ch in piece:
            if not ch.isspace():
                window = view.text[pos : pos + lookahead].casefold()
                hit = window.find(ch.casefold())
                if hit >= 0:
                    pos += hit
                    offsets.append(view.offsets[pos])
                    pos += 1
                    self.cursor = view.offsets[pos - 1] + 1
                    lookahead = NEXT_CHAR_LOOKAHEAD
                    continue
            offsets.append(self._here())
        return offsets

    def _here(self) -> int:
        """Where text that has no characters of its own (line breaks, unfound text) is placed."""
        start, end = self.region
        return max(0, min(max(start, min(self.cursor, end - 1)), len(self.source) - 1))

    def emit(self, text: str, offsets: Sequence[int], *, code: bool = False) -> None:
        if not text:
            return
        self.pieces.append(text)
        self.length += len(text)
        self.last = text[-1]
        self.offsets.extend(offsets)
        self.code_flags.extend((b"\x01" if code else b"\x00") * len(text))

    def _flat(self) -> str:
        """The text shown so far, as one piece."""
        if len(self.pieces) > 1:
            self.pieces = ["".join(self.pieces)]
        return self.pieces[0] if self.pieces else ""

    def result(self) -> ProjectedText:
        """What was projected."""
        return ProjectedText(self.source, self._flat(), self.offsets, bytes(self.code_flags))

    def emit_text(self, piece: str, *, raw: bool = False, code: bool = False) -> None:
        self.emit(piece, self.align(piece, raw=raw), code=code)

    def end_block(self) -> None:
        if self.length and self.last != "\n":
            self.emit("\n", [self._here()])

    # -- token kinds -----------------------------------------------------------------------

    def inline(self, token: Token) -> None:
        assert token.map is not None
        self.enter(*token.map)
        for child in token.children or []:
            kind = child.type
            if kind == "text":
                self._text(child.content)
            elif kind == "code_inline":
                self.emit_text(child.content, raw=True, code=True)
            elif kind in ("softbreak", "hardbreak"):
                self.emit("\n", [self._here()])
            elif kind == "footnote_ref":
                self._footnote_ref(child)
            # Images show no text (alt is an attribute); the other children are markup.
        self.end_block()

    def paragraphs(self, run: list[Paragraph]) -> None:
        """The paragraphs a placeholder stands for (annotate/plaintext.py): those with markup
        as `inline` projects them; a plain one's lines are its text, so each character is where
        it stands, each line break on its `\\n`, and the break after the last line placed as
        `end_block` places it."""
        starts, source, iota = self.line_starts, self.source, self.iota
        lines, size = len(starts), len(source)
        shown = 0  # characters of the plain paragraphs not yet counted in `length`
        left: tuple[int, int, int] | None = None  # the region and cursor the last one leaves
        for paragraph in run:
            if paragraph.alone is not None:
                self._placed(shown, left)
                shown, left = 0, None
                self.inline(placed(paragraph)[1])
                continue
            start = starts[paragraph.start] if paragraph.start < lines else size
            # The lines and the `\n` after them, as one slice of the source and its offsets; at
            # the file's end (no `\n`) the break is placed as `_here()` places it there.
            if paragraph.end < lines:
                stop = starts[paragraph.end]
                text_end = stop - 1
                self.pieces.append(source[start:stop])
                self.offsets.extend(iota[start:stop])
            else:
                stop = text_end = size
                self.pieces += (source[start:stop], "\n")
                self.offsets.extend(iota[start:stop])
                self.offsets.append(max(0, min(max(start, stop - 1), size - 1)))
            shown += text_end - start + 1
            left = (start, stop, text_end)
        self._placed(shown, left)

    def _placed(self, shown: int, left: tuple[int, int, int] | None) -> None:
        """Count `shown` characters of plain paragraphs just placed (none shown as code), and
        leave the region and cursor where the last of them (`left`) leaves them."""
        if left is None:
            return
        self.length += shown
        self.last = "\n"
        self.code_flags.extend(bytes(shown))
        self.region, self.cursor = (left[0], left[1]), left[2]
        self._decoded = self._raw = None

    def _text(self, content: str) -> None:
        offsets = self.align(content)
        if "++" in content:
            content, offsets = _keys_shown(content, offsets)
        if "{" not in content:
            self.emit(content, offsets)
            return
        # attr_list blocks are not shown: drop their characters after aligning the whole text.
        keep = [True] * len(content)
        for m in _ATTR_LIST.finditer(content):
            keep[m.start() : m.end()] = [False] * (m.end() - m.start())
        self.emit(
            "".join(c for c, k in zip(content, keep, strict=True) if k),
            [o for o, k in zip(offsets, keep, strict=True) if k],
        )

    def _footnote_ref(self, token: Token) -> None:
        label = str(token.meta.get("label", ""))
        number = str(self.footnote_number.get(label, token.meta.get("id", 0) + 1))
        at = self.source.find(f"[^{label}]", self.cursor, self.region[1])
        if at < 0:
            self.emit(number, [self._here()] * len(number))
            return
        self.emit(number, [at + 2] * len(number))
        self.cursor = at + len(label) + 3

    def code(self, token: Token) -> None:
        assert token.map is not None
        first = token.map[0] + (1 if token.type == "fence" else 0)
        if token.type == "fence" and (m := _FENCE_TITLE.search(token.info)):
            # superfences `title="file.py"` is shown above the code, with no whitespace between.
            self.enter(token.map[0], token.map[0] + 1)
            self.emit_text(m.group(1))
        self.enter(first, max(token.map[1], first + 1))
        for line in token.content.split("\n"):
            if line:
                self.emit_text(line, raw=True, code=True)
            self.emit("\n", [self._here()], code=True)

    def html_block(self, token: Token) -> None:
        assert token.map is not None
        parser = HTMLText()
        parser.feed(token.content)
        parser.close()
        self.enter(*token.map)
        for part, code in parser.parts:
            if part.strip():
                self.emit_text(part, code=code)
            else:  # the line breaks between tags: whitespace on the page too
                self.end_block()
        self.end_block()

    def walk(
        self, tokens: Sequence[Token], plain: Mapping[int, list[Paragraph]] | None = None
    ) -> None:
        """Project `tokens`; `plain`: the paragraphs each placeholder of a skeleton stands for
        (`plaintext.Reading`), by the index of its `paragraph_open`."""
        plain = plain or {}
        after = 0  # the first token after a placeholder's
        footnotes: list[tuple[int, int, int]] = []  # (number, start, end) in the projection
        fn_start = fn_number = 0
        # Content tabs: per open admonition [is_tab, label_start, label_end]; finished tabs of the
        # current set as (label_start, label_end, body_end).
        admonitions: list[list[Any]] = []
        tab_set: list[tuple[int, int, int]] = []
        for i, token in enumerate(tokens):
            kind = token.type
            if i < after:
                continue
            if i in plain:
                self.paragraphs(plain[i])
                after = i + 3
            elif kind == "inline" and token.map is not None:
                self.inline(token)
            elif kind in ("fence", "code_block") and token.map is not None:
                self.code(token)
            elif kind == "html_block" and token.map is not None:
                self.html_block(token)
            elif kind == "admonition_open":
                at = self.length
                admonitions.append([token.meta.get("tag") == TAB_TAG, at, at])
            elif kind == "admonition_title_close" and admonitions:
                admonitions[-1][2] = self.length
            elif kind == "admonition_close" and admonitions:
                is_tab, label_start, label_end = admonitions.pop()
                if is_tab:
                    tab_set.append((label_start, label_end, self.length))
                    if not continues_tab_set(tokens, i):
                        self._labels_first(tab_set)
                        tab_set = []
            elif kind == "footnote_open":
                fn_start = self.length
                label = str(token.meta.get("label", ""))
                fn_number = self.footnote_number.get(label, len(footnotes) + 1)
            elif kind == "footnote_close":
                footnotes.append((fn_number, fn_start, self.length))
        if footnotes:
            # markdown-it lists footnotes by first reference, Python-Markdown by definition.
            self._reorder(footnotes[0][1], [(s, e) for _, s, e in sorted(footnotes)])

    def _labels_first(self, tabs: list[tuple[int, int, int]]) -> None:
        """Material shows a set of tabs as all labels, then all bodies (`alternate_style`).

        The labels touch (`<label>pip</label><label>uv</label>`): drop the line break after each.
        """
        text = self._flat()
        labels = [(start, end - (text[end - 1] == "\n")) for start, end, _ in tabs[:-1]]
        last_start, last_end, _ = tabs[-1]
        labels.append((last_start, last_end))
        bodies = [(end, body_end) for _, end, body_end in tabs]
        self._reorder(tabs[0][0], labels + bodies)

    def _reorder(self, base: int, pieces: list[tuple[int, int]]) -> None:
        """Replace the projection from `base` to its end with `pieces` ([start, end) ranges of it)."""
        text = self._flat()
        chars, offsets, code = text[base:], self.offsets[base:], self.code_flags[base:]
        del self.offsets[base:], self.code_flags[base:]
        kept = [text[:base]]
        for start, end in pieces:
            kept.append(chars[start - base : end - base])
            self.offsets.extend(offsets[start - base : end - base])
            self.code_flags.extend(code[start - base : end - base])
        self.pieces = ["".join(kept)]
        self.length = len(self.pieces[0])
        self.last = self.pieces[0][-1:]


def _keys_shown(content: str, offsets: Sequence[int]) -> tuple[str, list[int]]:
    """pymdownx.keys' `++ctrl+alt+del++` as the page shows it ("Ctrl+Alt+Del"), each shown
    character placed at the key name it comes from."""
    chars: list[str] = []
    out: list[int] = []
    at = 0
    for m in _KEYS.finditer(content):
        chars.extend(content[at : m.start()])
        out.extend(offsets[at : m.start()])
        for n, key in enumerate(_KEY_SPLIT.finditer(content, m.start(1), m.end(1))):
            name, where = key.group(), offsets[key.start()]
            shown = name[1:-1] if name.startswith('"') else _KEY_NAMES.get(name.lower(), name)
            if len(shown) == 1 and shown.isalpha():
                shown = shown.upper()
            if n:
                chars.append("+")
                out.append(where)
            chars.extend(shown)
            out.extend([where] * len(shown))
        at = m.end()
    chars.extend(content[at:])
    out.extend(offsets[at:])
    return "".join(chars), out


_KEYS = re.compile(r'\+\+((?:[\w-]+|"[^"\n]*")(?:\+(?:[\w-]+|"[^"\n]*"))*)\+\+')
_KEY_SPLIT = re.compile(r'[\w-]+|"[^"\n]*"')
# What pymdownx.keys shows for common key names (its key map; others show as written).
_KEY_NAMES = {
    "arrow-up": "Up",
    "arrow-down": "Down",
    "arrow-left": "Left",
    "arrow-right": "Right",
    "comma": ",",
    "period": ".",
    "slash": "/",
    "backslash": "\\",
    "semicolon": ";",
    "question": "?",
    "ctrl": "Ctrl",
    "control": "Ctrl",
    "alt": "Alt",
    "shift": "Shift",
    "cmd": "Cmd",
    "command": "Cmd",
    "meta": "Meta",
    "option": "Option",
    "windows": "Win",
    "enter": "Enter",
    "return": "Return",
    "esc": "Esc",
    "escape": "Esc",
    "tab": "Tab",
    "space": "Space",
    "backspace": "Backspace",
    "delete": "Del",
    "del": "Del",
    "insert": "Ins",
    "home": "Home",
    "end": "End",
    "page-up": "Page Up",
    "page-down": "Page Down",
    "caps-lock": "Caps Lock",
    **{f"f{n}": f"F{n}" for n in range(1, 25)},
}


@lru_cache(maxsize=8)
def project_markdown(source: str) -> ProjectedText:
    """The text a rendered page shows for Markdown `source`, each character mapped to its offset.

    Line ends are first made `\\n` (as markdown-it and Python's text files do), so offsets and
    lines refer to `ProjectedText.source`.
    """
    source = NEWLINES.sub("\n", source)
    projector = _Projector(source)
    reading = read(source)
    projector.walk(reading.skeleton, reading.paragraphs)
    return projector.result()

"""Map text a browser shows on a rendered MkDocs page back to lines of its Markdown source
(docs/architecture.md, "Anchoring").

The page is rendered by Python-Markdown, so no parser here reproduces its HTML exactly. Instead,
`project_markdown` parses the file with markdown-it-py and builds the text a reader would see, keeping
for every character its offset in the source; `normalise` then folds away what renderers change
(typographic quotes and dashes, runs of whitespace, case, permalink marks), and the quote is found
in that folded text by `anchoring.locate`, the same search that re-anchors quotes in pages. The
answer is a best-effort line range: the quote itself is kept for re-anchoring.
"""

from __future__ import annotations

import bisect
import html
import re
import string
from array import array
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from html.parser import HTMLParser
from itertools import accumulate
from pathlib import Path
from typing import Any, NamedTuple

from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.admon import admon_plugin
from mdit_py_plugins.deflist import deflist_plugin
from mdit_py_plugins.footnote import footnote_plugin
from mdit_py_plugins.front_matter import front_matter_plugin
from rapidfuzz.distance import Indel

from .anchoring import context_elsewhere, framed, locate
from .anchoring.text import find_all
from .pages import safe_path

__all__ = [
    "Block",
    "ProjectedText",
    "SourceMatch",
    "blocks",
    "locate_element",
    "locate_in_markdown",
    "map_source",
    "normalise",
    "project_markdown",
]

# Unlike a quote re-anchored in the page it was taken from, a quote looked up in Markdown may not
# be there at all (theme text, macros). A short one resembles unrelated text too easily ("Made with
# Material for MkDocs" vs "MkDocs, Material for MkDocs" scores 76), so approximate matches of
# quotes shorter than SHORT_QUOTE characters need MIN_SHORT_QUOTE_SCORE.
SHORT_QUOTE = 40
MIN_SHORT_QUOTE_SCORE = 85
MAX_EXCERPT_CHARS = 500
# Ranking exact occurrences of a quote, as `anchoring.locate` ranks candidates (hypothesis/client
# match-quote.ts weights): context decides between copies, then the old place, then the page's
# count of occurrences.
QUOTE_WEIGHT, PREFIX_WEIGHT, SUFFIX_WEIGHT = 50.0, 20.0, 20.0
TIE_MARGIN = 0.05
GOOD_CONTEXT = 0.75  # mean similarity of the context sides for a full score
SOME_CONTEXT = 0.65  # one side at least this similar speaks for a copy
# A quote of this many characters or more, found again with one word changed near where it was
# last seen (within ONE_WORD_NEAR characters), stays anchored whatever its similarity. Near is
# kept small: documentation repeats passages one word apart ("code copy buttons" / "code
# selection buttons"), and a deleted passage must not become its neighbour edited. An exact copy
# farther than ONE_WORD_REACH is a copy elsewhere, not the note's own passage.
MIN_ONE_WORD_QUOTE = 30
ONE_WORD_NEAR = 300
ONE_WORD_REACH = 2000
# An approximate match of a short quote showing this many of its words in other letter case is
# other text (a heading in title case), not the quote edited.
CASE_DIFFERS = 2
# Source files larger than this are not read (a Markdown page is kilobytes).
MAX_SOURCE_BYTES = 8 * 1024 * 1024
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
# Material content tabs (pymdownx.tabbed): `=== "Label"` with an indented body. Rewritten to an
# admonition of the same line count, which markdown-it parses with the same nesting rules.
_TAB_LINE = re.compile(r'^([ \t]*)===([+!]*)[ \t]+("[^"\n]*")[ \t]*$')
_TAB_TAG = "annotate-tab"
_NEW_TAB_GROUP = "annotate-new-group"  # `===!` starts a new set of tabs
# A table's delimiter row (`| --- | :-: |`); the `|` tells it from a rule or a setext underline.
_TABLE_DELIMITER = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
# A callout (markdown-callouts) titled by its bold first words: `TIP: **Title.** Body` shows
# "Title" and the body, not its kind (issue #26).
_CALLOUT_TITLED = re.compile(r"^( {0,3}(?:> ?)*)[A-Z]{2,}: (?=\*\*)")
_NEWLINES = re.compile(r"\r\n?")
_NEWLINE = re.compile("\n")
_BACKTICKS = re.compile(r"`+")
_FOOTNOTE_DEF = re.compile(r"^[ \t]{0,3}\[\^([^\]\n]+)\]:", re.MULTILINE)
_FENCE_TITLE = re.compile(r'\btitle="([^"]*)"')

# Characters the rendered page adds or changes and the source does not have (or the reverse).
_DROPPED = frozenset("¶↩\u200b\u200c\u200d\u2060\ufeff\xad\ufe0e\ufe0f")
_FOLDED = {
    **dict.fromkeys("‘’‚‛′´", "'"),
    **dict.fromkeys("“”„‟″", '"'),
    **dict.fromkeys("‐‑‒–—―−", "-"),
    "…": ".",
}
_RUNS = frozenset("-.")  # `--`/`---`/`...` become one dash or ellipsis under smarty


@dataclass(frozen=True)
class ProjectedText:
    """The text a page shows, with `offsets[i]` the source offset of `text[i]`."""

    source: str
    text: str
    offsets: tuple[int, ...]
    # code[i] is 1 where text[i] is shown inside `<pre>` or `<code>` (fenced, indented or inline code).
    code: bytes = b""

    def line_of(self, offset: int) -> int:
        """1-based line of a source offset."""
        return self.source.count("\n", 0, offset) + 1


@dataclass(frozen=True)
class SourceMatch:
    """Where a quote is in a Markdown file: 1-based inclusive lines, score 0-100, and the
    [start, end) offsets in the source with line ends made `\\n`."""

    line_start: int
    line_end: int
    start: int
    end: int
    excerpt: str
    score: int


class _Hit(NamedTuple):
    start: int
    end: int
    score: int
    exact: bool = False  # the quote itself, not an approximate match
    supported: bool = True  # its context agrees with the stored context on one side at least


# Text is folded a stretch at a time: ASCII stretches by slicing between the runs that collapse to
# their first character, other characters one by one. A page of Markdown is mostly ASCII.
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
# Runs that keep only their first character; three patterns scan faster than one alternation.
_ASCII_RUNS = (re.compile(r"\s\s+"), re.compile(r"--+"), re.compile(r"\.\.+"))
_LEADING_SPACE = re.compile(r"\s+")
_ASCII_SPACES = str.maketrans(dict.fromkeys("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f", " "))


def normalise(text: str) -> tuple[str, list[int]]:
    """Fold `text` for matching and return it with, for each character, its index in `text`.

    Whitespace runs become one space, permalink/backref marks are dropped, curly quotes become
    straight ones, dashes and ellipses collapse (smarty writes `--` as – and `...` as …), and case is folded (`!!! note`
    renders the title "Note").
    """
    out: list[str] = []
    index: list[int] = []
    if text.isascii():  # known without reading the text
        if text:
            _fold_ascii(text, 0, len(text), "", out, index)
        return "".join(out), index
    last = ""  # the last character written, for collapsing runs across stretches
    at = 0
    for m in _NON_ASCII.finditer(text):
        if m.start() > at:
            last = _fold_ascii(text, at, m.start(), last, out, index)
        last = _fold_other(text, m.start(), m.end(), last, out, index)
        at = m.end()
    if at < len(text):
        _fold_ascii(text, at, len(text), last, out, index)
    return "".join(out), index


def _fold_ascii(
    text: str, start: int, end: int, last: str, out: list[str], index: list[int]
) -> str:
    """Fold ASCII `text[start:end]` after `last`; return the new last character written."""
    first = text[start]
    if last == " " and first.isspace() and (spaces := _LEADING_SPACE.match(text, start, end)):
        start = spaces.end()
    elif first == last and first in _RUNS:
        while start < end and text[start] == first:
            start += 1
    if start == end:
        return last
    at = start
    runs = sorted(m.span() for pattern in _ASCII_RUNS for m in pattern.finditer(text, start, end))
    for run_start, run_end in runs:
        keep = run_start + 1  # a run keeps its first character
        out.append(text[at:keep].lower().translate(_ASCII_SPACES))
        index.extend(range(at, keep))
        at = run_end
    if at < end:
        out.append(text[at:end].lower().translate(_ASCII_SPACES))
        index.extend(range(at, end))
    return out[-1][-1]


def _fold_other(
    text: str, start: int, end: int, last: str, out: list[str], index: list[int]
) -> str:
    """Fold non-ASCII `text[start:end]` one character at a time after `last`."""
    for at in range(start, end):
        ch = text[at]
        if ch in _DROPPED:
            continue
        if ch.isspace():
            if last != " ":
                out.append(" ")
                index.append(at)
                last = " "
            continue
        folded = _FOLDED.get(ch, ch)
        if folded in _RUNS and last == folded:
            continue
        folded = folded.casefold()
        out.append(folded)
        index.extend([at] * len(folded))
        last = folded[-1]
    return last


class _View:
    """A region of the source as a string, with the source offset of each character."""

    def __init__(self, text: str, offsets: list[int]) -> None:
        self.text = text
        self.offsets = offsets

    @classmethod
    def raw(cls, source: str, start: int, end: int) -> _View:
        return cls(source[start:end], list(range(start, end)))

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


class _HTMLText(HTMLParser):
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


def _parser() -> MarkdownIt:
    return (
        MarkdownIt("commonmark")
        .enable("table")
        .use(front_matter_plugin)
        .use(admon_plugin)
        .use(deflist_plugin)
        .use(footnote_plugin)
    )


_MD = _parser()


def _line_starts(source: str) -> list[int]:
    """The offset of each line's first character."""
    return [0, *(m.end() for m in _NEWLINE.finditer(source))]


class _Projector:
    """Walks markdown-it tokens and aligns the text they carry with the source characters."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.line_starts = _line_starts(source)
        self.chars: list[str] = []
        self.offsets: list[int] = []
        self.code_flags = bytearray()  # 1 for each character shown as code
        self.cursor = 0
        self.region = (0, 0)
        self._decoded: _View | None = None
        self._raw: _View | None = None
        defs = [m.group(1) for m in _FOOTNOTE_DEF.finditer(source)]
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

    def align(self, piece: str, *, raw: bool = False) -> list[int]:
        """Source offsets of the characters of `piece`, found from the cursor on."""
        view = self._view(raw)
        pos = bisect.bisect_left(view.offsets, self.cursor)
        found = view.text.find(piece, pos) if piece else -1
        if found >= 0:
            offsets = view.offsets[found : found + len(piece)]
            self.cursor = offsets[-1] + 1
            return offsets
        # Not there verbatim (a generated admonition title, a code span over a line break, a link
        # text markdown-it normalised): align character by character, never far ahead.
        offsets = []
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

    def emit(self, text: str, offsets: list[int], *, code: bool = False) -> None:
        self.chars.extend(text)
        self.offsets.extend(offsets)
        self.code_flags.extend((b"\x01" if code else b"\x00") * len(text))

    def emit_text(self, piece: str, *, raw: bool = False, code: bool = False) -> None:
        self.emit(piece, self.align(piece, raw=raw), code=code)

    def end_block(self) -> None:
        if self.chars and self.chars[-1] != "\n":
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
        parser = _HTMLText()
        parser.feed(token.content)
        parser.close()
        self.enter(*token.map)
        for part, code in parser.parts:
            if part.strip():
                self.emit_text(part, code=code)
            else:  # the line breaks between tags: whitespace on the page too
                self.end_block()
        self.end_block()

    def walk(self, tokens: list[Token]) -> None:
        footnotes: list[tuple[int, int, int]] = []  # (number, start, end) in the projection
        fn_start = fn_number = 0
        # Content tabs: per open admonition [is_tab, label_start, label_end]; finished tabs of the
        # current set as (label_start, label_end, body_end).
        admonitions: list[list[Any]] = []
        tab_set: list[tuple[int, int, int]] = []
        for i, token in enumerate(tokens):
            kind = token.type
            if kind == "inline" and token.map is not None:
                self.inline(token)
            elif kind in ("fence", "code_block") and token.map is not None:
                self.code(token)
            elif kind == "html_block" and token.map is not None:
                self.html_block(token)
            elif kind == "admonition_open":
                at = len(self.chars)
                admonitions.append([token.meta.get("tag") == _TAB_TAG, at, at])
            elif kind == "admonition_title_close" and admonitions:
                admonitions[-1][2] = len(self.chars)
            elif kind == "admonition_close" and admonitions:
                is_tab, label_start, label_end = admonitions.pop()
                if is_tab:
                    tab_set.append((label_start, label_end, len(self.chars)))
                    if not _continues_tab_set(tokens, i):
                        self._labels_first(tab_set)
                        tab_set = []
            elif kind == "footnote_open":
                fn_start = len(self.chars)
                label = str(token.meta.get("label", ""))
                fn_number = self.footnote_number.get(label, len(footnotes) + 1)
            elif kind == "footnote_close":
                footnotes.append((fn_number, fn_start, len(self.chars)))
        if footnotes:
            # markdown-it lists footnotes by first reference, Python-Markdown by definition.
            self._reorder(footnotes[0][1], [(s, e) for _, s, e in sorted(footnotes)])

    def _labels_first(self, tabs: list[tuple[int, int, int]]) -> None:
        """Material shows a set of tabs as all labels, then all bodies (`alternate_style`).

        The labels touch (`<label>pip</label><label>uv</label>`): drop the line break after each.
        """
        labels = [(start, end - (self.chars[end - 1] == "\n")) for start, end, _ in tabs[:-1]]
        last_start, last_end, _ = tabs[-1]
        labels.append((last_start, last_end))
        bodies = [(end, body_end) for _, end, body_end in tabs]
        self._reorder(tabs[0][0], labels + bodies)

    def _reorder(self, base: int, pieces: list[tuple[int, int]]) -> None:
        """Replace the projection from `base` to its end with `pieces` ([start, end) ranges of it)."""
        chars, offsets, code = self.chars[base:], self.offsets[base:], self.code_flags[base:]
        del self.chars[base:], self.offsets[base:], self.code_flags[base:]
        for start, end in pieces:
            self.chars.extend(chars[start - base : end - base])
            self.offsets.extend(offsets[start - base : end - base])
            self.code_flags.extend(code[start - base : end - base])


def _keys_shown(content: str, offsets: list[int]) -> tuple[str, list[int]]:
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


def _continues_tab_set(tokens: list[Token], close: int) -> bool:
    """Whether the token after the tab closing at `close` opens the next tab of the same set."""
    if close + 1 >= len(tokens):
        return False
    nxt = tokens[close + 1]
    return (
        nxt.type == "admonition_open"
        and nxt.meta.get("tag") == _TAB_TAG
        and _NEW_TAB_GROUP not in nxt.info.split()
    )


def _tab_as_admonition(m: re.Match[str]) -> str:
    new = f" {_NEW_TAB_GROUP}" if "!" in m.group(2) else ""
    return f"{m.group(1)}!!! {_TAB_TAG}{new} {m.group(3)}"


def _escape_code_pipes(line: str) -> str:
    """Escape `|` inside code spans: Python-Markdown keeps them in the cell, GFM splits there."""
    out: list[str] = []
    at = 0
    for opening in _BACKTICKS.finditer(line):
        if opening.start() < at:
            continue
        closing = re.compile(rf"(?<!`){opening.group()}(?!`)").search(line, opening.end())
        if closing is None:
            break
        inner = line[opening.end() : closing.start()]
        out += [line[at : opening.end()], re.sub(r"(?<!\\)\|", r"\\|", inner), closing.group()]
        at = closing.end()
    return "".join(out) + line[at:]


_DEFINITION = re.compile(r"^:[ \t]{1,3}(?=\S)")


def _dedent_definitions(lines: list[str]) -> list[str]:
    """Definitions (`:   text` and the lines indented by four after it) as plain blocks.

    Python-Markdown's def_list takes a definition after a blank line or an HTML line (Material
    writes `<!-- md:option … -->` terms), where markdown-it's deflist sees no term and reads the
    indented lines that follow as a code block. A definition dedented shows the same text.
    """
    fence = ""
    in_definition = False
    for n, line in enumerate(lines):
        if in_definition:
            if not line.strip():
                continue
            if line.startswith("    ") or line.startswith("\t"):
                lines[n] = line[4:] if line.startswith("    ") else line[1:]
                continue
            if m := _DEFINITION.match(line):
                lines[n] = line[m.end() :]
                continue
            in_definition = False
        marker = _FENCE.match(line)
        if fence:
            closing = marker and marker.group(1)
            if closing and closing[0] == fence[0] and len(closing) >= len(fence):
                fence = ""
        elif marker:
            fence = marker.group(1)
        elif m := _DEFINITION.match(line):
            lines[n] = line[m.end() :]
            in_definition = True
    return lines


def _for_parsing(source: str) -> str:
    """`source` rewritten where markdown-it would read it unlike Python-Markdown, line for line.

    Token line maps of the result stay valid for `source`, against which text is aligned. Fenced
    code is left alone: docs that teach Markdown show tab and table syntax there.
    """
    lines = _dedent_definitions(source.split("\n"))
    fence = ""  # the marker of the open code fence
    in_table = False
    for n, line in enumerate(lines):
        marker = _FENCE.match(line)
        if fence:
            closing = marker.group(1) if marker else None
            if marker and closing and closing[0] == fence[0] and len(closing) >= len(fence):
                fence = "" if not line[marker.end() :].strip() else fence
            continue
        if marker:
            fence, in_table = marker.group(1), False
        elif tab := _TAB_LINE.match(line):
            lines[n] = _tab_as_admonition(tab)
        elif (callout := _CALLOUT_TITLED.match(line)) and (n == 0 or not lines[n - 1].strip()):
            lines[n] = callout.group(1) + line[callout.end() :]
        elif not line.strip():
            in_table = False
        elif "|" in line and n > 0 and _TABLE_DELIMITER.match(line) and "|" in lines[n - 1]:
            lines[n - 1] = _escape_code_pipes(lines[n - 1])
            in_table = True
        elif in_table:
            lines[n] = _escape_code_pipes(line)
    return "\n".join(lines)


@lru_cache(maxsize=8)
def project_markdown(source: str) -> ProjectedText:
    """The text a rendered page shows for Markdown `source`, each character mapped to its offset.

    Line ends are first made `\\n` (as markdown-it and Python's text files do), so offsets and
    lines refer to `ProjectedText.source`.
    """
    source = _NEWLINES.sub("\n", source)
    projector = _Projector(source)
    projector.walk(_MD.parse(_for_parsing(source)))
    return ProjectedText(
        source, "".join(projector.chars), tuple(projector.offsets), bytes(projector.code_flags)
    )


class Block(NamedTuple):
    """A top-level block of a Markdown file: lines [start, end), 0-based, and its kind.

    `kind` is the markdown-it token type without `_open` (`paragraph`, `bullet_list`, `fence`,
    `html_block`, `admonition`, `front_matter`, …), `footnote` for a footnote definition, `tab`
    for a content tab that continues the set of the tab before it and `tab_set` for one that
    starts a set.
    """

    start: int
    end: int
    kind: str


def blocks(source: str) -> list[Block]:
    """The top-level blocks of Markdown `source`, read as the source map reads them (content
    tabs as blocks of their own, definitions dedented), in source order (annotate/inline.py)."""
    source = _NEWLINES.sub("\n", source)
    found: list[Block] = []
    in_footnote = False
    for token in _MD.parse(_for_parsing(source)):
        if token.type == "footnote_open":
            in_footnote = True
        elif token.type == "footnote_close":
            in_footnote = False
        elif in_footnote and token.map is not None and token.level == 1:
            found.append(Block(token.map[0], token.map[1], "footnote"))
            in_footnote = False  # the definition's first block is where it starts
        elif token.level == 0 and token.map is not None:
            kind = token.type.removesuffix("_open")
            if kind == "admonition" and token.meta.get("tag") == _TAB_TAG:
                kind = "tab_set" if _NEW_TAB_GROUP in token.info.split() else "tab"
            found.append(Block(token.map[0], token.map[1], kind))
    found.sort()
    return found


# -- searching ----------------------------------------------------------------------------------


class _Haystack:
    """The normalised projection of a source, where to find it, and what answers line hints fast."""

    __slots__ = ("_masked", "_reach", "code", "line_starts", "offsets", "shown", "text")

    def __init__(
        self,
        text: str,
        offsets: array[int],
        line_starts: list[int],
        code: bytes = b"",
        shown: str = "",
    ) -> None:
        self.shown = shown  # shown[i]: the projected character text[i] was folded from
        self.text = text
        self.offsets = offsets  # the source offset of each character of `text`
        self.line_starts = line_starts  # source offset of each line's first character
        self.code = code or bytes(len(text))  # 1 where the character is shown as code
        self._reach: array[int] | None = None
        self._masked: dict[bool, str] = {}

    @property
    def reach(self) -> array[int]:
        """reach[i] = max(offsets[: i + 1]): non-decreasing, so bisectable.

        Made on the first line hint (a new note has none): a running maximum costs as much as
        the rest of a page's preparation, and most pages need none (their offsets are sorted).
        """
        if self._reach is None:
            offsets = self.offsets
            self._reach = (
                offsets
                if sorted(offsets) == offsets.tolist()
                else array("q", accumulate(offsets, max))
            )
        return self._reach

    def index_of_line(self, line: int) -> int:
        """The first character of `text` that comes from line `line` (1-based) or later.

        Offsets are not sorted (footnotes and tab labels move), but the first index whose offset
        reaches a value is also the first whose running maximum does.
        """
        at = self.line_starts[min(max(line, 1), len(self.line_starts)) - 1]
        return bisect.bisect_left(self.reach, at)

    def in_code(self, at: int) -> bool:
        return at < len(self.code) and self.code[at] == 1

    def masked(self, in_code: bool) -> str:
        """`text` with every character of the other kind (code, or not code) blanked out, so an
        approximate search cannot land there; offsets are unchanged."""
        if in_code not in self._masked:
            keep = 1 if in_code else 0
            self._masked[in_code] = "".join(
                ch if flag == keep else _BLANK
                for ch, flag in zip(self.text, self.code, strict=True)
            )
        return self._masked[in_code]


# Stands for blanked-out text: validation refuses NUL in quotes, so it never matches one.
_BLANK = "\x00"


# Keyed by the whole source text: a page edited and saved is a new key. 128 pages of ~30 kB cost
# ~30 MB; the compact arrays keep that far below a tuple of int objects.
@lru_cache(maxsize=128)
def _haystack(source: str) -> _Haystack:
    projected = project_markdown(source)
    text, index = normalise(projected.text)
    offsets = array("q", map(projected.offsets.__getitem__, index))
    code = bytes(map(projected.code.__getitem__, index)) if projected.code else b""
    shown = "".join(map(projected.text.__getitem__, index))
    return _Haystack(text, offsets, _line_starts(source), code, shown)


class _Where(NamedTuple):
    """What the page said about the selection (issue #13): whether it starts inside `<pre>` or
    `<code>`, and which occurrence of the quote among those of the same kind it is."""

    in_code: bool | None = None
    occurrence: int | None = None


def _side(expected: str, actual: str) -> float | None:
    return None if not expected else Indel.normalized_similarity(expected, actual)


def _looks_like_markup(context: str) -> bool:
    """Whether page text around a quote holds Markdown syntax: then it was selected in a code
    example that shows Markdown, not in the rendered result."""
    return bool(_MARKUP.search(context))


_MARKUP = re.compile(r"[`*_\[\]{}|<>]|^\s*(?:!!!|\?\?\?|===|#|-|\d+\.)\s|\]\(|\]:")


def _exact(
    haystack: _Haystack,
    hits: list[int],
    quote: str,
    before: str,
    after: str,
    hint: int | None,
    where: _Where,
) -> _Hit | None:
    """The best exact occurrence of `quote`, or None when there is none or no way to choose.

    A unique occurrence is found whatever the context says (issue #13, class 2): context ranks
    occurrences and lowers the score, never rejects the only one. Between occurrences, the
    kind the page reported (code or not) comes first: a quote selected in prose never maps
    into a code example while the prose holds it too (class 1).
    """
    text = haystack.text
    kinds = [haystack.in_code(h) for h in hits]
    occurrence = where.occurrence
    if where.in_code is not None:
        same = [h for h, k in zip(hits, kinds, strict=True) if k == where.in_code]
        if same:
            hits, kinds = same, [where.in_code] * len(same)
        else:
            occurrence = None  # counted among occurrences the Markdown does not have
    scored: list[tuple[int, int, float, bool, bool, bool]] = []
    first, last = len(text) - len(text.lstrip()), len(text.rstrip())
    for n, hit in enumerate(hits):
        end = hit + len(quote)
        # At an edge of the Markdown the page's context is the theme's (the header before a
        # page's first heading, the footer after its last line): no evidence either way, not
        # a disagreement (issue #26: `# Formatting` got null).
        p_edge = hit == 0 or (hit <= first and bool(before.strip()))
        s_edge = end == len(text) or (end >= last and bool(after.strip()))
        p = None if p_edge else _side(before, text[max(0, hit - len(before)) : hit])
        s = None if s_edge else _side(after, text[end : end + len(after)])
        sides = [x for x in (p, s) if x is not None]
        weighted = (
            QUOTE_WEIGHT
            + PREFIX_WEIGHT * (1.0 if p is None else p)
            + SUFFIX_WEIGHT * (1.0 if s is None else s)
        ) / (QUOTE_WEIGHT + PREFIX_WEIGHT + SUFFIX_WEIGHT)
        agrees = not sides or sum(sides) / len(sides) >= GOOD_CONTEXT
        # An edge is no evidence for a copy either: only context that was compared supports.
        compared = bool(sides) or not ((before and p_edge) or (after and s_edge))
        supports = max(sides) >= SOME_CONTEXT if sides else compared
        scored.append((hit, n, weighted, agrees, supports, compared))
    if len(scored) == 1:
        hit, _, weighted, agrees, supports, _ = scored[0]
        score = 100 if agrees else round(100 * weighted)
        return _Hit(hit, hit + len(quote), score, True, supports)
    top = max(item[2] for item in scored)
    tied = [item for item in scored if item[2] >= top - TIE_MARGIN]
    # Old notes carry no kind: prose-looking context prefers the rendered text over an example.
    prefer_prose = where.in_code is None and not _looks_like_markup(before + " " + after)

    def rank(item: tuple[int, int, float, bool, bool, bool]) -> tuple[int, int, int, int, int]:
        hit, n = item[0], item[1]
        return (
            0 if hint is None else abs(hit - hint),
            0 if occurrence is None else int(n != occurrence),
            int(not item[5]),  # context compared and agreeing, before an edge's benefit of doubt
            int(prefer_prose and haystack.in_code(hit)),
            hit,
        )

    hit, n, weighted, agrees, supports, compared = min(tied, key=rank)
    told = occurrence is not None and n == occurrence
    if (len(tied) > 1 or not compared) and not (supports or told or hint is not None):
        # Several places fit, or the best is at an edge of the Markdown where its context could
        # not be compared, and nothing speaks for one: no guess.
        return None
    score = 100 if agrees else round(100 * weighted)
    return _Hit(hit, hit + len(quote), score, True, supports)


def _one_word_changed(
    haystack: _Haystack,
    quote: str,
    prefix: str,
    suffix: str,
    hint: int,
    kind: bool | None = None,
) -> _Hit | None:
    """The quote with one of its words changed (into one or two others), near where it was
    last seen: the edit an agent makes most (issue #13, class 3). A similarity threshold rejects
    it in short quotes where the word is long ("the documentation" → "the docs"); requiring
    every other word, in order, next to the old place keeps it from matching other text, and
    `anchoring.framed` (what `locate` decides on its own matches) from taking a one-word twin
    of a passage rewritten in more words (issue #26)."""
    words = quote.split(" ")
    if len(quote) < MIN_ONE_WORD_QUOTE or len(words) < 4:
        return None
    lo = max(0, hint - ONE_WORD_NEAR)
    text = haystack.text if kind is None else haystack.masked(kind)
    window = text[lo : hint + len(quote) + ONE_WORD_NEAR]
    found: set[tuple[int, int]] = set()
    for replacement in (r"[^ \x00]+", r"[^ \x00]+ [^ \x00]+"):  # one word, else two
        for i in range(len(words)):
            pattern = " ".join(
                [*map(re.escape, words[:i]), replacement, *map(re.escape, words[i + 1 :])]
            )
            found.update(m.span() for m in re.finditer(pattern, window))
        if found:
            break
    if len(found) != 1:
        return None  # not there, or several places: no guess
    start, end = next(iter(found))
    selector = {"exact": quote, "prefix": prefix, "suffix": suffix, "start": hint}
    if not framed(haystack.text, selector, lo + start, lo + end):
        return None
    score = round(100 * Indel.normalized_similarity(quote, window[start:end]))
    return _Hit(lo + start, lo + end, score)


def _same_case(haystack: _Haystack, hit: _Hit, original: str) -> bool:
    """Whether the letters shown at `hit` are the quote's, case included."""
    if not haystack.shown:
        return True
    shown = haystack.shown[hit.start : hit.end]
    return [c for c in shown if c.isalpha()] == [c for c in original if c.isalpha()]


def _case_differs(haystack: _Haystack, hit: _Hit, original: str) -> bool:
    """Whether words shown at `hit` are the quote's in other letter case: a heading in title
    case ("Backward Incompatible Changes") is not an edit of the prose that said it ("backward
    incompatible changes have"). A one-word edit leaves the other words' case, but its new word
    may happen to be one of the quote's in other case: two such words, not one."""
    if not haystack.shown:
        return False
    words = set(original.split())
    folded = {word.casefold() for word in words}
    recased = [
        word
        for word in haystack.shown[hit.start : hit.end].split()
        if word not in words and word.casefold() in folded
    ]
    return len(recased) >= CASE_DIFFERS


def _search(
    haystack: _Haystack,
    quote: str,
    prefix: str,
    suffix: str,
    hint: int | None,
    where: _Where,
    original: str = "",
) -> _Hit | None:
    """Find `quote` in the haystack (all normalised): exact occurrences first, ranked here by
    the page's report, context and the hint; else `anchoring.locate`'s approximate match (the
    one re-anchoring algorithm, docs/architecture.md), kept to the reported kind of text."""
    hits = find_all(haystack.text, quote)
    kind = where.in_code
    if (
        hits
        and hint is not None
        and kind is not None
        and not any(haystack.in_code(h) == kind for h in hits)
    ):
        # Re-locating: the passage of the reported kind, edited, before a copy of the other
        # kind (a reworded result must not move into the example above it).
        near = _approximate(haystack, quote, prefix, suffix, hint, kind)
        if near is not None:
            return near
    if hits:  # when nothing tells which copy, no answer: never a guess
        hit = _exact(haystack, hits, quote, prefix, suffix, hint, where)
        far = hit is not None and hint is not None and abs(hit.start - hint) > ONE_WORD_REACH
        # `far` implies a hint; mypy does not follow that through the bool.
        if (
            far
            and hint is not None
            and (near := _one_word_changed(haystack, quote, prefix, suffix, hint, kind)) is not None
        ):
            return near  # the note's own passage, edited, not a copy of it elsewhere
        if hit is None:
            return None
        if hint is not None and hit.score < 100:
            # A copy whose context does not agree, while the note's own passage, edited, may
            # stand where it was, framed by its context (a code line repeated in three fences,
            # one word of the noted copy changed): `locate` decides, as on the page, where a
            # framed match outranks a copy elsewhere.
            own = _approximate(haystack, quote, prefix, suffix, hint, kind)
            if own is not None and haystack.text[own.start : own.end] != quote:
                return own
        # Other words in the same letters ("Built-in privacy plugin", a deleted heading, vs
        # "the built-in privacy plugin" in prose) are taken only where the context agrees.
        if hit.score < 100 and not _same_case(haystack, hit, original):
            return None
        # Nothing around it is as it was, far from where the note was last seen: a copy
        # elsewhere of a passage that was deleted.
        return None if far and not hit.supported else hit
    hit = _approximate(haystack, quote, prefix, suffix, hint, kind)
    if hit is None:
        return None
    if len(quote) < SHORT_QUOTE and _case_differs(haystack, hit, original):
        return None
    # A look-alike of a deleted passage (`context_elsewhere`).
    if context_elsewhere(haystack.text, len(quote), prefix, suffix, hint, hit.start, hit.end):
        return None
    return hit


def _approximate(
    haystack: _Haystack, quote: str, prefix: str, suffix: str, hint: int | None, kind: bool | None
) -> _Hit | None:
    """`anchoring.locate`'s approximate match, of the reported kind (code or not) when known;
    else, near where the note was last seen, the quote with one word changed."""
    end = None if hint is None else hint + len(quote)
    match = locate(haystack.text, quote, prefix=prefix, suffix=suffix, start=hint, end=end)
    if match is not None and kind is not None and haystack.in_code(match.start) != kind:
        other = match
        masked = haystack.masked(kind)
        match = locate(masked, quote, prefix=prefix, suffix=suffix, start=hint, end=end)
        if match is None and hint is not None and abs(other.start - hint) <= ONE_WORD_NEAR:
            # Nothing of the reported kind, and the other kind where the note was last seen:
            # its own passage, edited, which the page reported wrongly (a code line reported
            # as prose by a page whose text changed after load). The page's highlight follows
            # it; so does the note.
            match = other
    if match is None:
        return (
            None if hint is None else _one_word_changed(haystack, quote, prefix, suffix, hint, kind)
        )
    return _Hit(match.start, match.end, round(match.score))


def _excerpt(source: str, line_start: int, line_end: int) -> str:
    lines = source.split("\n")[line_start - 1 : line_end]
    # NUL becomes U+FFFD, as CommonMark renders it: no stored text holds a NUL (SQLite's JSON
    # functions, which write the web API's listings, would cut the string there).
    excerpt = "\n".join(lines).replace("\x00", "\ufffd")
    if len(excerpt) > MAX_EXCERPT_CHARS:
        excerpt = excerpt[: MAX_EXCERPT_CHARS - 1] + "…"
    return excerpt


def prepare(source: str) -> None:
    """Project and fold `source` now, so the next `locate_in_markdown` in it is fast."""
    _haystack(_NEWLINES.sub("\n", source))


def locate_in_markdown(
    source: str,
    exact: str,
    *,
    prefix: str = "",
    suffix: str = "",
    hint_line: int | None = None,
    in_code: bool | None = None,
    occurrence: int | None = None,
) -> SourceMatch | None:
    """Find rendered text `exact` in Markdown `source`; None when it is not there (theme text).

    `prefix`/`suffix` (the text shown before and after it) break ties between repeated text;
    `hint_line` (1-based) prefers the occurrence nearest to where the quote was last seen;
    `in_code` (the selection starts inside `<pre>`/`<code>`) and `occurrence` (its index among
    the page's occurrences of the quote of that kind) say which copy the reviewer selected.
    """
    quote, before, after = (normalise(part)[0] for part in (exact, prefix, suffix))
    # Whitespace at the quote's edges belongs to its context, where the search looks for it.
    if quote.startswith(" "):
        before = before.rstrip() + " "
    if quote.endswith(" "):
        after = " " + after.lstrip()
    quote = quote.strip()
    if not quote:
        return None
    source = _NEWLINES.sub("\n", source)
    haystack = _haystack(source)
    offsets = haystack.offsets
    hint = None if hint_line is None else haystack.index_of_line(hint_line)
    hit = _search(haystack, quote, before, after, hint, _Where(in_code, occurrence), exact.strip())
    if hit is None or hit.end <= hit.start:
        return None
    near = hint is not None and abs(hit.start - hint) <= ONE_WORD_NEAR
    if not (hit.exact or near) and len(quote) < SHORT_QUOTE and hit.score < MIN_SHORT_QUOTE_SCORE:
        return None  # a new note's short quote resembling other text (theme text)
    span = offsets[hit.start : hit.end]
    start, end = min(span), max(span) + 1
    line_start = source.count("\n", 0, start) + 1
    line_end = source.count("\n", 0, end - 1) + 1
    return SourceMatch(
        line_start=line_start,
        line_end=line_end,
        start=start,
        end=end,
        excerpt=_excerpt(source, line_start, line_end),
        score=hit.score,
    )


# -- elements -----------------------------------------------------------------------------------

# The block a rendered element comes from, by tag (and, for <div>, by class): an element note
# points at the whole table, fence or admonition, not at the line its first words are on.
_BLOCK_OF_TAG = {
    "table": "table_open",
    "pre": "fence",
    "ul": "bullet_list_open",
    "ol": "ordered_list_open",
    "li": "list_item_open",
    "dl": "dl_open",
    "blockquote": "blockquote_open",
    "details": "admonition_open",
    "p": "paragraph_open",
    **{f"h{n}": "heading_open" for n in range(1, 7)},
}
_BLOCK_OF_CLASS = {
    "admonition": "admonition_open",
    "highlight": "fence",
    "tabbed-set": "admonition_open",
}
# Element text longer than this is cut (at a word) before it is looked for.
MAX_ELEMENT_QUOTE = 160
_URL_SPLIT = re.compile(r"[?#]")


def _element_text(selector: Mapping[str, Any]) -> str:
    """The text an element shows, from its HTML preview (cut at a whole word)."""
    parser = _HTMLText()
    try:
        parser.feed(str(selector.get("outerHtmlPreview") or ""))
        parser.close()
    except (AssertionError, ValueError):  # HTMLParser on a cut tag
        pass
    text = " ".join(" ".join(part for part, _ in parser.parts).split())
    text = "".join(ch for ch in text if ch not in _DROPPED).rstrip("…").strip()
    if len(text) > MAX_ELEMENT_QUOTE or (selector.get("outerHtmlPreview") or "").endswith("…"):
        cut = text[:MAX_ELEMENT_QUOTE]
        text = cut.rsplit(" ", 1)[0] if " " in cut else cut
    return text


def _outside_fences(source: str) -> list[tuple[int, str]]:
    """(1-based number, line) of the lines that are not inside fenced code."""
    out: list[tuple[int, str]] = []
    fence = ""
    for n, line in enumerate(source.split("\n"), 1):
        marker = _FENCE.match(line)
        if fence:
            closing = marker and marker.group(1)
            if closing and closing[0] == fence[0] and len(closing) >= len(fence):
                fence = ""
            continue
        if marker:
            fence = marker.group(1)
            continue
        out.append((n, line))
    return out


def _url_lines(source: str, url: str, alt: str, hint_line: int | None) -> tuple[int, int] | None:
    """The line whose Markdown (or HTML) names `url` — as written, or by its last path part,
    since MkDocs rewrites relative links — preferring one that also holds `alt`."""
    path = _URL_SPLIT.split(url, 1)[0]
    last = path.rstrip("/").rsplit("/", 1)[-1]
    needles = [n for n in dict.fromkeys((url, path, last)) if len(n) >= 3]
    if not needles:
        return None
    lines = _outside_fences(source)
    for needle in needles:
        found = [
            n
            for n, line in lines
            if needle in line and ("](" in line or "=" in line or "]:" in line)
        ]
        if alt and len(found) > 1:
            with_alt = [n for n in found if alt in source.split("\n")[n - 1]]
            found = with_alt or found
        if len(found) == 1:
            return found[0], found[0]
        if found and hint_line is not None:
            nearest = min(found, key=lambda n: abs(n - hint_line))
            return nearest, nearest
        if found:
            return None  # several places name it and nothing says which: no guess
    return None


def _enclosing_block(source: str, line: int, kind: str) -> tuple[int, int] | None:
    """The 1-based inclusive lines of the innermost `kind` block around `line`."""
    best: tuple[int, int] | None = None
    for token in _MD.parse(_for_parsing(source)):
        if token.type == kind and token.map and token.map[0] < line <= token.map[1]:
            best = (token.map[0] + 1, max(token.map[0] + 1, token.map[1]))
    return best


def locate_element(
    source: str, selector: Mapping[str, Any], *, hint_line: int | None = None
) -> SourceMatch | None:
    """Find the Markdown an Alt+clicked element was rendered from (issue #13, class 7).

    By its `src` or `href` (with its `alt`), else by its text: an image, a link, a table, an
    admonition, a code block, a heading. None when the Markdown does not show it (theme parts).
    """
    source = _NEWLINES.sub("\n", source)
    attributes = selector.get("attributes") or {}
    tag = str(selector.get("tagName") or "").lower()
    alt = str(attributes.get("alt") or "")
    for key in ("src", "href"):
        url = str(attributes.get(key) or "")
        if url and not url.startswith(("#", "data:", "javascript:")):
            lines = _url_lines(source, url, alt, hint_line)
            if lines is not None:
                return _element_match(source, *lines)
    text = _element_text(selector) or alt
    if not text:
        return None
    found = locate_in_markdown(source, text, hint_line=hint_line)
    if found is None:
        return None
    classes = str(attributes.get("class") or "").split()
    kind = _BLOCK_OF_TAG.get(tag) or next(
        (_BLOCK_OF_CLASS[c] for c in classes if c in _BLOCK_OF_CLASS), None
    )
    block = _enclosing_block(source, found.line_start, kind) if kind else None
    if block is None:
        return found
    return _element_match(source, *block, score=found.score)


def _element_match(source: str, line_start: int, line_end: int, *, score: int = 100) -> SourceMatch:
    lines = source.split("\n")
    while line_end > line_start and not lines[line_end - 1].strip():
        line_end -= 1  # a block's map ends after its trailing blank lines
    starts = _line_starts(source)
    start = starts[line_start - 1]
    end = starts[line_end] - 1 if line_end < len(starts) else len(source)
    return SourceMatch(
        line_start, line_end, start, end, _excerpt(source, line_start, line_end), score
    )


# -- files ---------------------------------------------------------------------------------------


def _resolve_inside(project_dir: str | Path, rel_path: str) -> tuple[Path, str] | None:
    """The existing file `rel_path` names inside `project_dir`, and its POSIX path relative to it."""
    target = safe_path(Path(project_dir), rel_path)
    if target is None or not target.is_file():
        return None
    return target, target.relative_to(Path(project_dir).resolve()).as_posix()


def map_source(
    project_dir: str | Path,
    rel_path: str,
    exact: str,
    prefix: str = "",
    suffix: str = "",
    *,
    hint_line: int | None = None,
) -> dict[str, Any] | None:
    """Locate a quote in the Markdown file `rel_path` of the project: its `source`
    (docs/data-model.md) plus `score`.

    Returns `{"path", "lineStart", "lineEnd", "excerpt", "score"}`, or None when the quote is not in
    the file (theme text, macros), the file is missing or too large, or the path leaves the project.
    """
    resolved = _resolve_inside(project_dir, rel_path)
    if resolved is None:
        return None
    path, relative = resolved
    try:
        if path.stat().st_size > MAX_SOURCE_BYTES:
            return None
        # utf-8-sig drops a BOM; read_text's universal newlines keep line numbers for CRLF files.
        source = path.read_text(encoding="utf-8-sig", errors="replace")
    except OSError:
        return None
    match = locate_in_markdown(source, exact, prefix=prefix, suffix=suffix, hint_line=hint_line)
    if match is None:
        return None
    return {
        "path": relative,
        "lineStart": match.line_start,
        "lineEnd": match.line_end,
        "excerpt": match.excerpt,
        "score": match.score,
    }

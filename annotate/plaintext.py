"""A file's plain paragraphs read without markdown-it: parsing a page costs its markup.

A documentation page is mostly paragraphs of words, and markdown-it-py spends most of a page's
parse on them (issue #31: 10 ms of a cold note's 12 on a 30 kB page). A paragraph at the top level
after a blank line whose lines start with a letter and hold none of the characters that Markdown's
inline syntax or the projection gives a meaning is one `paragraph` of one `text` token a line to
markdown-it, whatever the rest of the file says. Each run of such paragraphs (blank lines between
them only) becomes a one-line placeholder paragraph followed by blank lines, so every line keeps
its number; markdown-it parses the rest (the skeleton, cached by its text: an edit inside plain
paragraphs re-parses nothing) and the paragraphs' tokens are made here.

Markdown-it checks the reading: each placeholder must come back as a top-level paragraph starting
on its line (not inside a fence, HTML block or front matter that the scan here did not see), else
the file is parsed whole. `mdparse.parse_full` is what this must equal, token for token
(tests/test_plaintext.py).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import NamedTuple

from markdown_it import MarkdownIt
from markdown_it.token import Token

__all__ = ["Paragraph", "Reading", "placed", "read"]

# A plain line: starts with a letter (no block syntax starts so), ends without whitespace (a hard
# break), holds no whitespace but spaces and no character that inline rules (escapes, code,
# emphasis, links and footnotes, HTML, entities, strikethrough) or the projection (attr_list
# braces, pymdownx.keys' `++`, table pipes) read; NUL is replaced by markdown-it.
_PLAIN = re.compile(r"[^\W\d_][^\\`*_\[\]<>&{}|~+\x00\t\n\x0b\x0c\r]*")
_OTHER_SPACE = re.compile(r"[^\S ]")  # whitespace but the space: ASCII's is in _PLAIN already
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
# HTML blocks that run over blank lines (CommonMark's kinds 1 and 2), until their end marker.
_HTML_OPEN = re.compile(r"[ \t]*<(?:(!--)|(pre|script|style|textarea)(?=[\s>]|$))", re.IGNORECASE)
PLACEHOLDER = "x"
# Kept for the next version of a page being edited: skeletons (tokens of the rest of a page, up to
# 1.3 MB for MkDocs' 42 kB configuration.md: tracemalloc) and paragraphs with markup (a few kB).
SKELETONS = 32
PARAGRAPHS = 2048
_LETTER = re.compile(r"[^\W\d_]")
# A link reference or footnote definition anywhere (fences too: conservative): then a paragraph
# with brackets reads differently in the file and alone.
_DEFINITION = re.compile(r"^ {0,3}\[[^\]]*\]:", re.MULTILINE)


class Paragraph(NamedTuple):
    """A top-level paragraph read without the file: lines [start, end), and markdown-it's
    tokens of it alone (lines from 0; shared, never changed), None for a plain one."""

    start: int
    end: int
    alone: tuple[Token, ...] | None


class Reading(NamedTuple):
    """A file as `read` reads it: markdown-it's tokens of its skeleton (shared: never change
    them) and, by the index of each placeholder's `paragraph_open`, the paragraphs it stands
    for. `tokens()` gives the file's tokens."""

    skeleton: Sequence[Token]
    paragraphs: Mapping[int, list[Paragraph]]
    lines: list[str]

    def tokens(self) -> list[Token]:
        """The file's tokens: the skeleton's, placeholders replaced by their paragraphs."""
        if not self.paragraphs:
            return list(self.skeleton)
        out: list[Token] = []
        at = 0
        for i, run in sorted(self.paragraphs.items()):
            out += self.skeleton[at:i]
            for paragraph in run:
                out += placed(paragraph) or _paragraph(self.lines, paragraph.start, paragraph.end)
            at = i + 3
        out += self.skeleton[at:]
        return out


def placed(paragraph: Paragraph) -> list[Token]:
    """The tokens of a paragraph read alone, moved to its lines ([] for a plain one)."""
    if paragraph.alone is None:
        return []
    opening, inline, closing = paragraph.alone
    where = [paragraph.start, paragraph.end]
    return [opening.copy(map=where), inline.copy(map=list(where)), closing]


class _Kept:
    """Paragraph texts and their tokens alone (None: not one paragraph alone), the least
    recently used dropped first; shared by the server's threads."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[str, tuple[Token, ...] | None] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str) -> tuple[Token, ...] | bool | None:
        """The tokens kept for `text`, or False when none are."""
        with self._lock:
            if text not in self._items:
                return False
            self._items.move_to_end(text)
            return self._items[text]

    def put(self, text: str, tokens: tuple[Token, ...] | None) -> None:
        with self._lock:
            self._items[text] = tokens
            self._items.move_to_end(text)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def cache_clear(self) -> None:
        """Forget every paragraph (as `functools.lru_cache` names it)."""
        with self._lock:
            self._items.clear()


_kept = _Kept(PARAGRAPHS)


def _one_paragraph(tokens: Sequence[Token], first: int, lines: int) -> bool:
    """Whether `tokens` are a paragraph of lines [first, first + lines) and nothing else."""
    return (
        len(tokens) == 3
        and tokens[0].type == "paragraph_open"
        and tokens[0].map == [first, first + lines]
        and tokens[1].type == "inline"
    )


def _read_all_alone(texts: list[str], md: MarkdownIt) -> None:
    """Keep each paragraph text's tokens alone, read in one parse of them all, blank lines
    between: each is then read as alone (no link or footnote is defined in a paragraph that
    starts with a letter), unless an inline footnote adds tokens; then one by one."""
    tokens = md.parse("\n\n".join(texts))
    if len(tokens) == 3 * len(texts):
        read: list[tuple[Token, ...]] = []
        first = 0
        for i, text in enumerate(texts):
            lines = text.count("\n") + 1
            opening, inline, closing = tokens[3 * i : 3 * i + 3]
            if not _one_paragraph(tokens[3 * i : 3 * i + 3], first, lines):
                break
            where = [0, lines]
            read.append((opening.copy(map=where), inline.copy(map=list(where)), closing))
            first += lines + 1
        else:
            for text, alone in zip(texts, read, strict=True):
                _kept.put(text, alone)
            return
    for text in texts:
        alone = tuple(md.parse(text))
        _kept.put(text, alone if _one_paragraph(alone, 0, text.count("\n") + 1) else None)


def _plain(line: str) -> bool:
    return (
        _PLAIN.fullmatch(line) is not None
        and line[-1] != " "
        and (line.isascii() or _OTHER_SPACE.search(line) is None)
    )


def _blank(line: str) -> bool:
    return not line.strip(" \t")


def _front_matter_end(lines: list[str]) -> int:
    """The first line after front matter (0 without), or -1 when it is not closed."""
    if not lines or not lines[0].startswith("---"):
        return 0
    for n in range(1, len(lines)):
        if lines[n].startswith(("---", "...")):
            return n + 1
    return -1


def runs(
    lines: list[str], source: list[str], unread: list[str], text: str | None = None
) -> list[list[Paragraph]]:
    """Runs of top-level paragraphs read alone, of `lines` (the file as parsed) whose lines are
    those of `source` (the file as written); each line starts with a letter, and a paragraph
    with markup reads as one paragraph alone, with no brackets if the file defines links.

    Conservative: a line this scan takes for one that markdown-it reads otherwise is caught by
    the placeholder check (`read`); a paragraph left out only costs its parse. `text`: `lines`
    joined, when the caller has it.
    """
    found: list[list[Paragraph]] = []
    start = _front_matter_end(lines)
    if start < 0:
        return found
    text = "\n".join(lines) if text is None else text
    # `]:` first: the multi-line pattern alone tries every character of the page.
    defines = "]:" in text and _DEFINITION.search(text) is not None
    fence = ""
    html_end = ""
    after_blank = True
    in_run = False
    n, count = start, len(lines)
    while n < count:
        line = lines[n]
        if fence:
            marker = _FENCE.match(line)
            closing = marker.group(1) if marker else ""
            if closing[:1] == fence[0] and len(closing) >= len(fence):
                fence = fence if line[marker.end() :].strip() else ""  # type: ignore[union-attr]
            n, after_blank, in_run = n + 1, False, False
            continue
        if html_end:
            if html_end in line.lower():
                html_end = ""
            n, after_blank, in_run = n + 1, False, False
            continue
        if not line.strip(" \t"):  # `_blank`, inline: one call fewer a line
            n, after_blank = n + 1, True
            continue
        if after_blank and _LETTER.match(line) and line == source[n]:
            end = n + 1
            while end < count and _LETTER.match(lines[end]) and lines[end] == source[end]:
                end += 1
            paragraph = None
            if end == count or _blank(lines[end]):
                paragraph = _read_alone(lines, n, end, defines, unread)
            if paragraph is None:
                n, after_blank, in_run = end, False, False
                continue
            if in_run:
                found[-1].append(paragraph)
            else:
                found.append([paragraph])
            n, after_blank, in_run = end, False, True
            continue
        if marker := _FENCE.match(line):
            fence = marker.group(1)
        elif html := _HTML_OPEN.match(line):
            closer = "-->" if html.group(1) else f"</{html.group(2).lower()}>"
            if closer not in line[html.end() :].lower():
                html_end = closer
        n, after_blank, in_run = n + 1, False, False
    return found


def _read_alone(
    lines: list[str], start: int, end: int, defines: bool, unread: list[str]
) -> Paragraph | None:
    """Paragraph lines [start, end) (each starting with a letter) read alone, or None; one
    whose text was never read alone is added to `unread` and given no tokens yet (`()`)."""
    if _plain(lines[start]) if end == start + 1 else all(map(_plain, lines[start:end])):
        return Paragraph(start, end, None)
    text = "\n".join(lines[start:end])
    if defines and ("[" in text or "]" in text):
        return None
    alone = _kept.get(text)
    if alone is False:
        unread.append(text)
        return Paragraph(start, end, ())
    return None if alone is None else Paragraph(start, end, alone)  # type: ignore[arg-type]


@lru_cache(maxsize=SKELETONS)
def _skeleton(text: str, md: MarkdownIt) -> tuple[Token, ...]:
    # A tuple: the same tokens are handed out for every file of this skeleton, never changed.
    return tuple(md.parse(text))


def _paragraph(lines: list[str], start: int, end: int) -> list[Token]:
    """The tokens markdown-it makes of plain lines [start, end) (`_PLAIN`)."""
    children: list[Token] = []
    for line in lines[start:end]:
        if children:
            children.append(Token("softbreak", "br", 0))
        children.append(Token("text", "", 0, content=line))
    content = "\n".join(lines[start:end])
    return [
        Token("paragraph_open", "p", 1, map=[start, end], block=True),
        Token(
            "inline",
            "",
            0,
            map=[start, end],
            level=1,
            children=children,
            content=content,
            block=True,
        ),
        Token("paragraph_close", "p", -1, block=True),
    ]


def read(text: str, md: MarkdownIt, source: str) -> Reading:
    """How `md` reads `text` (line ends `\\n`), plain paragraphs read here; `text` is `source`
    rewritten line for line (`mdparse`): lines rewritten are left to markdown-it."""
    lines = text.split("\n")
    written = source.split("\n") if source is not text else lines
    unread: list[str] = []
    found = runs(lines, written, unread, text)
    if unread:  # read them all in one parse, then scan again with what they are
        _read_all_alone(list(dict.fromkeys(unread)), md)
        found = runs(lines, written, [], text)
    if not found:
        return Reading(md.parse(text), {}, lines)
    skeleton = list(lines)
    by_line: dict[int, list[Paragraph]] = {}
    for run in found:
        first, last = run[0].start, run[-1].end
        skeleton[first:last] = [PLACEHOLDER] + [""] * (last - first - 1)
        by_line[first] = run
    parsed = _skeleton("\n".join(skeleton), md)
    paragraphs = {
        i: by_line[token.map[0]]
        for i, token in enumerate(parsed)
        if token.map and token.map[0] in by_line and _is_placeholder(parsed, i)
    }
    if len(paragraphs) != len(found):
        return Reading(md.parse(text), {}, lines)
    return Reading(parsed, paragraphs, lines)


def _is_placeholder(tokens: Sequence[Token], i: int) -> bool:
    """Whether tokens[i:i + 3] are a top-level paragraph of the placeholder line alone."""
    if i + 2 >= len(tokens):
        return False
    opening, inline, closing = tokens[i : i + 3]
    return (
        opening.type == "paragraph_open"
        and opening.level == 0
        and opening.map is not None
        and opening.map[1] == opening.map[0] + 1
        and inline.type == "inline"
        and inline.content == PLACEHOLDER
        and closing.type == "paragraph_close"
    )

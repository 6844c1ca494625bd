"""Markdown read as Python-Markdown reads it, with markdown-it-py.

MkDocs renders pages with Python-Markdown, which no parser here reproduces. markdown-it-py parses
the file once it is rewritten line for line where the two would read it differently (content tabs,
code spans in tables, definitions), so that token line maps stay valid for the original source.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import accumulate, repeat
from operator import add
from typing import NamedTuple

from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.admon import admon_plugin
from mdit_py_plugins.deflist import deflist_plugin
from mdit_py_plugins.footnote import footnote_plugin
from mdit_py_plugins.front_matter import front_matter_plugin

from . import plaintext
from .plaintext import Reading

__all__ = [
    "FENCE",
    "NEWLINES",
    "NEW_TAB_GROUP",
    "TAB_TAG",
    "Block",
    "Reading",
    "blocks",
    "continues_tab_set",
    "line_starts",
    "parse",
    "parse_full",
    "read",
]

# Material content tabs (pymdownx.tabbed): `=== "Label"` with an indented body. Rewritten to an
# admonition of the same line count, which markdown-it parses with the same nesting rules.
_TAB_LINE = re.compile(r'^([ \t]*)===([+!]*)[ \t]+("[^"\n]*")[ \t]*$')
TAB_TAG = "annotate-tab"
NEW_TAB_GROUP = "annotate-new-group"  # `===!` starts a new set of tabs
# A table's delimiter row (`| --- | :-: |`); the `|` tells it from a rule or a setext underline.
_TABLE_DELIMITER = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
# A callout (markdown-callouts) titled by its bold first words: `TIP: **Title.** Body` shows
# "Title" and the body, not its kind (issue #26).
_CALLOUT_TITLED = re.compile(r"^( {0,3}(?:> ?)*)[A-Z]{2,}: (?=\*\*)")
FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
NEWLINES = re.compile(r"\r\n?")
_BACKTICKS = re.compile(r"`+")


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


def line_starts(source: str) -> list[int]:
    """The offset of each line's first character: the running sum of the lines' lengths, each
    with its `\\n` (all in C: no Python step a line)."""
    lengths = map(len, source.split("\n")[:-1])
    return list(accumulate(map(add, lengths, repeat(1)), initial=0))


def continues_tab_set(tokens: Sequence[Token], close: int) -> bool:
    """Whether the token after the tab closing at `close` opens the next tab of the same set."""
    if close + 1 >= len(tokens):
        return False
    nxt = tokens[close + 1]
    return (
        nxt.type == "admonition_open"
        and nxt.meta.get("tag") == TAB_TAG
        and NEW_TAB_GROUP not in nxt.info.split()
    )


def _tab_as_admonition(m: re.Match[str]) -> str:
    new = f" {NEW_TAB_GROUP}" if "!" in m.group(2) else ""
    return f"{m.group(1)}!!! {TAB_TAG}{new} {m.group(3)}"


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
_DEFINITION_LINE = re.compile(r"^:[ \t]{1,3}\S", re.MULTILINE)  # any line `_DEFINITION` matches


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
        marker = FENCE.match(line)
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
    code is left alone: docs that teach Markdown show tab and table syntax there. A file with
    none of what is rewritten (most pages: no tab, callout title, table or definition) is
    `source` itself, known from four scans of it rather than a pass over its lines.
    """
    if (
        "===" not in source
        and ": **" not in source
        and "|" not in source
        and not ((source.startswith(":") or "\n:" in source) and _DEFINITION_LINE.search(source))
    ):
        return source
    lines = _dedent_definitions(source.split("\n"))
    fence = ""  # the marker of the open code fence
    in_table = False
    for n, line in enumerate(lines):
        marker = FENCE.match(line)
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


def parse(source: str) -> list[Token]:
    """The tokens of `source` (line ends `\\n`), rewritten first where markdown-it would read it
    unlike Python-Markdown; their line maps refer to `source`."""
    return read(source).tokens()


def parse_full(source: str) -> list[Token]:
    """`parse` without the shortcut for plain paragraphs (what `read` must equal)."""
    return _MD.parse(_for_parsing(source))


def read(source: str) -> Reading:
    """`parse_full`'s tokens, with the plain paragraphs (annotate/plaintext.py) made here rather
    than by markdown-it, and the rest parsed once per text of it (`plaintext.skeleton`)."""
    return plaintext.read(_for_parsing(source), _MD, source)


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
    source = NEWLINES.sub("\n", source)
    found: list[Block] = []
    in_footnote = False
    for token in parse(source):
        if token.type == "footnote_open":
            in_footnote = True
        elif token.type == "footnote_close":
            in_footnote = False
        elif in_footnote and token.map is not None and token.level == 1:
            found.append(Block(token.map[0], token.map[1], "footnote"))
            in_footnote = False  # the definition's first block is where it starts
        elif token.level == 0 and token.map is not None:
            kind = token.type.removesuffix("_open")
            if kind == "admonition" and token.meta.get("tag") == TAB_TAG:
                kind = "tab_set" if NEW_TAB_GROUP in token.info.split() else "tab"
            found.append(Block(token.map[0], token.map[1], kind))
    found.sort()
    return found

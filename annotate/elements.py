"""The Markdown an Alt+clicked element was rendered from (issue #13, class 7): by the file its
`src` or `href` names, else by its text, widened to the block its tag or class says it is."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from .anchoring.markdown import SourceMatch, excerpt, locate_in_markdown
from .anchoring.normalise import DROPPED
from .mdparse import FENCE, NEWLINES, line_starts, parse
from .projection import HTMLText

__all__ = ["MAX_ELEMENT_QUOTE", "locate_element"]

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
    parser = HTMLText()
    try:
        parser.feed(str(selector.get("outerHtmlPreview") or ""))
        parser.close()
    except (AssertionError, ValueError):  # HTMLParser on a cut tag
        pass
    text = " ".join(" ".join(part for part, _ in parser.parts).split())
    text = "".join(ch for ch in text if ch not in DROPPED).rstrip("…").strip()
    if len(text) > MAX_ELEMENT_QUOTE or (selector.get("outerHtmlPreview") or "").endswith("…"):
        cut = text[:MAX_ELEMENT_QUOTE]
        text = cut.rsplit(" ", 1)[0] if " " in cut else cut
    return text


# The element notes of a page are located one after another (reconcile.plan): a scan each is a
# pass over the page per note.
@lru_cache(maxsize=8)
def _outside_fences(source: str) -> list[tuple[int, str]]:
    """(1-based number, line) of the lines that are not inside fenced code."""
    out: list[tuple[int, str]] = []
    fence = ""
    for n, line in enumerate(source.split("\n"), 1):
        marker = FENCE.match(line)
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
    for token in parse(source):
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
    source = NEWLINES.sub("\n", source)
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
    starts = line_starts(source)
    start = starts[line_start - 1]
    end = starts[line_end] - 1 if line_end < len(starts) else len(source)
    return SourceMatch(
        line_start, line_end, start, end, excerpt(source, line_start, line_end), score
    )

"""Text a directive generated: which Markdown lines produced it (issue #13, class 6).

mkdocstrings (`::: package.module`), mkdocs-click (`::: mkdocs-click`) and macros (`{{ … }}`)
put text on a page that is not in its Markdown, so a quote from it has no lines of its own. The
lines of the directive that produced it are the next best thing: the agent edits there, or, for
mkdocstrings, in the docstring of the object named in `source.object`.

Which object a quote belongs to comes from the rendered page: mkdocstrings gives each object's
heading the object's path as `id` (`id="package.module.Class.method"`). The MkDocs plugin reads
those from each built page (`objects_in_html`) and the store keeps them with the page's record;
the object's directive is the one whose identifier is the longest leading part of its path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

from .sourcemap import locate_in_markdown, normalise

__all__ = ["Directive", "GeneratedSource", "directives", "locate_generated", "objects_in_html"]

# `::: identifier` (mkdocstrings, mkdocs-click), also in a heading (`# ::: identifier`, as
# mkdocstrings' own API page writes it); options follow on indented lines.
_DIRECTIVE = re.compile(r"^([ \t]*)(?:#{1,6}[ \t]+)?:::[ \t]+([^\s]+)[ \t]*$")
_MACRO = re.compile(r"\{\{.*?\}\}|\{%.*?%\}")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
# A dotted Python path, as mkdocstrings writes it into heading ids.
_OBJECT_ID = re.compile(r"^[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*$")
_HEADING = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
# Per page, at most this many objects and this much text per object are kept.
MAX_OBJECTS = 2000
MAX_OBJECT_TEXT = 20_000
# How much of the quote's context must be found in the Markdown to place it between directives.
CONTEXT_PROBE = 24


@dataclass(frozen=True)
class Directive:
    """A directive in a Markdown page: its 1-based inclusive lines and what it names."""

    line_start: int
    line_end: int
    identifier: str  # the object path, "mkdocs-click", or the macro text


@dataclass(frozen=True)
class GeneratedSource:
    line_start: int
    line_end: int
    excerpt: str
    object: str | None


def directives(source: str) -> list[Directive]:
    """The directives of a page, in order; fenced code (examples of directives) is skipped."""
    lines = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    found: list[Directive] = []
    fence = ""
    n = 0
    while n < len(lines):
        line = lines[n]
        marker = _FENCE.match(line)
        if fence:
            closing = marker and marker.group(1)
            if closing and closing[0] == fence[0] and len(closing) >= len(fence):
                fence = ""
            n += 1
            continue
        if marker:
            fence = marker.group(1)
            n += 1
            continue
        if m := _DIRECTIVE.match(line):
            indent = len(m.group(1).expandtabs(4))
            end = n
            # Options: the indented lines that follow (blank lines inside them too).
            while end + 1 < len(lines):
                nxt = lines[end + 1]
                if (nxt.strip() and len(nxt) - len(nxt.lstrip()) > indent) or (
                    not nxt.strip() and end + 2 < len(lines) and _indented(lines[end + 2], indent)
                ):
                    end += 1
                else:
                    break
            found.append(Directive(n + 1, end + 1, m.group(2)))
            n = end + 1
            continue
        for macro in _MACRO.finditer(line):
            found.append(Directive(n + 1, n + 1, macro.group()))
        n += 1
    return found


def _indented(line: str, indent: int) -> bool:
    return bool(line.strip()) and len(line) - len(line.lstrip()) > indent


class _Objects(HTMLParser):
    """The text under each mkdocstrings heading, up to the next one, by object path."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.objects: dict[str, list[str]] = {}
        self._current: str | None = None
        self._skip = 0
        self._root = False  # inside a `doc-object` whose heading is hidden, before its contents
        self._listing = 0  # depth inside the `<details>` that shows the object's source code

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        ident, classes = values.get("id") or "", (values.get("class") or "").split()
        if tag in ("script", "style") or (
            tag == "details" and (_listing(classes) or self._listing > 0)
        ):
            # A source listing repeats the docstrings of the members below: not the object's text.
            self._skip += 1
            self._listing += tag == "details"
            return
        if tag == "div" and "doc" in classes:
            # `show_root_heading: false` leaves only `<a id="package.module">` before the
            # object's contents.
            self._root = "doc-object" in classes
            return
        heading = tag in _HEADING and "doc-heading" in classes
        if (heading or (tag == "a" and self._root)) and _OBJECT_ID.match(ident):
            self._current, self._root = ident, False
            if len(self.objects) < MAX_OBJECTS:
                self.objects.setdefault(ident, [])

    def handle_endtag(self, tag: str) -> None:
        if (tag in ("script", "style") or (tag == "details" and self._listing)) and self._skip:
            self._skip -= 1
            self._listing -= tag == "details"

    def handle_data(self, data: str) -> None:
        if self._skip or self._current is None:
            return
        parts = self.objects.get(self._current)
        if parts is not None and sum(map(len, parts)) < MAX_OBJECT_TEXT:
            parts.append(data)


def _listing(classes: list[str]) -> bool:
    # mkdocstrings-python writes `mkdocstrings-source`; releases before 1.12 wrote `quote`.
    return "quote" in classes or "mkdocstrings-source" in classes


def objects_in_html(html: str) -> list[list[str]]:
    """`[[object path, its text], …]` for each object mkdocstrings documented in a page's HTML.

    An object's text runs from its heading to the next object's heading: its signature and
    docstring, not its members'. Empty when the page documents no object.
    """
    if "doc-heading" not in html:
        return []
    parser = _Objects()
    parser.feed(html)
    parser.close()
    return [
        [ident, " ".join("".join(parts).split())[:MAX_OBJECT_TEXT]]
        for ident, parts in parser.objects.items()
    ]


def _object_of(objects: list[Any], exact: str, prefix: str, suffix: str) -> str | None:
    """The object whose rendered text holds the quote; with several, the one whose text also
    holds the most of the quote's context; None when none or no way to choose."""
    quote = normalise(exact)[0].strip()
    if not quote:
        return None
    before, after = normalise(prefix)[0].strip(), normalise(suffix)[0].strip()
    found: list[tuple[int, str]] = []
    for item in objects:
        if not (isinstance(item, (list, tuple)) and len(item) == 2):
            continue
        ident, text = item
        if not (isinstance(ident, str) and isinstance(text, str)):
            continue
        folded = normalise(text)[0]
        at = folded.find(quote)
        if at < 0:
            continue
        fit = 0
        if before and folded[max(0, at - len(before)) : at].endswith(before[-CONTEXT_PROBE:]):
            fit += 1
        if after and folded[at + len(quote) :].startswith(after[:CONTEXT_PROBE]):
            fit += 1
        found.append((fit, ident))
    if not found:
        return None
    best = max(fit for fit, _ in found)
    chosen = [ident for fit, ident in found if fit == best]
    return chosen[0] if len(chosen) == 1 else None


def _directive_of(found: list[Directive], ident: str) -> Directive | None:
    """The directive whose identifier is the longest leading part of the object path."""
    best: Directive | None = None
    for d in found:
        if (ident == d.identifier or ident.startswith(d.identifier + ".")) and (
            best is None or len(d.identifier) > len(best.identifier)
        ):
            best = d
    return best


def _between(found: list[Directive], source: str, prefix: str, suffix: str) -> Directive | None:
    """The directive between the Markdown the quote's context comes from, if that settles it.

    Generated text sits on the page where its directive sits in the Markdown: text shown just
    before the quote, found in the Markdown, has the producing directive after it; text shown
    just after has it before.
    """
    after_line = before_line = None
    if prefix.strip():
        m = locate_in_markdown(source, prefix[-CONTEXT_PROBE:])
        after_line = m.line_end if m else None
    if suffix.strip():
        m = locate_in_markdown(source, suffix[:CONTEXT_PROBE])
        before_line = m.line_start if m else None
    if after_line is None and before_line is None:
        return None
    fits = [
        d
        for d in found
        if (after_line is None or d.line_end >= after_line)
        and (before_line is None or d.line_start <= before_line)
    ]
    if after_line is not None and before_line is None:
        fits = fits[:1]  # the first directive after the text before
    elif before_line is not None and after_line is None:
        fits = fits[-1:]  # the last directive before the text after
    if len(fits) != 1:
        return None
    # Only blank lines (or headings, which carry the context) may stand between the context's
    # text and the directive: else the quote may be other text (deleted, from the theme).
    lines = source.split("\n")
    d = fits[0]
    gaps = []
    if after_line is not None:
        gaps += lines[after_line : d.line_start - 1]
    if before_line is not None:
        gaps += lines[d.line_end : before_line - 1]
    return d if all(not g.strip() or g.lstrip().startswith("#") for g in gaps) else None


def locate_generated(
    source: str,
    exact: str,
    *,
    prefix: str = "",
    suffix: str = "",
    objects: list[Any] | None = None,
) -> GeneratedSource | None:
    """The directive in Markdown `source` that generated the quote `exact`, or None.

    `objects` is the page's `objects_in_html` record. Without a directive in the page, or
    without a way to tell which of several produced the text, there is no answer: a wrong
    line is worse than none.
    """
    found = directives(source)
    if not found:
        return None
    ident = _object_of(objects or [], exact, prefix, suffix)
    directive = _directive_of(found, ident) if ident else None
    if directive is None:
        directive = _between(found, source, prefix, suffix)
    if directive is None and len(found) == 1 and found[0].identifier[:2] not in ("{{", "{%"):
        directive = found[0]  # the page's only `:::` block; a lone macro is too common to trust
    if directive is None:
        return None
    lines = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    excerpt = "\n".join(lines[directive.line_start - 1 : directive.line_end])
    return GeneratedSource(directive.line_start, directive.line_end, excerpt, ident)

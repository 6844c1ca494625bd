"""Any Markdown file, or a plan's text, as a page to review (issue #29, docs/plans.md).

`read_document` is the one door a file comes in by: it must be a regular file inside the project
(symlinks resolved), UTF-8, at most `MAX_DOCUMENT_BYTES`; anything else is a `DocumentRefused`
naming why, and nothing is served. `render` turns Markdown into HTML with markdown-it-py (tables,
fenced code highlighted by Pygments, task lists, admonitions, strikethrough) with raw HTML OFF:
a plan's text comes from an agent and is untrusted, so it is never markup. `page` wraps it in a
whole page whose document sits in `<main>` (the overlay's content root) and whose word diff
against the last reviewed revision sits outside it, so a note never quotes the diff.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path, PurePosixPath
from typing import Any

from .config import site_config
from .errors import AnnotateError, ValidationError
from .pages import safe_path

__all__ = [
    "FILES_PREFIX",
    "MAX_DOCUMENT_BYTES",
    "PLANS_PREFIX",
    "Document",
    "DocumentRefused",
    "page",
    "read_document",
    "render",
    "word_changes",
    "word_diff_counted",
    "word_diff_html",
    "word_diff_text",
]

MAX_DOCUMENT_BYTES = 1_000_000
# Page URLs of documents that are not site pages: files, and plans (by plan id).
FILES_PREFIX = "/_annotate_files/"
PLANS_PREFIX = "/_annotate_plans/"


class DocumentRefused(ValidationError):
    """A file that cannot be reviewed: outside the project, a symlink out of it, not UTF-8, too
    big, or no file at all."""

    code = "document_refused"

    def __init__(self, message: str) -> None:
        super().__init__(message, "path")


@dataclass(frozen=True)
class Document:
    """A Markdown file to review: where it is, its text, and the page URL its notes carry (its
    site page's when it is inside docs_dir)."""

    path: str  # relative to the project, POSIX
    text: str
    page_url: str
    site_page: bool


def read_document(
    project: Path, path: str | os.PathLike[str], *, base: Path | None = None
) -> Document:
    """The Markdown file `path` (absolute, or relative to `base`, by default the current folder)
    of `project`."""
    root = project.resolve()
    given = Path(path)
    absolute = given if given.is_absolute() else (base or Path.cwd()) / given
    try:
        lexical = Path(os.path.normpath(absolute)).relative_to(root)
    except ValueError:
        raise DocumentRefused(f"{path} is outside the project ({root}): not reviewable") from None
    relative = lexical.as_posix()
    full = safe_path(root, relative)
    if full is None:
        raise DocumentRefused(
            f"{path} leads out of the project ({root}) through a symlink: not reviewable"
        )
    if not full.is_file():
        raise DocumentRefused(f"{path} is not a file")
    size = full.stat().st_size
    if size > MAX_DOCUMENT_BYTES:
        raise DocumentRefused(
            f"{path} is {size:,} bytes; the most a reviewed file may be is {MAX_DOCUMENT_BYTES:,}"
        )
    try:
        text = full.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise DocumentRefused(
            f"{path} is not UTF-8 text (byte {e.start}): not reviewable"
        ) from None
    url, site = page_url_of(root, relative)
    return Document(relative, text, url, site)


def page_url_of(project: Path, relative: str) -> tuple[str, bool]:
    """The URL a file's notes carry: its site page's (MkDocs' rules) when it is a Markdown file
    inside docs_dir, else one of our own under `FILES_PREFIX`; and whether it is a site page."""
    try:
        config = site_config(project)
    except AnnotateError:  # a broken site config: the file is still reviewable on its own
        config = None
    if config is not None:
        docs = PurePosixPath(config.docs_dir)
        rel = PurePosixPath(relative)
        if rel.suffix.lower() in (".md", ".markdown") and rel.is_relative_to(docs):
            inside = rel.relative_to(docs).with_suffix("")
            parts = list(inside.parts)
            if parts and parts[-1].lower() in ("index", "readme"):
                parts = parts[:-1]
            if not parts:
                url = "/"
            elif config.use_directory_urls:
                url = "/" + "/".join(parts) + "/"
            else:
                url = "/" + str(rel.relative_to(docs).with_suffix(".html"))
            base = config.site_path
            return (base.rstrip("/") + url if base != "/" else url), True
    return FILES_PREFIX + relative + "/", False


def _highlight(code: str, lang: str, attrs: str) -> str:
    """Fenced code coloured by Pygments when it is installed (it comes with Material for
    MkDocs); otherwise, and for an unknown language, markdown-it's plain escaped block."""
    try:
        from pygments import highlight  # type: ignore[import-untyped]
        from pygments.formatters import HtmlFormatter  # type: ignore[import-untyped]
        from pygments.lexers import get_lexer_by_name  # type: ignore[import-untyped]
        from pygments.util import ClassNotFound  # type: ignore[import-untyped]
    except ImportError:
        return ""
    try:
        lexer = get_lexer_by_name(lang) if lang else None
    except ClassNotFound:
        lexer = None
    if lexer is None:
        return ""
    return str(highlight(code, lexer, HtmlFormatter(nowrap=True, noclasses=True)))


_RENDERER: Any = None


def render(markdown: str) -> str:
    """`markdown` as HTML: raw HTML in it is shown as text, links keep only safe schemes."""
    global _RENDERER
    if _RENDERER is None:
        from markdown_it import MarkdownIt
        from mdit_py_plugins.admon import admon_plugin
        from mdit_py_plugins.tasklists import tasklists_plugin

        _RENDERER = (
            MarkdownIt("commonmark", {"html": False, "highlight": _highlight})
            .enable(["table", "strikethrough"])
            .use(tasklists_plugin)
            .use(admon_plugin)
        )
    return str(_RENDERER.render(markdown))


_WORDS = re.compile(r"\s+|\w+|[^\w\s]")


def word_changes(old: str, new: str) -> list[tuple[str, str]]:
    """The word diff of two revisions as `(kind, text)` pieces in order, `kind` one of `equal`,
    `del`, `ins`.

    Lines are matched first and words only inside the blocks of lines that changed: a word
    diff of a whole 100 kB file at once is quadratic in its repeated words (benchmarks/plans.py).
    """
    a_lines, b_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    # The lines both start and end with are unchanged: only those between are matched (an edit
    # in one place of a 100 kB file: 0.6 s of line matching down to a few ms, benchmarks/plans.py).
    head = 0
    for x, y in zip(a_lines, b_lines, strict=False):
        if x != y:
            break
        head += 1
    tail = 0
    for x, y in zip(reversed(a_lines[head:]), reversed(b_lines[head:]), strict=False):
        if x != y:
            break
        tail += 1
    out: list[tuple[str, str]] = [("equal", "".join(a_lines[:head]))] if head else []
    end = [("equal", "".join(a_lines[len(a_lines) - tail :]))] if tail else []
    a_lines, b_lines = a_lines[head : len(a_lines) - tail], b_lines[head : len(b_lines) - tail]
    # Blank lines, repeated everywhere, anchor no match: as junk they cost nothing (measured:
    # the line match of a 100 kB plan went from 0.8 s to a few ms).
    by_lines = difflib.SequenceMatcher(lambda line: not line.strip(), a_lines, b_lines)
    for tag, i1, i2, j1, j2 in by_lines.get_opcodes():
        if tag == "equal":
            out.append(("equal", "".join(a_lines[i1:i2])))
            continue
        a, b = _WORDS.findall("".join(a_lines[i1:i2])), _WORDS.findall("".join(b_lines[j1:j2]))
        # Spaces between words match everywhere: as junk they anchor nothing (quadratic else).
        words = difflib.SequenceMatcher(str.isspace, a, b, autojunk=False)
        for op, k1, k2, l1, l2 in words.get_opcodes():
            if op == "equal":
                out.append(("equal", "".join(a[k1:k2])))
                continue
            if k2 > k1:
                out.append(("del", "".join(a[k1:k2])))
            if l2 > l1:
                out.append(("ins", "".join(b[l1:l2])))
    return out + end


def _runs(pieces: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Adjacent unchanged pieces joined into one."""
    runs: list[tuple[str, list[str]]] = []
    for kind, text in pieces:
        if runs and kind == "equal" == runs[-1][0]:
            runs[-1][1].append(text)
        else:
            runs.append((kind, [text]))
    return [(kind, "".join(texts)) for kind, texts in runs]


def _words(text: str) -> int:
    return sum(1 for t in _WORDS.findall(text) if not t.isspace())


def word_diff_html(old: str, new: str, *, context: int = 12) -> tuple[str, int, int]:
    """The word diff of two revisions as HTML (`<del>`, `<ins>`, unchanged runs longer than
    `context` words each side folded into a `<details>`), with the counts of words inserted and
    deleted."""
    out: list[str] = []
    added = removed = 0
    for kind, text in _runs(word_changes(old, new)):
        if kind == "del":
            removed += _words(text)
            out.append(f"<del>{escape(text)}</del>")
        elif kind == "ins":
            added += _words(text)
            out.append(f"<ins>{escape(text)}</ins>")
        else:
            run = _WORDS.findall(text)
            if len(run) > 2 * context:
                middle = run[context:-context]
                out.append(escape("".join(run[:context])))
                out.append(
                    f'<details class="fold"><summary>… {len(middle)} unchanged</summary>'
                    f"{escape(''.join(middle))}</details>"
                )
                out.append(escape("".join(run[-context:])))
            else:
                out.append(escape(text))
    return "".join(out), added, removed


def word_diff_text(old: str, new: str, *, context: int = 12) -> str | None:
    """The same diff as text, `[-removed-]{+added+}`, long unchanged runs cut to ` … `; None when
    the two are equal."""
    counted = word_diff_counted(old, new, context=context)
    return counted[0] if counted else None


def word_diff_counted(old: str, new: str, *, context: int = 12) -> tuple[str, int, int] | None:
    """`word_diff_text`'s diff with the counts of words inserted and deleted, from one diff;
    None when the two are equal."""
    if old == new:
        return None
    out: list[str] = []
    added = removed = 0
    for kind, text in _runs(word_changes(old, new)):
        if kind != "equal":
            if kind == "del":
                removed += _words(text)
            else:
                added += _words(text)
            out.append(f"[-{text}-]" if kind == "del" else f"{{+{text}+}}")
            continue
        run = _WORDS.findall(text)
        if len(run) > 2 * context:
            text = "".join(run[:context]) + " … " + "".join(run[-context:])
        out.append(text)
    return "".join(out), added, removed


STYLE = """
:root{color-scheme:light dark}body{font:16px/1.6 system-ui,sans-serif;max-width:52rem;
margin:0 auto;padding:1rem 1.5rem 6rem}header.doc-head{border-bottom:1px solid #8884;
margin-bottom:1rem;padding-bottom:.5rem}header.doc-head .meta{color:#777;font-size:.9em}
pre{background:#8881;padding:.7rem;overflow:auto;border-radius:.4rem}code{font-size:.92em}
table{border-collapse:collapse}td,th{border:1px solid #8885;padding:.2rem .5rem}
.admonition{border-left:4px solid #448aff;background:#448aff14;padding:.2rem .9rem;
margin:1rem 0}.admonition-title{font-weight:600}ul.contains-task-list{list-style:none}
section.changes{border:1px solid #8884;border-radius:.4rem;padding:.4rem .9rem;
margin-bottom:1.2rem;white-space:pre-wrap}ins{background:#2da44e33;text-decoration:none}
del{background:#cf222e33}details.fold{display:inline}ol.history{font-size:.9em}
.decision{font-weight:600}
"""


def page(
    title: str,
    body_html: str,
    *,
    meta: str = "",
    changes_html: str = "",
    history: Sequence[tuple[str, str]] = (),
    gate: bool = False,
) -> str:
    """A whole HTML page: `title` and `meta` (text, escaped here), the revision `history`
    (`(label, text)` pairs, escaped), the changes (HTML from `word_diff_html`) and the document
    (HTML from `render`) in `<main>`. `gate`: a page served until its verdict, with the place
    where the overlay says the decision went out (`#annotate-gate`)."""
    parts = [
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">',
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>",
        f'<header class="doc-head"><h1>{escape(title)}</h1>',
        f'<p class="meta">{escape(meta)}</p>' if meta else "",
        '<p id="annotate-gate" class="decision" role="status" hidden></p>' if gate else "",
    ]
    if history:
        parts.append('<details><summary>Revisions</summary><ol class="history">')
        parts += [
            f'<li><span class="decision">{escape(label)}</span> {escape(text)}</li>'
            for label, text in history
        ]
        parts.append("</ol></details>")
    parts.append("</header>")
    if changes_html:
        parts.append(
            '<section class="changes" aria-label="What changed"><h2>What changed</h2>'
            f"{changes_html}</section>"
        )
    parts.append(f"<main>{body_html}</main></body></html>\n")
    return "".join(parts)

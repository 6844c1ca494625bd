"""Map text a browser shows on a rendered MkDocs page back to lines of its Markdown source
(docs/architecture.md, "Anchoring").

The page is rendered by Python-Markdown, so no parser here reproduces its HTML exactly. Instead,
`project_markdown` (projection.py, over mdparse.py's reading of the file with markdown-it-py)
builds the text a reader would see, keeping for every character its offset in the source;
`normalise` (anchoring/normalise.py) then folds away what renderers change (typographic quotes and
dashes, runs of whitespace, case, permalink marks), and `locate_in_markdown` (anchoring/markdown.py)
finds the quote in that folded text, ranking exact occurrences with anchoring/tuning.py's weights,
else through `anchoring.locate`, the same search that re-anchors quotes in pages. An element is
found by `locate_element` (elements.py). The answer is a best-effort line range: the quote itself
is kept for re-anchoring. This module reads the file (`map_source`) and names all of it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .anchoring.markdown import MAX_EXCERPT_CHARS, SourceMatch, locate_in_markdown, prepare
from .anchoring.normalise import normalise
from .elements import locate_element
from .mdparse import Block, blocks
from .pages import safe_path
from .projection import ProjectedText, project_markdown

__all__ = [
    "MAX_EXCERPT_CHARS",
    "MAX_SOURCE_BYTES",
    "Block",
    "ProjectedText",
    "SourceMatch",
    "blocks",
    "locate_element",
    "locate_in_markdown",
    "map_source",
    "normalise",
    "prepare",
    "project_markdown",
]

# Source files larger than this are not read (a Markdown page is kilobytes).
MAX_SOURCE_BYTES = 8 * 1024 * 1024


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

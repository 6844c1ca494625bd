"""What each note becomes on a pull request (issue #30, docs/pull-requests.md): a line comment
(with a `suggestion` block when it can carry the change), a file-level comment quoting the lines,
or a paragraph of the review's body; decided from the pull request's diff before anything is
posted (annotate/pullrequests/sync.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..models import Annotation, PageNote
from .git import Checkout
from .github import GitHub
from .gitlab import GitLab
from .hunks import Hunks, inside
from .links import Link, Target

# The hidden marker every posted text ends with: a push cut short is recognised by the next one.
MARK = "<!-- annotate:{id} -->"
# Lines quoted from a file in a file-level comment or the review's body.
MAX_QUOTED_LINES = 12
SUGGESTING = ("replace", "delete")
# A quoted line is cut here: one Markdown line may be a whole table.
MAX_QUOTED_LINE = 500


@dataclass(slots=True)
class Where:
    """A pull request and how to reach it, with the checkout it was found from (if any)."""

    host: GitHub | GitLab
    number: int
    root: Path
    project: Path
    checkout: Checkout | None

    @property
    def target(self) -> Target:
        return self.host.target(self.number)


@dataclass(slots=True)
class Planned:
    note: str
    placement: str
    at: str
    text: str  # the comment's body, or the paragraph of the review's body
    link: Link
    path: str | None = None
    line: tuple[int, int] | None = None
    suggestion: bool = False


def place_note(
    item: Annotation | PageNote, files: dict[str, Hunks], where: Where, shot: bool = False
) -> Planned:
    """Where note `item` goes and its text; `shot`: it has a screenshot, named by the command
    that gets it."""
    note = clean_text(item.note)
    mark = MARK.format(id=item.id)
    if shot:
        # Neither host's review API takes an image in a comment (GitHub has no upload route for
        # it), and the local server's link reaches no one there: the command that gets it.
        mark = f"Screenshot: `annotate screenshot {item.id}`\n\n{mark}"
    if isinstance(item, PageNote):
        at = item.page_url
        src = f" (`{item.source.path}`)" if item.source else ""
        text = f"**Page `{item.page_url}`**{src}\n\n{note}\n\n{mark}"
        return Planned(item.id, "body", at, text, Link(item.id, "body", None))
    source = item.source
    path = repo_path(where, source.path) if source else None
    if source is None or path is None:
        passage = item.selected_text or (
            item.element_selector.description if item.element_selector else ""
        )
        text = f"**On page `{item.page_url}`**\n\n{quote_block(passage or '')}{note}{wording(item)}"
        return Planned(
            item.id, "body", item.page_url, f"{text}\n\n{mark}", Link(item.id, "body", None)
        )
    first, last = source.line_start, source.line_end
    at = f"{path}:{first}" if first == last else f"{path}:{first}-{last}"
    old = lines_of(where.project / source.path, first, last)
    excerpt = "\n".join(old) if old is not None else source.excerpt
    if path in files and inside(files[path], first, last):
        new = suggested_lines(item, old)
        block = f"\n\n{fenced(new)}" if new is not None else wording(item)
        text = f"{note}{block}\n\n{mark}".lstrip("\n")
        link = Link(item.id, "line", None, path, first, last, excerpt, joined_lines(new))
        return Planned(item.id, "line", at, text, link, path, (first, last), new is not None)
    quoted = quote_block(excerpt)
    if path in files:
        text = f"**`{at}`** (outside this pull request's diff)\n\n{quoted}{note}{wording(item)}"
        link = Link(item.id, "file", None, path, first, last, excerpt)
        return Planned(item.id, "file", at, f"{text}\n\n{mark}", link, path, (first, last))
    text = f"**`{at}`** (a file this pull request does not change)\n\n{quoted}{note}"
    link = Link(item.id, "body", None, path, first, last, excerpt)
    return Planned(item.id, "body", at, f"{text}{wording(item)}\n\n{mark}", link, path)


def as_file_comment(p: Planned) -> Planned:
    """A line comment demoted to a file-level one (its suggestion block cannot apply there)."""
    # A suggestion block applies only on lines: here it is shown as the lines proposed.
    shown = re.sub(r"^(`{3,})suggestion$", r"\1text", p.text, flags=re.MULTILINE)
    text = f"**`{p.at}`** (GitHub took no line comment here; proposed lines below)\n\n{shown}"
    first, last = p.line or (None, None)
    link = Link(p.note, "file", None, p.path, first, last, p.link.excerpt)
    return Planned(p.note, "file", p.at, text, link, p.path, p.line)


def repo_path(where: Where, path: str) -> str | None:
    """A project-relative Markdown path as the repository names it, or None when the file is
    outside the repository."""
    try:
        full = (where.project / path).resolve()
        return full.relative_to(where.root.resolve()).as_posix()
    except (ValueError, OSError):
        return None


def lines_of(file: Path, first: int, last: int) -> list[str] | None:
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    lines = text.splitlines()
    if first < 1 or last > len(lines) or first > last:
        return None
    return lines[first - 1 : last]


def suggested_lines(item: Annotation, old: list[str] | None) -> list[str] | None:
    """The lines a suggestion block proposes: the commented lines with the quoted passage
    replaced by the suggestion (or deleted), when the passage stands in them once, verbatim;
    else None (a rendered passage whose Markdown differs: `**bold**`, a link)."""
    if item.intent not in SUGGESTING or old is None:
        return None
    passage = item.selected_text or (item.quote.exact if item.quote else "")
    joined = "\n".join(old)
    if not passage or joined.count(passage) != 1:
        return None
    if item.intent == "replace":
        if item.suggestion is None:
            return None
        return joined.replace(passage, item.suggestion, 1).split("\n")
    left = joined.replace(passage, "", 1)
    # Deleting what a line held leaves none of it: the suggestion removes the line.
    return [line for line in left.split("\n") if line.strip()]


def joined_lines(lines: list[str] | None) -> str | None:
    return None if lines is None else "\n".join(lines)


def fenced(lines: list[str]) -> str:
    text = "\n".join(lines)
    ticks = "`" * max(3, 1 + max((len(m) for m in re.findall(r"`+", text)), default=0))
    return f"{ticks}suggestion\n{text}\n{ticks}" if lines else f"{ticks}suggestion\n{ticks}"


def wording(item: Annotation) -> str:
    """The change asked for, in words (where no suggestion block can carry it)."""
    if item.intent == "delete":
        return "\n\nAsked: delete this passage."
    if item.intent in ("replace", "insert") and item.suggestion:
        verb = "replace it with" if item.intent == "replace" else "insert"
        return f"\n\nAsked: {verb}:\n\n{quote_block(item.suggestion).rstrip()}"
    return ""


def quote_block(text: str) -> str:
    lines = clean_text(text).splitlines()[:MAX_QUOTED_LINES]
    cut = [line if len(line) <= MAX_QUOTED_LINE else line[:MAX_QUOTED_LINE] + "…" for line in lines]
    return "".join(f"> {line}\n" for line in cut) + ("\n" if lines else "")


def clean_text(text: str | None) -> str:
    # A note is the reviewer's text: it must not forge another note's marker (or hide text).
    return (text or "").replace("<!--", "&lt;!--")

"""Notes that travel in the Markdown: `annotate export --inline` and `annotate import --inline`.

Each note not yet resolved is written into the Markdown file it is about as one line, a link
reference definition that every CommonMark renderer and Python-Markdown consume and render as
nothing, not even in the page's HTML source (docs/inline.md, issue #27):

    [//]: # (annotate: {"id": "a_0123456789", "status": "open", "note": "…", …})

The JSON is the note as the JSON export writes it (`to_dict()`), empty fields and the current
source's excerpt left out, escaped by `escape.escape(…, MARKER)`: `(` and `)` (which could end
the definition's title), `<`, `>` and every character that acts instead of printing are written
as JSON escapes (`\\u0028`, …), so no text in a note can end the marker or break its line. Markers
of the older form, an HTML comment `<!-- annotate: {…} -->`, are still read and stripped (their
payload escapes `-` after `-` as well). A group of markers and one blank line after it go just
before a top-level block, at a line where a marker changes nothing that Python-Markdown renders:
the block the note's `source` lines fall in, or the nearest block above that starts a new one
(never inside front matter, a fence, a table, a list, a blockquote, an admonition, a definition
list or a set of content tabs). Page notes and notes without lines go at the top of the page,
after its front matter and its h1 title (MkDocs takes the title from the first element only).
Removing the markers and the blank line after each group gives back the file byte for byte.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import fields, importing, sourcemap, strictjson
from . import validation as validate
from .errors import InlineError, MarkerError, ValidationError
from .escape import MARKER as MARKER_TEXT
from .escape import escape
from .export import JSON_FORMAT, JSON_VERSION
from .models import Annotation, PageNote
from .pages import docs_dir, safe_path

if TYPE_CHECKING:
    from .store import Store

__all__ = [
    "MARKER_PREFIX",
    "OLD_PREFIX",
    "Document",
    "ExportResult",
    "ImportResult",
    "decode",
    "encode",
    "export_inline",
    "import_inline",
    "insert",
    "markers",
    "strip",
]

# A link reference definition with the label `//` and the destination `#`, the note as its
# title: consumed by every CommonMark renderer (GitHub's cmark-gfm, markdown-it-py) and by
# Python-Markdown (MkDocs, Zensical), none of which writes it into the HTML.
MARKER_PREFIX = "[//]: # (annotate: "
MARKER_SUFFIX = ")"
# The older form, an HTML comment: hidden on the page, but passed into the page's HTML source.
OLD_PREFIX = "<!-- annotate: "
# A marker line as written: at the start of a line, nothing after it but the line end.
MARKER = re.compile(r"\[//\]: # \(annotate: (.*)\)")
OLD_MARKER = re.compile(r"<!-- annotate: (.*) -->")
# The payload's first keys, in this order, so a diff reads as a sentence; the rest follow in the
# order of `to_dict()`.
FIRST_KEYS = ("id", "type", "status", "intent", "note", "suggestion", "selectedText", "replies")
# The current source's excerpt: the store reads it from the file again (annotate/reconcile.py).
# `originalSource` keeps its excerpt, the lines as they were when the note was made.
DROPPED = ("source", "excerpt")
UNRESOLVED = ("open", "in_progress", "addressed")
# The suffixes MkDocs reads as Markdown (mkdocs/utils/__init__.py, `markdown_extensions`).
MARKDOWN = frozenset({".md", ".markdown", ".mdown", ".mkdn", ".mkd"})
# The keys a marker may hold: those of the JSON export's notes (issue #32: an unknown one is
# refused, as the REST API refuses it, rather than dropped unseen).
KEYS = {
    "annotations": frozenset(f.key for f in fields.ANNOTATION.answer),
    "pageNotes": frozenset(f.key for f in fields.PAGE_NOTE.answer),
}
# Where an import's message names the item; a marker holds one.
_ITEM = re.compile(r"^(?:annotations|pageNotes)\[0\]: ")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")
_NEWLINES = re.compile(r"\r\n?")
# MkDocs' front matter (mkdocs/utils/meta.py): YAML between `---` lines, else MultiMarkdown
# `key: value` lines up to the first blank line.
_YAML = re.compile(r"^-{3}[ \t]*\n(.*?\n)(?:\.{3}|-{3})[ \t]*\n", re.DOTALL)
_META = re.compile(r"^[ ]{0,3}[A-Za-z0-9_-]+:\s*")
_META_MORE = re.compile(r"^(?:[ ]{4}|\t)")
# A fence (pymdownx.superfences: any indentation, in quotes too) and a content tab that does not
# start a new set (pymdownx.tabbed).
_FENCE = re.compile(r"([ \t>]*)(`{3,}|~{3,})")
_TAB = re.compile(r"===\+?[ \t]")
# A definition of a definition list (Python-Markdown's def_list).
_DEFINITION = re.compile(r"[ ]{0,3}:[ ]{1,3}\S")
# Blocks Python-Markdown joins with the same kind of block after a blank line: a comment between
# them would split one list (or quote) in two.
JOINED = {
    "bullet_list": {"bullet_list", "ordered_list"},
    "ordered_list": {"bullet_list", "ordered_list"},
    "blockquote": {"blockquote"},
    "tab": {"tab"},
    "tab_set": {"tab"},
}


@dataclass
class ExportResult:
    """What `export_inline` wrote: markers per file, and what it left out."""

    written: int = 0
    files: list[str] = field(default_factory=list)
    already: int = 0  # notes that had a marker in their file already
    no_file: int = 0  # notes on pages without a Markdown file
    converted: int = 0  # markers of the older form (HTML comments) rewritten in the current one

    def to_dict(self) -> dict[str, Any]:
        return {
            "written": self.written,
            "files": self.files,
            "already": self.already,
            "noFile": self.no_file,
            "converted": self.converted,
        }


@dataclass
class ImportResult:
    """What `import_inline` read: the store's import counts, and the files it stripped."""

    markers: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    stripped: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"markers": self.markers, **self.counts, "stripped": self.stripped}


# -- the marker ---------------------------------------------------------------------------------


def encode(item: Annotation | PageNote) -> str:
    """The marker line of a note, without its line end."""
    data = _trimmed(item.to_dict())
    ordered = {k: data[k] for k in FIRST_KEYS if k in data}
    ordered.update((k, v) for k, v in data.items() if k not in ordered)
    text = json.dumps(ordered, ensure_ascii=False, separators=(", ", ": "))
    return MARKER_PREFIX + escape(text, MARKER_TEXT) + MARKER_SUFFIX


def _trimmed(value: Any) -> Any:
    """`value` without empty fields (and without the current source's excerpt)."""
    if isinstance(value, Mapping):
        out = {k: _trimmed(v) for k, v in value.items() if v not in (None, "", [], {})}
        if isinstance(out.get(DROPPED[0]), dict):
            out[DROPPED[0]].pop(DROPPED[1], None)
        return out
    if isinstance(value, list):
        return [_trimmed(v) for v in value]
    return value


def decode(line: str) -> dict[str, Any]:
    """The note a marker line holds; `ValueError` says why a line is not one."""
    line = line.rstrip("\r\n")
    m = MARKER.fullmatch(line) or OLD_MARKER.fullmatch(line)
    if m is None:
        raise ValueError(f"a marker is one line `{MARKER_PREFIX}{{…}}{MARKER_SUFFIX}`")
    try:
        # Strictly, as the REST API reads a body: no duplicate keys, NaN or endless nesting.
        data = strictjson.loads(m.group(1))
    except json.JSONDecodeError as e:
        raise ValueError(f"its JSON does not parse ({e.msg} at column {e.colno})") from None
    except ValueError as e:
        raise ValueError(f"its JSON is refused: {e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("id"), str):
        raise ValueError("its JSON must be an object with an id")
    return data


# -- a Markdown file ----------------------------------------------------------------------------


@dataclass
class Document:
    """A Markdown file as lines that keep their line ends, and its byte order mark."""

    lines: list[str]
    bom: str = ""
    stamp: int | None = None  # the file's modification time (ns) when read

    @classmethod
    def parse(cls, text: str) -> Document:
        bom = "\ufeff" if text.startswith("\ufeff") else ""
        return cls(_LINE.findall(text[len(bom) :]), bom)

    def text(self) -> str:
        return self.bom + "".join(self.lines)

    def markdown(self) -> str:
        """The text as MkDocs reads it: no byte order mark, `\\n` line ends."""
        return _NEWLINES.sub("\n", "".join(self.lines))


def _blank(line: str) -> bool:
    return not line.strip()


def markers(doc: Document) -> list[int]:
    """Indexes of the lines of `doc` that are markers (never a line inside a fence, a list or an
    admonition): lines that start `[//]: # (annotate: ` at the top level, where markdown-it reads
    a link reference definition (no block holds the line) or, for one it cannot read, where a
    paragraph starts; and lines of top-level HTML blocks that start `<!-- annotate: `."""
    lines = doc.lines
    if not any(line.startswith((MARKER_PREFIX, OLD_PREFIX)) for line in lines):
        return []  # the common case: one scan, no parse
    fenced = _fenced(lines)
    held: dict[int, str] = {}
    starts: set[int] = set()
    for block in sourcemap.blocks(doc.markdown()):
        if block.kind == "paragraph":
            starts.add(block.start)
        for n in range(block.start, min(block.end, len(lines))):
            held[n] = block.kind
    found = []
    for n, line in enumerate(lines):
        if n in fenced:
            continue
        new = line.startswith(MARKER_PREFIX) and (n not in held or n in starts)
        if new or (line.startswith(OLD_PREFIX) and held.get(n) == "html_block"):
            found.append(n)
    return found


def strip(doc: Document) -> tuple[Document, dict[int, list[str]], list[int]]:
    """`doc` without its markers (and the blank line after each group of them).

    Also returns the marker lines removed, by the index of the line they stood before in the
    stripped document, and for every line of `doc` the index of its line in the stripped one (a
    removed line: the line after it).
    """
    at = set(markers(doc))
    kept: list[str] = []
    groups: dict[int, list[str]] = {}
    where: list[int] = []
    n = 0
    while n < len(doc.lines):
        line = doc.lines[n]
        if n in at:
            groups.setdefault(len(kept), []).append(line)
            where.append(len(kept))
            n += 1
            if n not in at and n < len(doc.lines) and _blank(doc.lines[n]):
                where.append(len(kept))
                n += 1
            continue
        where.append(len(kept))
        kept.append(line)
        n += 1
    return Document(kept, doc.bom, doc.stamp), groups, where


def _body_start(markdown: str, lines: list[str]) -> int:
    """The first line that is not blank after the page's front matter (as MkDocs finds it)."""
    n = 0
    if m := _YAML.match(markdown):
        n = markdown.count("\n", 0, m.end())
    else:
        while n < len(lines) and not _blank(lines[n]):
            line = lines[n].rstrip("\r\n")
            if not (_META.match(line) or (n and _META_MORE.match(line))):
                break
            n += 1
    while n < len(lines) and _blank(lines[n]):
        n += 1
    return n


def _places(doc: Document) -> tuple[int, list[sourcemap.Block], list[bool]]:
    """The body's first line, the top-level blocks, and for each whether a marker may go before it."""
    markdown = doc.markdown()
    lines = doc.lines
    start = _body_start(markdown, lines)
    found = [b for b in sourcemap.blocks(markdown) if b.start >= start and b.kind != "front_matter"]
    if found and found[0].start == start and _title(lines, found[0]):
        # MkDocs takes the page's title from its first element only when that is an h1
        # (mkdocs/structure/pages.py, _ExtractTitleTreeprocessor): markers go after it.
        after = found[0].end
        while after < len(lines) and _blank(lines[after]):
            after += 1
        if after < len(lines) or lines[-1].endswith(("\n", "\r")):
            start = after

    def defines(i: int) -> bool:
        return 0 <= i < len(found) and any(
            _DEFINITION.match(lines[n]) for n in range(found[i].start, found[i].end)
        )

    fenced = _fenced(lines)
    allowed = []
    top = -1  # the last block that starts at the margin: a definition's own blocks are indented
    previous = ""  # the last block's kind, footnote definitions aside (they move to the end)
    for i, b in enumerate(found):
        line = lines[b.start] if b.start < len(lines) else ""
        at_margin = line[:1] not in ("", " ", "\t", "\r", "\n")
        allowed.append(
            b.start == start
            or (
                b.start > start
                and _blank(lines[b.start - 1])
                and at_margin
                and b.start not in fenced
                and not line.startswith(":")
                and b.kind not in JOINED.get(previous, set())
                # A tab after an indented body continues a set, whatever markdown-it made of it.
                and not (_TAB.match(line) and _after_indented(lines, b.start))
                # A term (or definition) after a definition list joins that list.
                and not ((defines(i) or defines(i + 1)) and defines(top))
            )
        )
        if at_margin:
            top = i
        if b.kind != "footnote":
            previous = b.kind
    return start, found, allowed


def _after_indented(lines: list[str], at: int) -> bool:
    """Whether the last line before `at` that is not blank is indented."""
    for n in range(at - 1, -1, -1):
        if not _blank(lines[n]):
            return lines[n][:1] in (" ", "\t")
    return False


def _fenced(lines: list[str]) -> set[int]:
    """Lines inside fenced code as pymdownx.superfences reads it: a fence opens at any
    indentation and closes only at the same indentation. markdown-it closes some fences
    elsewhere; a marker must not go inside a fence either reads."""
    inside: set[int] = set()
    fence = indent = ""
    for n, raw in enumerate(lines):
        line = raw.rstrip("\r\n")
        if not fence:
            m = _FENCE.match(line)
            if m and not (m.group(2)[0] == "`" and "`" in line[m.end() :]):
                fence, indent = m.group(2), m.group(1)
            continue
        inside.add(n)
        rest = line[len(indent) :] if line.startswith(indent) else ""
        if rest.startswith(fence) and not rest.strip().strip(fence[0]):
            fence = ""
    return inside


def _title(lines: list[str], block: sourcemap.Block) -> bool:
    """Whether `block` is an h1 heading (`# Title`, or `Title` underlined with `=`)."""
    if block.kind != "heading":
        return False
    first = lines[block.start]
    if first.startswith("#"):
        return first[1:2] in (" ", "\t", "\r", "\n", "")
    return block.end - block.start > 1 and lines[block.end - 1].lstrip().startswith("=")


def _place(line: int | None, start: int, found: list[sourcemap.Block], allowed: list[bool]) -> int:
    """The line before which the marker of a note on 0-based `line` goes."""
    if line is None or not found:
        return start
    i = next((i for i, b in enumerate(found) if line < b.end), len(found) - 1)
    while i >= 0 and not allowed[i]:
        i -= 1
    return found[i].start if i >= 0 else start


def _line_end(lines: list[str], at: int) -> str:
    for candidate in (lines[at - 1] if at else "", lines[0] if lines else ""):
        if candidate.endswith("\r\n"):
            return "\r\n"
        if candidate.endswith(("\n", "\r")):
            return candidate[-1]
    return "\n"


def insert(doc: Document, groups: Mapping[int, list[str]]) -> Document:
    """`doc` with each group of marker lines (without line ends) and a blank line before line n."""
    out: list[str] = []
    for n in range(len(doc.lines) + 1):
        group = groups.get(n)
        if group:
            end = _line_end(doc.lines, n)
            out += [g if g.endswith(("\n", "\r")) else g + end for g in group]
            out.append(end)
        if n < len(doc.lines):
            out.append(doc.lines[n])
    return Document(out, doc.bom, doc.stamp)


# -- files --------------------------------------------------------------------------------------


def _read(path: Path, shown: str) -> Document:
    try:
        data = path.read_bytes()
        stamp = path.stat().st_mtime_ns
    except FileNotFoundError:
        raise InlineError(f"{shown} does not exist") from None
    except OSError as e:
        raise InlineError(f"{shown} cannot be read: {e.strerror or e}") from None
    try:
        doc = Document.parse(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise InlineError(f"{shown} is not UTF-8 text ({e.reason} at byte {e.start})") from None
    doc.stamp = stamp
    return doc


def _write_all(files: Mapping[Path, tuple[str, Document]]) -> None:
    """Write each file whole through a temporary file renamed over it: a reader (or a crash) sees
    the old file or the new one, never half of one. A file changed since it was read is left
    alone (an editor saved it meanwhile): the command says so and can run again."""
    for path, (shown, doc) in files.items():
        data = doc.text().encode("utf-8")
        try:
            info = path.stat()
            if doc.stamp is not None and info.st_mtime_ns != doc.stamp:
                raise InlineError(f"{shown} changed while it was being marked; run again")
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.chmod(tmp, info.st_mode & 0o7777)
                os.replace(tmp, path)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError as e:
            raise InlineError(f"{shown} cannot be written: {e.strerror or e}") from None


# -- export -------------------------------------------------------------------------------------


def export_inline(store: Store, page_url: str | None = None) -> ExportResult:
    """Write every note not yet resolved (of one page with `page_url`) into its Markdown file as
    a marker; a note whose marker is in its file already is left as it is."""
    annotations, notes = store.all_items(include_resolved=False)
    items: list[Annotation | PageNote] = [*notes, *annotations]
    if page_url is not None:
        url = store.page_url(page_url)
        if store.page_file(url) is None:
            raise InlineError(f"Page {url} has no Markdown file in {store.project_dir}")
        items = [i for i in items if i.page_url == url]
    result = ExportResult()
    by_file: dict[str, list[Annotation | PageNote]] = {}
    files: dict[str, str | None] = {}
    for item in items:
        if item.status not in UNRESOLVED:
            continue
        path = item.source.path if isinstance(item, Annotation) and item.source else None
        if path is None:
            if item.page_url not in files:
                files[item.page_url] = store.page_file(item.page_url)
            path = files[item.page_url]
        if path is None:
            result.no_file += 1
            continue
        by_file.setdefault(path, []).append(item)
    writes: dict[Path, tuple[str, Document]] = {}
    for path, file_items in sorted(by_file.items()):
        full = safe_path(Path(store.project_dir), path)
        if full is None:
            raise InlineError(f"{path} is not a file inside {store.project_dir}")
        marked, written, already, converted = _mark(_read(full, path), file_items)
        result.written += written
        result.already += already
        result.converted += converted
        if written or converted:
            writes[full] = (path, marked)
            result.files.append(path)
    _write_all(writes)
    return result


def _mark(doc: Document, items: Iterable[Annotation | PageNote]) -> tuple[Document, int, int, int]:
    """`doc` with a marker for each of `items` not marked in it yet, and its markers of the older
    form rewritten in the current one; how many written, how many were there, how many
    rewritten."""
    plain, groups, where = strip(doc)
    present = set()
    converted = 0
    for group in groups.values():
        for k, marker in enumerate(group):
            try:
                present.add(decode(marker)["id"])
            except ValueError:
                continue
            old = OLD_MARKER.fullmatch(marker.rstrip("\r\n"))
            if old is not None:
                # The same JSON, escaped for the new form: the HTML comment would publish it.
                end = marker[len(marker.rstrip("\r\n")) :]
                group[k] = MARKER_PREFIX + escape(old.group(1), MARKER_TEXT) + MARKER_SUFFIX + end
                converted += 1
    start, found, allowed = _places(plain)
    new: dict[int, list[str]] = {}
    written = already = 0
    for item in items:
        if item.id in present:
            already += 1
            continue
        target = None
        if isinstance(item, Annotation) and item.source and item.source.line_start and where:
            # The store's lines are lines of the file as it is, markers included.
            target = where[min(item.source.line_start, len(where)) - 1]
        new.setdefault(_place(target, start, found, allowed), []).append(encode(item))
        written += 1
    if not written and not converted:
        return doc, 0, already, 0
    merged = {n: [*groups.get(n, []), *new.get(n, [])] for n in set(groups) | set(new)}
    return insert(plain, merged), written, already, converted


# -- import -------------------------------------------------------------------------------------


def import_inline(
    store: Store, path: str | os.PathLike[str] | None = None, *, strip_markers: bool = False
) -> ImportResult:
    """Read the markers of the Markdown files under `path` (a file or a folder; default: the
    docs folder) into the store, and with `strip_markers` remove them from the files.

    A marker whose id the store has already is skipped: the store's note, its status and its
    replies stay as they are (as `annotate import` does). Every marker is read and checked
    before anything is written: a malformed one raises `MarkerError` and changes nothing.
    """
    root = Path(store.project_dir)
    folder = Path(path) if path is not None else root / docs_dir(root)
    if folder.is_dir():
        found = sorted(p for p in folder.rglob("*") if p.suffix in MARKDOWN and p.is_file())
    elif folder.exists():
        found = [folder]
    else:
        raise InlineError(f"{folder} does not exist")
    # Each file as export names it: symlinks resolved, confined to the project, read once (a
    # page linked to ../README.md is README.md, and --strip writes through to it).
    files: dict[Path, str] = {}
    for file in found:
        full = _inside(root, file)
        if full is None:
            raise InlineError(
                f"{file} leads outside the project {root}: its markers are not read (remove the "
                "link, or copy the file into the project)"
            )
        files.setdefault(full, str(file))
    result = ImportResult()
    annotations: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    replies: list[dict[str, Any]] = []
    writes: dict[Path, tuple[str, Document]] = {}
    for file, shown in files.items():
        doc = _read(file, shown)
        at = markers(doc)
        for n in at:
            rows = _rows(doc.lines[n], shown, n + 1)
            annotations += rows[0]
            notes += rows[1]
            replies += rows[2]
        result.markers += len(at)
        if at and strip_markers:
            writes[file] = (shown, strip(doc)[0])
            result.stripped.append(shown)
    result.counts = store.insert_raw(annotations, notes, replies)
    _write_all(writes)
    return result


def _inside(root: Path, file: Path) -> Path | None:
    """`file` with its symlinks resolved, if that is a file inside `root`; else None."""
    try:
        relative = file.resolve().relative_to(root.resolve())
    except (OSError, RuntimeError, ValueError):  # a symlink loop, or not under the root
        return None
    return safe_path(root, relative.as_posix())


def _rows(line: str, shown: str, number: int) -> importing.Rows:
    try:
        data = decode(line)
        key = "annotations" if "type" in data else "pageNotes"
        validate.refuse_unknown(data, KEYS[key], "a marker")
        return importing.rows_of({"format": JSON_FORMAT, "version": JSON_VERSION, key: [data]})
    except ValidationError as e:
        raise MarkerError(shown, number, _ITEM.sub("", e.message)) from None
    except ValueError as e:
        raise MarkerError(shown, number, str(e)) from None

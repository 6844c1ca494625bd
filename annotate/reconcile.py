"""Lazy reconciliation: keep each text annotation's `source` pointing at its Markdown lines.

On every read, the annotations whose Markdown file changed since their last check (modification
time) are located again — by `replacedText` when the agent recorded one, else by the quote — and
`source`, `anchorState` and `anchorScore` updated (docs/data-model.md, `anchorState`):

- `anchored`: found; `source` holds the current lines;
- `stale`: the file is there but the text was rewritten beyond recognition; `source` keeps the lines
  where it was last seen;
- `orphaned`: the file is gone (or, for an element note, the element was never found in it);
- `removed` (set by `address_annotation(deleted=True)`): the text was deleted as asked; left be.

A note made on another commit of the branch being served (issue #20, `annotate/build.py`) is
located again even in an unchanged file, and records that commit (`anchored_on`, the answer's
`build.anchoredOn`): "made on build A, re-anchored on B".

Nothing is ever dropped. A note that is not `anchored` keeps the lines where it was last seen, and
`Source.last_known` says so: they never claim the text that now stands there (issue #13). Those
lines follow the edits made around them (issue #26): each located note keeps a short hash of every
line of its file as it was (8 characters a line, kept once per version of the file in
annotate/lineversions.py, the note's `source_lines` naming it), and a note that goes stale has
its last known lines carried through a line diff of that file and the file as it is, so three
lines inserted above a reworded heading move its last known line from 177 to 180.
Element notes are looked for by their `src`, `href` or text (`sourcemap.locate_element`); text
that a directive generated points at the directive's lines (`generated.locate_generated`). An unchanged file costs one `stat` per file, not per annotation.
"""

from __future__ import annotations

import base64
import difflib
import functools
import hashlib
import json
import os
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import fields, generated, linemove, lineversions, sourcemap
from .lineversions import LineKey
from .models import Build
from .pages import resolve_page, safe_path

__all__ = ["Locator", "line_hashes", "locate_source", "map_lines", "plan"]

# Markdown files larger than this are not read (a page is kilobytes); such notes keep their state.
MAX_SOURCE_BYTES = sourcemap.MAX_SOURCE_BYTES
# Each line of a file kept as 6 bytes of its BLAKE2b hash, 8 characters of base64: enough to tell
# lines apart in a diff (a wrong match needs two different lines with equal hashes, 1 in 2^48),
# a tenth of the text of an average Markdown line.
LINE_HASH_BYTES = 6
LINE_HASH_CHARS = 8
# The state of an anchored note whose file changed and that is not located again yet: a read that
# finds too many such notes answers at once and leaves them to the background (relocator.py).
PENDING = fields.ANSWER_ANCHOR_STATES[-1]
# A changed middle longer than this (lines, after the common head and tail) is not diffed on a
# read: a stale note there keeps its lines. A documentation page is far shorter.
MAX_DIFF_LINES = 20_000


@dataclass
class Locator:
    """Reads each Markdown file at most once per reconciliation pass and remembers page paths."""

    project: Path
    # Page URL -> registered Markdown path; asked only for notes without a file yet (or whose file
    # is gone), so an ordinary read never touches the pages table.
    registered: Callable[[str], str | None] = lambda url: None
    # Page URL -> the objects the page documents as rendered (`generated.objects_in_html`).
    page_objects: Callable[[str], list[Any] | None] = lambda url: None
    _files: dict[str, tuple[float, str] | None] = field(default_factory=dict)
    _mtimes: dict[str, float | None] = field(default_factory=dict)
    _resolved: dict[str, str | None] = field(default_factory=dict)
    _objects: dict[str, list[Any]] = field(default_factory=dict)
    # Version keys -> the line hashes they name (lineversions.fetch), asked only for a note that
    # went stale and whose old text this process does not know.
    lines_of: Callable[[list[str]], Mapping[str, str]] = lambda keys: {}
    _lines: dict[str, str | None] = field(default_factory=dict)
    # The versions of files this pass found notes in, with the mtime each was read with: to be
    # written with the notes (lineversions.keep).
    seen: dict[LineKey, float] = field(default_factory=dict)
    # Version key -> the version its notes the edit did not touch are at now, and how many such
    # notes this pass found (their rows are not written: lineversions.succeed).
    unmoved: dict[str, tuple[LineKey, int]] = field(default_factory=dict)
    # Asked once per file (or pair of versions), not once per note: a page's 200 notes share them.
    _versions: dict[str, tuple[str, LineKey]] = field(default_factory=dict)
    _moves: dict[tuple[str, str], linemove.Moves | None] = field(default_factory=dict)
    _paths: dict[str, Path | None] = field(default_factory=dict)

    def _full(self, relative: str) -> Path | None:
        """`safe_path` of a file, resolved once a pass: page_file, mtime and read all ask."""
        if relative not in self._paths:
            self._paths[relative] = safe_path(self.project, relative)
        return self._paths[relative]

    def page_file(self, page_url: str) -> str | None:
        """The Markdown file of a page: the plugin's registration first, else mkdocs.yml rules."""
        if page_url not in self._resolved:
            registered = self.registered(page_url)
            if registered is not None and self._full(registered) is not None:
                self._resolved[page_url] = registered
            else:
                self._resolved[page_url] = resolve_page(self.project, page_url)
        return self._resolved[page_url]

    def objects(self, page_url: str) -> list[Any]:
        """What the page documents, as the last build rendered it (cached per pass)."""
        if page_url not in self._objects:
            self._objects[page_url] = self.page_objects(page_url) or []
        return self._objects[page_url]

    def mtime(self, relative: str) -> float | None:
        """The file's mtime, or None when it is missing or outside the project (cached)."""
        if relative not in self._mtimes:
            full = self._full(relative)
            try:
                st = os.stat(full) if full is not None else None
            except OSError:
                st = None
            self._mtimes[relative] = st.st_mtime if st and stat.S_ISREG(st.st_mode) else None
        return self._mtimes[relative]

    def version(self, path: str, text: str) -> LineKey:
        """The key of file `path` as `text` (no record of it)."""
        known = self._versions.get(path)
        if known is not None and known[0] is text:
            return known[1]
        key = lineversions.key(path, line_hashes(text))
        self._versions[path] = (text, key)
        return key

    def moves(self, was: str, path: str, text: str) -> linemove.Moves | None:
        """The line moves from version `was` to file `path` as `text` (`linemove.moves`), None
        when the old text is not known here or the edit is not plain prose."""
        if (was, path) not in self._moves:
            old = linemove.known(was)
            found = None if old is None else linemove.moves(old, text)
            if found is not None:
                now = self.version(path, text)
                if linemove.known(now) is not text:
                    linemove.remember(now, text)
            self._moves[was, path] = found
        return self._moves[was, path]

    def keep(self, key: LineKey, mtime: float) -> LineKey:
        """Record that a note points at version `key`, read with `mtime` (`seen`)."""
        self.seen[key] = mtime
        return key

    def old_lines(self, key: str) -> str | None:
        """The line hashes of version `key`: of its text when this process knows it, else as
        the store holds them (None: dropped, or never kept)."""
        text = linemove.known(key)
        if text is not None:
            return line_hashes(text)
        if key not in self._lines:
            self._lines[key] = self.lines_of([key]).get(key)
        return self._lines[key]

    def read(self, relative: str) -> str | None:
        if relative not in self._files:
            full = self._full(relative)
            try:
                if full is None or full.stat().st_size > MAX_SOURCE_BYTES:
                    raise OSError
                self._files[relative] = (
                    full.stat().st_mtime,
                    full.read_text(encoding="utf-8-sig", errors="replace"),
                )
            except OSError:
                self._files[relative] = None
        entry = self._files[relative]
        return entry[1] if entry else None


def prepare_file(locator: Locator, path: str | None) -> bool:
    """Parse Markdown file `path` now, unless its text is parsed already, so that locating a
    note in it is a lookup. A verb calls it before its write lock (docs/architecture.md, "When a
    verb reads the Markdown"), the anchor route on every page load. Returns whether the file was
    found."""
    # Read each time, not skipped by mtime: on a site of more pages than the parse cache holds a
    # page parsed once may be gone from it, and its next first note would pay the parse.
    text = locator.read(path) if path else None
    if text is None:
        return False
    sourcemap.prepare(text)
    line_hashes(text)  # what the note keeps of its file's lines, cached as the parse is
    return True


def locate_source(text: str, row: Mapping[str, Any]) -> tuple[sourcemap.SourceMatch | None, bool]:
    """Find the annotation in Markdown `text`: by its replacement first, then by its quote.

    Returns the match and whether the replacement was the one found.
    """
    hint = row["source_line_start"]
    replaced = row["replaced_text"]
    prefix, suffix = row["quote_prefix"] or "", row["quote_suffix"] or ""
    in_code = None if row.get("in_code") is None else bool(row["in_code"])
    if replaced:
        # The text around the quote still frames the replacement; the page's count of the
        # quote's occurrences says nothing about the replacement's.
        match = sourcemap.locate_in_markdown(
            text, replaced, prefix=prefix, suffix=suffix, hint_line=hint, in_code=in_code
        )
        if match is not None:
            return match, True
    exact = row["quote_exact"] or row["selected_text"] or ""
    return sourcemap.locate_in_markdown(
        text,
        exact,
        prefix=prefix,
        suffix=suffix,
        hint_line=hint,
        in_code=in_code,
        occurrence=row.get("occurrence"),
    ), False


def _element_source(text: str, row: Mapping[str, Any]) -> sourcemap.SourceMatch | None:
    try:
        selector = json.loads(row["element_selector"] or "{}")
    except ValueError:
        return None
    if not isinstance(selector, dict):
        return None
    return sourcemap.locate_element(text, selector, hint_line=row["source_line_start"])


def plan(
    rows: Iterable[Mapping[str, Any]],
    locator: Locator,
    *,
    force: bool = False,
    build: Build | None = None,
) -> dict[str, dict[str, Any]]:
    """The column updates that bring `rows` up to date with the files on disk, by annotation id.

    A row is looked at again only when its file's mtime is not
    the one recorded at the last check (or with `force`), or when `build` (the build being
    served) is another commit of the branch the note was made on than the one it was last
    located on: then it is located again even in an unchanged file, and `anchored_on` records
    that commit (`Build.anchored_on`, the answer's `build.anchoredOn`).
    """
    listed = list(rows)
    # One file after another: each file's text and parse are then made once, however many files
    # (a cache of the last pages parsed would lose them to notes in id order). The updates keep
    # the rows' order.
    found: dict[str, dict[str, Any]] = {}
    # A note without a file yet is located in its page's: by page, among those.
    for row in sorted(listed, key=lambda row: (row["source_file"] or "", row["page_url"])):
        update = _plan_row(row, locator, force=force, build=build)
        if update is not None:
            found[row["id"]] = update
    return {row["id"]: found[row["id"]] for row in listed if row["id"] in found}


def _plan_row(
    row: Mapping[str, Any], locator: Locator, *, force: bool, build: Build | None
) -> dict[str, Any] | None:
    """`plan` of one row: its column updates, or None when it needs none."""
    if row["anchor_state"] == PENDING:
        # Anchored when it was marked pending (annotate/relocator.py): located as that, and
        # its answer written whatever it is, to settle the state.
        update = _plan_row({**row, "anchor_state": "anchored"}, locator, force=force, build=build)
        return {"anchor_state": "anchored", **(update or {})}
    if row["anchor_state"] == "removed":
        return None  # a removed note's text was deleted on purpose: nothing to find
    newer = _newer_build(row, build)
    element = row["type"] == "element"
    current = row["source_file"]
    path = current
    mtime = locator.mtime(path) if path else None
    if mtime is None:
        # New, or the file is gone: the page may now be built from another file.
        path = locator.page_file(row["page_url"])
        mtime = locator.mtime(path) if path else None
    if mtime is None:
        gone: dict[str, Any] = {}
        if (current or element) and row["anchor_state"] != "orphaned":
            gone = {"anchor_state": "orphaned", "anchor_score": 0.0}
        if newer is not None:
            gone["anchored_on"] = newer.anchored_on
        return gone or None
    if not force and newer is None and path == current and row["source_mtime"] == mtime:
        return None  # unchanged since the last check: costs nothing
    text = locator.read(path)
    if text is None:
        return None
    change: dict[str, Any] = {"source_file": path, "source_mtime": mtime}
    if not force and newer is None and path == current and _same_text(row, path, text, locator):
        # Saved again as it was (an editor's save, a checkout back): located in this very
        # text with these very inputs, so found where it is. Its row is left as it is: the
        # version's row records the new mtime (`Sources._stale` reads it), one write a file.
        locator.keep(locator.version(path, text), mtime)
        return None
    if newer is not None:
        change["anchored_on"] = newer.anchored_on
    elif not force and path == current and (moved := _line_moved(row, text, locator)) is not None:
        # The edit did not touch its lines: moved by the diff, no search.
        now = locator.keep(moved["source_lines"], mtime)
        if len(moved) > 1:
            return change | moved
        # Not even moved: its row is left as it is, its version's row names the version it is
        # at now (`Locator.unmoved`), one write a file.
        n = locator.unmoved.get(row["source_lines"], (now, 0))[1]
        locator.unmoved[row["source_lines"]] = (now, n + 1)
        return None
    match = _element_source(text, row) if element else locate_source(text, row)[0]
    # Text once found in the Markdown itself and gone now was deleted or rewritten: stale,
    # never re-pointed at a directive near where it was.
    was_markdown = bool(row["source_path"]) and row.get("source_kind") != "generated"
    made = None if match is not None or element or was_markdown else _generated(text, row, locator)
    if match is not None:
        now = locator.keep(locator.version(path, text), mtime)
        linemove.remember(now, text)
        change.update(
            source_path=path,
            source_line_start=match.line_start,
            source_line_end=match.line_end,
            source_excerpt=match.excerpt,
            source_kind=None,
            source_object=None,
            anchor_state="anchored",
            anchor_score=float(match.score),
            source_lines=now,
        )
    elif made is not None:
        now = locator.keep(locator.version(path, text), mtime)
        change.update(
            source_path=path,
            source_line_start=made.line_start,
            source_line_end=made.line_end,
            source_excerpt=made.excerpt,
            source_kind="generated",
            source_object=made.object,
            anchor_state="anchored",
            anchor_score=100.0 if made.object else 80.0,
            source_lines=now,
        )
    elif row["source_path"]:
        # Seen before, not found now: rewritten. Keep the last known lines as a pointer,
        # marked as last known (Source.last_known) so they claim nothing about the text
        # that stands there now, carried through the edits around them when the file's lines
        # as they were are known (issue #26).
        change.update(anchor_state="stale", anchor_score=0.0)
        moved = _moved(row, path, text, locator)
        if moved:
            locator.keep(moved["source_lines"], mtime)
        change.update(moved)
    elif element:
        # Never anchored without a source (issue #13, class 7).
        change.update(anchor_state="orphaned", anchor_score=0.0)
    return change


def _line_moved(row: Mapping[str, Any], text: str, locator: Locator) -> dict[str, Any] | None:
    """The update of a note the edit from the text it was located in to `text` did not touch
    (annotate/linemove.py says when that is sure), or None when it must be searched for. The
    columns it leaves out hold what the search would write: the row is anchored, exactly
    (score 100), in the Markdown itself, at lines whose text is unchanged (so is the excerpt)."""
    was = row.get("source_lines")
    start, end = row.get("source_line_start"), row.get("source_line_end")
    if (
        row["type"] != "text"
        or row["anchor_state"] != "anchored"
        or row.get("source_kind") is not None
        or row["replaced_text"]
        or row.get("anchor_score") != 100
        or not was
        or start is None
        or end is None
        or row["source_path"] != row["source_file"]
    ):
        return None
    moves = locator.moves(was, row["source_file"], text)
    quote = row["quote_exact"] or row["selected_text"] or ""
    lines = None if moves is None else moves.move(start, end, quote)
    if moves is None or lines is None:
        return None
    now = locator.version(row["source_file"], text)
    # Only what differs from the row: a page's notes that did not move write three short
    # columns (no index of the table touched), in one batched statement.
    update: dict[str, Any] = {"source_lines": now}
    if lines != (start, end):
        update.update(
            source_line_start=lines[0],
            source_line_end=lines[1],
            source_excerpt=moves.excerpt(*lines),
        )
    return update


def _same_text(row: Mapping[str, Any], path: str, text: str, locator: Locator) -> bool:
    """Whether a text note anchored in the Markdown itself was located in file `path` as `text`
    is now (its version is that of `text`). Not a note on generated text: what a directive
    generated changes with the build, not with the file. `Sources._stale` selects the same
    notes in SQL (`sources.SAME_TEXT`)."""
    return (
        row["type"] == "text"
        and row["anchor_state"] == "anchored"
        and row.get("source_kind") is None
        and bool(row.get("source_lines"))
        and row["source_lines"] == locator.version(path, text)
    )


# Keyed by the whole text, as sourcemap's parse: notes made one after another on an unchanged page
# hash its lines once (about 1.5 ms for 500 lines).
@functools.lru_cache(maxsize=128)
def line_hashes(text: str) -> str:
    """Each line of `text` as `LINE_HASH_CHARS` characters of its hash, one after another."""
    out = []
    for line in text.split("\n"):
        digest = hashlib.blake2b(line.encode("utf-8", "surrogatepass"), digest_size=LINE_HASH_BYTES)
        out.append(base64.b64encode(digest.digest()).decode("ascii"))
    return "".join(out)


def _split(hashes: str) -> list[str]:
    n = LINE_HASH_CHARS
    return [hashes[i : i + n] for i in range(0, len(hashes), n)]


def map_lines(old: Sequence[str], new: Sequence[str], start: int, end: int) -> tuple[int, int]:
    """Lines `start`-`end` (1-based, inclusive) of `old` carried to `new` through a line diff.

    A line kept maps to where it is now; a line replaced maps to its replacement (the same
    offset, or the last line that replaced it); a line deleted maps to the line that follows
    the deletion. Lines equal before and after the diff's changed middle are matched first,
    so a diff costs little for the usual edit of a few lines.
    """
    # The common head and tail cost nothing to diff: only the middle goes to difflib.
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while (
        tail < min(len(old), len(new)) - head
        and old[len(old) - 1 - tail] == new[len(new) - 1 - tail]
    ):
        tail += 1
    if max(len(old), len(new)) - head - tail > MAX_DIFF_LINES:
        return start, end  # too big a change to diff on a read: the lines stay as they were
    # autojunk: lines found everywhere (blank lines, fences) start no match, only extend one,
    # which keeps a diff of a page with hundreds of blank lines to milliseconds.
    middle = difflib.SequenceMatcher(
        None, old[head : len(old) - tail], new[head : len(new) - tail], autojunk=True
    ).get_opcodes()
    last = max(len(new), 1)

    def one(line: int) -> int:
        at = line - 1
        if at < head:
            return line
        if at >= len(old) - tail:
            return at + len(new) - len(old) + 1
        at -= head
        for tag, i1, i2, j1, j2 in middle:
            if i1 <= at < i2:
                if tag == "equal":
                    return head + j1 + (at - i1) + 1
                if tag == "replace":
                    return head + j1 + min(at - i1, j2 - j1 - 1) + 1
                return min(head + j1 + 1, last)  # deleted: the line after it
        return min(line, last)

    first = max(1, min(one(start), last))
    return first, max(first, min(one(end), last))


def _moved(row: Mapping[str, Any], path: str, text: str, locator: Locator) -> dict[str, Any]:
    """The last known lines of a note that went stale, carried to file `path` as it is now,
    `text` (with its version, to carry them again after the next edit); nothing when its file's
    lines as they were are not known (a note last located before issue #26, another file, a
    version dropped)."""
    key = row.get("source_lines")
    start, end = row.get("source_line_start"), row.get("source_line_end")
    if not key or start is None or end is None or row.get("source_path") != path:
        return {}
    now = locator.version(path, text)
    if key == now:
        return {}
    was = locator.old_lines(key)
    if was is None:
        return {}
    line_start, line_end = map_lines(_split(was), _split(now.lines), start, end)
    return {"source_line_start": line_start, "source_line_end": line_end, "source_lines": now}


def _newer_build(row: Mapping[str, Any], build: Build | None) -> Build | None:
    """`build` with the `anchored_on` the row should record, when that is not what it records.

    A note made on commit A of a branch and read while commit B of the same branch is served
    records B; read on A again, it records nothing. Notes of other branches, or without a build,
    are not compared (their Markdown is still reconciled by mtime as any note's).
    """
    if build is None or build.branch is None or build.commit is None:
        return None
    made = row.get("build_commit")
    if made is None or row.get("build_branch") != build.branch:
        return None
    target = None if made == build.commit else build.commit
    if row.get("anchored_on") == target:
        return None
    return Build(build.branch, build.commit, target)


def _generated(
    text: str, row: Mapping[str, Any], locator: Locator
) -> generated.GeneratedSource | None:
    """The directive that generated a quote not found in the Markdown itself."""
    exact = row["quote_exact"] or row["selected_text"] or ""
    return generated.locate_generated(
        text,
        exact,
        prefix=row["quote_prefix"] or "",
        suffix=row["quote_suffix"] or "",
        objects=locator.objects(row["page_url"]),
    )


def changed(row: Mapping[str, Any], update: Mapping[str, Any]) -> bool:
    """Whether an update changes what a reader sees (not just the recorded mtime)."""
    visible = (
        "source_path",
        "source_kind",
        "source_object",
        "source_line_start",
        "source_line_end",
        "anchor_state",
        "anchor_score",
        "anchored_on",
    )
    return any(k in update and update[k] != row.get(k) for k in visible)

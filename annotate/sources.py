"""Sources: where each note stands in the Markdown (annotate/reconcile.py) and the pages' URLs
(annotate/urls.py), as `store.sources`.

Every read path of the store starts by reconciling the notes it is about to read whose file
changed (`reading`), and a verb that moves a note's target locates it again inside its own
write transaction (`locate`).
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from . import lineversions, pages, reconcile, relocator, urls
from . import validation as validate
from .backends import Backend, Connection, now
from .errors import StoreReadOnlyError
from .lineversions import LineKey
from .models import Build
from .tables import IN_CHUNK, Row, Tables

__all__ = [
    "ALL_ANNOTATIONS",
    "CLOSEST_PAGES",
    "ORIGINAL_COLUMNS",
    "SOURCE_COLUMNS",
    "Project",
    "Sources",
]

# The columns that say where a note stands in its Markdown file.
SOURCE_COLUMNS = (
    "source_file",
    "source_mtime",
    "source_path",
    "source_line_start",
    "source_line_end",
    "source_excerpt",
    "source_kind",
    "source_object",
    "anchor_score",
)
# The source a text note had when it was made (Annotation.original_source).
ORIGINAL_COLUMNS = {
    "original_path": "source_path",
    "original_line_start": "source_line_start",
    "original_line_end": "source_line_end",
    "original_excerpt": "source_excerpt",
}
# What a re-location plan was made from: written only if these are still what it read.
GUARD_COLUMNS = ("replaced_text", "source_file", "source_mtime", "quote_exact", "anchor_state")
# What a re-location plan reads of a note (annotate/reconcile.py) and `reconcile.changed`
# compares: not the note's text, its lifecycle or its excerpts, which a read after an edit would
# fetch only to drop (issue #31).
PLAN_COLUMNS = (
    "id", "page_url", "type", "anchor_state", "anchor_score", "anchored_on", "build_branch",
    "build_commit", "replaced_text", "selected_text", "quote_exact", "quote_prefix",
    "quote_suffix", "in_code", "occurrence", "element_selector", "source_file", "source_mtime",
    "source_path", "source_line_start", "source_line_end", "source_kind", "source_object",
    "source_lines",
)  # fmt: skip
# How many pages with notes a filter that matches none names.
CLOSEST_PAGES = 3
# What `reading` reconciles: every annotation (a verb's scope is this with a WHERE clause).
ALL_ANNOTATIONS = "SELECT * FROM annotations"
# The version of its file a note located in this very text keeps (`reconcile._same_text`): when
# the file's mtime moved and its version's row records the new one, the text is the same.
SAME_TEXT = (
    "CASE WHEN type = 'text' AND anchor_state = 'anchored' AND source_kind IS NULL "
    "THEN source_lines END"
)


class Project(Protocol):
    """The project the notes point into, as the store knows it (annotate/store.py)."""

    @property
    def project_dir(self) -> Path:
        """The project folder (`ProjectNotFound` when the store was opened outside any)."""
        ...

    @property
    def outside(self) -> str | None:
        """The folder a project was looked for from and none found: notes are read as stored."""
        ...

    @property
    def build(self) -> Build | None:
        """The build being served now (annotate/build.py), or None."""
        ...


class Sources:
    """The Markdown file of each page and of each note, and the notes kept up to date with it."""

    def __init__(self, backend: Backend, project: Project) -> None:
        self._file = backend
        self._tables = Tables(backend)
        self._project = project
        self.relocator = relocator.Relocator(self)

    @contextlib.contextmanager
    def reading(self, scope: str | None, params: Sequence[Any] = ()) -> Iterator[Connection]:
        """A read transaction in which the annotations `scope` selects (a `SELECT * FROM
        annotations …`, or None for none) are up to date with their Markdown files.

        The reconciliation step at the top of every read path: one grouped query gives each file
        and the mtime recorded for it, and a file whose mtime on disk is the recorded one needs
        nothing, so an unchanged store costs a `stat` per file and the read goes on in the same
        transaction. Notes whose file changed are located again and written first (outside any
        write lock while their Markdown is read), then read in a new transaction. A file saved
        again as it was costs a write of one row after the answer (`_stale`'s `saved`).
        """
        if scope is not None and self._project.outside is None:
            saved: dict[LineKey, float] = {}
            with self._file.transaction(write=False) as conn:
                stale = self._stale(conn, scope, params, inline=True, saved=saved)
                if stale is None:
                    yield conn
            if stale is None:
                if saved:
                    # Files saved again as they were: their versions' new mtimes, written after
                    # the answer (which they do not change), so the next read skips them.
                    with contextlib.suppress(StoreReadOnlyError):
                        self.reconcile_rows([], saved=saved)
                return
            with contextlib.suppress(StoreReadOnlyError):
                # A store that cannot be written is read as it was last written (issue #27).
                if isinstance(stale, tuple):
                    # A branch switch's thousands of notes: answered pending, located in the
                    # background (annotate/relocator.py).
                    self.mark_pending(*stale)
                    self.relocator.start()
                self.reconcile_rows([] if isinstance(stale, tuple) else stale(), saved=saved)
        with self._file.transaction(write=False) as conn:
            yield conn

    def _stale(
        self,
        conn: Connection,
        scope: str,
        params: Sequence[Any],
        *,
        inline: bool = False,
        saved: dict[LineKey, float] | None = None,
    ) -> Callable[[], list[dict[str, Any]]] | tuple[str, list[Any]] | None:
        """The rows `scope` selects whose Markdown file changed since their last check, and those
        made on another commit of the served build's branch and not yet located in this one
        (`reconcile._newer_build` says the same of one row), and those left pending; None when
        there are none. Read when called: on PostgreSQL with the commit, one round trip for both.

        `inline`: when they are more than a read locates before answering
        (`relocator.inline`), not them but the `FROM … WHERE …` that selects them, and its
        parameters. A file saved again as it was (a new mtime, the same text: the version its
        notes keep, `SAME_TEXT`) does not make its notes stale: its version and mtime go into
        `saved`, for the caller to write (`lineversions.keep`), one row a file."""
        live = f"FROM ({scope}) AS s WHERE anchor_state != 'removed'"
        build = self._project.build
        # One grouped query tells both: the files and mtimes, and whether any row is behind.
        behind, behind_params, any_behind = "", [], "0"
        if build is not None and build.branch is not None and build.commit is not None:
            behind = (
                "build_branch = ? AND build_commit IS NOT NULL "
                "AND coalesce(anchored_on, build_commit) != ?"
            )
            behind_params = [build.branch, build.commit]
            any_behind = f"max(CASE WHEN {behind} THEN 1 ELSE 0 END)"
        pending = f"max(CASE WHEN anchor_state = '{reconcile.PENDING}' THEN 1 ELSE 0 END)"
        # The version's row (its mtime, the version its notes are at since an edit that did not
        # touch them, and that one's mtime) joined to the groups, not to the rows.
        table = lineversions.TABLE
        groups = conn.execute(
            f"SELECT g.*, v.mtime, v.next, w.mtime FROM (SELECT source_file, source_mtime, "
            f"{any_behind} AS late, {pending} AS pending, count(*) AS n, {SAME_TEXT} AS version "
            f"{live} GROUP BY source_file, source_mtime, version) AS g "
            f"LEFT JOIN {table} AS v ON v.key = g.version LEFT JOIN {table} AS w ON w.key = v.next",
            [*behind_params, *params],
        ).fetchall()
        if not groups:
            return None
        locator = self.locator()
        changed: set[str | None] = set()
        for f, mtime, _, left, _, version, seen, after, after_seen in groups:
            # A pending note's file is one that changed (or a process marked it so and stopped).
            if f is None or left:
                changed.add(f)
                continue
            disk = locator.mtime(f)
            if disk == mtime or (disk is not None and version and disk in (seen, after_seen)):
                continue
            text = locator.read(f) if version is not None and disk is not None else None
            now = None if text is None else locator.version(f, text)
            if (
                now is not None
                and disk is not None
                and now in (version, after)
                and saved is not None
            ):
                saved[now] = disk  # saved again as it was
            else:
                changed.add(f)
        moved = any(group[2] for group in groups)
        if not changed and not moved:
            return None
        files = sorted(f for f in changed if f is not None)
        which = [f"source_file IN ({','.join('?' * len(files))})"] if files else []
        if None in changed:
            which.append("source_file IS NULL")
        if moved:
            which.append(f"({behind})")
        where = f"{live} AND ({' OR '.join(which)})"
        where_params = [*params, *files, *(behind_params if moved else [])]
        count = sum(g[4] for g in groups if g[0] in changed or g[2])
        if inline and not relocator.inline(count, len(changed)):
            return where, where_params
        return self._tables.send(conn, f"SELECT {', '.join(PLAN_COLUMNS)} {where}", where_params)

    def page_files(self, conn: Connection, urls: set[str]) -> dict[str, str | None]:
        """The Markdown file of each page, for page notes' `source`: the plugin's record, else
        mkdocs.yml's rules. Only shown, never read here, so a recorded path is taken as it is
        (the plugin records paths inside the project only)."""
        found: dict[str, str | None] = {}
        listed = sorted(urls)
        for i in range(0, len(listed), IN_CHUNK):
            chunk = listed[i : i + IN_CHUNK]
            marks = ",".join("?" * len(chunk))
            found.update(
                conn.execute(
                    f"SELECT page_url, src_path FROM pages WHERE page_url IN ({marks})", chunk
                ).fetchall()
            )
        for url in urls - found.keys():
            found[url] = pages.resolve_page(self._project.project_dir, url)
        return found

    def register_pages(
        self, pages: Mapping[str, str], objects: Mapping[str, list[Any]] | None = None
    ) -> None:
        """Record which Markdown file (relative to the project) each page URL is built from.

        The MkDocs plugin calls this on every build; paths outside the project are ignored when
        read. `objects` gives, per page URL, the Python objects the page documents with their
        rendered text (`annotate.generated.objects_in_html`), so a note on generated text names
        the object whose docstring holds it.
        """
        stamp = now()
        objects = objects or {}
        with self._file.transaction(write=True) as conn:
            for url, path in pages.items():
                validate.page_url(url)
                found = objects.get(url)
                generated = json.dumps(found, ensure_ascii=False) if found else None
                conn.execute(
                    "INSERT INTO pages (page_url, src_path, generated, updated_at) "
                    "VALUES (?, ?, ?, ?) ON CONFLICT(page_url) DO UPDATE SET "
                    "src_path = excluded.src_path, generated = excluded.generated, "
                    "updated_at = excluded.updated_at WHERE pages.src_path != excluded.src_path "
                    f"OR pages.generated {self._file.differs} excluded.generated",
                    (url, path, generated, stamp),
                )

    def prepare_page(self, page_url: str) -> bool:
        """Parse a page's Markdown ahead of its first note, so saving that note is fast.

        The web endpoint calls it when the overlay loads a page. Returns whether the page's
        Markdown file was found.
        """
        locator = self.locator()
        path = locator.page_file(self.page_url(page_url))
        return reconcile.prepare_file(locator, path)

    def prepare_note(self, id: str) -> None:
        """Parse note `id`'s Markdown file before a verb's write lock, where locating the note
        is then a lookup (docs/architecture.md, "When a verb reads the Markdown")."""
        row = (
            self._file.connection()
            .execute("SELECT page_url, source_file FROM annotations WHERE id = ?", (id,))
            .fetchone()
        )
        if row is not None:
            locator = self.locator()
            reconcile.prepare_file(locator, row[1] or locator.page_file(row[0]))

    def page_file(self, page_url: str) -> str | None:
        """The Markdown file (relative to the project) a page is built from: the plugin's record,
        else mkdocs.yml's rules; None when none is known."""
        return self.locator().page_file(self.page_url(page_url))

    def locator(self, registered: Mapping[str, str | None] | None = None) -> reconcile.Locator:
        """What locates notes in the Markdown; `registered`: the files of pages already read."""

        def page(url: str) -> str | None:
            if registered is not None and url in registered:
                return registered[url]
            return self._registered_page(url)

        def lines_of(keys: list[str]) -> Mapping[str, str]:
            return lineversions.fetch(self._file.connection(), keys)

        return reconcile.Locator(
            self._project.project_dir,
            registered=page,
            page_objects=self._page_objects,
            lines_of=lines_of,
        )

    def _page_objects(self, page_url: str) -> list[Any] | None:
        row = (
            self._file.connection()
            .execute("SELECT generated FROM pages WHERE page_url = ?", (page_url,))
            .fetchone()
        )
        try:
            return json.loads(row[0]) if row and row[0] else None
        except ValueError:
            return None

    def _registered_page(self, page_url: str) -> str | None:
        row = (
            self._file.connection()
            .execute("SELECT src_path FROM pages WHERE page_url = ?", (page_url,))
            .fetchone()
        )
        return row[0] if row else None

    def reconcile_rows(
        self,
        rows: Iterable[Row],
        *,
        force: bool = False,
        workers: int = 1,
        saved: Mapping[LineKey, float] | None = None,
    ) -> int:
        """Re-locate the rows whose Markdown changed; return how many were looked at again.
        `workers`: processes to plan a large set on (`relocator.plan_parallel`). `saved`: file
        versions seen again with a new mtime (`_stale`), written with the notes."""
        # A removed note's text was deleted on purpose: there is nothing to find again.
        rows = [r for r in rows if r["anchor_state"] != "removed"]
        versions = dict(saved or {})
        unmoved: dict[str, tuple[LineKey, int]] = {}
        build = self._project.build
        if not rows:
            updates: dict[str, dict[str, Any]] = {}
        elif workers > 1 and len(rows) >= relocator.PARALLEL_MIN_ROWS:
            with self._file.transaction(write=False) as conn:
                found = conn.execute("SELECT page_url, src_path, generated FROM pages")
                records = {url: (src, made) for url, src, made in found.fetchall()}
                kept = sorted({r["source_lines"] for r in rows if r["source_lines"]})
                lines = lineversions.fetch(conn, kept)
            updates, saw, unmoved = relocator.plan_parallel(
                rows, self._project.project_dir, records, lines,
                workers=workers, build=build, force=force,
            )  # fmt: skip
            versions.update(saw)
        else:
            locator = self.locator()
            updates = reconcile.plan(rows, locator, force=force, build=build)
            versions.update(locator.seen)
            unmoved = locator.unmoved
        # The versions the notes are at now: those of older versions no note points at go.
        current = {v["source_lines"] for v in updates.values() if v.get("source_lines")}
        current.update(now for now, _ in unmoved.values())
        if not updates:
            if versions:
                with self._file.transaction(write=True) as conn:
                    lineversions.keep(conn, versions)
                    lineversions.succeed(conn, unmoved)
                    lineversions.collect(conn, current)
            return 0
        by_id = {r["id"]: r for r in rows}
        # Write only if the inputs of the plan are still current: another connection may have
        # re-anchored (new replacedText, a newer check, another state) or deleted it meanwhile, and its answer is
        # the newer one. The updates go in one batched statement per set of columns; those a
        # reader sees get a change row if written, so which are still current is read first, in
        # one go under the write lock: no round trip per note on PostgreSQL (issue #31).
        seen = [id for id, values in updates.items() if reconcile.changed(by_id[id], values)]
        guard = " AND ".join(f"{c} {self._file.same} ?" for c in GUARD_COLUMNS)
        with self._file.transaction(write=True) as conn:
            # The versions first, then the notes that point at them, then the versions of those
            # files no note points at any more are dropped (lineversions.collect).
            lineversions.keep(conn, versions)
            still = self._tables.current(conn, "annotations", seen, GUARD_COLUMNS)
            seen = [i for i in seen if still.get(i) == tuple(by_id[i][c] for c in GUARD_COLUMNS)]
            batches: dict[tuple[str, ...], list[tuple[Any, ...]]] = {}
            for id, values in updates.items():
                guarded = tuple(by_id[id][c] for c in GUARD_COLUMNS)
                batches.setdefault(tuple(values), []).append((*values.values(), id, *guarded))
            for columns, batch in batches.items():
                sets = ", ".join(f"{k} = ?" for k in columns)
                conn.executemany(f"UPDATE annotations SET {sets} WHERE id = ? AND {guard}", batch)
            lineversions.succeed(conn, unmoved)
            lineversions.collect(conn, current)
            self._tables.record_many(
                conn, "annotation", "anchor", [(i, by_id[i]["page_url"]) for i in seen]
            )
        return len(updates)

    def locate(self, row: Row, values: dict[str, Any], *, force: bool) -> bool:
        """Add to `values` (the columns a verb writes to annotation `row`) where the note is now,
        inside the verb's write transaction; return whether what a reader sees moved.

        `force`: its target just changed (a new `replacedText`), so it is located again even in
        an unchanged file.
        """
        if self._project.outside is not None and not force:
            return False  # no Markdown to look in: kept where it was last located
        planned = {**row, **values}
        update = reconcile.plan(
            [planned], self.locator(), force=force, build=self._project.build
        ).get(row["id"])
        if not update:
            return False
        values.update(update)
        return reconcile.changed(planned, update)

    def build_columns(self) -> dict[str, Any]:
        """The columns of a new note that say which build it was made on (`Store.build`)."""
        build = self._project.build
        if build is None:
            return {}
        return {"build_branch": build.branch, "build_commit": build.commit}

    def place(self, row: dict[str, Any], registered: Mapping[str, str | None]) -> None:
        """Add to new annotation `row` where it stands in its page's Markdown, located at once
        (`registered`: the files of pages `page` read); a text note keeps that as its original
        source too."""
        blank = dict.fromkeys(SOURCE_COLUMNS) | {"replaced_text": None}
        update = reconcile.plan([blank | row], self.locator(registered), force=True)
        row.update(update.get(row["id"], {}))
        if row["type"] == "text":
            # What the reviewer saw: the change since then is shown once the note is addressed.
            row.update({o: row.get(c) for o, c in ORIGINAL_COLUMNS.items()})

    def reconcile(self, *, force: bool = False, workers: int = 1) -> int:
        """Check every annotation against its Markdown file now; return how many were updated."""
        with self._file.transaction(write=False) as conn:
            rows = self._tables.query(conn, ALL_ANNOTATIONS)
        return self.reconcile_rows(rows, force=force, workers=workers)

    def mark_pending(self, where: str, params: Sequence[Any]) -> None:
        """Mark the anchored notes `FROM … WHERE …` selects (`_stale`'s notes whose files
        changed) pending, in one statement: no change row, their `source` as it was."""
        with self._file.transaction(write=True) as conn:
            conn.execute(
                f"UPDATE annotations SET anchor_state = '{reconcile.PENDING}' WHERE "
                f"anchor_state = 'anchored' AND id IN (SELECT id {where} "
                "AND anchor_state = 'anchored' AND source_file IS NOT NULL)",
                params,
            )

    def relocate_changed(self, batch_files: int, hold: Callable[[], None] = lambda: None) -> int:
        """Locate again every note whose file changed (the background pass), `batch_files`
        files a write, `hold` called before each; return how many were looked at."""
        saved: dict[LineKey, float] = {}
        with self._file.transaction(write=False) as conn:
            stale = self._stale(conn, ALL_ANNOTATIONS, (), saved=saved)
        if saved:
            self.reconcile_rows([], saved=saved)
        if stale is None or isinstance(stale, tuple):
            return 0  # nothing changed (a tuple only when asked `inline`: never here)
        groups = relocator.by_file(stale())
        done = 0
        for at in range(0, len(groups), batch_files):
            hold()
            done += self.reconcile_rows([r for g in groups[at : at + batch_files] for r in g])
        return done

    @functools.cached_property
    def _site_path(self) -> str:
        return urls.site_path(
            pages.site_url(self._project.project_dir) if self._project.outside is None else None
        )

    def page_url(self, value: Any, field: str = "pageUrl") -> str:
        """The form the store keeps of a page URL written any way a person or an agent may:
        `/guide`, `guide/`, `/guide/index.html`, `http://127.0.0.1:8000/guide/`, with or without
        the site's sub-path. The first form that has notes wins (one page's notes stay under one
        URL), then the first the plugin registered; otherwise the path itself, a folder URL with
        its final `/`."""
        return self.page(value, field)[0]

    def page(self, value: Any, field: str = "pageUrl") -> tuple[str, dict[str, str | None]]:
        """`page_url`, and the Markdown file the plugin registered for each form it looked up
        (None: none), which the same read tells: a new note is located without asking again."""
        cleaned = urls.clean(value) if isinstance(value, str) and value.strip() else value
        path = validate.page_url(cleaned, field)
        forms = urls.candidates(path, self._site_path)
        marks = ",".join("?" * len(forms))
        # Through `connection()`, as a transaction would: this read runs before the write it
        # names the page for, and a deleted store must be recreated first (issue #17).
        found = (
            self._file.connection()
            .execute(
                f"SELECT page_url, 1, NULL FROM annotations WHERE page_url IN ({marks}) UNION "
                f"SELECT page_url, 1, NULL FROM page_notes WHERE page_url IN ({marks}) UNION "
                f"SELECT page_url, 0, src_path FROM pages WHERE page_url IN ({marks})",
                forms * 3,
            )
            .fetchall()
        )
        registered = dict.fromkeys(forms) | {url: src for url, notes, src in found if not notes}
        for wanted in (1, 0):
            known = {url for url, notes, _ in found if notes == wanted}
            for form in forms:
                if form in known:
                    return form, registered
        return urls.default(path), registered

    def page_hint(self, page_url: str) -> str | None:
        """When no note (of any status) is on this page: a sentence saying so and naming the
        pages with notes whose URLs are closest; else None. For listings that come back empty."""
        url = self.page_url(page_url)
        with self._file.transaction(write=False) as conn:
            found = conn.execute(
                "SELECT 1 FROM annotations WHERE page_url = ? UNION ALL "
                "SELECT 1 FROM page_notes WHERE page_url = ? LIMIT 1",
                (url, url),
            ).fetchone()
            if found:
                return None
            with_notes = [
                r[0]
                for r in conn.execute(
                    "SELECT page_url FROM annotations UNION SELECT page_url FROM page_notes"
                )
            ]
        if not with_notes:
            return f"No page has notes yet ({url} included)."
        closest = difflib.get_close_matches(url, with_notes, n=CLOSEST_PAGES, cutoff=0.0)
        return f"No notes on page {url}. Pages with notes closest to it: {', '.join(closest)}."

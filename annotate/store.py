"""The annotation store: every note, reply and review of one project, and the verbs on them.

Every mutation is one `BEGIN IMMEDIATE` transaction that reads the latest row, checks the lifecycle
and writes, so concurrent processes never lose an update (docs/storage.md). Reads run in a read
transaction, so an object and its replies always come from the same committed state. The
database, its connections and transactions are a backend's (annotate/backends/).

A text note's `source` follows its Markdown file (`annotate/reconcile.py`): every read path starts
by reconciling the notes it is about to read whose file changed (`_reading`), and a verb that
moves a note's target locates it again inside its own write transaction (`_locate`).
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import gc
import json
import os
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Literal, overload

import sqlite_utils

from . import build as builds
from . import pages, reconcile, sourcemap, urls
from . import validation as validate
from .backends import Backend, Connection, Rows, is_url, open_backend
from .backends.sqlite import BUSY_TIMEOUT_S, DEFAULT_DIR, DEFAULT_FILE, now
from .errors import (
    AnnotationNotFound,
    EmptyReplacedText,
    EmptyReply,
    InvalidTransition,
    NotATextAnnotation,
    PageNoteNotFound,
    ProjectNotFound,
    ReviewNotFound,
    ShowNotFound,
    StoreReadOnlyError,
    Unauthorized,
    ValidationError,
)
from .fields import ANNOTATION, PAGE_NOTE, REPLY, SELECTION
from .filters import Filter
from .identity import Person, check, hash_token, new_token, parse_role, person_name, same_hash
from .models import (
    ANCHOR_STATES,
    STATUS_AFTER,
    STATUSES,
    Annotation,
    Build,
    ElementSelector,
    HistoryEntry,
    PageNote,
    PageSource,
    Reply,
    Review,
    Shown,
    Source,
    Summary,
    TextPosition,
    TextQuote,
)
from .project import find_project
from .screenshots import Screenshots

__all__ = [
    "DEFAULT_DIR",
    "DEFAULT_FILE",
    "Store",
    "decode_annotation",
    "decode_page_note",
    "decode_reply",
    "new_id",
    "now",
    "open",
    "project_db_path",
]

# SQLite's bound-variable limit is 32766 on current builds; stay far below it.
IN_CHUNK = 500
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
# A review is being worked on while one of its notes is.
WAITING = "status IN ('open', 'in_progress')"
# show_annotation (issue #19): how long it waits for views to acknowledge by default, how often
# it looks, and the quiet time after an acknowledgement that ends the wait early (open views
# read the change feed on the same beat, annotate/web/feed.py, so they answer close together).
SHOW_WAIT_S = 1.5
MAX_SHOW_WAIT_S = 30.0
SHOW_POLL_S = 0.05
SHOW_QUIET_S = 0.5
# Acknowledgements older than this are deleted by the next show.
SHOWN_KEPT_S = 600
VIEWER = re.compile(r"[A-Za-z0-9_-]{1,64}")  # docs/http-api.md, POST shown
MAX_SEQ = 10**18 - 1  # as the change feed's cursor (annotate/web/app.py `_int`)
# Why the views show a note in their panel rather than on its passage (Shown.why_not).
NO_PASSAGE = {
    "resolved": "The note is resolved, so no view highlights it: they show it in their panel.",
    "removed": "Its passage was deleted as the note asked: views show the note in their panel.",
    "stale": "Its quote was rewritten in the Markdown: a view that no longer finds it on the "
    "page shows the note in its panel.",
    "orphaned": "Its Markdown file is gone: a view that does not find the quote on the page "
    "shows the note in its panel.",
}
# How many pages with notes a filter that matches none names.
CLOSEST_PAGES = 3
# What `_reading` reconciles: no annotation (page notes, reviews without notes), or all of them.
NO_ANNOTATIONS = None
ALL_ANNOTATIONS = "SELECT * FROM annotations"

Item = Annotation | PageNote
Row = Mapping[str, Any]
# The tables of the two kinds of item: `_objects` and `_load` answer each one's class.
ItemTable = Literal["annotations", "page_notes"]
LABELS = {"annotations": "Annotation", "page_notes": "Page note"}
KINDS: dict[str, ItemTable] = {"annotation": "annotations", "page_note": "page_notes"}


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(5)}"


def project_db_path(project: str | os.PathLike[str] = ".") -> Path:
    return Path(project) / DEFAULT_DIR / DEFAULT_FILE


def open(
    project: str | os.PathLike[str] | None = None,
    *,
    db: str | os.PathLike[str] | None = None,
    build: Build | Mapping[str, Any] | Literal["auto"] | None = None,
) -> Store:
    """Open the store of a project: `<project>/.annotate/annotations.db`, created when missing.

    The project is found upwards from `project`, or from the current folder when it is None
    (`annotate.project.find_project`): never a new store inside `docs/`. `db`: another SQLite
    file, or a PostgreSQL database (`postgresql://user:password@host/dbname`, docs/storage.md;
    its tables are created when missing), whose notes point into the project found as above,
    wherever the file is (issue #27). With `db` and no project found from the current folder,
    the store still reads and writes its notes as stored; what needs the Markdown (locating a
    note, `Store.project_dir`) raises `ProjectNotFound`. `build`: the build the notes made
    through this store belong to (`Store.build`); `"auto"` reads it as `annotate serve` does
    (`annotate.build.current`: the environment, else git in the project).
    """

    def source(root: str | os.PathLike[str]) -> builds.BuildSource:
        return builds.Current(root) if build == "auto" else builds.of(build)

    if db is not None:
        try:
            root = find_project(project)
        except ProjectNotFound as e:
            found = Store(db, build=None if build == "auto" else builds.of(build))
            found.outside = e.folder
            return found
        return Store(db, project_dir=root, build=source(root))
    root = find_project(project)
    return Store(project_db_path(root), project_dir=root, build=source(root))


class Store:
    """All annotations, page notes, replies and reviews of one project.

    Methods carry the MCP tool names (`list_annotations`, `get_annotation`, `address_annotation`,
    …). Lifecycle methods (`set_in_progress`, `address_annotation`, `add_reply`, `accept`,
    `reopen`, `delete`) take the id of an annotation or of a page note; their `kind`
    (`"annotation"` or `"page_note"`) refuses an id of the other kind as not found.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        project_dir: str | os.PathLike[str] | None = None,
        busy_timeout: float = BUSY_TIMEOUT_S,
        build: builds.BuildSource = None,
    ) -> None:
        """`path`: an SQLite file, or a `postgresql://` URL (annotate/backends/; `project_dir`
        then defaults to the current folder)."""
        self._file: Backend = open_backend(path, project_dir=project_dir, busy_timeout=busy_timeout)
        # The SQLite file, or None on a server; `url`: the database's URL without its password.
        self.path: Path | None = None if is_url(path) else Path(self._file.name)
        self.url: str | None = self._file.name if is_url(path) else None
        # The build being served (annotate/build.py), or what reads it: new notes record it, and
        # notes made on another commit of its branch are located again in its Markdown and say so.
        self.build_source: builds.BuildSource = build
        self._project_dir = self._file.project_dir
        self.busy_timeout = busy_timeout
        # Markdown path -> mtime when `prepare_page` last parsed it.
        self._prepared: dict[str, float] = {}
        self.screenshots = Screenshots(self._file)

    # The folder `open` looked for a project from and found none (a store opened with `db`
    # anywhere): the notes are read as stored, never located in Markdown (issue #27).
    outside: str | None = None

    @property
    def project_dir(self) -> Path:
        """The project folder, whose Markdown the notes point into (`ProjectNotFound` when the
        store was opened outside any project)."""
        if self.outside is not None:
            raise ProjectNotFound(self.outside)
        return self._project_dir

    @property
    def build(self) -> Build | None:
        """The build being served now (`build_source`, annotate/build.py), or None."""
        source = self.build_source
        return source() if callable(source) else source

    @build.setter
    def build(self, value: builds.BuildSource) -> None:
        self.build_source = value

    # -- the database (annotate/backends/) ----------------------------------------------------

    @property
    def conn(self) -> Any:
        """This thread's connection (a forked child, or a thread whose file was replaced, gets a
        new one)."""
        return self._file.conn

    @property
    def db(self) -> sqlite_utils.Database:
        """This thread's connection wrapped by sqlite-utils, for schema work and ad-hoc queries."""
        db: sqlite_utils.Database = self._file.db
        return db

    @property
    def schema_version(self) -> int:
        return self._file.schema_version

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Store {self.url or str(self.path)!r}>"

    @property
    def dialect(self) -> str:
        """`"sqlite"` or `"postgresql"`."""
        return self._file.dialect

    def _tx(self, write: bool) -> contextlib.AbstractContextManager[Connection]:
        return self._file.transaction(write)

    def keep_open(self) -> None:
        """A server's store: on PostgreSQL, open the whole connection pool now and keep it open
        (annotate/backends/postgres.py); nothing on SQLite."""
        self._file.keep_open()

    def subscribe(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` (from another thread) when any server on this PostgreSQL database
        commits a change, to wake a waiting reader; returns the function that unsubscribes.
        Only a wake-up, never the truth (`changes` is); SQLite never calls it (readers poll)."""
        return self._file.subscribe(callback)

    # -- reading: the reconciliation step, rows into objects ------------------------------

    @contextlib.contextmanager
    def _reading(self, scope: str | None, params: Sequence[Any] = ()) -> Iterator[Connection]:
        """A read transaction in which the annotations `scope` selects (a `SELECT * FROM
        annotations …`, or None for none) are up to date with their Markdown files.

        The reconciliation step at the top of every read path: one grouped query gives each file
        and the mtime recorded for it, and a file whose mtime on disk is the recorded one needs
        nothing, so an unchanged store costs a `stat` per file and the read goes on in the same
        transaction. Notes whose file changed are located again and written first (outside any
        write lock while their Markdown is read), then read in a new transaction.
        """
        if scope is not None and self.outside is None:
            with self._tx(write=False) as conn:
                stale = self._stale(conn, scope, params)
                if not stale:
                    yield conn
                    return
            with contextlib.suppress(StoreReadOnlyError):
                # A store that cannot be written is read as it was last written (issue #27).
                self._reconcile(stale)
        with self._tx(write=False) as conn:
            yield conn

    def _stale(self, conn: Connection, scope: str, params: Sequence[Any]) -> list[dict[str, Any]]:
        """The rows `scope` selects whose Markdown file changed since their last check, and those
        made on another commit of the served build's branch and not yet located in this one
        (`reconcile._newer_build` says the same of one row)."""
        live = f"FROM ({scope}) AS s WHERE anchor_state != 'removed'"
        build = self.build
        # One grouped query tells both: the files and mtimes, and whether any row is behind.
        behind, behind_params, any_behind = "", [], "0"
        if build is not None and build.branch is not None and build.commit is not None:
            behind = (
                "build_branch = ? AND build_commit IS NOT NULL "
                "AND coalesce(anchored_on, build_commit) != ?"
            )
            behind_params = [build.branch, build.commit]
            any_behind = f"max(CASE WHEN {behind} THEN 1 ELSE 0 END)"
        groups = conn.execute(
            f"SELECT source_file, source_mtime, {any_behind} {live} "
            "GROUP BY source_file, source_mtime",
            [*behind_params, *params],
        ).fetchall()
        if not groups:
            return []
        locator = self._locator()
        changed = {f for f, mtime, _ in groups if f is None or locator.mtime(f) != mtime}
        moved = any(late for _, _, late in groups)
        if not changed and not moved:
            return []
        files = sorted(f for f in changed if f is not None)
        which = [f"source_file IN ({','.join('?' * len(files))})"] if files else []
        if None in changed:
            which.append("source_file IS NULL")
        if moved:
            which.append(f"({behind})")
        return self._query(
            conn,
            f"SELECT * {live} AND ({' OR '.join(which)})",
            [*params, *files, *(behind_params if moved else [])],
        )

    def _replies(self, conn: Connection, ids: list[str]) -> dict[str, list[Reply]]:
        out: dict[str, list[Reply]] = {}
        for i in range(0, len(ids), IN_CHUNK):
            chunk = ids[i : i + IN_CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = self._query(
                conn, f"SELECT * FROM replies WHERE parent_id IN ({marks}) ORDER BY rowid", chunk
            )
            _threads(rows, out)  # adds to `out`
        return out

    def _all_replies(self, conn: Connection) -> dict[str, list[Reply]]:
        return _threads(self._query(conn, "SELECT * FROM replies ORDER BY rowid"))

    @overload
    def _objects(
        self,
        conn: Connection,
        table: Literal["annotations"],
        rows: Sequence[Row],
        replies: dict[str, list[Reply]] | None = ...,
    ) -> list[Annotation]: ...

    @overload
    def _objects(
        self,
        conn: Connection,
        table: Literal["page_notes"],
        rows: Sequence[Row],
        replies: dict[str, list[Reply]] | None = ...,
    ) -> list[PageNote]: ...

    @overload
    def _objects(
        self,
        conn: Connection,
        table: ItemTable,
        rows: Sequence[Row],
        replies: dict[str, list[Reply]] | None = ...,
    ) -> list[Annotation] | list[PageNote]: ...

    def _objects(
        self,
        conn: Connection,
        table: ItemTable,
        rows: Sequence[Row],
        replies: dict[str, list[Reply]] | None = None,
    ) -> list[Annotation] | list[PageNote]:
        if replies is None:
            replies = self._replies(conn, [r["id"] for r in rows]) if rows else {}
        if table == "annotations":
            return [decode_annotation(r, tuple(replies.get(r["id"], ()))) for r in rows]
        files = self._page_files(conn, {r["page_url"] for r in rows})
        return [
            decode_page_note(r, tuple(replies.get(r["id"], ())), files[r["page_url"]]) for r in rows
        ]

    def _page_files(self, conn: Connection, urls: set[str]) -> dict[str, str | None]:
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
            found[url] = pages.resolve_page(self.project_dir, url)
        return found

    def _row(self, conn: Connection, table: str, id: str) -> Row | None:
        if not validate.is_valid_id(id):
            return None
        found = self._query(conn, f"SELECT * FROM {table} WHERE id = ?", (id,))
        return found[0] if found else None

    def _find(self, conn: Connection, id: str, kind: str | None = None) -> tuple[ItemTable, Row]:
        """The annotation or page note with this id (only that `kind` when given, "annotation"
        or "page_note"), with the reference's not-found message."""
        tables: tuple[ItemTable, ...] = (
            ("annotations", "page_notes") if kind is None else (KINDS[kind],)
        )
        for table in tables:
            row = self._row(conn, table, id)
            if row is not None:
                return table, row
        raise PageNoteNotFound(id) if kind == "page_note" else AnnotationNotFound(id)

    @overload
    def _loading(
        self, conn: Connection, table: Literal["annotations"], id: str
    ) -> Callable[[], Annotation]: ...

    @overload
    def _loading(
        self, conn: Connection, table: Literal["page_notes"], id: str
    ) -> Callable[[], PageNote]: ...

    @overload
    def _loading(self, conn: Connection, table: ItemTable, id: str) -> Callable[[], Item]: ...

    def _loading(self, conn: Connection, table: ItemTable, id: str) -> Callable[[], Item]:
        """Send the reads of item `id` and its replies together; the function returned makes
        the object, also after the transaction (a write verb's answer then comes with its
        commit on PostgreSQL, one round trip for both)."""
        rows = self._send(conn, f"SELECT * FROM {table} WHERE id = ?", (id,))
        replies = self._send(
            conn, "SELECT * FROM replies WHERE parent_id = ? ORDER BY rowid", (id,)
        )
        if table == "page_notes":  # its Markdown file is one more read, from its row
            note = self._objects(conn, table, rows(), _threads(replies()))[0]
            return lambda: note

        def load() -> Item:
            (row,) = rows()
            return decode_annotation(row, tuple(decode_reply(r) for r in replies()))

        return load

    def _record(
        self,
        conn: Connection,
        kind: str,
        id: str,
        action: str,
        page_url: str | None,
        author: str | None = None,
    ) -> None:
        # `author`: who made the change, in team mode (docs/team.md); the feed does not show it.
        conn.execute(
            "INSERT INTO changes (at, kind, item_id, action, page_url, author) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (now(), kind, id, action, page_url, author),
        )
        self._file.notify(conn)

    def _update(self, conn: Connection, table: str, id: str, values: Mapping[str, Any]) -> None:
        sets = ", ".join(f"{k} = ?" for k in values)
        conn.execute(f"UPDATE {table} SET {sets} WHERE id = ?", (*values.values(), id))

    def _build_columns(self) -> dict[str, Any]:
        """The columns of a new note that say which build it was made on (`self.build`)."""
        build = self.build
        if build is None:
            return {}
        return {"build_branch": build.branch, "build_commit": build.commit}

    def _insert(self, conn: Connection, table: str, values: Mapping[str, Any]) -> None:
        cols = ", ".join(values)
        marks = ", ".join("?" * len(values))
        conn.execute(f"INSERT INTO {table} ({cols}) VALUES ({marks})", tuple(values.values()))

    # -- annotations --------------------------------------------------------------------------

    def add_annotation(self, data: Mapping[str, Any], *, by: Person | None = None) -> Annotation:
        """Create a text or element annotation from its JSON shape (docs/data-model.md).

        It is located in its page's Markdown file at once (a text note by its quote, an element
        note by its `src`, `href` or text), so `source` is there from the start. `by`: the person
        writing it (team mode), its author whatever `data` says.
        """
        fields = validate.annotation_input(data)
        if by is not None:
            fields["author"] = by.name
        fields["page_url"], registered = self._page(fields["page_url"])
        if fields["element_selector"] is not None:
            fields["element_selector"] = json.dumps(fields["element_selector"])
        stamp = now()
        row: dict[str, Any] = {
            "id": new_id("a"),
            **fields,
            "status": "open",
            "anchor_state": "anchored",
            "created_at": stamp,
            "updated_at": stamp,
            **self._build_columns(),
        }
        blank = dict.fromkeys(SOURCE_COLUMNS) | {"replaced_text": None}
        update = reconcile.plan([blank | row], self._locator(registered), force=True)
        row.update(update.get(row["id"], {}))
        if row["type"] == "text":
            # What the reviewer saw: the change since then is shown once the note is addressed.
            row.update({o: row.get(c) for o, c in ORIGINAL_COLUMNS.items()})
        with self._tx(write=True) as conn:
            self._insert(conn, "annotations", row)
            self._record(conn, "annotation", row["id"], "created", row["page_url"], _who(by))
            loaded = self._loading(conn, "annotations", row["id"])
        return loaded()

    def get_annotation(self, id: str) -> Item:
        """The annotation (or page note) with this id, as the MCP tool `get_annotation` gives it."""
        valid = validate.is_valid_id(id)
        with self._reading(ALL_ANNOTATIONS + " WHERE id = ?" if valid else None, [id]) as conn:
            table, row = self._find(conn, id)
            return self._objects(conn, table, [row])[0]

    @overload
    def list_annotations(
        self,
        page_url: str | None = ...,
        status: str | Iterable[str] | None = ...,
        *,
        type: str | None = ...,
        anchor_state: str | Iterable[str] | None = ...,
        include_resolved: bool = ...,
        limit: int | None = ...,
        offset: int = ...,
        branch: str | None = ...,
        as_json: Literal[False] = ...,
    ) -> list[Annotation]: ...

    @overload
    def list_annotations(
        self,
        page_url: str | None = ...,
        status: str | Iterable[str] | None = ...,
        *,
        type: str | None = ...,
        anchor_state: str | Iterable[str] | None = ...,
        include_resolved: bool = ...,
        limit: int | None = ...,
        offset: int = ...,
        branch: str | None = ...,
        as_json: Literal[True],
    ) -> str: ...

    def list_annotations(
        self,
        page_url: str | None = None,
        status: str | Iterable[str] | None = None,
        *,
        type: str | None = None,
        anchor_state: str | Iterable[str] | None = None,
        include_resolved: bool = False,
        limit: int | None = None,
        offset: int = 0,
        branch: str | None = None,
        as_json: bool = False,
    ) -> list[Annotation] | str:
        """Annotations in creation order; resolved ones only when asked for (by status or flag).

        The one listing behind the CLI's `list`, the MCP tool and `GET /__annotate/api/
        annotations`: one filter (`annotate.filters.Filter`), at most `limit` from `offset`; only
        the annotations returned are reconciled with their Markdown files. `as_json`: the JSON
        array of their `to_dict()`s, written by SQLite (no object per row: the web API's listing,
        read on every page load; annotate/sqljson.py).
        """
        found = Filter.of(
            None if page_url is None else self.page_url(page_url),
            status,
            type=type,
            anchor_state=anchor_state,
            include_resolved=include_resolved,
            limit=limit,
            offset=offset,
            branch=branch,
        )
        where, params = found.where()
        page, window = found.page()
        ordered = f"SELECT * FROM annotations WHERE {where} ORDER BY rowid{page}"
        # Without a page, the notes to reconcile need no order: an aggregate over an ordered
        # subquery would copy every row first.
        scope = ordered if page else f"SELECT * FROM annotations WHERE {where}"
        with self._reading(scope, [*params, *window]) as conn:
            if as_json and self._file.writes_rows:
                return self._file.annotations_json(conn, where, page, [*params, *window])
            # The notes and their replies sent together and read after the transaction: on
            # PostgreSQL they come with its commit, one round trip.
            ids = (
                f"SELECT id FROM ({ordered}) AS o"
                if page
                else f"SELECT id FROM annotations WHERE {where}"
            )
            notes = self._send(conn, ordered, [*params, *window])
            replies = self._send(
                conn,
                f"SELECT * FROM replies WHERE parent_id IN ({ids}) ORDER BY rowid",
                [*params, *window],
            )
        threads = _threads(replies())
        listed = [decode_annotation(r, tuple(threads.get(r["id"], ()))) for r in notes()]
        if not as_json:
            return listed
        # A database that does not write it (PostgreSQL): the same JSON from the objects.
        return json.dumps([a.to_dict() for a in listed], ensure_ascii=False, separators=(",", ":"))

    def edit_annotation(
        self, id: str, changes: Mapping[str, Any], *, by: Person | None = None
    ) -> Annotation:
        """Change the reviewer's note, intent, suggestion or page title (`by`: only its author
        or a maintainer, in team mode)."""
        with self._tx(write=True) as conn:
            row = self._row(conn, "annotations", id)
            if row is None:
                raise AnnotationNotFound(id)
            check(by, "edit", f'annotation "{id}"', row["author"])
            values = validate.annotation_changes(row["intent"], row["suggestion"], changes)
            values["updated_at"] = now()
            self._update(conn, "annotations", id, values)
            self._record(conn, "annotation", id, "edited", row["page_url"], _who(by))
            loaded = self._loading(conn, "annotations", id)
        return loaded()

    def update_annotation_target(
        self, id: str, replaced_text: str, *, by: Person | None = None
    ) -> Annotation:
        """Record the text the agent put in place of the quote, and locate the note by it."""
        text = _replaced(replaced_text)
        with self._tx(write=True) as conn:
            table, row = self._find(conn, id)
            if table != "annotations" or row["type"] != "text":
                raise NotATextAnnotation()
            _refuse_resolved(table, row, "update the target")
            values: dict[str, Any] = {"replaced_text": text, "updated_at": now()}
            moved = self._locate(row, values, force=True)
            self._update(conn, table, id, values)
            self._record(conn, "annotation", id, "target_updated", row["page_url"], _who(by))
            if moved:
                self._record(conn, "annotation", id, "anchor", row["page_url"])
            loaded = self._loading(conn, table, id)
        return loaded()

    def text_selector_rows(
        self, page_url: str, *, include_resolved: bool = False
    ) -> list[tuple[str, str, str, str, int | None, int | None, str | None]]:
        """The selector of each text annotation of a page, in creation order, as plain tuples
        `(id, exact, prefix, suffix, start, end, replaced_text)`: cheap to compare, for the anchor
        route, which remembers its answers (annotate/anchoring/pagecache.py).

        No replies and no Markdown reconciliation: positions in the page text do not depend on
        them.
        """
        page_url = self.page_url(page_url)
        sql = (
            "SELECT id, coalesce(nullif(quote_exact, ''), selected_text, ''), "
            "coalesce(quote_prefix, ''), coalesce(quote_suffix, ''), position_start, "
            "position_end, nullif(replaced_text, '') FROM annotations "
            # A deleted passage has nothing to highlight: re-anchoring it would mark whatever
            # text now stands where it was.
            "WHERE page_url = ? AND type = 'text' AND anchor_state != 'removed'"
        )
        if not include_resolved:
            sql += " AND status != 'resolved'"
        with self._tx(write=False) as conn:
            cur = conn.cursor()
            cur.row_factory = None  # plain tuples: a page load reads every note of the page
            return cur.execute(sql + " ORDER BY rowid", (page_url,)).fetchall()

    def selections(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Where each of these annotations was selected on its page, as its client reported it
        (`fields.SELECTION`: `inCode`, `occurrence`, input only): `{id: {key: value}}`, the keys
        known, for the notes that know either. For `annotate mcp --remote`, which locates the
        notes in its own checkout (annotate/mcp_remote.py)."""
        wanted = list(dict.fromkeys(ids))
        cols = ", ".join(f.col for f in SELECTION)
        known = " OR ".join(f"{f.col} IS NOT NULL" for f in SELECTION)
        out: dict[str, dict[str, Any]] = {}
        with self._tx(write=False) as conn:
            for at in range(0, len(wanted), IN_CHUNK):
                some = wanted[at : at + IN_CHUNK]
                marks = ", ".join("?" * len(some))
                sql = f"SELECT id, {cols} FROM annotations WHERE id IN ({marks}) AND ({known})"
                for id, *values in conn.execute(sql, some).fetchall():
                    out[id] = {
                        f.key: bool(v) if f.type == "boolean" else v
                        for f, v in zip(SELECTION, values, strict=True)
                        if v is not None
                    }
        return out

    # -- Markdown sources (annotate/reconcile.py) ----------------------------------------------

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
        with self._tx(write=True) as conn:
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
        locator = self._locator()
        path = locator.page_file(self.page_url(page_url))
        mtime = locator.mtime(path) if path else None
        if path is None or mtime is None:
            return False
        if self._prepared.get(path) == mtime:
            return True  # parsed since its last change (and most likely still cached)
        text = locator.read(path)
        if text is None:
            return False
        sourcemap.prepare(text)
        self._prepared[path] = mtime
        return True

    def page_file(self, page_url: str) -> str | None:
        """The Markdown file (relative to the project) a page is built from: the plugin's record,
        else mkdocs.yml's rules; None when none is known."""
        return self._locator().page_file(self.page_url(page_url))

    def _locator(self, registered: Mapping[str, str | None] | None = None) -> reconcile.Locator:
        """What locates notes in the Markdown; `registered`: the files of pages already read."""

        def page(url: str) -> str | None:
            if registered is not None and url in registered:
                return registered[url]
            return self._registered_page(url)

        return reconcile.Locator(self.project_dir, registered=page, page_objects=self._page_objects)

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

    def _reconcile(self, rows: Iterable[Row], *, force: bool = False) -> int:
        """Re-locate the rows whose Markdown changed; return how many were looked at again."""
        # A removed note's text was deleted on purpose: there is nothing to find again.
        rows = [r for r in rows if r["anchor_state"] != "removed"]
        if not rows:
            return 0
        updates = reconcile.plan(rows, self._locator(), force=force, build=self.build)
        if not updates:
            return 0
        by_id = {r["id"]: r for r in rows}
        with self._tx(write=True) as conn:
            for id, values in updates.items():
                row = by_id[id]
                sets = ", ".join(f"{k} = ?" for k in values)
                same = self._file.same
                # Write only if the inputs of the plan are still current: another connection may
                # have re-anchored (new replacedText, a newer check) or deleted it meanwhile, and
                # its answer is the newer one.
                cur = conn.execute(
                    f"UPDATE annotations SET {sets} WHERE id = ? AND replaced_text {same} ? "
                    f"AND source_file {same} ? AND source_mtime {same} ? "
                    f"AND quote_exact {same} ?",
                    (*values.values(), id, row["replaced_text"], row["source_file"],
                     row["source_mtime"], row["quote_exact"]),
                )  # fmt: skip
                if cur.rowcount and reconcile.changed(row, values):
                    self._record(conn, "annotation", id, "anchor", row["page_url"])
        return len(updates)

    def _locate(self, row: Row, values: dict[str, Any], *, force: bool) -> bool:
        """Add to `values` (the columns a verb writes to annotation `row`) where the note is now,
        inside the verb's write transaction; return whether what a reader sees moved.

        `force`: its target just changed (a new `replacedText`), so it is located again even in
        an unchanged file.
        """
        if self.outside is not None and not force:
            return False  # no Markdown to look in: kept where it was last located
        planned = {**row, **values}
        update = reconcile.plan([planned], self._locator(), force=force, build=self.build).get(
            row["id"]
        )
        if not update:
            return False
        values.update(update)
        return reconcile.changed(planned, update)

    def reconcile(self, *, force: bool = False) -> int:
        """Check every annotation against its Markdown file now; return how many were updated."""
        with self._tx(write=False) as conn:
            rows = self._query(conn, ALL_ANNOTATIONS)
        return self._reconcile(rows, force=force)

    # -- page URLs (annotate/urls.py) ------------------------------------------------------

    @functools.cached_property
    def _site_path(self) -> str:
        return urls.site_path(pages.site_url(self.project_dir) if self.outside is None else None)

    def page_url(self, value: Any, field: str = "pageUrl") -> str:
        """The form the store keeps of a page URL written any way a person or an agent may:
        `/guide`, `guide/`, `/guide/index.html`, `http://127.0.0.1:8000/guide/`, with or without
        the site's sub-path. The first form that has notes wins (one page's notes stay under one
        URL), then the first the plugin registered; otherwise the path itself, a folder URL with
        its final `/`."""
        return self._page(value, field)[0]

    def _page(self, value: Any, field: str = "pageUrl") -> tuple[str, dict[str, str | None]]:
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
        with self._tx(write=False) as conn:
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

    # -- lifecycle, for annotations and page notes alike --------------------------------------

    def set_in_progress(
        self, id: str, *, kind: str | None = None, by: Person | None = None
    ) -> Item:
        """open/addressed → in_progress (the agent started); a no-op when already in progress."""
        with self._tx(write=True) as conn:
            table, row = self._find(conn, id, kind)
            _refuse_resolved(table, row, "start work")
            if row["status"] != "in_progress":
                stamp = now()
                self._update(
                    conn,
                    table,
                    id,
                    {
                        "status": "in_progress",
                        "in_progress_at": stamp,
                        "addressed_at": None,
                        "updated_at": stamp,
                    },
                )
                self._record(conn, _kind(table), id, "in_progress", row["page_url"], _who(by))
                self._settle_review(conn, row["review_id"])
            loaded = self._loading(conn, table, id)
        return loaded()

    def address_annotation(
        self,
        id: str,
        replaced_text: str | None = None,
        *,
        message: str | None = None,
        deleted: bool = False,
        kind: str | None = None,
        by: Person | None = None,
    ) -> Item:
        """→ addressed (the agent is done; the reviewer accepts or reopens), in one transaction.

        `replaced_text`: the text now standing where the quote was; the note is located by it
        at once (unless `update_annotation_target` already recorded the same text). `message`: a
        reply (role `agent`), so the reviewer sees the reply and the badge together. `deleted`:
        the agent deleted the annotated text as asked; the note becomes `removed` and
        re-anchoring leaves it be (it would find other text there).
        """
        text = None if replaced_text is None else _replaced(replaced_text)
        if not isinstance(deleted, bool):
            raise ValidationError("deleted must be true or false", "deleted")
        if deleted and text is not None:
            raise ValidationError(
                "replacedText and deleted exclude each other: deleted text has no replacement",
                "deleted",
            )
        if message is not None:
            _reply_text(message)
        with self._tx(write=True) as conn:
            table, row = self._find(conn, id, kind)
            if text is not None and (table != "annotations" or row["type"] != "text"):
                raise NotATextAnnotation()
            if deleted and table != "annotations":
                raise ValidationError(
                    f'deleted is for annotations; page note "{id}" has no text of its own',
                    "deleted",
                )
            _refuse_resolved(table, row, "address")
            stamp = now()
            values: dict[str, Any] = {
                "status": "addressed",
                "addressed_at": stamp,
                "updated_at": stamp,
            }
            retarget = text is not None and (
                text != row["replaced_text"] or row["anchor_state"] == "removed"
            )
            if retarget:
                values["replaced_text"] = text
                if row["anchor_state"] == "removed":
                    values["anchor_state"] = "stale"  # replaced after all: locate it again
            if deleted:
                values.update(anchor_state="removed", anchor_score=None)
            moved = table == "annotations" and self._locate(row, values, force=retarget)
            self._update(conn, table, id, values)
            if message is not None:
                self._insert_reply(conn, id, "agent", message, stamp, _who(by))
            self._record(conn, _kind(table), id, "addressed", row["page_url"], _who(by))
            if moved:
                self._record(conn, "annotation", id, "anchor", row["page_url"])
            self._settle_review(conn, row["review_id"])
            loaded = self._loading(conn, table, id)
        return loaded()

    def add_reply(
        self,
        id: str,
        message: str,
        *,
        role: str = "reviewer",
        author: str | None = None,
        kind: str | None = None,
        by: Person | None = None,
    ) -> Item:
        """Append a reply to the thread; always allowed, whatever the status. `by`: the person
        writing it (team mode), whose name it takes whatever `author` says, and whose role unless
        a maintainer (who may answer as an agent: an agent run on a maintainer's token)."""
        if by is not None:
            role = role if by.role == "maintainer" else by.reply_role
            author = by.name
        if role not in ("reviewer", "agent"):
            raise ValidationError(f"role must be 'reviewer' or 'agent', got {role!r}", "role")
        _reply_text(message)
        author = validate.text(author, "author", validate.MAX_AUTHOR) or None
        with self._tx(write=True) as conn:
            table, row = self._find(conn, id, kind)
            stamp = now()
            self._insert_reply(conn, id, role, message, stamp, author)
            self._update(conn, table, id, {"updated_at": stamp})
            self._record(conn, _kind(table), id, f"{role}_reply", row["page_url"], _who(by))
            loaded = self._loading(conn, table, id)
        return loaded()

    def _insert_reply(
        self,
        conn: Connection,
        parent: str,
        role: str,
        message: str,
        stamp: str,
        author: str | None = None,
    ) -> None:
        self._insert(
            conn,
            "replies",
            {
                "id": new_id("r"),
                "parent_id": parent,
                "role": role,
                "author": author,
                "message": message,
                "created_at": stamp,
            },
        )

    def _settle_review(self, conn: Connection, review_id: str | None) -> None:
        """Mark a review `done` when none of its notes waits for the agent any more (and undone
        when one does again, e.g. set back in progress for rework); `done` goes to the feed."""
        if review_id is None:
            return
        row = conn.execute(
            "SELECT done_at, "
            f"EXISTS (SELECT 1 FROM annotations WHERE review_id = ? AND {WAITING}) OR "
            f"EXISTS (SELECT 1 FROM page_notes WHERE review_id = ? AND {WAITING}) "
            "FROM reviews WHERE id = ?",
            (review_id, review_id, review_id),
        ).fetchone()
        if row is None:
            return
        done_at, waiting = row
        if waiting and done_at is not None:
            conn.execute("UPDATE reviews SET done_at = NULL WHERE id = ?", (review_id,))
        elif not waiting and done_at is None:
            conn.execute("UPDATE reviews SET done_at = ? WHERE id = ?", (now(), review_id))
            self._record(conn, "review", review_id, "done", None)

    def add_agent_reply(self, id: str, message: str, *, by: Person | None = None) -> Item:
        """A reply with role `agent`, explaining what was done."""
        return self.add_reply(id, message, role="agent", by=by)

    def accept(self, id: str, *, kind: str | None = None, by: Person | None = None) -> Item:
        """The reviewer is satisfied: → resolved (kept, out of default listings, until purged).
        `by`: never an agent (team mode)."""
        with self._tx(write=True) as conn:
            table, row = self._find(conn, id, kind)
            check(by, "accept", f'{LABELS[table].lower()} "{id}"')
            if row["status"] == "resolved":
                raise InvalidTransition(f'{LABELS[table]} "{id}" is already resolved')
            stamp = now()
            self._update(
                conn, table, id, {"status": "resolved", "resolved_at": stamp, "updated_at": stamp}
            )
            self._record(conn, _kind(table), id, "resolved", row["page_url"], _who(by))
            self._settle_review(conn, row["review_id"])
            loaded = self._loading(conn, table, id)
        return loaded()

    def reopen(
        self,
        id: str,
        note: str | None = None,
        *,
        kind: str | None = None,
        by: Person | None = None,
    ) -> Item:
        """addressed/resolved → open; a follow-up note becomes a reviewer reply.

        With a follow-up, the note goes back to the agent at once: a review of just this note, in
        the mode of the review it came from (`edit` when none), which wakes an agent waiting in
        `wait_for_review`. Without one, it leaves its review and travels with the next "Send to
        agent". A removed note (its text deleted) is located again.
        """
        if note is not None:
            validate.text(note, "note", validate.MAX_REPLY)
        with self._tx(write=True) as conn:
            table, row = self._find(conn, id, kind)
            if row["status"] not in ("addressed", "resolved"):
                state = row["status"].replace("_", " ")
                raise InvalidTransition(
                    f'{LABELS[table]} "{id}" is {state}; only addressed or resolved items can be '
                    "reopened"
                )
            stamp = now()
            values: dict[str, Any] = {
                "status": "open",
                "in_progress_at": None,
                "addressed_at": None,
                "resolved_at": None,
                "review_id": None,
                "updated_at": stamp,
            }
            if table == "annotations" and row["anchor_state"] == "removed":
                # Not deleted after all: the next read locates it again (source_mtime unknown).
                values.update(anchor_state="stale", source_mtime=None)
            follow_up = bool(note and note.strip())
            if follow_up:
                previous = self._row(conn, "reviews", row["review_id"] or "")
                mode = previous["mode"] if previous else "edit"
                values["review_id"] = self._insert_review(
                    conn, {"mode": mode, "message": "", "author": _who(by)}, stamp, _who(by)
                )
            self._update(conn, table, id, values)
            if follow_up:
                assert note is not None
                self._insert_reply(conn, id, "reviewer", note, stamp, _who(by))
            self._record(conn, _kind(table), id, "reopened", row["page_url"], _who(by))
            loaded = self._loading(conn, table, id)
        return loaded()

    def delete(self, id: str, *, kind: str | None = None, by: Person | None = None) -> None:
        """Delete an annotation or a page note, with its replies. `kind` ("annotation" or
        "page_note") refuses an id of the other kind, as not found. `by`: only its author or a
        maintainer (team mode)."""
        with self._tx(write=True) as conn:
            table, row = self._find(conn, id, kind)
            check(by, "delete", f'{LABELS[table].lower()} "{id}"', row["author"])
            self._delete_row(conn, table, row, _who(by))

    def _delete_row(
        self, conn: Connection, table: str, row: Row, author: str | None = None
    ) -> None:
        conn.execute("DELETE FROM replies WHERE parent_id = ?", (row["id"],))
        conn.execute("DELETE FROM screenshots WHERE note_id = ?", (row["id"],))
        conn.execute(f"DELETE FROM {table} WHERE id = ?", (row["id"],))
        self._record(conn, _kind(table), row["id"], "deleted", row["page_url"], author)
        self._settle_review(conn, row["review_id"])

    # -- page notes ---------------------------------------------------------------------------

    def add_page_note(self, data: Mapping[str, Any], *, by: Person | None = None) -> PageNote:
        fields = validate.page_note_input(data)
        if by is not None:
            fields["author"] = by.name
        fields["page_url"] = self.page_url(fields["page_url"])
        stamp = now()
        row = {
            "id": new_id("p"),
            **fields,
            "status": "open",
            "created_at": stamp,
            "updated_at": stamp,
            **self._build_columns(),
        }
        with self._tx(write=True) as conn:
            self._insert(conn, "page_notes", row)
            self._record(conn, "page_note", row["id"], "created", row["page_url"], _who(by))
            loaded = self._loading(conn, "page_notes", row["id"])
        return loaded()

    def get_page_note(self, id: str) -> PageNote:
        with self._tx(write=False) as conn:
            _, row = self._find(conn, id, "page_note")
            return self._objects(conn, "page_notes", [row])[0]

    def list_page_notes(
        self,
        page_url: str | None = None,
        status: str | Iterable[str] | None = None,
        *,
        include_resolved: bool = False,
        branch: str | None = None,
    ) -> list[PageNote]:
        """Page notes in creation order, filtered as `list_annotations` filters."""
        found = Filter.of(
            None if page_url is None else self.page_url(page_url),
            status,
            include_resolved=include_resolved,
            branch=branch,
        )
        where, params = found.where()
        with self._tx(write=False) as conn:
            rows = self._query(
                conn, f"SELECT * FROM page_notes WHERE {where} ORDER BY rowid", params
            )
            return self._objects(conn, "page_notes", rows)

    def edit_page_note(
        self, id: str, changes: Mapping[str, Any], *, by: Person | None = None
    ) -> PageNote:
        values = validate.page_note_changes(changes)
        with self._tx(write=True) as conn:
            row = self._row(conn, "page_notes", id)
            if row is None:
                raise PageNoteNotFound(id)
            check(by, "edit", f'page note "{id}"', row["author"])
            values["updated_at"] = now()
            self._update(conn, "page_notes", id, values)
            self._record(conn, "page_note", id, "edited", row["page_url"], _who(by))
            loaded = self._loading(conn, "page_notes", id)
        return loaded()

    # -- reviews ------------------------------------------------------------------------------

    def create_review(
        self, data: Mapping[str, Any] | None = None, *, by: Person | None = None
    ) -> Review:
        """ "Send to agent": `{mode, message, ids}`.

        Without `ids`, every open note not yet sent joins this review (notes in progress, addressed
        or resolved are not work to send). With `ids`, just those notes, wherever they were (the
        overlay's "Ask agent now"); the batch is left as it is.
        """
        fields = validate.review_input(data)
        ids = fields.pop("ids")
        if by is not None:
            fields["author"] = by.name
        stamp = now()
        with self._tx(write=True) as conn:
            id = self._insert_review(conn, fields, stamp, _who(by))
            if ids is None:
                taken = 0
                for table in ("annotations", "page_notes"):
                    taken += conn.execute(
                        f"UPDATE {table} SET review_id = ? WHERE review_id IS NULL "
                        "AND status = 'open'",
                        (id,),
                    ).rowcount
                if not taken and not fields["message"].strip():
                    raise ValidationError(
                        "Nothing to send: no open notes since the last review and no message",
                        "message",
                    )
            else:
                for note_id in ids:
                    table, row = self._find(conn, note_id)
                    _refuse_resolved(table, row, "send it to the agent")
                    conn.execute(f"UPDATE {table} SET review_id = ? WHERE id = ?", (id, note_id))
                    self._settle_review(conn, row["review_id"])  # the review it left
            return self._review(conn, id)

    def _insert_review(
        self,
        conn: Connection,
        fields: Mapping[str, Any],
        stamp: str,
        author: str | None = None,
    ) -> str:
        id = new_id("rv")
        self._insert(conn, "reviews", {"id": id, **fields, "created_at": stamp})
        self._record(conn, "review", id, "created", None, author)
        return id

    def get_review(self, id: str) -> Review:
        """A review with its notes, their sources reconciled with the Markdown files."""
        scope = ALL_ANNOTATIONS + " WHERE review_id = ?" if validate.is_valid_id(id) else None
        with self._reading(scope, [id]) as conn:
            return self._review(conn, id)

    def list_reviews(self, *, pending_only: bool = False) -> list[Review]:
        sql = "SELECT id FROM reviews"
        if pending_only:
            sql += " WHERE picked_up_at IS NULL AND done_at IS NULL"
        with self._tx(write=False) as conn:
            ids = [r[0] for r in conn.execute(sql + " ORDER BY rowid")]
            return [self._review(conn, i) for i in ids]

    def claim_review(self, *, token: str | None = None) -> Review | None:
        """The oldest review no agent has picked up yet, now marked as picked up; else None.
        `token`: the caller's personal token, checked in the same transaction (`Unauthorized`
        once revoked: a revoked agent takes no review, issue #32)."""
        with self._tx(write=True) as conn:
            _check_live(conn, token)
            row = conn.execute(
                "SELECT id FROM reviews WHERE picked_up_at IS NULL AND done_at IS NULL "
                "ORDER BY rowid LIMIT 1"
            ).fetchone()
            if row is None:
                return None
            self._update(conn, "reviews", row["id"], {"picked_up_at": now()})
            self._record(conn, "review", row["id"], "picked_up", None)
        return self.get_review(row["id"])

    def _review(self, conn: Connection, id: str) -> Review:
        row = self._row(conn, "reviews", id)
        if row is None:
            raise ReviewNotFound(id)
        annotations = self._query(
            conn, "SELECT * FROM annotations WHERE review_id = ? ORDER BY rowid", (id,)
        )
        notes = self._query(
            conn, "SELECT * FROM page_notes WHERE review_id = ? ORDER BY rowid", (id,)
        )
        return Review(
            id=row["id"],
            mode=row["mode"],
            message=row["message"] or "",
            author=row["author"],
            created_at=row["created_at"],
            picked_up_at=row["picked_up_at"],
            done_at=row["done_at"],
            annotations=tuple(self._objects(conn, "annotations", annotations)),
            page_notes=tuple(self._objects(conn, "page_notes", notes)),
        )

    # -- the whole store ----------------------------------------------------------------------

    def all_items(
        self, *, include_resolved: bool = True
    ) -> tuple[list[Annotation], list[PageNote]]:
        """Every annotation and page note, read in one snapshot (for exports)."""
        where = "" if include_resolved else " WHERE status != 'resolved'"
        with pause_gc(), self._reading(ALL_ANNOTATIONS + where) as conn:
            replies = self._all_replies(conn)
            annotations = [
                decode_annotation(r, tuple(replies.get(r["id"], ())))
                for r in self._query(conn, f"SELECT * FROM annotations{where} ORDER BY rowid")
            ]
            rows = self._query(conn, f"SELECT * FROM page_notes{where} ORDER BY rowid")
            files = self._page_files(conn, {r["page_url"] for r in rows})
            notes = [
                decode_page_note(r, tuple(replies.get(r["id"], ())), files[r["page_url"]])
                for r in rows
            ]
        return annotations, notes

    def export_rows(
        self, *, include_resolved: bool
    ) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], dict[str, list[tuple[str, str]]]]:
        """What the Markdown export shows, as rows of the field table (annotate/fields.py) in one
        snapshot (annotate/export.py).

        Objects cost twice the whole Markdown export at 100k notes; the columns the export does
        not show (quote context, positions, excerpts) are not even read.
        """
        if not self._file.writes_rows:
            return self._export_rows_of_objects(include_resolved=include_resolved)
        where = "" if include_resolved else " WHERE status != 'resolved'"
        with pause_gc(), self._reading(ALL_ANNOTATIONS + where) as conn:
            return self._file.export_rows(conn, where)

    def _export_rows_of_objects(
        self, *, include_resolved: bool
    ) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], dict[str, list[tuple[str, str]]]]:
        """`export_rows` from objects: the fields' SQL (`json_extract`) is SQLite's."""
        annotations, notes = self.all_items(include_resolved=include_resolved)
        items: list[Item] = [*annotations, *notes]
        replies: dict[str, list[tuple[str, str]]] = {
            i.id: [(r.role, r.message) for r in i.replies] for i in items if i.replies
        }
        return (
            [_annotation_row(a) for a in annotations],
            [_page_note_row(p) for p in notes],
            replies,
        )

    def summary(self, *, branch: str | None = None) -> Summary:
        """Counts by status, by anchor state, pages with notes, reviews waiting for an agent.

        `branch`: only notes made on a build of that branch, as listings filter them
        (`annotate.filters.Filter`), and only the waiting reviews holding one of them.
        """
        every, every_params = Filter.of(status="all", branch=branch).where()
        waiting, waiting_params = Filter.of(branch=branch).where()
        scope = f"{ALL_ANNOTATIONS} WHERE {waiting}"
        with self._reading(scope, waiting_params) as conn:

            def counts(sql: str, params: Sequence[Any]) -> dict[str, int]:
                return {r[0]: r[1] for r in conn.execute(sql, params)}

            by_status = counts(
                f"SELECT status, count(*) FROM annotations WHERE {every} GROUP BY status",
                every_params,
            )
            notes = counts(
                f"SELECT status, count(*) FROM page_notes WHERE {every} GROUP BY status",
                every_params,
            )
            anchors = counts(
                f"SELECT anchor_state, count(*) FROM annotations WHERE {waiting} "
                "AND type = 'text' GROUP BY anchor_state",
                waiting_params,
            )
            pages = conn.execute(
                f"SELECT count(*) FROM (SELECT page_url FROM annotations WHERE {waiting} "
                f"UNION SELECT page_url FROM page_notes WHERE {waiting}) AS u",
                [*waiting_params, *waiting_params],
            ).fetchone()[0]
            pending_sql = (
                "SELECT count(*) FROM reviews WHERE picked_up_at IS NULL AND done_at IS NULL"
            )
            pending_params: list[Any] = []
            if branch is not None:
                pending_sql += (
                    f" AND (EXISTS (SELECT 1 FROM annotations WHERE review_id = reviews.id "
                    f"AND {every}) OR EXISTS (SELECT 1 FROM page_notes WHERE review_id = "
                    f"reviews.id AND {every}))"
                )
                pending_params = [*every_params, *every_params]
            pending = conn.execute(pending_sql, pending_params).fetchone()[0]
        return Summary(
            annotations={s: by_status.get(s, 0) for s in STATUSES},
            page_notes={s: notes.get(s, 0) for s in STATUSES},
            anchor_states={s: anchors.get(s, 0) for s in ANCHOR_STATES},
            pages=pages,
            pending_reviews=pending,
        )

    def purge_resolved(self) -> int:
        """Delete every resolved annotation and page note (and their replies); return how many."""
        with self._tx(write=True) as conn:
            total = 0
            for table in ("annotations", "page_notes"):
                for child in ("replies WHERE parent_id", "screenshots WHERE note_id"):
                    conn.execute(
                        f"DELETE FROM {child} IN (SELECT id FROM {table} WHERE status = 'resolved')"
                    )
                total += conn.execute(f"DELETE FROM {table} WHERE status = 'resolved'").rowcount
            if total:
                self._record(conn, "store", "*", "purged", None)
            return total

    def changes(self, since: int = 0, limit: int = 1000) -> tuple[list[dict[str, Any]], int]:
        """Mutations after cursor `since` and the next cursor (the change feed, docs/http-api.md)."""
        with self._tx(write=False) as conn:
            # Both sent at once (the cursor when nothing came): one round trip on PostgreSQL.
            sent = self._send_tuples(
                conn,
                "SELECT seq, at, kind, item_id, action, page_url FROM changes WHERE seq > ? "
                "ORDER BY seq LIMIT ?",
                (since, limit),
            )
            top = self._send_tuples(conn, "SELECT coalesce(max(seq), 0) FROM changes")
        _, rows = sent()
        if rows:
            cursor = rows[-1][0]
        else:
            cursor = top()[1][0][0]
            cursor = min(cursor, since) if since else cursor
        events = [
            {"seq": seq, "at": at, "kind": kind, "id": item, "action": action, "pageUrl": url}
            for seq, at, kind, item, action, url in rows
        ]
        return events, cursor

    def history(self, id: str, *, kind: str | None = None) -> list[HistoryEntry]:
        """The change rows of an annotation or page note (only that `kind` when given), oldest
        first: who started, addressed, accepted, reopened, edited or replied to it, and when."""
        with self._tx(write=False) as conn:
            table, _ = self._find(conn, id, kind)
            rows = conn.execute(
                "SELECT at, action, author FROM changes WHERE kind = ? AND item_id = ? "
                "ORDER BY seq",
                (_kind(table), id),
            ).fetchall()
        return [
            HistoryEntry(at, action, author, STATUS_AFTER.get(action))
            for at, action, author in rows
        ]

    # -- pointing at a note (issue #19) ---------------------------------------------------------

    def show_annotation(self, id: str, wait: float = SHOW_WAIT_S) -> Shown:
        """Ask every open view of the note's page (browser pages with the overlay, the chat view)
        to scroll to it and flash it: a change row of action `show`, no data change. Returns how
        many views acknowledged it (`acknowledge_show`) within `wait` seconds, as a `Shown`
        (an int); the wait ends early once acknowledgements stop coming for `SHOW_QUIET_S`."""
        if (
            isinstance(wait, bool)
            or not isinstance(wait, (int, float))
            or not (0 <= wait <= MAX_SHOW_WAIT_S)
        ):
            raise ValidationError(f"wait must be 0 to {MAX_SHOW_WAIT_S:g} seconds", "wait")
        with self._tx(write=True) as conn:
            table, row = self._find(conn, id)
            conn.execute("DELETE FROM shown WHERE at < ?", (_ago(SHOWN_KEPT_S),))
            self._record(conn, _kind(table), id, "show", row["page_url"])
            seq = conn.execute(
                "SELECT max(seq) FROM changes WHERE item_id = ? AND action = 'show'", (id,)
            ).fetchone()[0]
        why_not = None
        if table == "annotations":
            state = "resolved" if row["status"] == "resolved" else row["anchor_state"]
            why_not = NO_PASSAGE.get(state)
        deadline = time.monotonic() + wait
        views, last = 0, time.monotonic()
        while True:
            with self._tx(write=False) as conn:
                n = conn.execute("SELECT count(*) FROM shown WHERE seq = ?", (seq,)).fetchone()[0]
            at = time.monotonic()
            if n != views:
                views, last = n, at
            if at >= deadline or (views and at - last >= SHOW_QUIET_S):
                return Shown(views, id, row["page_url"], why_not)
            time.sleep(min(SHOW_POLL_S, deadline - at))

    def acknowledge_show(self, seq: int, viewer: str, page_url: str | None = None) -> bool:
        """A view showed the note of `show_annotation`'s change `seq`: count it once per
        `viewer` (an id the view makes up, letters, digits, `_` and `-`). A view of another page
        than the note's (`page_url`, when given) is not counted. True when this counted."""
        if isinstance(seq, bool) or not isinstance(seq, int) or not 1 <= seq <= MAX_SEQ:
            raise ValidationError(
                f"seq must be a whole number from 1 to {MAX_SEQ}: the show's change number", "seq"
            )
        if not isinstance(viewer, str) or not VIEWER.fullmatch(viewer):
            raise ValidationError(
                "viewer must be 1 to 64 letters, digits, '_' or '-' naming the view", "viewer"
            )
        if page_url is not None:
            page_url = self.page_url(page_url)
        with self._tx(write=True) as conn:
            found = conn.execute(
                "SELECT page_url FROM changes WHERE seq = ? AND action = 'show'", (seq,)
            ).fetchone()
            if found is None:
                raise ShowNotFound(seq)
            if page_url is not None and page_url != found[0]:
                return False
            cur = conn.execute(
                "INSERT INTO shown (seq, viewer, at) VALUES (?, ?, ?) "
                "ON CONFLICT (seq, viewer) DO NOTHING",
                (seq, viewer, now()),
            )
            return cur.rowcount == 1

    def insert_raw(
        self,
        annotations: Iterable[Mapping[str, Any]],
        page_notes: Iterable[Mapping[str, Any]],
        replies: Iterable[Mapping[str, Any]],
        reviews: Iterable[Mapping[str, Any]] = (),
    ) -> dict[str, int]:
        """Insert already-validated rows keeping their ids, skipping ids already present.

        One transaction: an import lands whole or not at all.
        """
        counts = {"annotations": 0, "pageNotes": 0, "replies": 0, "reviews": 0, "skipped": 0}
        inserted: set[str] = set()
        with self._tx(write=True) as conn:
            for table, rows, key in (
                ("reviews", reviews, "reviews"),
                ("annotations", annotations, "annotations"),
                ("page_notes", page_notes, "pageNotes"),
                ("replies", replies, "replies"),
            ):
                for row in rows:
                    # A known item keeps its thread: replies come only with a new parent, so
                    # replies without ids (inline-review has none) are not duplicated.
                    if table == "replies" and row["parent_id"] not in inserted:
                        counts["skipped"] += 1
                        continue
                    cols = ", ".join(row)
                    marks = ", ".join("?" * len(row))
                    cur = conn.execute(
                        f"INSERT INTO {table} ({cols}) VALUES ({marks}) ON CONFLICT DO NOTHING",
                        tuple(row.values()),
                    )
                    if not cur.rowcount:
                        counts["skipped"] += 1
                        continue
                    counts[key] += 1
                    if table in ("annotations", "page_notes"):
                        inserted.add(row["id"])
                        self._record(conn, _kind(table), row["id"], "imported", row["page_url"])
        return counts

    # -- people: personal tokens of team mode (annotate/identity.py, docs/team.md) -------------

    def add_token(self, name: str, role: str = "reviewer") -> str:
        """A new personal token for `name` with `role` (reviewer, agent or maintainer): returned
        once, stored as its SHA-256 only. A name with a live token is refused (revoke it first);
        a revoked one gets a new token."""
        name = person_name(name)
        role = parse_role(role)
        token = new_token()
        with self._tx(write=True) as conn:
            cur = conn.execute(
                "INSERT INTO tokens (name, role, token_hash, created_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (name) DO UPDATE SET role = excluded.role, token_hash = "
                "excluded.token_hash, created_at = excluded.created_at, revoked_at = NULL "
                "WHERE tokens.revoked_at IS NOT NULL",
                (name, role, hash_token(token), now()),
            )
            if not cur.rowcount:
                raise ValidationError(
                    f"{name!r} already has a token; revoke it first (annotate token revoke)",
                    "name",
                )
        return token

    def list_tokens(self) -> list[dict[str, Any]]:
        """Every personal token by name: `{name, role, createdAt, revokedAt}` (never the token)."""
        with self._tx(write=False) as conn:
            rows = conn.execute(
                "SELECT name, role, created_at, revoked_at FROM tokens ORDER BY name"
            ).fetchall()
        return [{"name": r[0], "role": r[1], "createdAt": r[2], "revokedAt": r[3]} for r in rows]

    def revoke_token(self, name: str) -> None:
        """Revoke `name`'s token: every request carrying it is refused from now on."""
        name = person_name(name)
        with self._tx(write=True) as conn:
            cur = conn.execute(
                "UPDATE tokens SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL",
                (now(), name),
            )
            if not cur.rowcount:
                raise ValidationError(f"{name!r} has no live token", "name")

    def person_for_token(self, token: str) -> Person | None:
        """The person whose live token this is, else None."""
        if not isinstance(token, str) or not token:
            return None
        digest = hash_token(token)
        # One statement, so no transaction around it: team mode asks on every request, and on
        # PostgreSQL BEGIN and COMMIT would be two more round trips (`Backend.connection`).
        row = (
            self._file.connection()
            .execute(
                "SELECT name, role, token_hash FROM tokens WHERE token_hash = ? "
                "AND revoked_at IS NULL",
                (digest,),
            )
            .fetchone()
        )
        if row is None or not same_hash(row[2], digest):
            return None
        return Person(row[0], parse_role(row[1]))

    # -- the agent's side (issue #7) ----------------------------------------------------------

    def wait_for_review(
        self,
        timeout_s: float = 50.0,
        *,
        poll_s: float = 0.25,
        stop: threading.Event | None = None,
        token: str | None = None,
    ) -> Review | None:
        """Claim the oldest review no agent has picked up, waiting up to `timeout_s` seconds for
        one ("Send to agent", from any process); None when none came or `stop` was set.
        `token`: the caller's personal token, checked at each poll and in the claim
        (`Unauthorized` as soon as it is revoked).

        Polls a one-row read every `poll_s`, at once when another server on the same PostgreSQL
        database notifies a change (`subscribe`); only a review found takes the write lock.
        """
        deadline = time.monotonic() + max(0.0, timeout_s)
        stop = stop or threading.Event()
        woken = threading.Event()
        unsubscribe = self.subscribe(woken.set)
        try:
            return self._wait_for_review(deadline, poll_s, stop, woken, token)
        finally:
            unsubscribe()

    def _wait_for_review(
        self,
        deadline: float,
        poll_s: float,
        stop: threading.Event,
        woken: threading.Event,
        token: str | None,
    ) -> Review | None:
        while not stop.is_set():
            woken.clear()
            with self._tx(write=False) as conn:
                _check_live(conn, token)
                pending = conn.execute(
                    "SELECT 1 FROM reviews WHERE picked_up_at IS NULL AND done_at IS NULL LIMIT 1"
                ).fetchone()
            review = self.claim_review(token=token) if pending else None
            left = deadline - time.monotonic()
            if review is not None or left <= 0:
                return review
            woken.wait(min(poll_s, left))
        return None

    # -- reads through the backend (the deferred read, annotate/backends/interface.py) --------

    def _query(
        self, conn: Connection, sql: str, params: Iterable[Any] = ()
    ) -> list[dict[str, Any]]:
        """Rows as dicts: Row looks names up by a linear, case-insensitive scan, which costs
        more than building the whole object on wide rows (measured: export of 100k notes)."""
        return self._send(conn, sql, params)()

    def _send(
        self, conn: Connection, sql: str, params: Iterable[Any] = ()
    ) -> Callable[[], list[dict[str, Any]]]:
        """Send a query now; the function returned gives its rows as `_query` does, also after
        the transaction (`Backend.send`: on PostgreSQL queries sent one after another share one
        round trip, and those read after the transaction arrive with its commit)."""
        sent = self._send_tuples(conn, sql, params)

        def rows() -> list[dict[str, Any]]:
            names, tuples = sent()
            return [dict(zip(names, t, strict=True)) for t in tuples]

        return rows

    def _send_tuples(
        self, conn: Connection, sql: str, params: Iterable[Any] = ()
    ) -> Callable[[], Rows]:
        """`_send` giving the column names and the rows as plain tuples (no dict per row)."""
        return self._file.send(conn, sql, tuple(params))


# -- helpers ------------------------------------------------------------------------------------


def _check_live(conn: Connection, token: str | None) -> None:
    """`Unauthorized` unless `token` (when given) is a live personal token."""
    if token is None:
        return
    row = conn.execute(
        "SELECT 1 FROM tokens WHERE token_hash = ? AND revoked_at IS NULL", (hash_token(token),)
    ).fetchone()
    if row is None:
        raise Unauthorized("Unknown or revoked token")


@contextlib.contextmanager
def pause_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many acyclic objects.

    Each collection walks every live object, and building 100k annotations triggers dozens of
    them (benchmarks/store.py, "export markdown (all)", measures the export).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _ago(seconds: float) -> str:
    """The time `seconds` ago, written as `now()` writes it (so the two compare as text)."""
    then = datetime.now(timezone.utc) - timedelta(seconds=seconds)
    return then.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _threads(
    rows: Iterable[Row], out: dict[str, list[Reply]] | None = None
) -> dict[str, list[Reply]]:
    """Reply rows (in creation order) by the id of their note."""
    out = {} if out is None else out
    for r in rows:
        out.setdefault(r["parent_id"], []).append(decode_reply(r))
    return out


def _who(by: Person | None) -> str | None:
    return None if by is None else by.name


def _kind(table: str) -> str:
    return "annotation" if table == "annotations" else "page_note"


def _reply_text(message: Any) -> str:
    if not isinstance(message, str) or not message.strip():
        raise EmptyReply()
    validate.text(message, "message", validate.MAX_REPLY)
    return message


def _replaced(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise EmptyReplacedText()
    validate.text(value, "replacedText", validate.MAX_SELECTED_TEXT)
    return value


def _refuse_resolved(table: str, row: Row, action: str) -> None:
    if row["status"] == "resolved":
        raise InvalidTransition(
            f'Cannot {action}: {LABELS[table].lower()} "{row["id"]}" is resolved; reopen it first'
        )


# Rows to objects, generated from the field table (annotate/fields.py): one constructor call each.
_DECODING = {
    "Build": Build,
    "TextQuote": TextQuote,
    "TextPosition": TextPosition,
    "Source": Source,
    "PageSource": PageSource,
    "ElementSelector": ElementSelector,
}
decode_reply: Callable[[Row], Reply] = REPLY.decoder(Reply, _DECODING)
decode_annotation: Callable[[Row, tuple[Reply, ...]], Annotation] = ANNOTATION.decoder(
    Annotation, _DECODING
)
decode_page_note: Callable[[Row, tuple[Reply, ...], str | None], PageNote] = PAGE_NOTE.decoder(
    PageNote, _DECODING
)
_annotation_row: Callable[[Annotation], tuple[Any, ...]] = ANNOTATION.row_of()
_page_note_row: Callable[[PageNote], tuple[Any, ...]] = PAGE_NOTE.row_of()

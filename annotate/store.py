"""The annotation store: every note, reply and review of one project, and the verbs on them.

Every mutation is one `BEGIN IMMEDIATE` transaction that reads the latest row, checks the lifecycle
and writes, so concurrent processes never lose an update (docs/storage.md). Reads run in a read
transaction, so an object and its replies always come from the same committed state. The
database, its connections and transactions are a backend's (annotate/backends/).

A text note's `source` follows its Markdown file (`annotate/reconcile.py`): every read path starts
by reconciling the notes it is about to read whose file changed (`Sources.reading`), and a verb
that moves a note's target locates it again inside its own write transaction (`Sources.locate`).

`Store` keeps the notes and their lifecycle. Each other noun is a small class over the same
backend, reached as `store.<noun>` and, where agents and scripts used them, through the store's
old calls (docs/architecture.md, "Where a new noun goes").
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, overload

import sqlite_utils

from . import build as builds
from . import validation as validate
from .anchors import Anchors
from .backends import Backend, Connection, ExportRows, is_url, open_backend
from .backends.interface import BUSY_TIMEOUT_S, DEFAULT_DIR, DEFAULT_FILE, now
from .bulk import Bulk
from .errors import (
    AnnotationNotFound,
    InvalidTransition,
    NotATextAnnotation,
    PageNoteNotFound,
    ProjectNotFound,
    ValidationError,
)
from .feed import Feed
from .filters import Filter
from .identity import Person, check
from .items import Items
from .models import Annotation, Build, HistoryEntry, PageNote, Review, Shown, Summary
from .people import People
from .plans import Plans
from .project import find_project
from .pullrequests.links import PullRequestLinks
from .reviews import Reviews
from .screenshots import Screenshots
from .shows import SHOW_WAIT_S, Shows
from .sources import ALL_ANNOTATIONS, Sources
from .tables import (
    LABELS,
    Item,
    Tables,
    decode_annotation,
    decode_page_note,
    decode_reply,
    kind_of,
    new_id,
    pause_gc,
    refuse_resolved,
    who,
)

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
    "pause_gc",
    "project_db_path",
]


def project_db_path(project: str | os.PathLike[str] = ".") -> Path:
    return Path(project) / DEFAULT_DIR / DEFAULT_FILE


def open(
    project: str | os.PathLike[str] | None = None,
    *,
    db: str | os.PathLike[str] | None = None,
    build: Build | Mapping[str, Any] | Literal["auto"] | None = None,
) -> Store:
    """Open the store of a project: `<project>/.annotate/annotations.db`, created when missing.

    The project is found upwards from `project` (or the current folder): never a new store inside
    `docs/`. `db`: another SQLite file, or a PostgreSQL URL (docs/storage.md), whose notes point
    into the project found as above; found no project, the store reads and writes its notes as
    stored and what needs the Markdown raises `ProjectNotFound` (issue #27). `build`: the build
    new notes belong to (`Store.build`); `"auto"` reads it as `annotate serve` does.
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
        # The nouns beside the notes, each over the same backend (docs/architecture.md).
        self._tables = Tables(self._file)
        self.people = People(self._file)
        self.sources = Sources(self._file, self)
        self.anchors = Anchors(self._file, self.sources)
        self._items = Items(self._file, self.sources)
        self.feed = Feed(self._file)
        self.shows = Shows(self._file, self.sources)
        self.reviews = Reviews(self._file, self.sources, self._items, self.people)
        self.bulk = Bulk(self._file, self.sources, self._items)
        self.plans = Plans(self._file)  # reviewed documents and their revisions (issue #29)
        self.screenshots = Screenshots(self._file)  # a picture per note (issue #30)
        self.pull_requests = PullRequestLinks(self._file)  # notes' comments on a PR (issue #30)

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
        fields["page_url"], registered = self.sources.page(fields["page_url"])
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
            **self.sources.build_columns(),
        }
        self.sources.place(row, registered)
        with self._tx(write=True) as conn:
            self._tables.insert(conn, "annotations", row)
            self._tables.record(conn, "annotation", row["id"], "created", row["page_url"], who(by))
            loaded = self._items.loading(conn, "annotations", row["id"])
        return loaded()

    def get_annotation(self, id: str) -> Item:
        """The annotation (or page note) with this id, as the MCP tool `get_annotation` gives it."""
        valid = validate.is_valid_id(id)
        with self.sources.reading(
            ALL_ANNOTATIONS + " WHERE id = ?" if valid else None, [id]
        ) as conn:
            loaded = self._items.getting(conn, id)
        return loaded()

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
        read on every page load; annotate/backends/sqlite_json.py).
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
        return self._items.annotations(found, as_json=as_json)

    def edit_annotation(
        self, id: str, changes: Mapping[str, Any], *, by: Person | None = None
    ) -> Annotation:
        """Change the reviewer's note, intent, suggestion or page title (`by`: only its author
        or a maintainer, in team mode)."""
        with self._tx(write=True) as conn:
            row = self._tables.row(conn, "annotations", id)
            if row is None:
                raise AnnotationNotFound(id)
            check(by, "edit", f'annotation "{id}"', row["author"])
            values = validate.annotation_changes(row["intent"], row["suggestion"], changes)
            values["updated_at"] = now()
            self._tables.update(conn, "annotations", id, values)
            self._tables.record(conn, "annotation", id, "edited", row["page_url"], who(by))
            loaded = self._items.loading(conn, "annotations", id)
        return loaded()

    def update_annotation_target(
        self, id: str, replaced_text: str, *, by: Person | None = None
    ) -> Annotation:
        """Record the text the agent put in place of the quote, and locate the note by it."""
        text = validate.replaced_text(replaced_text)
        self.sources.prepare_note(id)
        with self._tx(write=True) as conn:
            table, row = self._tables.find(conn, id)
            if table != "annotations" or row["type"] != "text":
                raise NotATextAnnotation()
            refuse_resolved(table, row, "update the target")
            values: dict[str, Any] = {"replaced_text": text, "updated_at": now()}
            moved = self.sources.locate(row, values, force=True)
            self._tables.update(conn, table, id, values)
            self._tables.record(conn, "annotation", id, "target_updated", row["page_url"], who(by))
            if moved:
                self._tables.record(conn, "annotation", id, "anchor", row["page_url"])
            loaded = self._items.loading(conn, table, id)
        return loaded()

    def text_selector_rows(
        self, page_url: str, *, include_resolved: bool = False
    ) -> list[tuple[str, str, str, str, int | None, int | None, str | None]]:
        """`Anchors.text_selectors`: the selector of each text annotation of a page, as tuples."""
        return self.anchors.text_selectors(page_url, include_resolved=include_resolved)

    def selections(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """`Anchors.selections`: where each annotation was selected, as its client reported."""
        return self.anchors.selections(ids)

    # -- Markdown sources and page URLs (annotate/sources.py) ----------------------------------

    def register_pages(
        self, pages: Mapping[str, str], objects: Mapping[str, list[Any]] | None = None
    ) -> None:
        """`Sources.register_pages`: the Markdown file each page URL is built from."""
        self.sources.register_pages(pages, objects)

    def prepare_page(self, page_url: str) -> bool:
        """`Sources.prepare_page`: parse a page's Markdown ahead of its first note."""
        return self.sources.prepare_page(page_url)

    def page_file(self, page_url: str) -> str | None:
        """`Sources.page_file`: the Markdown file a page is built from, else None."""
        return self.sources.page_file(page_url)

    def reconcile(self, *, force: bool = False, workers: int = 1) -> int:
        """`Sources.reconcile`: check every annotation against its Markdown file now."""
        return self.sources.reconcile(force=force, workers=workers)

    def page_url(self, value: Any, field: str = "pageUrl") -> str:
        """`Sources.page_url`: the form the store keeps of a page URL written any way."""
        return self.sources.page_url(value, field)

    def page_hint(self, page_url: str) -> str | None:
        """`Sources.page_hint`: when no note is on this page, a sentence naming the closest."""
        return self.sources.page_hint(page_url)

    # -- lifecycle, for annotations and page notes alike --------------------------------------

    def set_in_progress(
        self, id: str, *, kind: str | None = None, by: Person | None = None
    ) -> Item:
        """open/addressed → in_progress (the agent started); a no-op when already in progress."""
        with self._tx(write=True) as conn:
            table, row = self._tables.find(conn, id, kind)
            refuse_resolved(table, row, "start work")
            if row["status"] != "in_progress":
                stamp = now()
                self._tables.update(
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
                self._tables.record(
                    conn, kind_of(table), id, "in_progress", row["page_url"], who(by)
                )
                self.reviews.settle(conn, row["review_id"])
            loaded = self._items.loading(conn, table, id)
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
        text = None if replaced_text is None else validate.replaced_text(replaced_text)
        if not isinstance(deleted, bool):
            raise ValidationError("deleted must be true or false", "deleted")
        if deleted and text is not None:
            raise ValidationError(
                "replacedText and deleted exclude each other: deleted text has no replacement",
                "deleted",
            )
        if message is not None:
            validate.reply_message(message)
        if self.outside is None or text is not None:  # else `locate` reads no Markdown
            self.sources.prepare_note(id)
        with self._tx(write=True) as conn:
            table, row = self._tables.find(conn, id, kind)
            if text is not None and (table != "annotations" or row["type"] != "text"):
                raise NotATextAnnotation()
            if deleted and table != "annotations":
                raise ValidationError(
                    f'deleted is for annotations; page note "{id}" has no text of its own',
                    "deleted",
                )
            refuse_resolved(table, row, "address")
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
            moved = table == "annotations" and self.sources.locate(row, values, force=retarget)
            self._tables.update(conn, table, id, values)
            if message is not None:
                self._insert_reply(conn, id, "agent", message, stamp, who(by))
            self._tables.record(conn, kind_of(table), id, "addressed", row["page_url"], who(by))
            if moved:
                self._tables.record(conn, "annotation", id, "anchor", row["page_url"])
            self.reviews.settle(conn, row["review_id"])
            loaded = self._items.loading(conn, table, id)
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
        validate.reply_message(message)
        author = validate.text(author, "author", validate.MAX_AUTHOR) or None
        with self._tx(write=True) as conn:
            table, row = self._tables.find(conn, id, kind)
            stamp = now()
            self._insert_reply(conn, id, role, message, stamp, author)
            self._tables.update(conn, table, id, {"updated_at": stamp})
            self._tables.record(conn, kind_of(table), id, f"{role}_reply", row["page_url"], who(by))
            loaded = self._items.loading(conn, table, id)
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
        self._tables.insert(
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

    def add_agent_reply(self, id: str, message: str, *, by: Person | None = None) -> Item:
        """A reply with role `agent`, explaining what was done."""
        return self.add_reply(id, message, role="agent", by=by)

    def accept(self, id: str, *, kind: str | None = None, by: Person | None = None) -> Item:
        """The reviewer is satisfied: → resolved (kept, out of default listings, until purged).
        `by`: never an agent (team mode)."""
        with self._tx(write=True) as conn:
            table, row = self._tables.find(conn, id, kind)
            check(by, "accept", f'{LABELS[table].lower()} "{id}"')
            if row["status"] == "resolved":
                raise InvalidTransition(f'{LABELS[table]} "{id}" is already resolved')
            stamp = now()
            self._tables.update(
                conn, table, id, {"status": "resolved", "resolved_at": stamp, "updated_at": stamp}
            )
            self._tables.record(conn, kind_of(table), id, "resolved", row["page_url"], who(by))
            self.reviews.settle(conn, row["review_id"])
            loaded = self._items.loading(conn, table, id)
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
            table, row = self._tables.find(conn, id, kind)
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
                previous = self._tables.row(conn, "reviews", row["review_id"] or "")
                mode = previous["mode"] if previous else "edit"
                values["review_id"] = self.reviews.insert(
                    conn, {"mode": mode, "message": "", "author": who(by)}, stamp, who(by)
                )
            self._tables.update(conn, table, id, values)
            if follow_up:
                assert note is not None
                self._insert_reply(conn, id, "reviewer", note, stamp, who(by))
            self._tables.record(conn, kind_of(table), id, "reopened", row["page_url"], who(by))
            loaded = self._items.loading(conn, table, id)
        self.reviews.remember(values["review_id"])  # a follow-up's files as sent (issue #29)
        return loaded()

    def delete(self, id: str, *, kind: str | None = None, by: Person | None = None) -> None:
        """Delete an annotation or a page note, with its replies. `kind` ("annotation" or
        "page_note") refuses an id of the other kind, as not found. `by`: only its author or a
        maintainer (team mode)."""
        with self._tx(write=True) as conn:
            table, row = self._tables.find(conn, id, kind)
            check(by, "delete", f'{LABELS[table].lower()} "{id}"', row["author"])
            conn.execute("DELETE FROM replies WHERE parent_id = ?", (row["id"],))
            conn.execute("DELETE FROM screenshots WHERE note_id = ?", (row["id"],))
            conn.execute(f"DELETE FROM {table} WHERE id = ?", (row["id"],))
            self._tables.record(
                conn, kind_of(table), row["id"], "deleted", row["page_url"], who(by)
            )
            self.reviews.settle(conn, row["review_id"])

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
            **self.sources.build_columns(),
        }
        with self._tx(write=True) as conn:
            self._tables.insert(conn, "page_notes", row)
            self._tables.record(conn, "page_note", row["id"], "created", row["page_url"], who(by))
            loaded = self._items.loading(conn, "page_notes", row["id"])
        return loaded()

    def get_page_note(self, id: str) -> PageNote:
        with self._tx(write=False) as conn:
            _, row = self._tables.find(conn, id, "page_note")
            return self._items.objects(conn, "page_notes", [row])[0]

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
        return self._items.page_notes(found)

    def edit_page_note(
        self, id: str, changes: Mapping[str, Any], *, by: Person | None = None
    ) -> PageNote:
        values = validate.page_note_changes(changes)
        with self._tx(write=True) as conn:
            row = self._tables.row(conn, "page_notes", id)
            if row is None:
                raise PageNoteNotFound(id)
            check(by, "edit", f'page note "{id}"', row["author"])
            values["updated_at"] = now()
            self._tables.update(conn, "page_notes", id, values)
            self._tables.record(conn, "page_note", id, "edited", row["page_url"], who(by))
            loaded = self._items.loading(conn, "page_notes", id)
        return loaded()

    # -- reviews (annotate/reviews.py) ----------------------------------------------------------

    def create_review(
        self, data: Mapping[str, Any] | None = None, *, by: Person | None = None
    ) -> Review:
        """`Reviews.create`: "Send to agent", `{mode, message, ids}`."""
        return self.reviews.create(data, by=by)

    def get_review(self, id: str) -> Review:
        """`Reviews.get`: a review with its notes."""
        return self.reviews.get(id)

    def list_reviews(self, *, pending_only: bool = False) -> list[Review]:
        """`Reviews.all`: every review (`pending_only`: those no agent picked up)."""
        return self.reviews.all(pending_only=pending_only)

    def claim_review(self, *, token: str | None = None) -> Review | None:
        """`Reviews.claim`: the oldest review no agent has picked up, now picked up; else None."""
        return self.reviews.claim(token=token)

    def wait_for_review(
        self,
        timeout_s: float = 50.0,
        *,
        poll_s: float = 0.25,
        stop: threading.Event | None = None,
        token: str | None = None,
    ) -> Review | None:
        """`Reviews.wait`: claim the oldest review, waiting up to `timeout_s` for one."""
        return self.reviews.wait(timeout_s, poll_s=poll_s, stop=stop, token=token)

    # -- the whole store (annotate/bulk.py) ----------------------------------------------------

    def all_items(
        self, *, include_resolved: bool = True
    ) -> tuple[list[Annotation], list[PageNote]]:
        """`Bulk.all_items`: every annotation and page note, read in one snapshot."""
        return self.bulk.all_items(include_resolved=include_resolved)

    def export_rows(self, *, include_resolved: bool) -> ExportRows:
        """`Bulk.export_rows`: what the Markdown export shows, as rows, in one snapshot."""
        return self.bulk.export_rows(include_resolved=include_resolved)

    def summary(self, *, branch: str | None = None) -> Summary:
        """`Bulk.summary`: counts by status, by anchor state, pages, waiting reviews."""
        return self.bulk.summary(branch=branch)

    def purge_resolved(self) -> int:
        """`Bulk.purge_resolved`: delete every resolved note and its replies; how many."""
        return self.bulk.purge_resolved()

    def insert_raw(
        self,
        annotations: Iterable[Mapping[str, Any]],
        page_notes: Iterable[Mapping[str, Any]],
        replies: Iterable[Mapping[str, Any]],
        reviews: Iterable[Mapping[str, Any]] = (),
    ) -> dict[str, int]:
        """`Bulk.insert_raw`: insert already-validated rows keeping their ids, in one transaction."""
        return self.bulk.insert_raw(annotations, page_notes, replies, reviews)

    # -- the change feed (annotate/feed.py) and pointing at a note (annotate/shows.py) ---------

    def changes(self, since: int = 0, limit: int = 1000) -> tuple[list[dict[str, Any]], int]:
        """`Feed.changes`: mutations after cursor `since` and the next cursor."""
        return self.feed.changes(since, limit)

    def history(self, id: str, *, kind: str | None = None) -> list[HistoryEntry]:
        """`Feed.history`: the change rows of an annotation or page note, oldest first."""
        return self.feed.history(id, kind=kind)

    def show_annotation(self, id: str, wait: float = SHOW_WAIT_S) -> Shown:
        """`Shows.show`: ask every open view of the note's page to scroll to it and flash it."""
        return self.shows.show(id, wait)

    def acknowledge_show(self, seq: int, viewer: str, page_url: str | None = None) -> bool:
        """`Shows.acknowledge`: a view showed the note of show `seq`; True when this counted."""
        return self.shows.acknowledge(seq, viewer, page_url)

    # -- people: personal tokens of team mode (annotate/identity.py, docs/team.md) -------------

    def add_token(self, name: str, role: str = "reviewer") -> str:
        """`People.add_token`: a new personal token for `name`, returned once."""
        return self.people.add_token(name, role)

    def list_tokens(self) -> list[dict[str, Any]]:
        """`People.list_tokens`: every personal token by name (never the token)."""
        return self.people.list_tokens()

    def revoke_token(self, name: str) -> None:
        """`People.revoke_token`: refuse `name`'s token from now on."""
        self.people.revoke_token(name)

    def person_for_token(self, token: str) -> Person | None:
        """`People.person_for_token`: the person whose live token this is, else None."""
        return self.people.person_for_token(token)

"""The annotation store: one SQLite file shared by the dev server, the MCP server and the CLI.

Every mutation is one `BEGIN IMMEDIATE` transaction that reads the latest row, checks the lifecycle
and writes, so concurrent processes never lose an update (SPEC §4). Each thread (and each forked
process) gets its own connection. Reads run in a read transaction, so an object and its replies always
come from the same committed state.
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import functools
import gc
import json
import logging
import os
import secrets
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import sqlite_utils

from . import pages, reconcile, sourcemap, urls
from . import validation as validate
from .anchoring import Selector
from .context import Context, get_context
from .errors import (
    AnnotateError,
    AnnotationNotFound,
    EmptyReplacedText,
    EmptyReply,
    InvalidTransition,
    NewerSchemaError,
    NotATextAnnotation,
    PageNoteNotFound,
    ReviewNotFound,
    StoreBusyError,
    StoreCorruptError,
    StoreError,
    StoreFullError,
    StoreGoneError,
    StoreReadOnlyError,
    ValidationError,
)
from .fields import ANNOTATION, PAGE_NOTE, REPLY
from .models import (
    ANCHOR_STATES,
    STATUSES,
    Annotation,
    ElementSelector,
    PageNote,
    PageSource,
    Reply,
    Review,
    Source,
    Summary,
    TextPosition,
    TextQuote,
)
from .project import find_project
from .schema import LATEST, MIGRATIONS, OWN_TABLES
from .sqljson import ANNOTATION_JSON

__all__ = ["DEFAULT_DIR", "DEFAULT_FILE", "Store", "open", "project_db_path"]

DEFAULT_DIR = ".annotate"
DEFAULT_FILE = "annotations.db"
BUSY_TIMEOUT_S = 10.0
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
# How many pages with notes a filter that matches none names.
CLOSEST_PAGES = 3

log = logging.getLogger("annotate.store")

Item = Annotation | PageNote
Row = Mapping[str, Any]
LABELS = {"annotations": "Annotation", "page_notes": "Page note"}

# One write lock per database file and process. SQLite serialises writers anyway, but a connection
# that finds the file locked backs off in sleeps of up to 100 ms; threads of one process (the web
# server's) queue here instead. Other processes still meet SQLite's busy timeout.
_WRITE_LOCKS: dict[str, threading.RLock] = {}
_WRITE_LOCKS_GUARD = threading.Lock()


def _write_lock(path: Path) -> threading.RLock:
    key = os.path.realpath(path)
    with _WRITE_LOCKS_GUARD:
        return _WRITE_LOCKS.setdefault(key, threading.RLock())


def _forget_write_locks() -> None:
    # A lock held by another thread at fork time would never be released in the child.
    global _WRITE_LOCKS_GUARD
    _WRITE_LOCKS.clear()
    _WRITE_LOCKS_GUARD = threading.Lock()


os.register_at_fork(after_in_child=_forget_write_locks)


class _Connection(sqlite3.Connection):
    """A plain connection that a `weakref.WeakSet` can hold (sqlite3.Connection cannot be weakly
    referenced): the store keeps track of its open connections without keeping them alive."""

    pid: int  # the process that opened it


def _apply_migrations(conn: sqlite3.Connection, version: int) -> None:
    """Bring the database from `version` to LATEST, inside the caller's write transaction."""
    db = sqlite_utils.Database(conn)
    if version == 0:
        db.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TEXT)")
    for target in range(version, LATEST):
        MIGRATIONS[target](db)
        conn.execute(
            "INSERT INTO schema_version (version, applied_at) VALUES (?, ?)", (target + 1, now())
        )


def _notes(n: int) -> str:
    return f"{n} note" if n == 1 else f"{n} notes"


def _note_count(conn: sqlite3.Connection) -> int:
    try:
        return sum(
            conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("annotations", "page_notes")
        )
    except sqlite3.Error:
        return 0


def _read_only_fs(path: Path) -> bool:
    for candidate in (path, path.parent):
        try:
            return bool(os.statvfs(candidate).f_flag & os.ST_RDONLY)
        except (OSError, AttributeError):  # AttributeError: no statvfs on Windows
            continue
    return False


def _free_bytes(folder: Path) -> int | None:
    try:
        st = os.statvfs(folder)
    except (OSError, AttributeError):
        return None
    return st.f_bavail * st.f_frsize


def now() -> str:
    """ISO 8601 UTC with milliseconds, e.g. `2026-11-21T10:30:00.123Z`."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(5)}"


def project_db_path(project: str | os.PathLike[str] = ".") -> Path:
    return Path(project) / DEFAULT_DIR / DEFAULT_FILE


def open(project: str | os.PathLike[str] | None = None) -> Store:
    """Open the store of a project: `<project>/.annotate/annotations.db`, created when missing.

    The project is found upwards from `project`, or from the current folder when it is None
    (`annotate.project.find_project`): never a new store inside `docs/`.
    """
    root = find_project(project)
    return Store(project_db_path(root), project_dir=root)


class Store:
    """All annotations, page notes, replies and reviews of one project.

    Methods carry the MCP tool names (SPEC §3). Lifecycle methods (`set_in_progress`,
    `address_annotation`, `add_agent_reply`, `accept`, `reopen`, …) take the id of an annotation or of
    a page note.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        project_dir: str | os.PathLike[str] | None = None,
        busy_timeout: float = BUSY_TIMEOUT_S,
    ) -> None:
        self.path = Path(path)
        if project_dir is None:
            parent = self.path.parent
            project_dir = parent.parent if parent.name == DEFAULT_DIR else parent
        self.project_dir = Path(project_dir)
        self.busy_timeout = busy_timeout
        self._local = threading.local()
        # Markdown path -> mtime when `prepare_page` last parsed it.
        self._prepared: dict[str, float] = {}
        # The file the connections have open, as (device, inode), and how many times this store has
        # moved to a new file at `path`: a thread whose connection is older reconnects.
        self._identity: tuple[int, int] | None = None
        self._generation = 0
        self._connections: weakref.WeakSet[_Connection] = weakref.WeakSet()
        self._follow_lock = threading.Lock()
        self._prepare_folder()
        self._create()
        self._check_header()
        self._migrate()
        self._identity = self._file_identity()

    # -- the file, connections and transactions -----------------------------------------------

    def _prepare_folder(self, *, parents: bool = True) -> None:
        folder = self.path.parent
        if not folder.exists():
            try:
                folder.mkdir(parents=parents, mode=0o700)
                if folder.name == DEFAULT_DIR:
                    # Never committed, even before `annotate setup` adds it to .gitignore.
                    (folder / ".gitignore").write_text("# created by mkdocs-annotate\n*\n")
            except FileExistsError:
                pass  # another process made it first
            except OSError as e:
                raise self._os_error(e) from None

    def _create(self) -> None:
        """Make a new store file when there is none, complete before it appears at `path`.

        The schema is written under a temporary name and linked into place, so no file at `path`
        is ever empty because we made it: an empty file there was made or truncated by something
        else, and `_check_header` refuses it instead of starting a silent new store (issue #17).
        """
        if os.path.lexists(self.path):
            return
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            try:
                conn = sqlite3.connect(str(tmp), isolation_level=None)
                try:
                    conn.execute("PRAGMA journal_mode = WAL")
                    conn.execute("BEGIN IMMEDIATE")
                    _apply_migrations(conn, 0)
                    conn.execute("COMMIT")
                finally:
                    conn.close()
                with contextlib.suppress(FileExistsError):
                    # link() fails when a file exists: two processes creating at once share one.
                    os.link(tmp, self.path)
            except sqlite3.Error as e:
                raise self._translate(e) from None
            except OSError as e:
                raise self._os_error(e) from None
        finally:
            for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
                with contextlib.suppress(OSError):
                    os.unlink(leftover)

    def _check_header(self) -> None:
        # SQLite happily "opens" an empty file as a new database: refuse one we did not make.
        # Only `stat`, never open(): closing any descriptor of a file drops every POSIX lock this
        # process holds on it, SQLite's included, so a second Store on a file this process already
        # has open would let other processes reset the WAL under it. A foreign file is refused by
        # SQLite itself at the first read (SQLITE_NOTADB, see `_translate`).
        try:
            size = os.stat(self.path).st_size
        except FileNotFoundError:
            raise StoreCorruptError(str(self.path), "the file disappeared while opening") from None
        except OSError as e:
            raise StoreCorruptError(str(self.path), e.strerror or str(e)) from None
        if size == 0:
            raise StoreCorruptError(
                str(self.path),
                "the file is empty: it was truncated or made by another program, never by "
                "mkdocs-annotate; restore it from a backup or move it away",
            )

    def _file_identity(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_dev, st.st_ino)

    def _connect(self) -> _Connection:
        # mode=rw: SQLite never creates the file here, so a store deleted under us cannot come
        # back as an empty file (`_follow_file` handles that). SQLite falls back to read-only by
        # itself when the file is read-only.
        uri = self.path.absolute().as_uri()
        try:
            conn = self._configure(uri + "?mode=rw")
        except StoreError:
            # A WAL store on a read-only file system: SQLite cannot make its shared-memory file
            # there. Nothing can change the file while the file system stays read-only, so it is
            # read as immutable, unless a WAL file holds commits the main file lacks.
            if not (_read_only_fs(self.path) and not Path(f"{self.path}-wal").exists()):
                raise
            conn = self._configure(uri + "?mode=ro&immutable=1")
        conn.pid = os.getpid()
        self._connections.add(conn)
        return conn

    def _configure(self, uri: str) -> _Connection:
        try:
            conn = sqlite3.connect(
                uri,
                uri=True,
                timeout=self.busy_timeout,
                isolation_level=None,
                check_same_thread=False,
                factory=_Connection,
            )
        except sqlite3.Error as e:
            raise self._translate(e) from None
        conn.row_factory = sqlite3.Row
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
            if mode.lower() != "wal":
                with contextlib.suppress(sqlite3.OperationalError):
                    # Refused on a read-only file, which is then still read in its own mode.
                    conn.execute("PRAGMA journal_mode = WAL")
            # NORMAL in WAL mode survives any process crash (SIGKILL included); only a power loss
            # can drop the last commits.
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            # The first read: a WAL store that cannot be read fails here, not at first use.
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.DatabaseError as e:
            conn.close()
            raise self._translate(e) from None
        return conn

    @property
    def conn(self) -> sqlite3.Connection:
        """This thread's connection (a forked child, or a thread whose file was replaced, gets a
        new one)."""
        local = self._local
        if (
            getattr(local, "pid", None) != os.getpid()
            or local.conn is None
            or local.generation != self._generation
        ):
            local.conn = self._connect()
            local.pid = os.getpid()
            local.generation = self._generation
        return local.conn

    @property
    def db(self) -> sqlite_utils.Database:
        """This thread's connection wrapped by sqlite-utils, for schema work and ad-hoc queries."""
        return sqlite_utils.Database(self.conn)

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None and getattr(self._local, "pid", None) == os.getpid():
            conn.close()
        self._local.conn = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Store {str(self.path)!r}>"

    def _translate(self, error: sqlite3.Error) -> AnnotateError:
        """The library error that says what is wrong with the file (issue #17)."""
        text = str(error)
        name = getattr(error, "sqlite_errorname", "")  # Python 3.11+
        if isinstance(error, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
            return StoreBusyError(str(self.path))
        if name == "SQLITE_NOTADB" or text == "file is not a database":
            return StoreCorruptError(str(self.path), "not an SQLite database")
        if name == "SQLITE_FULL" or "database or disk is full" in text:
            return StoreFullError(str(self.path))
        # SQLite reports a failed write to the WAL or its shared memory as a plain I/O error.
        io_error = name.startswith("SQLITE_IOERR") or "disk I/O error" in text
        if io_error and _free_bytes(self.path.parent) == 0:
            return StoreFullError(str(self.path))
        if (
            name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN"))
            or "readonly database" in text
            or "unable to open database file" in text
        ):
            detail = self._read_only_detail()
            if detail:
                return StoreReadOnlyError(str(self.path), f"{detail}; reading still works")
        return StoreCorruptError(str(self.path), text)

    def _read_only_detail(self) -> str | None:
        """Why the file cannot be written, or None when it could be."""
        if _read_only_fs(self.path):
            return "its file system is read-only"
        if self.path.exists() and not os.access(self.path, os.W_OK):
            return "the file is read-only"
        if not os.access(self.path.parent, os.W_OK):
            return f"its folder {str(self.path.parent)!r} is read-only"
        return None

    def _os_error(self, error: OSError) -> AnnotateError:
        """The library error for a failed file operation of our own (creating the store)."""
        if error.errno in (errno.ENOSPC, errno.EDQUOT):
            return StoreFullError(str(self.path))
        if error.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            detail = self._read_only_detail() or (error.strerror or str(error)).lower()
            return StoreReadOnlyError(str(self.path), detail)
        return StoreGoneError(str(self.path), error.strerror or str(error))

    def _follow_file(self) -> sqlite3.Connection:
        """This thread's connection to the file now at `path`, after noticing a deleted or
        replaced store (issue #17).

        `.annotate/` is gitignored, so `git clean -fdX` under a running server deletes it while the
        server's connections keep the old file open: writes there would be acknowledged and never
        seen by anyone. One `stat` per transaction notices it. A deleted store is recreated and
        refilled from what this process still holds open; a store replaced by a file that was never
        written to (another process recreated it first) is refilled the same way; a file holding
        notes of its own is used as it is. Each case is logged as a warning.
        """
        try:
            st = os.stat(self.path)
            identity: tuple[int, int] | None = (st.st_dev, st.st_ino)
            if st.st_size == 0:
                self._check_header()  # truncated under us: refused, never written into
        except FileNotFoundError:
            identity = None
        except OSError:
            identity = self._identity  # unreadable folder: the connection's error will say
        if identity == self._identity or self._identity is None:
            return self.conn
        with _write_lock(self.path), self._follow_lock:
            identity = self._file_identity()
            if identity == self._identity:
                return self.conn
            old = self._old_connection()
            deleted = identity is None
            if deleted:
                if not self.project_dir.is_dir():
                    raise StoreGoneError(str(self.path), "the project folder is gone")
                self._prepare_folder(parents=False)
                self._create()
            self._check_header()
            self._generation += 1
            conn = self.conn
            self._version(conn)
            copied = self._refill(conn, old) if old is not None else None
            held = _note_count(old) if old is not None and copied is None else 0
            self._identity = self._file_identity()
        what = "was deleted" if deleted else "was replaced by another file"
        if copied is None:
            how = (
                f"it holds notes of its own, so it is used as it is (the {_notes(held)} of the "
                f"file it replaced {'is' if held == 1 else 'are'} not in it)"
            )
            if deleted or old is None:
                how = "nothing was left to restore"
        else:
            how = f"the {_notes(copied)} this process still held were written into the new file"
        log.warning("%s %s while in use; %s", self.path, what, how)
        return conn

    def _old_connection(self) -> sqlite3.Connection | None:
        """An open connection to the file this store used before, to copy its rows from."""
        mine = getattr(self._local, "conn", None)
        candidates = [mine, *self._connections]
        for conn in candidates:
            if conn is None or getattr(conn, "pid", None) != os.getpid():
                continue  # a connection made before a fork belongs to the parent
            if conn.in_transaction:
                continue  # another thread's, in use
            try:
                conn.execute("SELECT 1").fetchone()
            except sqlite3.Error:
                continue  # closed
            return conn
        return None

    def _refill(self, new: sqlite3.Connection, old: sqlite3.Connection) -> int | None:
        """Copy every row of `old` into `new` if `new` has never been written; return how many
        notes that copied, or None when `new` holds rows of its own (or another schema)."""
        tables = sorted(OWN_TABLES - {"schema_version"})
        try:
            old.execute("BEGIN")
            try:
                if self._version(old) != LATEST:
                    return None
                new.execute("BEGIN IMMEDIATE")
                try:
                    if self._version(new) != LATEST or any(
                        new.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone() for t in tables
                    ):
                        new.execute("ROLLBACK")
                        return None
                    for table in tables:
                        rows = old.execute(f"SELECT * FROM {table}")
                        cols = ", ".join(d[0] for d in rows.description)
                        marks = ", ".join("?" * len(rows.description))
                        new.executemany(f"INSERT INTO {table} ({cols}) VALUES ({marks})", rows)
                    new.execute("COMMIT")
                except BaseException:
                    if new.in_transaction:
                        new.execute("ROLLBACK")
                    raise
                return _note_count(new)
            finally:
                old.execute("ROLLBACK")
        except sqlite3.Error as e:
            raise self._translate(e) from None

    @contextlib.contextmanager
    def _tx(self, write: bool) -> Iterator[sqlite3.Connection]:
        """One transaction: IMMEDIATE for writes (no lock upgrade races), deferred for reads."""
        conn = self._follow_file()
        lock = _write_lock(self.path) if write else None
        if lock is not None:
            lock.acquire()
        try:
            try:
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            except sqlite3.Error as e:
                raise self._translate(e) from None
            try:
                yield conn
            except BaseException as e:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if isinstance(e, sqlite3.Error):
                    raise self._translate(e) from None
                raise
            else:
                try:
                    conn.execute("COMMIT")
                except sqlite3.Error as e:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise self._translate(e) from None
        finally:
            if lock is not None:
                lock.release()

    def _migrate(self) -> None:
        try:
            version = self._version(self.conn)
            if version == LATEST:
                return
            with self._tx(write=True) as conn:
                _apply_migrations(conn, self._version(conn))
        except sqlite3.Error as e:
            raise self._translate(e) from None

    def _version(self, conn: sqlite3.Connection) -> int:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        tables.discard("sqlite_sequence")
        if "schema_version" not in tables:
            if tables:
                # Someone's other database: refuse rather than add our tables to it.
                raise StoreCorruptError(
                    str(self.path), "it holds other tables and was not written by mkdocs-annotate"
                )
            return 0
        row = conn.execute("SELECT max(version) FROM schema_version").fetchone()
        version = row[0] or 0
        if version > LATEST:
            raise NewerSchemaError(str(self.path), version, LATEST)
        if version == LATEST and not tables >= OWN_TABLES:
            raise StoreCorruptError(str(self.path), "tables are missing")
        return version

    @property
    def schema_version(self) -> int:
        return self._version(self.conn)

    # -- reading rows into objects ----------------------------------------------------------

    def _replies(self, conn: sqlite3.Connection, ids: list[str]) -> dict[str, list[Reply]]:
        out: dict[str, list[Reply]] = {}
        for i in range(0, len(ids), IN_CHUNK):
            chunk = ids[i : i + IN_CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = _query(
                conn, f"SELECT * FROM replies WHERE parent_id IN ({marks}) ORDER BY rowid", chunk
            )
            for r in rows:
                out.setdefault(r["parent_id"], []).append(_reply(r))
        return out

    def _all_replies(self, conn: sqlite3.Connection) -> dict[str, list[Reply]]:
        out: dict[str, list[Reply]] = {}
        for r in _query(conn, "SELECT * FROM replies ORDER BY rowid"):
            out.setdefault(r["parent_id"], []).append(_reply(r))
        return out

    def _objects(
        self,
        conn: sqlite3.Connection,
        table: str,
        rows: list[Row],
        *,
        all_replies: bool = False,
    ) -> list[Any]:
        if all_replies:
            replies = self._all_replies(conn)
        else:
            replies = self._replies(conn, [r["id"] for r in rows]) if rows else {}
        if table == "annotations":
            return [_annotation(r, tuple(replies.get(r["id"], ()))) for r in rows]
        files = self._page_files(conn, {r["page_url"] for r in rows})
        return [_page_note(r, tuple(replies.get(r["id"], ())), files[r["page_url"]]) for r in rows]

    def _page_files(self, conn: sqlite3.Connection, urls: set[str]) -> dict[str, str | None]:
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

    def _row(self, conn: sqlite3.Connection, table: str, id: str) -> Row | None:
        if not validate.is_valid_id(id):
            return None
        found = _query(conn, f"SELECT * FROM {table} WHERE id = ?", (id,))
        return found[0] if found else None

    def _find(self, conn: sqlite3.Connection, id: str) -> tuple[str, Row]:
        """The annotation or page note with this id, with the reference's not-found message."""
        for table in ("annotations", "page_notes"):
            row = self._row(conn, table, id)
            if row is not None:
                return table, row
        raise AnnotationNotFound(id)

    def _load(self, conn: sqlite3.Connection, table: str, id: str) -> Any:
        row = self._row(conn, table, id)
        assert row is not None
        return self._objects(conn, table, [row])[0]

    def _record(
        self, conn: sqlite3.Connection, kind: str, id: str, action: str, page_url: str | None
    ) -> None:
        conn.execute(
            "INSERT INTO changes (at, kind, item_id, action, page_url) VALUES (?, ?, ?, ?, ?)",
            (now(), kind, id, action, page_url),
        )

    def _update(
        self, conn: sqlite3.Connection, table: str, id: str, values: Mapping[str, Any]
    ) -> None:
        sets = ", ".join(f"{k} = ?" for k in values)
        conn.execute(f"UPDATE {table} SET {sets} WHERE id = ?", (*values.values(), id))

    def _insert(self, conn: sqlite3.Connection, table: str, values: Mapping[str, Any]) -> None:
        cols = ", ".join(values)
        marks = ", ".join("?" * len(values))
        conn.execute(f"INSERT INTO {table} ({cols}) VALUES ({marks})", tuple(values.values()))

    # -- annotations --------------------------------------------------------------------------

    def add_annotation(self, data: Mapping[str, Any]) -> Annotation:
        """Create a text or element annotation from the JSON shape of SPEC §3.

        It is located in its page's Markdown file at once (a text note by its quote, an element
        note by its `src`, `href` or text), so `source` is there from the start.
        """
        fields = validate.annotation_input(data)
        fields["page_url"] = self.page_url(fields["page_url"])
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
        }
        blank = dict.fromkeys(SOURCE_COLUMNS) | {"replaced_text": None}
        update = reconcile.plan([blank | row], self._locator(), force=True)
        row.update(update.get(row["id"], {}))
        if row["type"] == "text":
            # What the reviewer saw: the change since then is shown once the note is addressed.
            row.update({o: row.get(c) for o, c in ORIGINAL_COLUMNS.items()})
        with self._tx(write=True) as conn:
            self._insert(conn, "annotations", row)
            self._record(conn, "annotation", row["id"], "created", row["page_url"])
            return self._load(conn, "annotations", row["id"])

    def get_annotation(self, id: str) -> Annotation:
        if not validate.is_valid_id(id):
            raise AnnotationNotFound(id)
        found = self._select("SELECT * FROM annotations WHERE id = ?", [id])
        if not found:
            raise AnnotationNotFound(id)
        return found[0]

    def list_annotations(
        self,
        page_url: str | None = None,
        status: str | Iterable[str] | None = None,
        *,
        type: str | None = None,
        anchor_state: str | Iterable[str] | None = None,
        include_resolved: bool = False,
    ) -> list[Annotation]:
        """Annotations in creation order; resolved ones only when asked for (by status or flag)."""
        page_url = None if page_url is None else self.page_url(page_url)
        where, params = _annotation_filters(page_url, status, type, anchor_state, include_resolved)
        return self._select(f"SELECT * FROM annotations WHERE {where} ORDER BY rowid", params)

    def list_annotations_json(
        self,
        page_url: str | None = None,
        status: str | Iterable[str] | None = None,
        *,
        type: str | None = None,
        anchor_state: str | Iterable[str] | None = None,
        include_resolved: bool = False,
    ) -> str:
        """`list_annotations` as the JSON array of their `to_dict()`s, written by SQLite.

        For listings read on every page load (the web API): no object per row (annotate/sqljson.py).
        """
        page_url = None if page_url is None else self.page_url(page_url)
        where, params = _annotation_filters(page_url, status, type, anchor_state, include_resolved)
        self._reconcile_where(where, params)
        with self._tx(write=False) as conn:
            rows = conn.execute(
                f"SELECT {ANNOTATION_JSON} FROM annotations AS a WHERE {where} ORDER BY a.rowid",
                params,
            ).fetchall()
        return "[" + ",".join(row[0] for row in rows) + "]"

    def text_selectors(
        self, page_url: str, *, include_resolved: bool = False
    ) -> list[tuple[str, Selector]]:
        """The id and selector of each text annotation of a page, in creation order.

        For re-anchoring in the page's text (the anchor route): no replies and no Markdown
        reconciliation, which positions in the page text do not depend on.
        """
        rows = self.text_selector_rows(page_url, include_resolved=include_resolved)
        return [(row[0], Selector(*row[1:])) for row in rows]

    def text_selector_rows(
        self, page_url: str, *, include_resolved: bool = False
    ) -> list[tuple[str, str, str, str, int | None, int | None, str | None]]:
        """`text_selectors` as plain tuples `(id, exact, prefix, suffix, start, end,
        replaced_text)`: cheap to compare, for a caller that remembers answers."""
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

    # -- lazy reconciliation (SPEC §5, seeds/001 §4.3) -------------------------------------

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
                    "updated_at = excluded.updated_at WHERE src_path != excluded.src_path "
                    "OR generated IS NOT excluded.generated",
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

    def _locator(self) -> reconcile.Locator:
        return reconcile.Locator(
            self.project_dir, registered=self._registered_page, page_objects=self._page_objects
        )

    def _page_objects(self, page_url: str) -> list[Any] | None:
        row = (
            self._follow_file()
            .execute("SELECT generated FROM pages WHERE page_url = ?", (page_url,))
            .fetchone()
        )
        try:
            return json.loads(row[0]) if row and row[0] else None
        except ValueError:
            return None

    def _registered_page(self, page_url: str) -> str | None:
        row = (
            self._follow_file()
            .execute("SELECT src_path FROM pages WHERE page_url = ?", (page_url,))
            .fetchone()
        )
        return row[0] if row else None

    # -- page URLs (annotate/urls.py) ------------------------------------------------------

    @functools.cached_property
    def _site_path(self) -> str:
        return urls.site_path(pages.site_url(self.project_dir))

    def page_url(self, value: Any, field: str = "pageUrl") -> str:
        """The form the store keeps of a page URL written any way a person or an agent may:
        `/guide`, `guide/`, `/guide/index.html`, `http://127.0.0.1:8000/guide/`, with or without
        the site's sub-path. The first form that has notes wins (one page's notes stay under one
        URL), then the first the plugin registered; otherwise the path itself, a folder URL with
        its final `/`."""
        cleaned = urls.clean(value) if isinstance(value, str) and value.strip() else value
        path = validate.page_url(cleaned, field)
        forms = urls.candidates(path, self._site_path)
        marks = ",".join("?" * len(forms))
        # Through _follow_file, as a transaction would: this read runs before the write it
        # names the page for, and a deleted store must be recreated first (issue #17).
        found = (
            self._follow_file()
            .execute(
                f"SELECT page_url, 1 FROM annotations WHERE page_url IN ({marks}) UNION "
                f"SELECT page_url, 1 FROM page_notes WHERE page_url IN ({marks}) UNION "
                f"SELECT page_url, 0 FROM pages WHERE page_url IN ({marks})",
                forms * 3,
            )
            .fetchall()
        )
        for wanted in (1, 0):
            known = {url for url, notes in found if notes == wanted}
            for form in forms:
                if form in known:
                    return form
        return urls.default(path)

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

    def _reconcile(self, rows: Iterable[Row], *, force: bool = False) -> int:
        """Re-locate the rows whose Markdown changed; return how many were looked at again."""
        # A removed note's text was deleted on purpose: there is nothing to find again.
        rows = [r for r in rows if r["anchor_state"] != "removed"]
        if not rows:
            return 0
        updates = reconcile.plan(rows, self._locator(), force=force)
        if not updates:
            return 0
        by_id = {r["id"]: r for r in rows}
        with self._tx(write=True) as conn:
            for id, values in updates.items():
                row = by_id[id]
                sets = ", ".join(f"{k} = ?" for k in values)
                # Write only if the inputs of the plan are still current: another connection may
                # have re-anchored (new replacedText, a newer check) or deleted it meanwhile, and
                # its answer is the newer one.
                cur = conn.execute(
                    f"UPDATE annotations SET {sets} WHERE id = ? AND replaced_text IS ? "
                    "AND source_file IS ? AND source_mtime IS ? AND quote_exact IS ?",
                    (*values.values(), id, row["replaced_text"], row["source_file"],
                     row["source_mtime"], row["quote_exact"]),
                )  # fmt: skip
                if cur.rowcount and reconcile.changed(row, values):
                    self._record(conn, "annotation", id, "anchor", row["page_url"])
        return len(updates)

    def _reconcile_where(self, where: str, params: Iterable[Any] = ()) -> int:
        """Reconcile the text annotations matching `where`, reading only those whose file changed.

        One grouped query gives each file and the mtime recorded for it; a file whose mtime on disk
        is the recorded one needs nothing, so a whole-store read costs a `stat` per file instead of
        Python work per annotation.
        """
        locator = self._locator()
        cond = f"anchor_state != 'removed' AND ({where})"
        with self._tx(write=False) as conn:
            params = list(params)
            groups = conn.execute(
                f"SELECT source_file, source_mtime FROM annotations WHERE {cond} "
                "GROUP BY source_file, source_mtime",
                params,
            ).fetchall()
            changed = {f for f, mtime in groups if f is None or locator.mtime(f) != mtime}
            if not changed:
                return 0
            files = sorted(f for f in changed if f is not None)
            marks = ",".join("?" * len(files))
            nulls = "source_file IS NULL" if None in changed else "0"
            rows = _query(
                conn,
                f"SELECT * FROM annotations WHERE {cond} AND (source_file IN ({marks}) OR {nulls})",
                [*params, *files],
            )
        return self._reconcile(rows)

    def _select(self, sql: str, params: Iterable[Any] = ()) -> list[Annotation]:
        """Annotations from a query, reconciled with the Markdown files first."""
        params = list(params)
        with self._tx(write=False) as conn:
            rows = _query(conn, sql, params)
            objects = self._objects(conn, "annotations", rows)
        if self._reconcile(rows):
            with self._tx(write=False) as conn:
                rows = _query(conn, sql, params)
                objects = self._objects(conn, "annotations", rows)
        return objects

    def reconcile(self, *, force: bool = False) -> int:
        """Check every annotation against its Markdown file now; return how many were updated."""
        with self._tx(write=False) as conn:
            rows = _query(conn, "SELECT * FROM annotations")
        return self._reconcile(rows, force=force)

    def edit_annotation(self, id: str, changes: Mapping[str, Any]) -> Annotation:
        """Change the reviewer's note, intent, suggestion or page title."""
        with self._tx(write=True) as conn:
            row = self._row(conn, "annotations", id)
            if row is None:
                raise AnnotationNotFound(id)
            values = validate.annotation_changes(row["intent"], row["suggestion"], changes)
            values["updated_at"] = now()
            self._update(conn, "annotations", id, values)
            self._record(conn, "annotation", id, "edited", row["page_url"])
            return self._load(conn, "annotations", id)

    def delete_annotation(self, id: str) -> None:
        self._delete("annotations", id)

    def update_annotation_target(self, id: str, replaced_text: str) -> Annotation:
        """Record the text the agent put in place of the quote, so the note can be re-located."""
        text = _replaced(replaced_text)
        with self._tx(write=True) as conn:
            table, row = self._find(conn, id)
            if table != "annotations" or row["type"] != "text":
                raise NotATextAnnotation()
            _refuse_resolved(table, row, "update the target")
            self._update(conn, table, id, {"replaced_text": text, "updated_at": now()})
            self._record(conn, "annotation", id, "target_updated", row["page_url"])
        return self._relocated(id)

    def _relocated(self, id: str) -> Annotation:
        """The annotation after locating it again now: its target text just changed."""
        with self._tx(write=False) as conn:
            row = self._row(conn, "annotations", id)
        if row is not None:
            self._reconcile([row], force=True)
        return self.get_annotation(id)

    # -- lifecycle, for annotations and page notes alike --------------------------------------

    def get(self, id: str) -> Item:
        """The annotation or page note with this id."""
        with self._tx(write=False) as conn:
            table, row = self._find(conn, id)
            item = self._objects(conn, table, [row])[0]
        if table == "annotations" and self._reconcile([row]):
            return self.get_annotation(id)
        return item

    def set_in_progress(self, id: str) -> Item:
        """open/addressed → in_progress (the agent started); a no-op when already in progress."""
        with self._tx(write=True) as conn:
            table, row = self._find(conn, id)
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
                self._record(conn, _kind(table), id, "in_progress", row["page_url"])
                self._settle_review(conn, row["review_id"])
            return self._load(conn, table, id)

    def address_annotation(
        self,
        id: str,
        replaced_text: str | None = None,
        *,
        message: str | None = None,
        deleted: bool = False,
    ) -> Item:
        """→ addressed (the agent is done; the reviewer accepts or reopens).

        `message`: a reply (role `agent`) stored in the same transaction, so the reviewer sees the
        reply and the badge together. `deleted`: the agent deleted the annotated text as asked; the
        note becomes `removed` and re-anchoring leaves it be (it would find other text there).
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
            table, row = self._find(conn, id)
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
            if text is not None:
                values["replaced_text"] = text
                if row["anchor_state"] == "removed":
                    values["anchor_state"] = "stale"  # replaced after all: locate it again
            if deleted:
                values.update(anchor_state="removed", anchor_score=None)
            self._update(conn, table, id, values)
            if message is not None:
                self._insert_reply(conn, id, "agent", message, stamp)
            self._record(conn, _kind(table), id, "addressed", row["page_url"])
            self._settle_review(conn, row["review_id"])
            if text is None:
                return self._load(conn, table, id)
        return self._relocated(id)

    def add_reply(
        self, id: str, message: str, *, role: str = "reviewer", author: str | None = None
    ) -> Item:
        """Append a reply to the thread; always allowed, whatever the status."""
        if role not in ("reviewer", "agent"):
            raise ValidationError(f"role must be 'reviewer' or 'agent', got {role!r}", "role")
        _reply_text(message)
        author = validate.text(author, "author", validate.MAX_AUTHOR) or None
        with self._tx(write=True) as conn:
            table, row = self._find(conn, id)
            stamp = now()
            self._insert_reply(conn, id, role, message, stamp, author)
            self._update(conn, table, id, {"updated_at": stamp})
            self._record(conn, _kind(table), id, f"{role}_reply", row["page_url"])
            return self._load(conn, table, id)

    def _insert_reply(
        self,
        conn: sqlite3.Connection,
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

    def _settle_review(self, conn: sqlite3.Connection, review_id: str | None) -> None:
        """Mark a review `done` when none of its notes waits for the agent any more (and undone
        when one does again, e.g. set back in progress for rework); `done` goes to the feed."""
        if review_id is None:
            return
        row = conn.execute(
            "SELECT done_at, "
            f"EXISTS (SELECT 1 FROM annotations WHERE review_id = :id AND {WAITING}) OR "
            f"EXISTS (SELECT 1 FROM page_notes WHERE review_id = :id AND {WAITING}) "
            "FROM reviews WHERE id = :id",
            {"id": review_id},
        ).fetchone()
        if row is None:
            return
        done_at, waiting = row
        if waiting and done_at is not None:
            conn.execute("UPDATE reviews SET done_at = NULL WHERE id = ?", (review_id,))
        elif not waiting and done_at is None:
            conn.execute("UPDATE reviews SET done_at = ? WHERE id = ?", (now(), review_id))
            self._record(conn, "review", review_id, "done", None)

    def add_agent_reply(self, id: str, message: str) -> Item:
        """A reply with role `agent`, explaining what was done."""
        return self.add_reply(id, message, role="agent")

    def accept(self, id: str) -> Item:
        """The reviewer is satisfied: → resolved (kept, out of default listings, until purged)."""
        with self._tx(write=True) as conn:
            table, row = self._find(conn, id)
            if row["status"] == "resolved":
                raise InvalidTransition(f'{LABELS[table]} "{id}" is already resolved')
            stamp = now()
            self._update(
                conn, table, id, {"status": "resolved", "resolved_at": stamp, "updated_at": stamp}
            )
            self._record(conn, _kind(table), id, "resolved", row["page_url"])
            self._settle_review(conn, row["review_id"])
            return self._load(conn, table, id)

    def reopen(self, id: str, note: str | None = None) -> Item:
        """addressed/resolved → open; a follow-up note becomes a reviewer reply.

        With a follow-up, the note goes back to the agent at once: a review of just this note, in
        the mode of the review it came from (`edit` when none), which wakes an agent waiting in
        `wait_for_review`. Without one, it leaves its review and travels with the next "Send to
        agent". A removed note (its text deleted) is located again.
        """
        if note is not None:
            validate.text(note, "note", validate.MAX_REPLY)
        with self._tx(write=True) as conn:
            table, row = self._find(conn, id)
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
                values["review_id"] = self._insert_review(
                    conn, {"mode": previous["mode"] if previous else "edit", "message": ""}, stamp
                )
            self._update(conn, table, id, values)
            if follow_up:
                assert note is not None
                self._insert_reply(conn, id, "reviewer", note, stamp)
            self._record(conn, _kind(table), id, "reopened", row["page_url"])
            return self._load(conn, table, id)

    def delete(self, id: str) -> None:
        """Delete an annotation or a page note, with its replies."""
        with self._tx(write=True) as conn:
            table, row = self._find(conn, id)
            self._delete_row(conn, table, row)

    def _delete(self, table: str, id: str) -> None:
        with self._tx(write=True) as conn:
            row = self._row(conn, table, id)
            if row is None:
                raise AnnotationNotFound(id) if table == "annotations" else PageNoteNotFound(id)
            self._delete_row(conn, table, row)

    def _delete_row(self, conn: sqlite3.Connection, table: str, row: Row) -> None:
        conn.execute("DELETE FROM replies WHERE parent_id = ?", (row["id"],))
        conn.execute(f"DELETE FROM {table} WHERE id = ?", (row["id"],))
        self._record(conn, _kind(table), row["id"], "deleted", row["page_url"])
        self._settle_review(conn, row["review_id"])

    # -- page notes ---------------------------------------------------------------------------

    def add_page_note(self, data: Mapping[str, Any]) -> PageNote:
        fields = validate.page_note_input(data)
        fields["page_url"] = self.page_url(fields["page_url"])
        stamp = now()
        row = {
            "id": new_id("p"),
            **fields,
            "status": "open",
            "created_at": stamp,
            "updated_at": stamp,
        }
        with self._tx(write=True) as conn:
            self._insert(conn, "page_notes", row)
            self._record(conn, "page_note", row["id"], "created", row["page_url"])
            return self._load(conn, "page_notes", row["id"])

    def get_page_note(self, id: str) -> PageNote:
        with self._tx(write=False) as conn:
            row = self._row(conn, "page_notes", id)
            if row is None:
                raise PageNoteNotFound(id)
            return self._objects(conn, "page_notes", [row])[0]

    def list_page_notes(
        self,
        page_url: str | None = None,
        status: str | Iterable[str] | None = None,
        *,
        include_resolved: bool = False,
    ) -> list[PageNote]:
        page_url = None if page_url is None else self.page_url(page_url)
        where, params = _filters(page_url, status, include_resolved)
        sql = "SELECT * FROM page_notes"
        if where:
            sql += " WHERE " + " AND ".join(where)
        with self._tx(write=False) as conn:
            rows = _query(conn, sql + " ORDER BY rowid", params)
            return self._objects(conn, "page_notes", rows)

    def edit_page_note(self, id: str, changes: Mapping[str, Any]) -> PageNote:
        values = validate.page_note_changes(changes)
        with self._tx(write=True) as conn:
            row = self._row(conn, "page_notes", id)
            if row is None:
                raise PageNoteNotFound(id)
            values["updated_at"] = now()
            self._update(conn, "page_notes", id, values)
            self._record(conn, "page_note", id, "edited", row["page_url"])
            return self._load(conn, "page_notes", id)

    def delete_page_note(self, id: str) -> None:
        self._delete("page_notes", id)

    # -- reviews ------------------------------------------------------------------------------

    def create_review(self, data: Mapping[str, Any] | None = None) -> Review:
        """ "Send to agent": `{mode, message, ids}`.

        Without `ids`, every open note not yet sent joins this review (notes in progress, addressed
        or resolved are not work to send). With `ids`, just those notes, wherever they were (the
        overlay's "Ask agent now"); the batch is left as it is.
        """
        fields = validate.review_input(data)
        ids = fields.pop("ids")
        stamp = now()
        with self._tx(write=True) as conn:
            id = self._insert_review(conn, fields, stamp)
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
        self, conn: sqlite3.Connection, fields: Mapping[str, Any], stamp: str
    ) -> str:
        id = new_id("rv")
        self._insert(conn, "reviews", {"id": id, **fields, "created_at": stamp})
        self._record(conn, "review", id, "created", None)
        return id

    def get_review(self, id: str) -> Review:
        """A review with its notes, their sources reconciled with the Markdown files."""
        if validate.is_valid_id(id):
            with self._tx(write=False) as conn:
                rows = _query(conn, "SELECT * FROM annotations WHERE review_id = ?", (id,))
            self._reconcile(rows)
        with self._tx(write=False) as conn:
            return self._review(conn, id)

    def list_reviews(self, *, pending_only: bool = False) -> list[Review]:
        sql = "SELECT id FROM reviews"
        if pending_only:
            sql += " WHERE picked_up_at IS NULL AND done_at IS NULL"
        with self._tx(write=False) as conn:
            ids = [r[0] for r in conn.execute(sql + " ORDER BY rowid")]
            return [self._review(conn, i) for i in ids]

    def claim_review(self) -> Review | None:
        """The oldest review no agent has picked up yet, now marked as picked up; else None."""
        with self._tx(write=True) as conn:
            row = conn.execute(
                "SELECT id FROM reviews WHERE picked_up_at IS NULL AND done_at IS NULL "
                "ORDER BY rowid LIMIT 1"
            ).fetchone()
            if row is None:
                return None
            self._update(conn, "reviews", row["id"], {"picked_up_at": now()})
            self._record(conn, "review", row["id"], "picked_up", None)
        return self.get_review(row["id"])

    def _review(self, conn: sqlite3.Connection, id: str) -> Review:
        row = self._row(conn, "reviews", id)
        if row is None:
            raise ReviewNotFound(id)
        annotations = _query(
            conn, "SELECT * FROM annotations WHERE review_id = ? ORDER BY rowid", (id,)
        )
        notes = _query(conn, "SELECT * FROM page_notes WHERE review_id = ? ORDER BY rowid", (id,))
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
        self._reconcile_where("1" if include_resolved else "status != 'resolved'")
        with pause_gc(), self._tx(write=False) as conn:
            replies = self._all_replies(conn)
            annotations = [
                _annotation(r, tuple(replies.get(r["id"], ())))
                for r in _query(conn, f"SELECT * FROM annotations{where} ORDER BY rowid")
            ]
            rows = _query(conn, f"SELECT * FROM page_notes{where} ORDER BY rowid")
            files = self._page_files(conn, {r["page_url"] for r in rows})
            notes = [
                _page_note(r, tuple(replies.get(r["id"], ())), files[r["page_url"]]) for r in rows
            ]
        return annotations, notes

    def _outline(
        self, *, include_resolved: bool
    ) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], dict[str, list[tuple[str, str]]]]:
        """What the Markdown export shows, as rows in one snapshot (see `export`).

        Objects cost twice the whole Markdown export at 100k notes; the columns the export does
        not show (quote context, positions, excerpts) are not even read.
        """
        where = "" if include_resolved else " WHERE status != 'resolved'"
        self._reconcile_where("1" if include_resolved else "status != 'resolved'")
        with pause_gc(), self._tx(write=False) as conn:
            cur = conn.cursor()
            cur.row_factory = None
            replies: dict[str, list[tuple[str, str]]] = {}
            for parent, role, message in cur.execute(
                "SELECT parent_id, role, message FROM replies ORDER BY rowid"
            ):
                if parent in replies:
                    replies[parent].append((role, message))
                else:
                    replies[parent] = [(role, message)]
            # Columns in the order of the export rows (annotate/fields.py `Table.row`); the writer
            # takes each apart into parameters of those names, so no object is made per row.
            annotations = cur.execute(
                f"SELECT {ANNOTATION.select} FROM annotations{where} ORDER BY rowid"
            ).fetchall()
            notes = cur.execute(
                f"SELECT {PAGE_NOTE.select} FROM page_notes{where} ORDER BY rowid"
            ).fetchall()
        return annotations, notes, replies

    def summary(self) -> Summary:
        """Counts by status, by anchor state, pages with notes, reviews waiting for an agent."""
        self._reconcile_where("status != 'resolved'")
        with self._tx(write=False) as conn:

            def counts(sql: str) -> dict[str, int]:
                return {r[0]: r[1] for r in conn.execute(sql)}

            by_status = counts("SELECT status, count(*) FROM annotations GROUP BY status")
            notes = counts("SELECT status, count(*) FROM page_notes GROUP BY status")
            anchors = counts(
                "SELECT anchor_state, count(*) FROM annotations WHERE status != 'resolved' "
                "AND type = 'text' GROUP BY anchor_state"
            )
            pages = conn.execute(
                "SELECT count(*) FROM (SELECT page_url FROM annotations WHERE status != 'resolved' "
                "UNION SELECT page_url FROM page_notes WHERE status != 'resolved')"
            ).fetchone()[0]
            pending = conn.execute(
                "SELECT count(*) FROM reviews WHERE picked_up_at IS NULL AND done_at IS NULL"
            ).fetchone()[0]
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
                conn.execute(
                    f"DELETE FROM replies WHERE parent_id IN "
                    f"(SELECT id FROM {table} WHERE status = 'resolved')"
                )
                total += conn.execute(f"DELETE FROM {table} WHERE status = 'resolved'").rowcount
            if total:
                self._record(conn, "store", "*", "purged", None)
            return total

    def changes(self, since: int = 0, limit: int = 1000) -> tuple[list[dict[str, Any]], int]:
        """Mutations after cursor `since` and the next cursor (the change feed of SPEC §6)."""
        with self._tx(write=False) as conn:
            rows = conn.execute(
                "SELECT * FROM changes WHERE seq > ? ORDER BY seq LIMIT ?", (since, limit)
            ).fetchall()
            if rows:
                cursor = rows[-1]["seq"]
            else:
                cursor = conn.execute("SELECT coalesce(max(seq), 0) FROM changes").fetchone()[0]
                cursor = min(cursor, since) if since else cursor
        events = [
            {
                "seq": r["seq"],
                "at": r["at"],
                "kind": r["kind"],
                "id": r["item_id"],
                "action": r["action"],
                "pageUrl": r["page_url"],
            }
            for r in rows
        ]
        return events, cursor

    def export(self, format: str = "markdown", *, include_resolved: bool | None = None) -> str:
        """The store as Markdown (feedback to paste into a chat), JSON or W3C JSON-LD."""
        from . import export

        return export.render(self, format, include_resolved=include_resolved)

    def import_data(self, data: Any) -> dict[str, int]:
        """Import our JSON export or astro-inline-review's inline-review.json; skips known ids."""
        from . import importing

        return importing.import_data(self, data)

    def import_file(self, path: str | os.PathLike[str]) -> dict[str, int]:
        from . import importing

        return importing.import_file(self, path)

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
                        f"INSERT OR IGNORE INTO {table} ({cols}) VALUES ({marks})",
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

    # -- the agent's side (issue #7) ----------------------------------------------------------

    def get_context(self, id: str, lines: int = 10) -> Context:
        """The note with `lines` lines of its current Markdown around its source, line-numbered."""
        return get_context(self, id, lines)

    def list_annotations_page(
        self,
        page_url: str | None = None,
        status: str | Iterable[str] | None = None,
        *,
        limit: int,
        offset: int = 0,
    ) -> list[Annotation]:
        """`list_annotations` a page at a time: at most `limit` from `offset`, in creation order.

        Only the annotations returned are reconciled with their Markdown files.
        """
        for name, value in (("limit", limit), ("offset", offset)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValidationError(f"{name} must be a whole number >= 0, got {value!r}", name)
        page_url = None if page_url is None else self.page_url(page_url)
        where, params = _filters(page_url, status, False)
        sql = "SELECT * FROM annotations" + (" WHERE " + " AND ".join(where) if where else "")
        return self._select(sql + " ORDER BY rowid LIMIT ? OFFSET ?", [*params, limit, offset])

    def wait_for_review(
        self, timeout_s: float = 50.0, *, poll_s: float = 0.25, stop: threading.Event | None = None
    ) -> Review | None:
        """Claim the oldest review no agent has picked up, waiting up to `timeout_s` seconds for
        one ("Send to agent", from any process); None when none came or `stop` was set.

        Polls a one-row read every `poll_s`; only a review found takes the write lock.
        """
        deadline = time.monotonic() + max(0.0, timeout_s)
        stop = stop or threading.Event()
        while not stop.is_set():
            with self._tx(write=False) as conn:
                pending = conn.execute(
                    "SELECT 1 FROM reviews WHERE picked_up_at IS NULL AND done_at IS NULL LIMIT 1"
                ).fetchone()
            review = self.claim_review() if pending else None
            left = deadline - time.monotonic()
            if review is not None or left <= 0:
                return review
            stop.wait(min(poll_s, left))
        return None


# -- helpers ------------------------------------------------------------------------------------


def _query(conn: sqlite3.Connection, sql: str, params: Iterable[Any] = ()) -> list[dict[str, Any]]:
    """Rows as dicts: Row looks names up by a linear, case-insensitive scan, which costs
    more than building the whole object on wide rows (measured: export of 100k notes)."""
    cur = conn.cursor()
    cur.row_factory = None
    cur.execute(sql, tuple(params))
    names = [d[0] for d in cur.description]
    return [dict(zip(names, t, strict=True)) for t in cur.fetchall()]


@contextlib.contextmanager
def pause_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many acyclic objects.

    Each collection walks every live object, and building 100k annotations triggers dozens of
    them: about a quarter of a full export's time (benchmarks/store.py).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


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


def _choices(value: str | Iterable[str], allowed: tuple[str, ...], field: str) -> list[str]:
    values = [value] if isinstance(value, str) else list(value)
    for v in values:
        if v not in allowed:
            raise ValidationError(f"{field} must be one of {', '.join(allowed)}, got {v!r}", field)
    return values


def _filters(
    page_url: str | None, status: str | Iterable[str] | None, include_resolved: bool
) -> tuple[list[str], list[Any]]:
    where: list[str] = []
    params: list[Any] = []
    if page_url is not None:
        where.append("page_url = ?")
        params.append(page_url)
    if status is not None and status != "all":
        statuses = _choices(status, STATUSES, "status")
        where.append(f"status IN ({','.join('?' * len(statuses))})")
        params.extend(statuses)
    elif status is None and not include_resolved:
        where.append("status != 'resolved'")
    return where, params


def _annotation_filters(
    page_url: str | None,
    status: str | Iterable[str] | None,
    type: str | None,
    anchor_state: str | Iterable[str] | None,
    include_resolved: bool,
) -> tuple[str, list[Any]]:
    """The WHERE clause (never empty) and its parameters of an annotation listing."""
    where, params = _filters(page_url, status, include_resolved)
    if type is not None:
        if type not in ("text", "element"):
            raise ValidationError(f"type must be 'text' or 'element', got {type!r}", "type")
        where.append("type = ?")
        params.append(type)
    if anchor_state is not None:
        states = _choices(anchor_state, ANCHOR_STATES, "anchorState")
        where.append(f"anchor_state IN ({','.join('?' * len(states))})")
        params.extend(states)
    return " AND ".join(where) or "1", params


def _element(stored: str) -> ElementSelector:
    e = json.loads(stored)
    return ElementSelector(
        css_selector=e.get("cssSelector", ""),
        xpath=e.get("xpath", ""),
        tag_name=e.get("tagName", ""),
        description=e.get("description", ""),
        attributes=e.get("attributes") or {},
        outer_html_preview=e.get("outerHtmlPreview", ""),
    )


# Rows to objects, generated from the field table (annotate/fields.py): one constructor call each.
_DECODING = {
    "TextQuote": TextQuote,
    "TextPosition": TextPosition,
    "Source": Source,
    "PageSource": PageSource,
    "element": _element,
}
_reply: Callable[[Row], Reply] = REPLY.decoder(Reply, _DECODING)
_annotation: Callable[[Row, tuple[Reply, ...]], Annotation] = ANNOTATION.decoder(
    Annotation, _DECODING
)
_page_note: Callable[..., PageNote] = PAGE_NOTE.decoder(PageNote, _DECODING)

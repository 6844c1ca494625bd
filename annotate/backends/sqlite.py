"""The store's SQLite file: one file shared by the dev server, the MCP server and the CLI
(the `Backend` of annotate/backends/interface.py for a `--db` that is a path).

Each thread (and each forked process) gets its own connection; every transaction is `BEGIN
IMMEDIATE` for writes (no lock upgrade races) or deferred for reads. A file deleted or replaced
under a running process is noticed by one `stat` per transaction and followed (issue #17); SQLite's
errors become the library's, naming the file (`annotate/errors.py`).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import secrets
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import sqlite_utils

from .. import schema
from ..errors import (
    AnnotateError,
    NewerSchemaError,
    StoreBusyError,
    StoreCorruptError,
    StoreError,
    StoreFullError,
    StoreGoneError,
    StoreReadOnlyError,
)
from ..fields import ANNOTATION, PAGE_NOTE
from .interface import BUSY_TIMEOUT_S, DEFAULT_DIR, DEFAULT_FILE, Connection, ExportRows, Rows, now
from .sqlite_json import ANNOTATION_JSON
from .writers import WriterQueue

__all__ = ["BUSY_TIMEOUT_S", "DEFAULT_DIR", "DEFAULT_FILE", "SqliteBackend", "now"]


log = logging.getLogger("annotate.store")

# One write lock per database file and process. SQLite serialises writers anyway, but a connection
# that finds the file locked backs off in sleeps of up to 100 ms; threads of one process (the web
# server's) queue here instead, and processes in the kernel's queue of a lock file beside the
# store (annotate/backends/writers.py).
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


# The SQLite type of a field's JSON type (annotate/fields.py).
COLUMN_TYPES: dict[str, type] = {
    "string": str,
    "timestamp": str,
    "enum": str,
    "integer": int,
    "boolean": int,
    "number": float,
}


class Migrator(sqlite_utils.Database):
    """What a migration in annotate/schema.py gets on SQLite: sqlite-utils' `Database`, and the
    pieces whose spelling differs by database."""

    dialect = "sqlite"
    blob_type = "BLOB"

    def serial(self, column: str) -> str:
        return f"{column} INTEGER PRIMARY KEY AUTOINCREMENT"

    def add_column(self, table: str, column: str, json_type: str) -> None:
        self.table(table).add_column(column, COLUMN_TYPES[json_type])

    def own_migration(self, version: int) -> bool:
        return False  # schema.py's migrations are written for SQLite


def _apply_migrations(conn: sqlite3.Connection, version: int) -> None:
    """Bring the database from `version` to LATEST, inside the caller's write transaction."""
    db = Migrator(conn)
    if version == 0:
        db.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TEXT)")
    for target in range(version, schema.LATEST):
        schema.migrate(db, target)
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


class SqliteBackend:
    """The SQLite file at `path`: this thread's connection, transactions, the schema version."""

    dialect = "sqlite"
    same = "IS"
    differs = "IS NOT"
    writes_rows = True

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        project_dir: str | os.PathLike[str] | None = None,
        busy_timeout: float = BUSY_TIMEOUT_S,
    ) -> None:
        self.path = Path(path)
        self.name = str(self.path)
        if project_dir is None:
            parent = self.path.parent
            project_dir = parent.parent if parent.name == DEFAULT_DIR else parent
        self.project_dir = Path(project_dir)
        self.busy_timeout = busy_timeout
        self._local = threading.local()
        # The file the connections have open, as (device, inode), and how many times this store has
        # moved to a new file at `path`: a thread whose connection is older reconnects.
        self._identity: tuple[int, int] | None = None
        self._generation = 0
        self._connections: weakref.WeakSet[_Connection] = weakref.WeakSet()
        self._follow_lock = threading.Lock()
        self._writers = WriterQueue(self.path)
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
                    # The schema into the file itself before it is linked into place: close()
                    # would swallow a checkpoint that fails (a full disk), and the WAL holding the
                    # schema is removed below, which left a malformed file at `path`.
                    busy, frames, copied = conn.execute(
                        "PRAGMA wal_checkpoint(TRUNCATE)"
                    ).fetchone()
                    if busy or frames != copied:
                        raise sqlite3.OperationalError("database or disk is full")
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
        # back as an empty file (`connection` handles that). SQLite falls back to read-only by
        # itself when the file is read-only.
        uri = self.path.absolute().as_uri()
        try:
            conn = self._configure(uri + "?mode=rw")
        except StoreError as e:
            conn = self._read_only_connection(uri, e)
        conn.pid = os.getpid()
        self._connections.add(conn)
        return conn

    def _read_only_connection(self, uri: str, error: StoreError) -> _Connection:
        """A connection that reads a WAL store SQLite could not open: one on a read-only file
        system or in a folder we cannot write, where it cannot make its shared-memory file
        (issue #27). Raises `error` (the read-write open's) when neither applies.

        With a WAL file beside the store (commits the main file may lack), SQLite reads it
        through the existing shared-memory file (`mode=ro`). Without one, every commit is in the
        main file and nobody can start a WAL there without writing the folder: it is read as
        immutable, without locks. Writes through either are refused as read-only.
        """
        unwritable = _read_only_fs(self.path) or not os.access(self.path.parent, os.W_OK)
        if not unwritable:
            raise error
        if Path(f"{self.path}-wal").exists():
            return self._configure(uri + "?mode=ro")
        return self._configure(uri + "?mode=ro&immutable=1")

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
        conn: sqlite3.Connection = local.conn
        return conn

    @property
    def db(self) -> sqlite_utils.Database:
        """This thread's connection wrapped by sqlite-utils, for schema work and ad-hoc queries."""
        return sqlite_utils.Database(self.conn)

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None and getattr(self._local, "pid", None) == os.getpid():
            conn.close()
        self._local.conn = None

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

    def connection(self) -> sqlite3.Connection:
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
        tables = sorted(schema.OWN_TABLES - {"schema_version"})
        try:
            old.execute("BEGIN")
            try:
                if self._version(old) != schema.LATEST:
                    return None
                new.execute("BEGIN IMMEDIATE")
                try:
                    if self._version(new) != schema.LATEST or any(
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
    def transaction(self, write: bool) -> Iterator[sqlite3.Connection]:
        """One transaction: IMMEDIATE for writes (no lock upgrade races), deferred for reads."""
        conn = self.connection()
        lock = _write_lock(self.path) if write else None
        held: int | None = None
        if lock is not None:
            lock.acquire()
        try:
            try:
                if write:
                    held = self._writers.acquire(self.busy_timeout)
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            except TimeoutError:
                raise StoreBusyError(str(self.path)) from None
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
            if held is not None:
                self._writers.release(held)
            if lock is not None:
                lock.release()

    def send(self, conn: Connection, sql: str, params: Sequence[Any]) -> Callable[[], Rows]:
        """Run a query now (SQLite has no round trips to save); the function gives its rows."""
        cur = conn.cursor()
        cur.row_factory = None
        cur.execute(sql, tuple(params))
        done = ([d[0] for d in cur.description], cur.fetchall())
        return lambda: done

    def annotations_json(
        self, conn: Connection, where: str, page: str, params: Sequence[Any]
    ) -> str:
        """The listing's JSON written by SQLite (annotate/backends/sqlite_json.py): no object per row, for
        the web API's listing, read on every page load."""
        rows = conn.execute(
            f"SELECT {ANNOTATION_JSON} FROM annotations AS a WHERE {where} ORDER BY a.rowid{page}",
            list(params),
        ).fetchall()
        return "[" + ",".join(row[0] for row in rows) + "]"

    def export_rows(self, conn: Connection, where: str) -> ExportRows:
        """The export's rows as tuples of the field table's columns: objects cost twice the
        whole Markdown export at 100k notes, and the columns the export does not show (quote
        context, positions, excerpts) are not even read."""
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

    def notify(self, conn: Connection) -> None:
        """Nothing to do: other processes on one file see its changes by polling
        (PostgreSQL's backend notifies other servers)."""

    def keep_open(self) -> None:
        """Nothing to open ahead: each thread opens its connection to the file on first use."""

    def subscribe(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Never calls `callback`: SQLite has no notifications, readers poll the file."""
        return lambda: None

    def _migrate(self) -> None:
        try:
            version = self._version(self.conn)
            if version == schema.LATEST:
                return
            with self.transaction(write=True) as conn:
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
        if version > schema.LATEST:
            raise NewerSchemaError(str(self.path), version, schema.LATEST)
        if version == schema.LATEST and not tables >= schema.OWN_TABLES:
            raise StoreCorruptError(str(self.path), "tables are missing")
        return version

    @property
    def schema_version(self) -> int:
        return self._version(self.conn)

"""The store on PostgreSQL (`--db postgresql://…`): the same verbs as the SQLite file, shared by
several servers (docs/storage.md).

`PostgresBackend` is the `Backend` of annotate/backends/interface.py for a `postgresql://` URL, so
`annotate/store.py` runs the same statements on either. Connections come from a `psycopg_pool`
pool; the store's `?` placeholders are bound as psycopg's `%s` (`postgres_sql`), and rows answer
by index and by name.

A transaction's statements are queued and sent together when a result is read or at the commit
(`PostgresBackend.transaction`): a round trip per read, not per statement.

Every write transaction first takes one transaction-level advisory lock, so writes are serialised
as SQLite's `BEGIN IMMEDIATE` serialises them: a verb reads the latest row and writes in one go,
`claim_review` hands a review to one agent only, and the change feed's sequence numbers become
visible in order (a reader never sees change n + 1 before change n, which `changes?since=N`
relies on). Reads run in a `REPEATABLE READ READ ONLY` transaction: one snapshot, as SQLite's.

Change rows are written in the verb's transaction, with a `NOTIFY` delivered at commit: other
servers listening on the same database wake their change feed and `wait_for_review` at once (the
table stays the truth; a missed notification only costs the polling interval).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import select
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from .. import schema, tokencheck
from ..errors import (
    AnnotateError,
    NewerSchemaError,
    StoreBusyError,
    StoreCorruptError,
    StoreError,
    StoreFullError,
    StoreReadOnlyError,
    StoreUnreachableError,
)
from ..fields import ANNOTATION, PAGE_NOTE
from .interface import BUSY_TIMEOUT_S, ExportRows, Rows, now
from .pgurl import redact
from .postgres_schema import Migrator
from .postgres_values import (
    Many,
    Result,
    Row,
    bind,
    json_paths,
    postgres_sql,
    read_result,
    row_class,
)

__all__ = ["CHANNEL", "PostgresBackend", "postgres_sql", "redact"]

log = logging.getLogger("annotate.store")

# The channel a commit with changes notifies (annotate/web/feed.py and `wait_for_review` listen).
CHANNEL = "annotate_changes"
# The advisory lock every write transaction takes: one writer at a time per database.
WRITE_LOCK = 0x616E6E6F  # "anno"
POOL_MAX = 10
CONNECT_TIMEOUT_S = 5
CLOSED_RETRIES = 10
EXTRA = (
    "pip install 'mkdocs-annotate[postgres]' (in a checkout of mkdocs-annotate: "
    "pip install -e '.[postgres]')"
)


class Cursor:
    """The `Cursor` of annotate/backends/interface.py over a psycopg cursor. `row_factory = None`
    gives plain tuples.

    In a transaction a statement is only queued (`Connection.send_later`): it reaches the
    server when its result or a later one's is read (`fetch…`, `description`, `rowcount`), or
    at the commit, together with every statement queued before it."""

    def __init__(self, raw: Any, conn: Connection) -> None:
        self._raw = raw
        self._conn = conn
        self.row_factory: Any = Row
        self._done: Result | None = None

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Cursor:
        self._done = None
        if self._conn.batching:
            self._conn.send_later(self, postgres_sql(sql), bind(params))
            return self
        try:
            self._raw.execute(postgres_sql(sql), bind(params))
            self._done = read_result(self._raw)
        except _psycopg().Error as e:
            raise self._conn.fail(e) from None
        return self

    def executemany(self, sql: str, rows: Any) -> Cursor:
        self._done = None
        if self._conn.batching:
            # One entry of the batch: psycopg's executemany, which converts the statement once
            # and sends each row's values to it prepared (issue #31: a bulk import's, a page's
            # re-located notes).
            self._conn.send_later(None, postgres_sql(sql), Many(bind(r) for r in rows))
            self._done = (None, -1, [])  # how many rows: not known (DB-API's -1)
            return self
        try:
            self._raw.executemany(postgres_sql(sql), [bind(r) for r in rows])
            self._done = (None, self._raw.rowcount, [])
        except _psycopg().Error as e:
            raise self._conn.fail(e) from None
        return self

    def _answer(self) -> Result:
        if self._done is None:
            self._conn.flush()
        if self._done is None:
            raise StoreError("a statement's result was read after its transaction failed")
        return self._done

    @property
    def description(self) -> Any:
        names = self._answer()[0]
        return None if names is None else [(name,) for name in names]

    @property
    def rowcount(self) -> int:
        return self._answer()[1]

    def _take(self, one: bool) -> list[Any]:
        description, _, rows = self._answer()
        taken = rows[:1] if one else rows[:]
        del rows[: len(taken)]
        if self.row_factory is None or not taken:
            return taken
        cls = row_class(description)
        return [cls(r) for r in taken]

    def fetchall(self) -> list[Any]:
        return self._take(one=False)

    def fetchone(self) -> Any:
        rows = self._take(one=True)
        return rows[0] if rows else None

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())


class Connection:
    """The `Connection` of annotate/backends/interface.py over one pooled psycopg connection.

    In a transaction (`PostgresBackend.transaction`) statements are queued and sent together (`flush`)
    in psycopg's pipeline mode, whose results are waited for once, at its sync."""

    def __init__(self, raw: Any, translate: Callable[[BaseException], AnnotateError]) -> None:
        self._raw = raw
        self._translate = translate
        # In a transaction: the statements not sent yet (their parameters, None: none to bind),
        # each with the cursor its answer is for.
        self._batch: list[tuple[Cursor | None, str, Any]] | None = None
        self._opening = 0
        self.sent = False  # something of this transaction reached the server
        # The request's token check (annotate/tokencheck.py) its first round trip carries.
        self.check: tokencheck.Check | None = None
        # The error of the statement of this transaction that failed (raised already).
        self.failure: AnnotateError | None = None
        # A statement failed inside a pipeline: psycopg's cache of prepared statements may name
        # some the server skipped (a disk full left writes failing with "prepared statement
        # _pg3_N does not exist" until a restart, issue #32): the connection must not serve again.
        self.spoiled = False

    def cursor(self) -> Cursor:
        return Cursor(self._raw.cursor(), self)

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Cursor:
        return self.cursor().execute(sql, params)

    def executemany(self, sql: str, rows: Any) -> Cursor:
        return self.cursor().executemany(sql, rows)

    @property
    def in_transaction(self) -> bool:
        return self.batching or bool(self._raw.info.transaction_status != 0)  # 0: idle

    @property
    def batching(self) -> bool:
        return self._batch is not None

    def begin(self, *statements: str) -> None:
        """Start queueing: `statements` open the transaction, sent with its first read, and so
        does the request's token check when one is due (`tokencheck`)."""
        self._batch = [(None, s, None) for s in statements]
        self.check = tokencheck.due()
        if self.check is not None:
            # Right after BEGIN: before the write lock, so that a refused token never waits
            # for it, nor holds it longer.
            self._batch.insert(
                min(1, len(self._batch)), (None, tokencheck.CARRY_SQL, (self.check.digest,))
            )
        self._opening = len(self._batch)
        self.sent = False
        self.failure = None
        self.spoiled = False

    @property
    def unsent(self) -> bool:
        """Whether statements of the code (not only the opening ones) wait to be sent."""
        batch = self._batch or []
        return len(batch) > (0 if self.sent else self._opening)

    def end(self) -> None:
        self._batch = None
        self.check = None

    def fail(self, error: BaseException) -> AnnotateError:
        """The library error for a failed statement; the transaction is lost."""
        self.failure = self._translate(error)
        return self.failure

    def send_later(self, cursor: Cursor | None, sql: str, params: Any) -> None:
        assert self._batch is not None
        self._batch.append((cursor, sql, params))

    def flush(self) -> None:
        """Send every queued statement, wait once for all their answers and keep each one's
        (a statement alone goes as usual). The server runs them in order and skips the rest
        after one that fails, whose error is raised."""
        batch = self._batch
        if not batch:
            return
        self._batch = []
        self.sent = True
        check, self.check = self.check, None
        psycopg = _psycopg()
        raws = [self._raw.cursor() for _ in batch]
        first: BaseException | None = None
        piped = len(batch) > 1 or isinstance(batch[0][2], Many)
        try:
            if not piped:
                raws[0].execute(batch[0][1], batch[0][2])
            else:
                # psycopg's pipeline mode: one round trip (the sync at its end), each statement
                # bound by the server and prepared once used often, as when sent alone.
                with self._raw.pipeline():
                    try:
                        for raw, (_, sql, params) in zip(raws, batch, strict=True):
                            if isinstance(params, Many):
                                raw.executemany(sql, params)
                            else:
                                prepare = None if params is not None else False
                                raw.execute(sql, params, prepare=prepare)
                    except psycopg.Error as e:
                        first = e  # an answer that came early: the statements after it are skipped
        except psycopg.Error as e:
            first = first or e  # after the first error, only the skipped ones
        if first is not None:
            self.spoiled = piped
            refusal = tokencheck.refused(check, getattr(first, "sqlstate", None))
            if refusal is not None:
                self.failure = refusal
                raise refusal from None
            raise self.fail(first) from None
        if check is not None:
            check.done = True
        for raw, (cursor, _, _) in zip(raws, batch, strict=True):
            if cursor is not None:
                cursor._done = read_result(raw)


class _OneShot:
    """A connection outside any transaction: each statement borrows a pooled connection, runs in
    autocommit and hands back every row (for `Store.conn` and the store's reads before a verb)."""

    def __init__(self, owner: PostgresBackend) -> None:
        self._owner = owner

    def cursor(self) -> _OneShotCursor:
        return _OneShotCursor(self._owner)

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        return self.cursor().execute(sql, params)

    def executemany(self, sql: str, rows: Any) -> Any:
        check = tokencheck.due()
        if check is not None:
            check.run()  # before a write that commits on its own
        with self._owner._borrow() as conn:
            return conn.executemany(sql, rows)

    in_transaction = False


class _OneShotCursor:
    def __init__(self, owner: PostgresBackend) -> None:
        self._owner = owner
        self.row_factory: Any = Row
        self._rows: list[Any] = []
        self.description: Any = None
        self.rowcount = -1

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> _OneShotCursor:
        with self._owner._borrow() as conn:
            cur = conn.cursor()
            cur.row_factory = self.row_factory
            carrying = tokencheck.due() is not None
            if carrying:
                # The request's token check and this statement in one pipeline: one implicit
                # transaction, in which a refused check skips the statement.
                conn.begin()
            try:
                cur.execute(sql, params)
                self._rows = cur.fetchall()
                self.description, self.rowcount = cur.description, cur.rowcount
            finally:
                if carrying:
                    conn.end()
                    if conn.spoiled:
                        conn._raw.close()  # the pool replaces it (`Connection.spoiled`)
        return self

    def fetchall(self) -> list[Any]:
        rows, self._rows = self._rows, []
        return rows

    def fetchone(self) -> Any:
        return self._rows.pop(0) if self._rows else None

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())


@functools.cache
def _psycopg() -> Any:
    try:
        import psycopg
        import psycopg.conninfo
    except ImportError:
        raise StoreError(f"PostgreSQL stores need psycopg: {EXTRA}") from None
    return psycopg


def _rollback(raw: Any) -> None:
    """Roll back, saying nothing when that fails too: the error worth reporting came first."""
    with contextlib.suppress(_psycopg().Error):
        raw.execute("ROLLBACK", prepare=False)


# What a remote client (HTTP, MCP over HTTP) is told of a database error: never the database's
# address, user or server messages (issue #32); the log and the CLI get the whole message.
PUBLIC = {
    StoreUnreachableError: "The store's database cannot be reached; try again later",
    StoreBusyError: "The store's database is busy; try again",
    StoreFullError: "The store's database cannot be written: no space left on its disk",
    StoreReadOnlyError: "The store's database refuses writes (read-only)",
}


def _public(error: AnnotateError) -> AnnotateError:
    error.public = PUBLIC.get(type(error), "The store's database failed; see the server's log")
    return error


def _stale(raw: Any) -> bool:
    """Whether the server closed this idle connection: it then has its goodbye (an error, the
    end of the stream) waiting to be read, where a live idle connection has nothing. A poll of
    the socket, no round trip."""
    if raw.closed or raw.broken:
        return True
    try:
        if hasattr(select, "poll"):  # select() takes no descriptor past 1023
            poll = select.poll()
            poll.register(raw.fileno(), select.POLLIN)
            return bool(poll.poll(0))
        readable, _, _ = select.select([raw.fileno()], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def _pool_module() -> Any:
    try:
        import psycopg_pool
    except ImportError:
        raise StoreError(f"PostgreSQL stores need psycopg_pool: {EXTRA}") from None
    return psycopg_pool


class PostgresBackend:
    """A PostgreSQL database holding one project's store: pooled connections, transactions, the
    schema version, and the notifications of other servers' writes."""

    dialect = "postgresql"
    same = "IS NOT DISTINCT FROM"
    differs = "IS DISTINCT FROM"
    # The JSON listing is built from the objects, read in the verb's one round trip (SQLite's
    # json_object() spelling is its own); the export's rows are read as rows (`export_rows`).
    writes_rows = False

    def __init__(
        self,
        url: str,
        *,
        project_dir: str | os.PathLike[str],
        busy_timeout: float = BUSY_TIMEOUT_S,
    ) -> None:
        _psycopg()
        _pool_module()
        self.url = url
        self.name = redact(url)
        self.project_dir = Path(project_dir)
        self.busy_timeout = busy_timeout
        self._local = threading.local()
        self._lock = threading.Lock()
        self._pool: Any = None
        self._min = 1  # connections kept open (`keep_open`: all of them)
        self._pid = os.getpid()
        self._listeners: list[Callable[[], None]] = []
        self._listening: threading.Thread | None = None
        self._closed = threading.Event()
        self._migrate()

    # -- connections ------------------------------------------------------------------------

    def _connect_kwargs(self) -> dict[str, Any]:
        # A write waiting for the advisory lock longer than this is StoreBusyError; added to the
        # URL's own `options` (e.g. `-csearch_path=…`), which a keyword would replace.
        given = _psycopg().conninfo.conninfo_to_dict(self.url).get("options") or ""
        return {
            "autocommit": True,
            "connect_timeout": CONNECT_TIMEOUT_S,
            "options": f"{given} -c lock_timeout={int(self.busy_timeout * 1000)}".strip(),
        }

    def _connect(self) -> Any:
        try:
            return _psycopg().connect(self.url, **self._connect_kwargs())
        except _psycopg().Error as e:
            raise self._translate(e) from None

    def _pool_now(self) -> Any:
        with self._lock:
            if self._pool is None or self._pid != os.getpid():
                # A forked child never uses its parent's pool (its threads did not survive).
                self._pid = os.getpid()
                self._closed.clear()
                self._pool = _pool_module().ConnectionPool(
                    self.url,
                    min_size=self._min,
                    max_size=POOL_MAX,
                    kwargs=self._connect_kwargs(),
                    timeout=self.busy_timeout,
                    num_workers=1,
                    open=False,
                    name="annotate",
                )
                self._pool.open(wait=False)
                # A store dropped without close() gives its connections back.
                weakref.finalize(self, self._pool.close).atexit = False
            return self._pool

    def keep_open(self) -> None:
        """Open every connection of the pool now and keep them (a server): a burst of requests
        at its start would otherwise wait while the pool connects one at a time."""
        self._min = POOL_MAX
        pool = self._pool_now()
        pool.resize(POOL_MAX, POOL_MAX)
        with contextlib.suppress(_pool_module().PoolTimeout):
            pool.wait(timeout=self.busy_timeout)  # still filling after that: it goes on meanwhile

    @contextlib.contextmanager
    def _borrow(self) -> Iterator[Connection]:
        pools = _pool_module()
        attempt = stale = 0
        while True:
            pool = self._pool_now()
            try:
                raw = pool.getconn()
                if stale <= POOL_MAX and _stale(raw):
                    # The server closed it while it sat in the pool (a restart): replaced now
                    # rather than failing the request that drew it (issue #32).
                    stale += 1
                    raw.close()
                    pool.putconn(raw)
                    continue
                break
            except pools.PoolClosed:
                attempt += 1
                # Another thread closed the store (`close`, as each thread of a server may):
                # this one goes on with a new pool.
                if attempt > CLOSED_RETRIES:
                    raise _public(StoreError(f"{self.name}: closed while in use")) from None
            except pools.PoolTimeout:
                # No connection within the timeout: say why when the server is down.
                self._connect().close()
                raise _public(StoreBusyError(self.name)) from None
        try:
            yield Connection(raw, self._translate)
        finally:
            pool.putconn(raw)

    @property
    def conn(self) -> Any:
        """This thread's transaction's connection, else one that runs each statement on its
        own (autocommit)."""
        return self.connection()

    def connection(self) -> Any:
        tx = getattr(self._local, "tx", None)
        return tx if tx is not None else _OneShot(self)

    @property
    def db(self) -> Any:
        raise StoreError(f"{self.name}: sqlite-utils works on SQLite stores only")

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None and self._pid == os.getpid():
            pool.close()
        thread, self._listening = self._listening, None
        if thread is not None:
            thread.join(timeout=2)

    # -- transactions -----------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self, write: bool) -> Iterator[Any]:
        """One transaction: writes serialised by the advisory lock, reads on one snapshot.

        Its statements are queued and sent together when a result is read, so a round trip is
        paid per read rather than per statement: `BEGIN` (and the lock) travel with the first
        read, writes whose result is not read (the change row, `NOTIFY`) with the next one, and
        `COMMIT` with the results read after it (`Cursor`). A statement that fails raises its
        error there, before anything the code went on to do after sending it, and nothing of
        the transaction is stored, as when each statement was sent on its own.
        """
        with self._borrow() as conn:
            raw = conn._raw
            if write:
                conn.begin(
                    "BEGIN ISOLATION LEVEL READ COMMITTED",
                    f"SELECT pg_advisory_xact_lock({WRITE_LOCK:d})",
                )
            else:
                conn.begin("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            self._local.tx = conn
            failure: BaseException | None = None
            try:
                yield conn
                conn.send_later(None, "COMMIT", None)
                conn.flush()
            except BaseException as e:
                failure = e
                if conn.failure is None and conn.unsent:
                    # Statements queued before the failure ran before it when each was sent on
                    # its own: an error of theirs is the one to raise.
                    try:
                        conn.flush()
                    except AnnotateError as first:
                        failure = first
            finally:
                self._local.tx = None
                conn.end()
            if failure is None:
                return
            if conn.sent:
                _rollback(raw)
                if conn.spoiled or raw.info.transaction_status != 0:
                    raw.close()  # in no state to serve again: the pool replaces it
            raise failure

    def send(self, conn: Any, sql: str, params: Sequence[Any]) -> Callable[[], Rows]:
        """Queue a query in the transaction (`Cursor`): its rows are read when the function is
        called, with the next statement that needs a result or with the commit."""
        cur = conn.cursor()
        cur.row_factory = None
        cur.execute(sql, tuple(params))

        def read() -> Rows:
            return [d[0] for d in cur.description], cur.fetchall()

        return read

    def annotations_json(self, conn: Any, where: str, page: str, params: Sequence[Any]) -> str:
        raise NotImplementedError("PostgreSQL's listing is built from the objects (writes_rows)")

    def export_rows(self, conn: Any, where: str) -> ExportRows:
        """The export's rows as the SQLite file reads them (the field table's columns, its JSON
        paths in PostgreSQL's spelling), the three queries in one round trip: objects cost three
        times the whole export at 100k notes (issue #31)."""
        sent = [
            self.send(conn, "SELECT parent_id, role, message FROM replies ORDER BY rowid", ()),
            self.send(conn, f"SELECT {json_paths(ANNOTATION.select)} FROM annotations{where} "
                      "ORDER BY rowid", ()),
            self.send(conn, f"SELECT {json_paths(PAGE_NOTE.select)} FROM page_notes{where} "
                      "ORDER BY rowid", ()),
        ]  # fmt: skip
        replies: dict[str, list[tuple[str, str]]] = {}
        for parent, role, message in sent[0]()[1]:
            if parent in replies:
                replies[parent].append((role, message))
            else:
                replies[parent] = [(role, message)]
        return sent[1]()[1], sent[2]()[1], replies

    def notify(self, conn: Any) -> None:
        """Wake the other servers at this transaction's commit (PostgreSQL sends one
        notification per channel and transaction)."""
        conn.execute(f"NOTIFY {CHANNEL}")

    # -- errors -----------------------------------------------------------------------------

    def _translate(self, error: BaseException) -> AnnotateError:
        """The library error for a PostgreSQL error, naming the database without its password."""
        return _public(self._translated(error))

    def _translated(self, error: BaseException) -> AnnotateError:
        psycopg = _psycopg()
        state = getattr(error, "sqlstate", None) or ""
        text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        text = redact(text.replace(self.url, self.name))
        if isinstance(error, psycopg.OperationalError) and not state:
            return StoreUnreachableError(self.name, text)
        if state.startswith("08") or state in ("57P01", "57P02", "57P03", "3D000", "28P01"):
            return StoreUnreachableError(self.name, text)
        if state in ("55P03", "40P01", "40001"):  # lock timeout, deadlock, serialisation
            return StoreBusyError(self.name)
        if state in ("53100", "53200"):  # disk full, out of memory
            return StoreFullError(self.name)
        if state in ("25006", "42501"):  # a standby, no write permission
            return StoreReadOnlyError(self.name, text)
        return StoreError(f"{self.name}: {text}")

    # -- the schema -------------------------------------------------------------------------

    def _migrate(self) -> None:
        raw = self._connect()
        try:
            conn = Connection(raw, self._translate)
            if self._version(conn) == schema.LATEST:
                return
            try:
                raw.execute("BEGIN")
                raw.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
                version = self._version(conn)
                migrator = Migrator(conn)
                if version == 0:
                    conn.execute(
                        "CREATE TABLE schema_version (version BIGINT PRIMARY KEY, applied_at TEXT)"
                    )
                for target in range(version, schema.LATEST):
                    schema.migrate(migrator, target)
                    conn.execute(
                        "INSERT INTO schema_version (version, applied_at) VALUES (?, ?)",
                        (target + 1, now()),
                    )
                raw.execute("COMMIT")
            except BaseException:
                _rollback(raw)
                raise
        except _psycopg().Error as e:
            raise self._translate(e) from None
        finally:
            raw.close()

    def _version(self, conn: Connection | Any) -> int:
        tables = {
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema()"
            )
        }
        if "schema_version" not in tables:
            if tables:
                raise StoreCorruptError(
                    self.name, "it holds other tables and was not written by mkdocs-annotate"
                )
            return 0
        version = conn.execute("SELECT max(version) FROM schema_version").fetchone()[0] or 0
        if version > schema.LATEST:
            raise NewerSchemaError(self.name, version, schema.LATEST)
        if version == schema.LATEST and not tables >= schema.OWN_TABLES:
            raise StoreCorruptError(self.name, "tables are missing")
        return int(version)

    @property
    def schema_version(self) -> int:
        with self._borrow() as conn:
            return self._version(conn)

    # -- other servers' writes --------------------------------------------------------------

    def subscribe(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` (from a background thread) after each commit with changes, from any
        server on this database; returns the function that unsubscribes."""
        with self._lock:
            self._listeners.append(callback)
            if self._listening is None or not self._listening.is_alive():
                self._closed.clear()
                self._listening = threading.Thread(
                    target=self._listen, name="annotate-listen", daemon=True
                )
                self._listening.start()

        def unsubscribe() -> None:
            with self._lock, contextlib.suppress(ValueError):
                self._listeners.remove(callback)

        return unsubscribe

    def _listen(self) -> None:
        # Its own autocommit connection (LISTEN holds it); reconnects after losing the server.
        psycopg = _psycopg()
        while not self._closed.is_set():
            try:
                with psycopg.connect(self.url, **self._connect_kwargs()) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    self._wake()  # anything missed while away
                    while not self._closed.is_set():
                        for _ in conn.notifies(timeout=0.5, stop_after=1):
                            self._wake()
            except psycopg.Error as e:
                log.warning(
                    "%s: listening for changes failed (%s); polling", self.name, redact(str(e))
                )
                self._closed.wait(1.0)

    def _wake(self) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for callback in listeners:
            try:
                callback()
            except Exception:  # a listener's bug must not stop the others' wake-ups
                log.exception("change listener failed")

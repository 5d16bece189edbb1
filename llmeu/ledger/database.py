"""The two SQL drivers behind one small async interface.

SQL is written once with `?` placeholders; the PostgreSQL driver rewrites
them to `$1, $2, …` when it first sees a statement. Both drivers raise the
same two errors: `DatabaseUnavailable` when the database cannot take the work
now (unreachable, restarting, locked by another process) — the writer keeps
such rows and retries — and `DatabaseError` when it refuses the work itself
(a constraint, a value it cannot store), which retrying would not change.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
Row = dict[str, Any]
Params = Sequence[Any]
Statement = tuple[str, Sequence[Params]]


class DatabaseError(Exception):
    """The database refused the operation itself: retrying it would fail the same way."""


class DatabaseUnavailable(DatabaseError):
    """The database cannot take the operation now; the same operation may succeed later."""


class Database(ABC):
    dialect: str

    @abstractmethod
    async def open(self) -> None: ...

    @abstractmethod
    async def close(self) -> None: ...

    @abstractmethod
    async def fetch(self, sql: str, params: Params = ()) -> list[Row]: ...

    @abstractmethod
    async def transaction(self, statements: Sequence[Statement]) -> list[int]:
        """Run each statement over its rows in one transaction; rows changed per statement."""

    async def execute(self, sql: str, params: Params = ()) -> int:
        return (await self.transaction([(sql, [params])]))[0]

    def day_expression(self, column: str) -> str:
        """SQL for the UTC day (YYYY-MM-DD) of an epoch-seconds column."""
        raise NotImplementedError


class SqliteDatabase(Database):
    """SQLite in WAL mode: writes on the event loop, reads and checkpoints in threads.

    A group commit of a few rows takes tens of microseconds in WAL mode with
    `synchronous=NORMAL`, far less than handing it to a thread: on a busy
    loop the worker waits for the GIL up to the switch interval (5 ms), which
    showed up as added latency on every call. So write transactions run
    inline on the loop's own connection with `busy_timeout=0`; only when
    another process holds the write lock does the batch move to a thread that
    may wait. Automatic checkpoints (which fsync) are off on the writing
    connections; a background task checkpoints from a reader thread instead.
    """

    dialect = "sqlite"

    def __init__(
        self,
        path: Path,
        *,
        readers: int = 2,
        checkpoint_seconds: float = 1.0,
        busy_timeout: float = 10.0,
    ):
        self._path = path
        self._busy_timeout_ms = int(busy_timeout * 1000)
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="llmeu-sqlite-w")
        self._readers = ThreadPoolExecutor(readers, thread_name_prefix="llmeu-sqlite-r")
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._write_lock = asyncio.Lock()
        self._loop_conn: sqlite3.Connection | None = None
        self._checkpoint_seconds = checkpoint_seconds
        self._checkpointer: asyncio.Task[None] | None = None

    @property
    def path(self) -> Path:
        return self._path

    def _connect(self, *, busy_timeout_ms: int, autocheckpoint: bool) -> sqlite3.Connection:
        conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
        conn.execute("PRAGMA synchronous = NORMAL")  # WAL: durable across a process crash
        if not autocheckpoint:
            conn.execute("PRAGMA wal_autocheckpoint = 0")
        with self._lock:
            self._connections.append(conn)
        return conn

    def _thread_connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect(busy_timeout_ms=self._busy_timeout_ms, autocheckpoint=False)
            self._local.conn = conn
        return conn

    async def open(self) -> None:
        self._path.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = self._connect(busy_timeout_ms=self._busy_timeout_ms, autocheckpoint=False)
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA busy_timeout = 0")
        except sqlite3.Error as error:
            raise DatabaseUnavailable(f"cannot open {self._path}: {error}") from error
        self._loop_conn = conn
        self._checkpointer = asyncio.create_task(self._checkpoint_loop(), name="llmeu-sqlite-ckpt")

    async def close(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.cancel()
            await asyncio.gather(self._checkpointer, return_exceptions=True)
        self._readers.shutdown(wait=True)
        self._writer.shutdown(wait=True)
        with self._lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()

    async def fetch(self, sql: str, params: Params = ()) -> list[Row]:
        def run() -> list[Row]:
            return [dict(row) for row in self._thread_connection().execute(sql, tuple(params))]

        return await self._run(self._readers, run)

    async def transaction(self, statements: Sequence[Statement]) -> list[int]:
        assert self._loop_conn is not None, "open() the database first"
        async with self._write_lock:
            try:
                return _run_transaction(self._loop_conn, statements)
            except sqlite3.Error as error:
                if _sqlite_code(error) not in _SQLITE_BUSY:
                    raise _sqlite_error(error) from error
            # Another process holds the write lock: wait for it off the loop.
            return await self._run(
                self._writer, lambda: _run_transaction(self._thread_connection(), statements)
            )

    async def _checkpoint_loop(self) -> None:
        def checkpoint() -> None:
            self._thread_connection().execute("PRAGMA wal_checkpoint(PASSIVE)")

        while True:
            await asyncio.sleep(self._checkpoint_seconds)
            try:
                await self._run(self._readers, checkpoint)
            except DatabaseUnavailable:
                continue

    async def _run(self, executor: ThreadPoolExecutor, fn: Callable[[], T]) -> T:
        try:
            return await asyncio.get_running_loop().run_in_executor(executor, fn)
        except sqlite3.Error as error:
            raise _sqlite_error(error) from error

    def day_expression(self, column: str) -> str:
        return f"strftime('%Y-%m-%d', {column}, 'unixepoch')"


def _run_transaction(conn: sqlite3.Connection, statements: Sequence[Statement]) -> list[int]:
    counts: list[int] = []
    conn.execute("BEGIN IMMEDIATE")
    try:
        for sql, rows in statements:
            counts.append(conn.executemany(sql, rows).rowcount)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:  # some errors (I/O, full disk) have rolled it back already
            conn.execute("ROLLBACK")
        raise
    return counts


# SQLite primary result codes that mean "not now": busy, locked (another process
# holds the lock), read-only, I/O error, disk full, cannot open, lock protocol.
_SQLITE_BUSY = frozenset({5, 6})
_SQLITE_TRANSIENT = _SQLITE_BUSY | {8, 10, 13, 14, 15}


def _sqlite_code(error: sqlite3.Error) -> int:
    return int(getattr(error, "sqlite_errorcode", 0)) & 0xFF


def _sqlite_error(error: sqlite3.Error) -> DatabaseError:
    kind = DatabaseUnavailable if _sqlite_code(error) in _SQLITE_TRANSIENT else DatabaseError
    return kind(str(error))


_PLACEHOLDER = re.compile(r"\?")


class PostgresDatabase(Database):
    dialect = "postgres"

    def __init__(self, url: str, *, pool_size: int = 4):
        self._url = url
        self._pool_size = pool_size
        self._pool: Any = None
        self._rewritten: dict[str, str] = {}

    async def open(self) -> None:
        import asyncpg

        try:
            self._pool = await asyncpg.create_pool(
                self._url, min_size=1, max_size=self._pool_size, command_timeout=30
            )
        except _postgres_errors() as error:
            raise DatabaseUnavailable(f"cannot connect to PostgreSQL: {error}") from error

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()

    def _sql(self, sql: str) -> str:
        rewritten = self._rewritten.get(sql)
        if rewritten is None:
            counter = iter(range(1, 10_000))
            rewritten = _PLACEHOLDER.sub(lambda _: f"${next(counter)}", sql)
            self._rewritten[sql] = rewritten
        return rewritten

    async def fetch(self, sql: str, params: Params = ()) -> list[Row]:

        try:
            async with self._pool.acquire() as conn:
                rows = await conn.fetch(self._sql(sql), *params)
        except _postgres_errors() as error:
            raise _postgres_error(error) from error
        return [dict(row) for row in rows]

    async def transaction(self, statements: Sequence[Statement]) -> list[int]:

        counts: list[int] = []
        try:
            async with self._pool.acquire() as conn, conn.transaction():
                for sql, rows in statements:
                    if len(rows) == 1:
                        status = await conn.execute(self._sql(sql), *rows[0])
                        counts.append(_rowcount(status))
                    else:
                        await conn.executemany(self._sql(sql), rows)
                        counts.append(len(rows))
        except _postgres_errors() as error:
            raise _postgres_error(error) from error
        return counts

    def day_expression(self, column: str) -> str:
        return f"to_char(to_timestamp({column}) AT TIME ZONE 'UTC', 'YYYY-MM-DD')"

    async def listen(self, channel: str, callback: Any) -> Any:
        """A dedicated connection receiving NOTIFY on `channel`; returns it for closing."""
        import asyncpg

        conn = await asyncpg.connect(self._url)
        await conn.add_listener(channel, callback)
        return conn


# SQLSTATEs of a server that cannot take the work now: classes 08 (connection), 40
# (transaction rolled back by a conflict), 53 (out of resources), 57 (shutdown,
# restart), 58 (I/O); 55000 is a database that refuses connections, 3D000 one
# that does not exist (any more). Errors without a SQLSTATE come from the
# connection itself (closed, timed out).
_PG_TRANSIENT_CLASSES = ("08", "40", "53", "57", "58")
_PG_TRANSIENT_STATES = frozenset({"55000", "3D000"})


def _postgres_errors() -> tuple[type[Exception], ...]:
    """What asyncpg raises. InternalClientError shows up when the server ends a session
    in the middle of a statement (a restart, a terminated backend)."""
    import asyncpg

    return (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, asyncpg.InternalClientError)


def _postgres_error(error: Exception) -> DatabaseError:
    state = getattr(error, "sqlstate", None)
    if not isinstance(state, str):
        return DatabaseUnavailable(str(error) or type(error).__name__)
    if state.startswith(_PG_TRANSIENT_CLASSES) or state in _PG_TRANSIENT_STATES:
        return DatabaseUnavailable(str(error))
    return DatabaseError(str(error))


def _rowcount(status: str) -> int:
    tail = status.rsplit(" ", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def open_database(url: str) -> Database:
    """`sqlite:///path/to/file.db` or `postgresql://…`."""
    if url.startswith(("postgresql://", "postgres://")):
        return PostgresDatabase(url)
    if url.startswith("sqlite:///"):
        return SqliteDatabase(Path(url.removeprefix("sqlite:///")))
    raise ValueError(f"unsupported database URL {url!r} (sqlite:///… or postgresql://…)")

"""The two SQL drivers behind one small async interface.

SQL is written once with `?` placeholders; the PostgreSQL driver rewrites
them to `$1, $2, …` when it first sees a statement. SQLite runs in threads:
one writer thread with its own connection (group commits are serialised
anyway) and a small pool of reader threads, so reads never wait behind a
write transaction (WAL).
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


class DatabaseUnavailable(Exception):
    """The database could not be reached or refused the operation."""


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

    def __init__(self, path: Path, *, readers: int = 2, checkpoint_seconds: float = 1.0):
        self._path = path
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="llmeu-sqlite-w")
        self._readers = ThreadPoolExecutor(readers, thread_name_prefix="llmeu-sqlite-r")
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._write_lock = asyncio.Lock()
        self._loop_conn: sqlite3.Connection | None = None
        self._checkpoint_seconds = checkpoint_seconds
        self._checkpointer: asyncio.Task[None] | None = None

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
            conn = self._connect(busy_timeout_ms=10_000, autocheckpoint=False)
            self._local.conn = conn
        return conn

    async def open(self) -> None:
        self._path.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = self._connect(busy_timeout_ms=10_000, autocheckpoint=False)
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
            except sqlite3.OperationalError as error:
                if not _is_busy(error):
                    raise DatabaseUnavailable(str(error)) from error
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
        except sqlite3.OperationalError as error:
            raise DatabaseUnavailable(str(error)) from error

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
        conn.execute("ROLLBACK")
        raise
    return counts


def _is_busy(error: sqlite3.OperationalError) -> bool:
    text = str(error)
    return "locked" in text or "busy" in text


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
        except (OSError, asyncpg.PostgresError) as error:
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
        import asyncpg

        try:
            async with self._pool.acquire() as conn:
                rows = await conn.fetch(self._sql(sql), *params)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as error:
            raise DatabaseUnavailable(str(error)) from error
        return [dict(row) for row in rows]

    async def transaction(self, statements: Sequence[Statement]) -> list[int]:
        import asyncpg

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
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as error:
            raise DatabaseUnavailable(str(error)) from error
        return counts

    def day_expression(self, column: str) -> str:
        return f"to_char(to_timestamp({column}) AT TIME ZONE 'UTC', 'YYYY-MM-DD')"

    async def listen(self, channel: str, callback: Any) -> Any:
        """A dedicated connection receiving NOTIFY on `channel`; returns it for closing."""
        import asyncpg

        conn = await asyncpg.connect(self._url)
        await conn.add_listener(channel, callback)
        return conn


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

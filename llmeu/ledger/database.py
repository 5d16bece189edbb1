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
    dialect = "sqlite"

    def __init__(self, path: Path, *, readers: int = 2):
        self._path = path
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="llmeu-sqlite-w")
        self._readers = ThreadPoolExecutor(readers, thread_name_prefix="llmeu-sqlite-r")
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    def _connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA busy_timeout = 10000")
            conn.execute("PRAGMA synchronous = NORMAL")  # WAL: durable across a process crash
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    async def open(self) -> None:
        self._path.parent.mkdir(parents=True, exist_ok=True)

        def setup() -> None:
            conn = self._connection()
            conn.execute("PRAGMA journal_mode = WAL")

        await self._run(self._writer, setup)

    async def close(self) -> None:
        def close_all() -> None:
            with self._lock:
                for conn in self._connections:
                    conn.close()
                self._connections.clear()

        self._readers.shutdown(wait=True)
        self._writer.shutdown(wait=True)
        close_all()

    async def fetch(self, sql: str, params: Params = ()) -> list[Row]:
        def run() -> list[Row]:
            return [dict(row) for row in self._connection().execute(sql, tuple(params))]

        return await self._run(self._readers, run)

    async def transaction(self, statements: Sequence[Statement]) -> list[int]:
        def run() -> list[int]:
            conn = self._connection()
            counts: list[int] = []
            conn.execute("BEGIN IMMEDIATE")
            try:
                for sql, rows in statements:
                    cursor = conn.executemany(sql, rows)
                    counts.append(cursor.rowcount)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            return counts

        return await self._run(self._writer, run)

    async def _run(self, executor: ThreadPoolExecutor, fn: Callable[[], T]) -> T:
        try:
            return await asyncio.get_running_loop().run_in_executor(executor, fn)
        except sqlite3.OperationalError as error:
            raise DatabaseUnavailable(str(error)) from error

    def day_expression(self, column: str) -> str:
        return f"strftime('%Y-%m-%d', {column}, 'unixepoch')"


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

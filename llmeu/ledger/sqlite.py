"""The embedded ledger: SQLite in WAL mode, one file, one gateway process at a time."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from llmeu.errors import DatabaseError, DatabaseUnavailable
from llmeu.ledger.database import (
    Database,
    Dialect,
    Followup,
    Params,
    Row,
    Statement,
    WriteConflict,
)

T = TypeVar("T")

SQLITE = Dialect(
    name="sqlite",
    shared=False,
    change_notices=False,
    relaxed_commit=None,
    day_template="strftime('%Y-%m-%d', {column}, 'unixepoch')",
)


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

    dialect = SQLITE

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

    async def open(self, *, create: bool = True) -> None:
        if not create and not self._path.exists():
            raise DatabaseUnavailable(f"no database at {self._path}")
        _bind_none_directly()
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

    async def transaction(
        self, statements: Sequence[Statement], followup: Followup | None = None
    ) -> list[int]:
        assert self._loop_conn is not None, "open() the database first"
        async with self._write_lock:
            try:
                return _run_transaction(self._loop_conn, statements, followup)
            except sqlite3.Error as error:
                if _sqlite_code(error) not in _SQLITE_BUSY:
                    raise _sqlite_error(error) from error
            # Another process holds the write lock: wait for it off the loop.
            return await self._run(
                self._writer,
                lambda: _run_transaction(self._thread_connection(), statements, followup),
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

    def describe(self) -> str:
        return f"sqlite:///{self._path}"


def _bind_none_directly() -> None:
    """Bind a None parameter without the adaptation protocol's search.

    The sqlite3 module binds int, float, str and bytes directly, but looks up an
    adapter for every other parameter, None included: the lookup fails twice
    (`__adapt__`, `__conform__`), raising and clearing an exception each time — 0.2
    µs per None, and most of a trace row's 45 columns are None while a call runs.
    An adapter registered for None itself is found at once and hands None back,
    which binds as NULL. Process-wide, and the same result for every other user of
    sqlite3 in the process.
    """
    sqlite3.register_adapter(type(None), _NONE.get)


_NONE: dict[object, None] = {}  # `.get` returns None for anything, without a Python frame


def _run_transaction(
    conn: sqlite3.Connection, statements: Sequence[Statement], followup: Followup | None
) -> list[int]:
    counts: list[int] = []
    conn.execute("BEGIN IMMEDIATE")
    try:
        for sql, rows in statements:
            counts.append(conn.executemany(sql, rows).rowcount)
        work: Sequence[Statement] | Followup | None = followup
        while isinstance(work, Followup):
            read = [
                [dict(row) for row in conn.execute(sql, tuple(params))]
                for sql, params in work.reads
            ]
            work = work.build(read)
        for sql, rows in work or ():
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
_SQLITE_UNIQUE = frozenset({1555, 2067})  # SQLITE_CONSTRAINT_PRIMARYKEY, _UNIQUE


def _sqlite_code(error: sqlite3.Error) -> int:
    return int(getattr(error, "sqlite_errorcode", 0)) & 0xFF


def _sqlite_error(error: sqlite3.Error) -> DatabaseError:
    if int(getattr(error, "sqlite_errorcode", 0)) in _SQLITE_UNIQUE:
        return WriteConflict(str(error))
    kind = DatabaseUnavailable if _sqlite_code(error) in _SQLITE_TRANSIENT else DatabaseError
    return kind(str(error))

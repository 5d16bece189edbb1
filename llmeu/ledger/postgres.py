"""A shared ledger: PostgreSQL, for several gateway processes (asyncpg, a small pool).

Change notices (LISTEN/NOTIFY) tell the other processes of a revoked key or
a replaced policy at once; a batch of in-progress rows may commit without
waiting for the WAL flush (`relaxed_commit`, see `Store.write_traces`): such
a batch of one statement goes, alone in its transaction, over a connection
whose session commits that way, in one round trip.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Sequence
from typing import Any

import asyncpg

from llmeu.errors import DatabaseError, DatabaseUnavailable
from llmeu.ledger.database import (
    CONFLICT_SQLSTATE,
    Database,
    Dialect,
    Followup,
    Listener,
    Params,
    Reads,
    Row,
    Statement,
    WriteConflict,
)

POSTGRES = Dialect(
    name="postgres",
    shared=True,
    change_notices=True,
    relaxed_commit="SET LOCAL synchronous_commit TO OFF",
    day_template="to_char(to_timestamp({column}) AT TIME ZONE 'UTC', 'YYYY-MM-DD')",
    cte_writes=True,
    chain_lock="SELECT llmeu_chain_lock(NULL) AS locked",
)

_PLACEHOLDER = re.compile(r"\?")


class PostgresDatabase(Database):
    dialect = POSTGRES

    def __init__(self, url: str, *, pool_size: int = 4):
        self._url = url
        self._pool_size = pool_size
        self._pool: Any = None
        self._relaxed_pool: Any = None
        self._rewritten: dict[str, str] = {}

    async def open(self, *, create: bool = True) -> None:
        try:
            self._pool = await asyncpg.create_pool(
                self._url,
                min_size=1,
                max_size=self._pool_size,
                command_timeout=30,
                reset=_keep_session,
            )
            self._relaxed_pool = await asyncpg.create_pool(
                self._url,
                min_size=0,
                max_size=2,
                command_timeout=30,
                reset=_keep_session,
                server_settings={"synchronous_commit": "off"},
            )
        except _postgres_errors() as error:
            raise DatabaseUnavailable(f"cannot connect to PostgreSQL: {error}") from error

    async def close(self) -> None:
        for pool in (self._pool, self._relaxed_pool):
            if pool is not None:
                await pool.close()

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

    async def transaction(
        self, statements: Sequence[Statement], followup: Followup | None = None
    ) -> list[int]:
        """One round trip per statement (`executemany` sends all its rows in one), one for
        each read of the followup, and one each for BEGIN and COMMIT: parameterless
        statements at the start (`relaxed_commit`) travel with the BEGIN."""
        relaxed = self.dialect.relaxed_commit
        if followup is None and len(statements) == 2 and statements[0] == (relaxed, [()]):
            # One statement is its own transaction: over the relaxed session, no BEGIN or
            # COMMIT to send (asyncpg's executemany applies all its rows or none).
            try:
                async with self._relaxed_pool.acquire() as conn:
                    alone = [0]
                    await self._run(conn, statements[1:], alone)
                    return alone
            except _postgres_errors() as error:
                raise _postgres_error(error) from error
        counts: list[int] = []
        opening = ["BEGIN"]
        for sql, rows in statements:
            if list(rows) != [()]:
                break
            opening.append(sql)
            counts.append(0)
        try:
            async with self._pool.acquire() as conn:
                await conn.execute("; ".join(opening))
                try:
                    await self._run(conn, statements[len(counts) :], counts)
                    work: Sequence[Statement] | Followup | None = followup
                    while isinstance(work, Followup):
                        read = [
                            [dict(row) for row in await conn.fetch(self._sql(sql), *params)]
                            for sql, params in work.reads
                        ]
                        work = work.build(read)
                    await self._run(conn, work or (), counts)
                except BaseException:
                    await _roll_back(conn)
                    raise
                await conn.execute("COMMIT")
        except _postgres_errors() as error:
            raise _postgres_error(error) from error
        return counts

    async def statement(self, sql: str, params: Params = ()) -> list[Row]:
        # Outside a transaction block each statement is its own transaction: a read's path.
        return await self.fetch(sql, params)

    async def _run(self, conn: Any, statements: Sequence[Statement], counts: list[int]) -> None:
        for sql, rows in statements:
            if len(rows) == 1:
                status = await conn.execute(self._sql(sql), *rows[0])
                counts.append(_rowcount(status))
            else:
                await conn.executemany(self._sql(sql), rows)
                counts.append(len(rows))

    async def listen(self, channel: str, listener: Listener) -> Any:
        def received(_conn: object, _pid: int, _channel: str, payload: str) -> None:
            listener(payload)

        try:
            conn = await asyncpg.connect(self._url)
            await conn.add_listener(channel, received)
        except _postgres_errors() as error:
            raise _postgres_error(error) from error
        return conn

    async def notify(self, channel: str, payload: str) -> None:
        await self.execute("SELECT pg_notify(?, ?)", (channel, payload))

    def describe(self) -> str:
        """The URL without a password."""
        scheme, sep, rest = self._url.partition("://")
        credentials, at, host = rest.rpartition("@")
        if at and ":" in credentials:
            rest = f"{credentials.split(':', 1)[0]}:***@{host}"
        return f"{scheme}{sep}{rest}"


class _SnapshotReads:
    """`Reads` on the one connection whose transaction holds an exported snapshot."""

    def __init__(self, conn: Any):
        self._conn = conn

    async def fetch(self, sql: str, params: Params = ()) -> list[Row]:
        counter = iter(range(1, 10_000))
        numbered = _PLACEHOLDER.sub(lambda _: f"${next(counter)}", sql)
        try:
            return [dict(row) for row in await self._conn.fetch(numbered, *params)]
        except _postgres_errors() as error:
            raise _postgres_error(error) from error


@contextlib.asynccontextmanager
async def exported_snapshot(url: str) -> AsyncIterator[tuple[str, Reads]]:
    """A read-only repeatable-read transaction on a connection of its own, and the id of
    its exported snapshot: another session that imports it (`pg_dump --snapshot`) sees
    exactly what the `Reads` yielded reads, as long as the block runs."""
    try:
        conn = await asyncpg.connect(url, timeout=30)
    except _postgres_errors() as error:
        raise DatabaseUnavailable(f"cannot connect to PostgreSQL: {error}") from error
    try:
        await conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        snapshot = await conn.fetchval("SELECT pg_export_snapshot()")
    except _postgres_errors() as error:
        await conn.close()
        raise _postgres_error(error) from error
    try:
        yield str(snapshot), _SnapshotReads(conn)
    finally:
        await conn.close()  # ends the read-only transaction: nothing to commit


async def _keep_session(conn: Any) -> None:
    """What a connection needs on its way back to the pool: nothing. asyncpg has rolled
    back a transaction left open already; the ledger sets no session state (only `SET
    LOCAL`), takes no session advisory locks and listens on connections of its own — so
    asyncpg's reset query, one more round trip after every transaction, is not sent."""


async def _roll_back(conn: Any) -> None:
    if conn.is_closed():
        return
    try:
        await conn.execute("ROLLBACK")
    except _postgres_errors():
        conn.terminate()  # a session in an unknown state never goes back to the pool


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
    return (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, asyncpg.InternalClientError)


def _postgres_error(error: Exception) -> DatabaseError:
    state = getattr(error, "sqlstate", None)
    if not isinstance(state, str):
        return DatabaseUnavailable(str(error) or type(error).__name__)
    if state.startswith(_PG_TRANSIENT_CLASSES) or state in _PG_TRANSIENT_STATES:
        return DatabaseUnavailable(str(error))
    if state in ("23505", CONFLICT_SQLSTATE):  # unique_violation, or a check that failed
        return WriteConflict(str(error))
    return DatabaseError(str(error))


def _rowcount(status: str) -> int:
    tail = status.rsplit(" ", 1)[-1]
    return int(tail) if tail.isdigit() else 0

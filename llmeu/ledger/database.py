"""The small async interface every ledger database driver implements, and its dialect.

SQL is written once with `?` placeholders; a driver rewrites them for its
database when it first sees a statement. Every driver raises the same two
errors of the one error tree: `DatabaseUnavailable` when the database cannot
take the work now (unreachable, restarting, locked by another process) — the
writer keeps such rows and retries — and `DatabaseError` when it refuses the
work itself (a constraint, a value it cannot store), which retrying would not
change. What differs between databases in the SQL itself lives in the
driver's `Dialect`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from llmeu.errors import DatabaseError

Row = dict[str, Any]
Params = Sequence[Any]
Statement = tuple[str, Sequence[Params]]
Listener = Callable[[str], None]
"""Receives the payload of each change notice on a channel."""


class WriteConflict(DatabaseError):
    """The write lost to another transaction: a unique index refused a row because another
    transaction stored the same value first (on PostgreSQL, possibly after waiting for it
    to commit), or a check inside the statement found what it was written after gone
    (`CONFLICT_SQLSTATE`). The hash chain's writers take it as "the head moved"."""


CONFLICT_SQLSTATE = "LLC01"
"""Raised by `llmeu_chain_landed(false)` (PostgreSQL, migration 9)."""


@dataclass(frozen=True, slots=True)
class Followup:
    """Work a transaction does after its statements, before it commits: `reads` run in
    order, and `build` turns what they returned into the statements that end the
    transaction — or into a further `Followup` when it needs to read more. It is how a
    write links rows to the hash chain's head: the head is read (and, where
    `Dialect.lock_row` says so, locked) inside the transaction that moves it."""

    reads: Sequence[tuple[str, Params]]
    build: Callable[[list[list[Row]]], Sequence[Statement] | Followup]


@dataclass(frozen=True, slots=True)
class Dialect:
    """What differs between the databases the ledger runs on.

    `shared`: several gateway processes may write this ledger at once (each
    then finds only dead processes' calls `interrupted`); `change_notices`:
    the database can tell the other processes of a change at once
    (`Database.listen`); `relaxed_commit`: a statement that lets the current
    transaction skip waiting for durability, where the database has one.
    """

    name: str
    shared: bool
    change_notices: bool
    relaxed_commit: str | None
    day_template: str
    cte_writes: bool = False
    """A read may be a data-modifying statement: `WITH w AS (INSERT … RETURNING …) SELECT …`
    (PostgreSQL), so a write and the read that checks it cost one round trip."""
    chain_lock: str = ""
    """A read that takes, until commit, the lock every writer of the hash chain queues on
    (PostgreSQL: a transaction-scoped advisory lock, `llmeu_chain_lock`, migration 9);
    empty where a write transaction is exclusive already (SQLite)."""

    def day(self, column: str) -> str:
        """SQL for the UTC day (YYYY-MM-DD) of an epoch-seconds column."""
        return self.day_template.format(column=column)

    def upsert(self, key: str, columns: Sequence[str], *, only_where: str = "") -> str:
        """The clause that turns an INSERT into an update of the row with the same `key`."""
        updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c != key)
        clause = f" ON CONFLICT ({key}) DO UPDATE SET {updates}"
        return clause + (f" WHERE {only_where}" if only_where else "")

    def keep_existing(self, key: str) -> str:
        """The clause that makes an INSERT skip a row whose `key` is already there."""
        return f" ON CONFLICT ({key}) DO NOTHING"


class Reads(Protocol):
    """What reading a ledger takes: a `Database`, or the one connection that reads a
    backup's snapshot (`llmeu.ledger.backups`)."""

    async def fetch(self, sql: str, params: Params = ()) -> list[Row]: ...


class Database(ABC):
    dialect: Dialect

    @abstractmethod
    async def open(self, *, create: bool = True) -> None:
        """Connect; with `create=False`, raise `DatabaseUnavailable` rather than create an
        empty database where none exists."""

    @abstractmethod
    async def close(self) -> None: ...

    @abstractmethod
    async def fetch(self, sql: str, params: Params = ()) -> list[Row]: ...

    @abstractmethod
    async def transaction(
        self, statements: Sequence[Statement], followup: Followup | None = None
    ) -> list[int]:
        """Run each statement over its rows in one transaction, then the `followup`'s work;
        rows changed per statement (the followup's statements last)."""

    async def execute(self, sql: str, params: Params = ()) -> int:
        return (await self.transaction([(sql, [params])]))[0]

    async def statement(self, sql: str, params: Params = ()) -> list[Row]:
        """One statement, alone in its transaction, and the rows it returns: a
        data-modifying one where `dialect.cte_writes` (one round trip in all)."""
        raise NotImplementedError(f"{self.dialect.name} runs no writes inside a read")

    async def listen(self, channel: str, listener: Listener) -> Any:
        """A dedicated connection receiving the change notices of `channel`; returns it for
        closing (`close()`, `is_closed()`). Only where `dialect.change_notices` is true."""
        raise NotImplementedError(f"{self.dialect.name} has no change notices")

    async def notify(self, channel: str, payload: str) -> None:
        """Send a change notice to every listener of `channel`."""
        raise NotImplementedError(f"{self.dialect.name} has no change notices")

    @abstractmethod
    def describe(self) -> str:
        """Where this database is, safe to print (no password)."""

"""Applying the ledger's migrations (`llmeu.ledger.migrations`) and reading which are
applied: what `Store.migrate` and `Store.check_schema` do."""

from __future__ import annotations

import time
from collections.abc import Sequence

from llmeu.errors import DatabaseError, DatabaseUnavailable
from llmeu.ledger.database import Database, Statement
from llmeu.ledger.migrations import CONTRACT, CREATE_MIGRATIONS_TABLE, MIGRATIONS, Step
from llmeu.ledger.schema import mismatch

LIVE_WINDOW_SECONDS = 15.0
"""A process is gone once its heartbeat is older than this: three of the default 5 s."""


def known_migrations() -> list[tuple[int, str, bool]]:
    """This release's migrations, in order: version, name, whether a contract step."""
    return [(version, name, version in CONTRACT) for version, name, _ in MIGRATIONS]


async def migrate(db: Database, *, live_after: float | None = None) -> list[int]:
    """Apply pending migrations; returns the versions applied now.

    Gateway processes starting together on a new database race here. Each
    migration's transaction first claims its version in `schema_migrations`:
    a second process's claim waits for the first transaction and then fails,
    and that process finds the version applied and moves on.

    A contract step (`CONTRACT`) waits, and every step after it with it, while a
    process whose heartbeat is not older than `live_after` (default: three default
    heartbeats ago) runs a release that does not know it (`llmeu.ledger.schema`); the
    next `migrate` applies it once they have gone.
    """
    try:
        await db.execute(CREATE_MIGRATIONS_TABLE)
    except DatabaseError:
        # PostgreSQL: a concurrent CREATE TABLE IF NOT EXISTS can still collide.
        await _applied_versions(db)  # raises unless the table is there now
    if live_after is None:
        live_after = time.time() - LIVE_WINDOW_SECONDS
    applied = []
    for version, name, statements in MIGRATIONS:
        if version in await _applied_versions(db):
            continue
        if version in CONTRACT and await older_processes(db, version, live_after):
            break
        claim: Statement = (
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
            [(version, name, time.time())],
        )
        marks: list[Statement] = []
        if version in CONTRACT:
            marks.append(
                ("UPDATE schema_migrations SET contract = 1 WHERE version = ?", [(version,)])
            )
        steps = [(sql, [()]) for sql in _steps(db, statements)]
        try:
            await db.transaction([*_serialised(db), claim, *steps, *marks])
        except DatabaseError:
            if version in await _applied_versions(db):
                continue
            raise
        applied.append(version)
    return applied


async def applied_schema(db: Database) -> tuple[set[int], set[int]]:
    """The migrations applied to this ledger, and which of them are contract steps."""
    rows = await db.fetch("SELECT * FROM schema_migrations")
    return {r["version"] for r in rows}, {r["version"] for r in rows if r.get("contract")}


async def check_schema(db: Database) -> None:
    """Raise `SchemaMismatch` unless this release runs on the ledger's schema as it is."""
    applied: set[int] = set()
    contracts: set[int] = set()
    if await has_schema(db):
        applied, contracts = await applied_schema(db)
    problem = mismatch(applied, contracts)
    if problem is not None:
        raise problem


async def older_processes(db: Database, version: int, live_after: float) -> list[str]:
    """Live gateway processes (heartbeat not older than `live_after`) of releases that do
    not know migration `version`: a contract step `version` must wait for them."""
    rows = await db.fetch(
        "SELECT instance_id FROM instances WHERE heartbeat_at >= ? "
        "AND (schema_version IS NULL OR schema_version < ?) ORDER BY instance_id",
        (live_after, version),
    )
    return [r["instance_id"] for r in rows]


MIGRATION_LOCK = 0x6C6C6D6575  # "llmeu"
"""The PostgreSQL advisory lock every migration's transaction takes first."""


def _serialised(db: Database) -> list[Statement]:
    """On PostgreSQL, one migration's transaction at a time across processes. The claim
    alone is not enough: a step that alters `schema_migrations` itself (migration 15)
    needs its exclusive lock while a second process's claim, waiting on the first's row,
    holds a lock on that table, and PostgreSQL ends one of them as a deadlock. Waiting on
    the advisory lock first, the second process holds nothing the first needs; it then
    finds the version claimed and moves on. SQLite's transactions are one at a time."""
    if db.dialect.name != "postgres":
        return []
    return [(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})", [()])]


def _steps(db: Database, steps: Sequence[Step]) -> list[str]:
    """A migration's DDL for this database."""
    name = db.dialect.name
    return [s if isinstance(s, str) else s[1] for s in steps if isinstance(s, str) or s[0] == name]


async def has_schema(db: Database) -> bool:
    """Whether this database holds a ledger (its migrations were applied)."""
    try:
        return bool(await _applied_versions(db))
    except DatabaseUnavailable:
        raise
    except DatabaseError:  # no schema_migrations table
        return False


async def _applied_versions(db: Database) -> set[int]:
    return {r["version"] for r in await db.fetch("SELECT version FROM schema_migrations")}

"""Migrations: applied once, in order, recorded in `schema_migrations`; safe to race."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3

import asyncpg

from llmeu.ledger.database import Database
from llmeu.ledger.migrations import MIGRATIONS
from llmeu.ledger.opening import open_database
from llmeu.ledger.store import Store

VERSIONS = [version for version, _, _ in MIGRATIONS]


async def test_a_new_database_gets_every_migration_recorded(db: Database) -> None:
    store = Store(db)
    assert await store.migrate() == VERSIONS
    rows = await db.fetch(
        "SELECT version, name, applied_at FROM schema_migrations ORDER BY version"
    )
    assert [(r["version"], r["name"]) for r in rows] == [(v, n) for v, n, _ in MIGRATIONS]
    assert all(r["applied_at"] > 0 for r in rows)
    for table in ("traces", "api_keys", "policies", "instances"):
        assert await db.fetch(f"SELECT COUNT(*) AS n FROM {table}") == [{"n": 0}]


async def test_migrating_again_applies_nothing_and_keeps_data(db: Database) -> None:
    store = Store(db)
    await store.migrate()
    await store.register_instance("gw_a", 1.0)
    assert await store.migrate() == []
    assert await Store(db).migrate() == []
    rows = await db.fetch("SELECT COUNT(*) AS n FROM schema_migrations")
    assert rows == [{"n": len(VERSIONS)}]
    assert [r["instance_id"] for r in await db.fetch("SELECT instance_id FROM instances")] == [
        "gw_a"
    ]


async def test_processes_starting_together_migrate_once(database_url: str) -> None:
    """Two gateway processes started at once on a new database both start cleanly."""
    databases = [open_database(database_url) for _ in range(3)]
    for database in databases:
        await database.open()
    try:
        applied = await asyncio.gather(*(Store(d).migrate() for d in databases))
        assert sorted(v for versions in applied for v in versions) == VERSIONS
        rows = await databases[0].fetch("SELECT version FROM schema_migrations ORDER BY version")
        assert [r["version"] for r in rows] == VERSIONS
    finally:
        for database in databases:
            await database.close()


PARTIAL_LOOKUPS = [
    # The content purge and the erasure by data subject, as the ledger runs them.
    (
        "UPDATE traces SET prompt = NULL, completion = NULL, content_expires_at = NULL "
        "WHERE content_expires_at IS NOT NULL AND content_expires_at <= 1.0",
        "traces_content_expiry",
    ),
    (
        "UPDATE traces SET prompt = NULL, completion = NULL, content_expires_at = NULL "
        "WHERE subject_sha256 = 'ab' AND (prompt IS NOT NULL OR completion IS NOT NULL)",
        "traces_subject",
    ),
]


async def test_the_purge_and_the_erasure_use_their_partial_indexes(
    database_url: str, store: Store
) -> None:
    """Migration 10 indexes only traces that have content or a subject; the lookups that need
    those indexes must still find them (or a purge would scan every trace)."""
    for statement, index in PARTIAL_LOOKUPS:
        if database_url.startswith("sqlite"):
            path = database_url.removeprefix("sqlite:///")
            with contextlib.closing(sqlite3.connect(path)) as conn:
                plan = " ".join(row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {statement}"))
        else:
            conn = await asyncpg.connect(database_url)
            try:
                await conn.execute("SET enable_seqscan = off")  # an empty table: force the choice
                plan = " ".join(r[0] for r in await conn.fetch(f"EXPLAIN {statement}"))
            finally:
                await conn.close()
        assert index in plan, plan

"""Throwaway ledger databases: a SQLite file, or a fresh database on the real PostgreSQL.

Each PostgreSQL test database is named `llmeu_test_<random>`, created for one
test and dropped (with its connections) afterwards. `unreachable` makes one
database refuse connections for real, the way a database that went away does.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator, Iterator

import asyncpg

POSTGRES = "postgresql://postgres@127.0.0.1:5432"


def postgres_url(name: str) -> str:
    return f"{POSTGRES}/{name}"


async def _admin(sql: str, *args: object) -> None:
    conn = await asyncpg.connect(postgres_url("postgres"))
    try:
        await conn.execute(sql, *args)
    finally:
        await conn.close()


async def create_database() -> str:
    name = f"llmeu_test_{secrets.token_hex(6)}"
    await _admin(f'CREATE DATABASE "{name}"')
    return name


async def drop_database(name: str) -> None:
    await _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.asynccontextmanager
async def postgres_database() -> AsyncIterator[str]:
    """A new, empty database; yields its URL and drops it afterwards."""
    name = await create_database()
    try:
        yield postgres_url(name)
    finally:
        await drop_database(name)


@contextlib.contextmanager
def postgres_database_sync() -> Iterator[str]:
    """`postgres_database` for synchronous tests (end to end, real processes)."""
    name = asyncio.run(create_database())
    try:
        yield postgres_url(name)
    finally:
        asyncio.run(drop_database(name))


async def set_reachable(url: str, reachable: bool) -> None:
    """Let a database accept connections again, or refuse them and cut the open ones."""
    name = url.rsplit("/", 1)[1]
    await _admin(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS {str(reachable).lower()}')
    if not reachable:
        await _admin(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", name
        )


@contextlib.asynccontextmanager
async def unreachable(url: str) -> AsyncIterator[None]:
    await set_reachable(url, False)
    try:
        yield
    finally:
        await set_reachable(url, True)


async def fetch(url: str, sql: str, *args: object) -> list[dict[str, object]]:
    """A query on a connection of its own (the test's view, not the gateway's)."""
    conn = await asyncpg.connect(url)
    try:
        return [dict(r) for r in await conn.fetch(sql, *args)]
    finally:
        await conn.close()

"""Console sign-ins in the ledger, on SQLite and PostgreSQL: a login is taken once, a session
is found by its id's hash only, and the expired ones are purged."""

from __future__ import annotations

import asyncio

from llmeu.ledger.console_sessions import (
    ConsoleSession,
    PendingLogin,
    delete_session,
    get_session,
    insert_login,
    insert_session,
    purge_expired,
    session_hash,
    take_login,
    touch_session,
)
from llmeu.ledger.store import Store


def a_session(session_id: str, created_at: float = 1000.0) -> ConsoleSession:
    return ConsoleSession(session_hash(session_id), "alice", "Alice", ("auditor", "dpo"),
                          "csrf", "id.token.here", created_at, created_at)  # fmt: skip


async def test_a_login_is_taken_once_even_by_two_callbacks_at_once(store: Store) -> None:
    await insert_login(store.db, PendingLogin("st", "no", "ver", "http://gw/auth/callback", 1.0))
    taken = await asyncio.gather(take_login(store.db, "st"), take_login(store.db, "st"))
    assert sorted(t is not None for t in taken) == [False, True]
    assert next(t for t in taken if t is not None).verifier == "ver"
    assert await take_login(store.db, "st") is None


async def test_a_session_is_found_by_its_ids_hash_and_ends(store: Store) -> None:
    await insert_session(store.db, a_session("secret-id"))
    found = await get_session(store.db, session_hash("secret-id"))
    assert found == a_session("secret-id")
    assert await get_session(store.db, "secret-id") is None  # the id itself is not a key
    rows = await store.db.fetch("SELECT session_hash FROM console_sessions")
    assert "secret-id" not in str(rows)
    await touch_session(store.db, found.session_hash, 1500.0)
    touched = await get_session(store.db, found.session_hash)
    assert touched is not None and touched.last_seen_at == 1500.0
    assert await delete_session(store.db, found.session_hash)
    assert await get_session(store.db, found.session_hash) is None


async def test_expired_logins_and_sessions_are_purged(store: Store) -> None:
    await insert_login(store.db, PendingLogin("old", "n", "v", "u", 10.0))
    await insert_login(store.db, PendingLogin("new", "n", "v", "u", 500.0))
    await insert_session(store.db, a_session("idle", created_at=100.0))
    await insert_session(store.db, a_session("live", created_at=900.0))
    await purge_expired(store.db, logins_before=100.0, idle_before=800.0, created_before=0.0)
    assert await take_login(store.db, "old") is None
    assert await take_login(store.db, "new") is not None
    assert await get_session(store.db, session_hash("idle")) is None
    assert await get_session(store.db, session_hash("live")) is not None

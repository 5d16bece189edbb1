"""Change notices between gateway processes sharing PostgreSQL (LISTEN/NOTIFY)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from llmeu.ledger.notify import Change, ChangeFeed, DatabaseNotices
from llmeu.ledger.postgres import PostgresDatabase
from llmeu.ledger.store import Store
from tests.support.databases import postgres_database
from tests.support.waiting import until

pytestmark = pytest.mark.postgres


class Process:
    """What one gateway process brings to the feed: its store and what it applied."""

    def __init__(self, url: str, instance_id: str):
        self.store = Store(PostgresDatabase(url))
        self.instance_id = instance_id
        self.applied: list[Change] = []
        self.feed = ChangeFeed(
            DatabaseNotices(self.store.db),
            self.store,
            instance_id,
            self.apply,
            live_window=60,
            ack_timeout=0.5,
        )

    async def apply(self, change: Change) -> None:
        await self.store.get_key(change.ident)  # a reload reads the database
        self.applied.append(change)

    async def start(self) -> None:
        await self.store.db.open()
        await self.store.migrate()
        await self.feed.start()
        await self.store.register_instance(self.instance_id, time.time())

    async def stop(self) -> None:
        await self.feed.close()
        await self.store.db.close()


@pytest.fixture
async def processes() -> AsyncIterator[list[Process]]:
    async with postgres_database() as url:
        started = [Process(url, f"gw_{name}") for name in ("a", "b", "c")]
        for process in started:
            await process.start()
        yield started
        for process in started:
            await process.stop()


async def test_a_change_is_applied_and_confirmed_by_every_other_process(
    processes: list[Process],
) -> None:
    a, b, c = processes
    propagation = await a.feed.publish("key", "kgone")
    assert propagation.confirmed == {"gw_b", "gw_c"}
    assert propagation.as_dict() == {"instances": 3, "confirmed": 3}
    assert b.applied == c.applied == [Change("key", "kgone")]
    assert a.applied == []  # the publisher applied it itself before publishing


async def test_a_silent_process_delays_the_answer_only_until_the_timeout(
    processes: list[Process],
) -> None:
    a, _, c = processes
    await c.feed.close()  # c is alive (heartbeat) but no longer listening
    propagation = await a.feed.publish("policy", "team-a")
    assert propagation.confirmed == {"gw_b"}
    assert propagation.as_dict() == {"instances": 3, "confirmed": 2}


async def test_a_broken_listener_reconnects_at_the_next_round(
    processes: list[Process],
) -> None:
    a, b, _ = processes
    pid = b.feed._conn.get_server_pid()
    await a.store.db.fetch("SELECT pg_terminate_backend(?)", (pid,))
    await until(lambda: not b.feed.listening, what="b to notice its listener is gone")
    missed = await a.feed.publish("key", "kmissed")
    assert "gw_b" not in missed.confirmed
    await b.feed.start()
    assert b.feed.listening
    heard = await a.feed.publish("key", "kheard")
    assert "gw_b" in heard.confirmed
    assert b.applied == [Change("key", "kheard")]


async def test_malformed_notices_are_ignored(processes: list[Process]) -> None:
    a, b, _ = processes
    for payload in ("not json", '{"type": "change"}', '{"type": "ack", "from": "x", "seq": "y"}'):
        await a.store.db.execute("SELECT pg_notify('llmeu_changes', ?)", (payload,))
    propagation = await a.feed.publish("key", "kafter")
    assert propagation.confirmed == {"gw_b", "gw_c"}
    assert b.applied == [Change("key", "kafter")]


async def test_a_process_that_left_is_not_waited_for(processes: list[Process]) -> None:
    a, _, c = processes
    await c.feed.close()
    await c.store.unregister_instance(c.instance_id)
    propagation = await a.feed.publish("key", "kgone")
    assert propagation.peers == {"gw_b"}
    assert propagation.as_dict() == {"instances": 2, "confirmed": 2}

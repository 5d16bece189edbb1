"""The bounded buffer: while the database is away, records wait and calls are counted;
when it returns, every waiting record is written, in order."""

from __future__ import annotations

import asyncio

import pytest

from llmeu.calls.record import CallStatus
from llmeu.ledger.store import Store
from llmeu.ledger.writer import Ledger
from tests.ledger.conftest import outage, trace
from tests.support.waiting import until


async def test_records_wait_for_the_database_and_are_written_when_it_returns(
    ledger: Ledger, store: Store, database_url: str
) -> None:
    assert ledger.buffer_limit == 50
    began = [trace(CallStatus.IN_PROGRESS) for _ in range(20)]
    finished = [trace(CallStatus.COMPLETED) for _ in range(29)]
    async with outage(database_url):
        futures = [ledger.begin(r) for r in began]
        await until(lambda: not ledger.healthy, what="the writer to notice the outage")
        futures += [ledger.finish(r) for r in finished]
        assert ledger.depth == 49 and not ledger.full
        last = trace(CallStatus.COMPLETED)
        futures.append(ledger.finish(last))
        assert ledger.full
        assert not any(f.done() for f in futures)
        for record in began[:5]:  # some calls end while the database is still away
            record.status = CallStatus.CANCELLED
            futures.append(ledger.finish(record))
    await asyncio.wait_for(asyncio.gather(*futures), 30)
    assert ledger.healthy and ledger.depth == 0 and not ledger.full
    statuses = {
        r.trace_id: (await store.get_trace(r.trace_id))["status"]  # type: ignore[index]
        for r in [*began, *finished, last]
    }
    assert [statuses[r.trace_id] for r in began] == ["cancelled"] * 5 + ["in_progress"] * 15
    assert {statuses[r.trace_id] for r in [*finished, last]} == {"completed"}


async def test_a_buffer_that_fills_drains_completely(
    ledger: Ledger, store: Store, database_url: str
) -> None:
    records = [trace() for _ in range(120)]  # more than the buffer limit: nothing is dropped
    async with outage(database_url):
        futures = [ledger.finish(r) for r in records]
        await until(lambda: not ledger.healthy, what="the writer to notice the outage")
        assert ledger.full and ledger.depth == 120
    await asyncio.wait_for(asyncio.gather(*futures), 30)
    usage = await store.usage(group_by="status", since=None, until=None, key_id=None)
    assert usage == [
        {
            "status": "completed",
            "requests": 120,
            "completed": 120,
            "cancelled": 0,
            "failed": 0,
            "rejected": 0,
            "interrupted": 0,
            "input_tokens": 1200,
            "output_tokens": 2400,
            "estimated_requests": 0,
            "cost_eur": 0.006,
            "cached": 0,
            "saved_eur": 0.0,
        }
    ]


async def test_stop_waits_for_the_buffer_when_the_database_returns_in_time(
    store: Store, database_url: str
) -> None:
    ledger = Ledger(store, buffer_limit=10, max_backoff=0.05)
    ledger.start()
    record = trace()
    async with outage(database_url):
        ledger.finish(record)
        await until(lambda: not ledger.healthy, what="the writer to notice the outage")
        stopping = asyncio.ensure_future(ledger.stop(timeout=30))
        await asyncio.sleep(0)
        assert not stopping.done()
    await stopping
    assert await store.get_trace(record.trace_id) is not None


async def test_stop_waits_for_the_batch_being_written(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At shutdown the queue may be empty while a batch is still on its way: stopping
    cancels the writer only once that batch is written (a cancelled PostgreSQL write rolls
    back, and the rows in it are lost)."""
    ledger = Ledger(store, buffer_limit=10)
    ledger.start()
    release = asyncio.Event()
    taken = asyncio.Event()
    write = store.write_traces

    async def slow(begins: list[tuple[object, ...]], finishes: list[tuple[object, ...]]) -> None:
        taken.set()
        await release.wait()
        await write(begins, finishes)

    monkeypatch.setattr(store, "write_traces", slow)
    record = trace()
    written = ledger.finish(record)
    await asyncio.wait_for(taken.wait(), 10)
    assert ledger.depth == 0
    stopping = asyncio.ensure_future(ledger.stop(timeout=30))
    for _ in range(5):
        await asyncio.sleep(0)
    assert not stopping.done()
    release.set()
    await asyncio.wait_for(stopping, 30)
    assert written.done() and written.exception() is None
    assert await store.get_trace(record.trace_id) is not None


async def test_rows_on_their_way_to_the_database_count_against_the_buffer(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a batch is being written it is out of the queue, not out of the buffer: if the
    database is away, it comes back. A full buffer stays full while its rows are written."""
    release = asyncio.Event()
    taken = asyncio.Event()
    write = ledger.store.write_traces

    async def slow(begins: list[tuple[object, ...]], finishes: list[tuple[object, ...]]) -> None:
        taken.set()
        await release.wait()
        await write(begins, finishes)

    monkeypatch.setattr(ledger.store, "write_traces", slow)
    futures = [ledger.finish(trace()) for _ in range(ledger.buffer_limit)]
    await asyncio.wait_for(taken.wait(), 10)
    assert ledger.depth == 0 and ledger.full
    release.set()
    await asyncio.wait_for(asyncio.gather(*futures), 30)
    assert not ledger.full

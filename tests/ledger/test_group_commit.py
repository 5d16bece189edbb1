"""Group commit: calls share transactions, and a call's future resolves only once its row
is committed (read-your-writes, from any connection)."""

from __future__ import annotations

import asyncio

import pytest

from llmeu.calls.record import Attempt, CallStatus, TraceRecord
from llmeu.ledger.opening import open_database
from llmeu.ledger.store import Store
from llmeu.ledger.writer import Ledger
from tests.ledger.conftest import outage, trace
from tests.support.waiting import until


async def test_everything_queued_before_the_writer_runs_shares_one_commit(
    ledger: Ledger, store: Store
) -> None:
    records = [trace() for _ in range(300)]
    before = ledger.batches
    futures = [ledger.finish(r) for r in records]
    await asyncio.gather(*futures)
    assert ledger.batches == before + 1
    page = await store.list_traces(
        filters={}, since=None, until=None, limit=500, cursor=None, key_id=None
    )
    assert {t["id"] for t in page.traces} == {r.trace_id for r in records}


async def test_concurrent_calls_share_few_commits_and_read_their_writes(
    ledger: Ledger, store: Store, database_url: str
) -> None:
    """200 calls, each: begin, wait until durable, finish, wait, read back from another
    connection (as another gateway process would)."""
    reader = Store(open_database(database_url))
    await reader.db.open()

    async def call(record: TraceRecord) -> None:
        await ledger.begin(record)
        assert (await reader.get_trace(record.trace_id))["status"] == "in_progress"  # type: ignore[index]
        record.status = CallStatus.COMPLETED
        record.finished_at = record.received_at + 1
        await ledger.finish(record)
        assert (await reader.get_trace(record.trace_id))["status"] == "completed"  # type: ignore[index]

    records = [trace(CallStatus.IN_PROGRESS) for _ in range(200)]
    batches, rows = ledger.batches, ledger.rows_written
    try:
        await asyncio.gather(*(call(r) for r in records))
    finally:
        await reader.db.close()
    commits = ledger.batches - batches
    assert ledger.rows_written - rows == 400
    # One commit per row would be 400; how many rows share one depends on how the reads
    # interleave (the reader is one connection, so its pace sets the batches' sizes),
    # which varies with the machine's load. Four rows a commit on average is grouping.
    assert commits <= 100, f"{commits} commits for 400 rows"
    print(f"group commit: 400 rows in {commits} transactions")


async def test_a_future_resolves_only_after_its_row_is_committed(
    ledger: Ledger, store: Store, database_url: str
) -> None:
    record = trace()
    async with outage(database_url):
        future = ledger.finish(record)
        await until(lambda: not ledger.healthy, what="a failed commit")
        assert not future.done()
    await asyncio.wait_for(future, 30)
    assert (await store.get_trace(record.trace_id))["status"] == "completed"  # type: ignore[index]


async def test_a_call_that_ends_before_its_begin_is_written_gets_its_final_row(
    ledger: Ledger, store: Store
) -> None:
    record = trace(CallStatus.IN_PROGRESS)
    began = ledger.begin(record)
    record.status = CallStatus.CANCELLED
    record.finished_at = record.received_at + 1
    finished = ledger.finish(record)
    await asyncio.gather(began, finished)
    assert (await store.get_trace(record.trace_id))["status"] == "cancelled"  # type: ignore[index]


async def test_a_late_begin_never_overwrites_a_final_trace(ledger: Ledger, store: Store) -> None:
    record = trace(CallStatus.COMPLETED)
    await ledger.finish(record)
    record.status = CallStatus.IN_PROGRESS
    await ledger.begin(record)
    assert (await store.get_trace(record.trace_id))["status"] == "completed"  # type: ignore[index]


async def test_a_refused_row_fails_only_its_own_call(ledger: Ledger, store: Store) -> None:
    good = trace()
    bad = trace()
    bad.input_tokens = 1 << 80  # more than any integer column holds
    futures = [ledger.finish(good), ledger.finish(bad)]
    results = await asyncio.gather(*futures, return_exceptions=True)
    assert results[0] is None
    assert isinstance(results[1], Exception)
    assert await store.get_trace(good.trace_id) is not None
    assert await store.get_trace(bad.trace_id) is None
    assert ledger.healthy and ledger.depth == 0


async def test_text_the_database_cannot_store_does_not_lose_the_trace(
    ledger: Ledger, store: Store
) -> None:
    record = trace(request_model="fake\x00model", completion="a\x00b", prompt='"x"')
    await ledger.finish(record)
    view = await store.get_trace(record.trace_id)
    assert view is not None
    assert view["request_model"] == "fake\ufffdmodel"
    assert view["content"]["completion"] == "a\ufffdb"


async def test_waiting_for_durability_ends_at_an_outage_not_at_the_timeout(
    ledger: Ledger, store: Store, database_url: str
) -> None:
    assert await ledger.durable(ledger.finish(trace()), timeout=30) is True
    record = trace()
    async with outage(database_url):
        future = ledger.finish(record)
        durable = await asyncio.wait_for(ledger.durable(future, timeout=3600), 30)
        assert durable is False and not future.done()
        assert await ledger.durable(ledger.finish(trace()), timeout=3600) is False
    await asyncio.wait_for(future, 30)
    assert await ledger.durable(future, timeout=30) is True


async def test_waiting_for_durability_ends_at_the_timeout_or_when_the_row_is_refused(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer itself wakes the caller waiting in `durable()` (no done-callback): when
    the row is written, when it is refused, and the timer when neither came in time."""
    release = asyncio.Event()
    write = ledger.store.write_traces

    async def held(begins: list[tuple[object, ...]], finishes: list[tuple[object, ...]]) -> None:
        await release.wait()
        if any(row[0] == refused.trace_id for row in finishes):
            raise ValueError("refused by the database")
        await write(begins, finishes)

    monkeypatch.setattr(ledger.store, "write_traces", held)
    refused, late = trace(), trace()
    late_future = ledger.finish(late)
    assert await ledger.durable(late_future, timeout=0.05) is False
    assert not late_future.done()
    refused_future = ledger.finish(refused)
    waiting = asyncio.ensure_future(ledger.durable(refused_future, timeout=3600))
    release.set()
    assert await asyncio.wait_for(waiting, 30) is False  # the row alone, one by one, refused
    assert isinstance(refused_future.exception(), ValueError)
    assert await asyncio.wait_for(ledger.durable(late_future, timeout=3600), 30) is True


async def test_a_lone_surrogate_and_a_nul_in_an_attempt_error_keep_the_trace(
    ledger: Ledger, store: Store
) -> None:
    """A JSON column holds what an upstream's error said, exactly, valid Unicode or not; a
    text column holds it with U+FFFD for what neither database can store."""
    record = trace(completion="a\ud800b", prompt='"x"', request_model="m\udfff")
    record.attempts.append(Attempt("ep", "prov", 1.0, 2.0, "failed", "bad \ud800 text\x00"))
    await ledger.finish(record)
    view = await store.get_trace(record.trace_id)
    assert view is not None
    [attempt] = view["attempts"]
    assert attempt["error"] == "bad \ud800 text\x00"  # escaped in the JSON text, kept
    assert view["request_model"] == "m\ufffd"
    assert view["content"]["completion"] == "a\ufffdb"


async def _finish_after(ledger: Ledger, turns: int) -> None:
    for _ in range(turns):
        await asyncio.sleep(0)
    await ledger.finish(trace())


async def test_rows_queued_over_the_next_turns_of_the_loop_share_the_commit(
    ledger: Ledger,
) -> None:
    """Calls that are running now end a turn or two apart: while each turn brings rows the
    writer waits for the next, and the calls share one transaction."""
    before = ledger.batches
    await asyncio.gather(*(_finish_after(ledger, turns) for turns in (0, 1, 2, 3)))
    assert ledger.batches == before + 1


async def test_a_steady_flow_of_rows_does_not_hold_a_batch_back(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows arriving on every turn, for longer than the writer waits: the first batch goes
    after a few turns with the rows queued by then, not at the end with all of them."""
    sizes: list[int] = []
    write = ledger.store.write_traces

    async def counted(begins: list[tuple[object, ...]], finishes: list[tuple[object, ...]]) -> None:
        sizes.append(len(finishes))
        await write(begins, finishes)

    monkeypatch.setattr(ledger.store, "write_traces", counted)
    await asyncio.gather(*(_finish_after(ledger, turns) for turns in range(40)))
    assert sum(sizes) == 40
    assert sizes[0] <= 5, f"the first batch held {sizes[0]} rows"
    assert len(sizes) >= 2


async def test_a_call_that_ends_within_the_gathering_turns_writes_one_row(
    ledger: Ledger, store: Store
) -> None:
    record = trace(CallStatus.IN_PROGRESS)
    began = ledger.begin(record)
    rows = ledger.rows_written
    await asyncio.sleep(0)  # the upstream answered within a turn
    record.status = CallStatus.COMPLETED
    record.finished_at = record.received_at + 1
    await asyncio.gather(began, ledger.finish(record))
    assert ledger.rows_written - rows == 1
    assert (await store.get_trace(record.trace_id))["status"] == "completed"  # type: ignore[index]


async def test_an_in_progress_row_a_call_waits_for_goes_without_gathering(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream's first frame waits for its in-progress row: while rows keep coming on every
    turn, that row's batch goes after the turn in progress, not after several."""
    sizes: list[int] = []
    write = ledger.store.write_traces

    async def counted(begins: list[tuple[object, ...]], finishes: list[tuple[object, ...]]) -> None:
        sizes.append(len(begins) + len(finishes))
        await write(begins, finishes)

    monkeypatch.setattr(ledger.store, "write_traces", counted)
    began = ledger.begin(trace(CallStatus.IN_PROGRESS), awaited=True)
    await asyncio.gather(began, *(_finish_after(ledger, turns) for turns in range(12)))
    assert sizes[0] <= 2, f"the first batch held {sizes[0]} rows"
    assert sum(sizes) == 13

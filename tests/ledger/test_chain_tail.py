"""A process links its final rows ahead, from the head it wrote last, in the rows' own
upsert, and takes the locked way whenever that head is not the head any more: the chain
stays one chain, in commit order, without gaps, on SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

import pytest

from llmeu.calls.record import CallStatus
from llmeu.evidence.chain import CHAIN_VERSION, GENESIS, ChainLink, metadata_sha256
from llmeu.ledger.chaining import (
    AHEAD_LIMIT,
    ChainMoved,
    ChainTail,
    chain_head,
    chained_rows,
    link_ahead,
)
from llmeu.ledger.database import Database, WriteConflict
from llmeu.ledger.opening import open_database
from llmeu.ledger.store import Store
from llmeu.ledger.trace_writes import TRACE_COLUMNS, open_row, trace_row
from llmeu.ledger.writer import Ledger
from tests.ledger.conftest import trace, write


async def assert_one_chain(db: Database, ids: list[str]) -> None:
    """Every final row in `ids` order, each linked to the one before, and the head on the last."""
    head = GENESIS
    rows = await chained_rows(db)
    assert [r["trace_id"] for r in rows] == ids
    assert not any(r["chain_suspect"] for r in rows)  # each written by a store
    for row in rows:
        head = head.next(row)
        assert (row["chain_seq"], row["chain_link"]) == (head.seq, head.link)
    assert await chain_head(db) == head


def test_a_remembered_head_links_ahead_and_checks_before_commit() -> None:
    tail, row = ChainTail(), trace_row_of("trc_a")
    assert link_ahead([row], tail) is None  # nothing remembered yet: the locked way
    tail.head = ChainLink(3, "ab" * 32, "trc_z")
    ahead = link_ahead([row], tail)
    place = (4, tail.head.next(row).link, CHAIN_VERSION, metadata_sha256(row))
    assert ahead is not None and ahead.links == [place]
    assert link_ahead([row] * (AHEAD_LIMIT + 1), tail) is None  # a large batch: locked
    # Landed after the remembered head, nothing else waiting: the head moves on.
    assert ahead.check(0.0).build([[{"placed": 1, "after": 1, "waiting": 0}]]) == []
    assert tail.head == ChainLink(3, "ab" * 32, "trc_z").next(row)
    for found in (
        {"placed": 0, "after": 1, "waiting": 0},  # the row was final already (a retry)
        {"placed": 1, "after": 0, "waiting": 0},  # the remembered head was never committed
        {"placed": 1, "after": 1, "waiting": 1},  # a call found interrupted waits for a place
    ):
        tail.head = ChainLink(3, "ab" * 32, "trc_z")
        ahead = link_ahead([row], tail)
        assert ahead is not None
        with pytest.raises(ChainMoved):
            ahead.check(0.0).build([[found]])
        assert tail.head is None


def trace_row_of(trace_id: str) -> dict[str, object]:
    return dict(zip(TRACE_COLUMNS, trace_row(trace(trace_id=trace_id)), strict=True))


async def test_two_writers_alternating_make_one_chain(store: Store) -> None:
    other = Store(store.db)  # another process: its own remembered head
    ids: list[str] = []
    for n in range(6):
        batch = [trace() for _ in range(1 + n % 3)]
        await write(store if n % 2 == 0 else other, *batch)
        ids += [r.trace_id for r in batch]
    await write(store, (last := trace()))
    await write(store, (again := trace()))  # the head is this store's own again
    await assert_one_chain(store.db, [*ids, last.trace_id, again.trace_id])
    assert store.writes.chain_tail.head == await chain_head(store.db)


async def test_a_head_that_was_never_committed_is_not_trusted(store: Store) -> None:
    first = trace()
    await write(store, first)
    head = await chain_head(store.db)
    # What a rolled-back transaction leaves remembered: the right place, another link.
    store.writes.chain_tail.head = ChainLink(head.seq, "f" * 64, "trc_rolled_back")
    second = trace()
    await write(store, second)
    store.writes.chain_tail.head = ChainLink(head.seq + 5, "e" * 64, "trc_ahead")
    third = trace()
    await write(store, third)
    await assert_one_chain(store.db, [first.trace_id, second.trace_id, third.trace_id])


async def test_rows_of_others_go_the_locked_way_with_a_remembered_head(store: Store) -> None:
    mine = trace()
    await write(store, mine)
    interrupted = trace(CallStatus.IN_PROGRESS, instance_id="gw_dead")
    await store.heartbeat("gw_dead", 0.0)
    await store.write_traces([open_row(interrupted)], [])
    await store.mark_interrupted(live_after=1.0, now=1.0)  # settled long ago: any write chains it
    after = trace()
    await write(store, after)
    chained = [r["trace_id"] for r in await chained_rows(store.db)]
    assert chained[0] == mine.trace_id and sorted(chained[1:]) == sorted(
        [interrupted.trace_id, after.trace_id]
    )
    await assert_one_chain(store.db, chained)


async def test_a_retried_batch_of_rows_final_already_keeps_the_chain_whole(store: Store) -> None:
    """The outcome of a commit was lost: the same rows come again, with a new one."""
    first, second = trace(), trace()
    await write(store, first, second)
    again = trace()
    rows = [trace_row(first), trace_row(again), trace_row(second)]
    await store.write_traces([], rows)
    await assert_one_chain(store.db, [first.trace_id, second.trace_id, again.trace_id])
    assert store.writes.chain_tail.head == await chain_head(store.db)


async def test_two_writers_linking_ahead_from_the_same_head_make_one_chain(
    store: Store,
) -> None:
    """Both remember the same head; the second's places are taken by then: refused by the
    unique index, it goes the locked way after the first."""
    other = Store(store.db)
    first = trace()
    await write(store, first)
    other.writes.chain_tail.head = store.writes.chain_tail.head
    mine, theirs = trace(), trace()
    await write(store, mine)
    await write(other, theirs)
    await assert_one_chain(store.db, [first.trace_id, mine.trace_id, theirs.trace_id])


async def test_a_failed_check_leaves_nothing_of_its_rows(store: Store) -> None:
    """Rows linked after a head that is not there: refused before commit, nothing stored,
    whichever way the database checks (one statement, or a read before commit)."""
    await write(store, trace())
    head = await chain_head(store.db)
    tail = ChainTail()
    tail.head = ChainLink(head.seq, "f" * 64, "trc_never")
    row = trace()
    ahead = link_ahead([trace_row_of(row.trace_id)], tail)
    assert ahead is not None
    chained = [(*trace_row(row), *ahead.links[0])]
    checked: Awaitable[object]
    if store.db.dialect.cte_writes:
        checked = store.db.statement(
            *ahead.statement(0.0, store.writes.finish_chained_values(chained))
        )
    else:
        checked = store.db.transaction([(store.writes.finish_chained, chained)], ahead.check(0.0))
    with pytest.raises((ChainMoved, WriteConflict)):
        await checked
    assert await store.get_trace(row.trace_id) is None
    assert await chain_head(store.db) == head


async def test_writers_of_several_processes_at_once_make_one_chain(
    store: Store, database_url: str
) -> None:
    """Three processes' writers, each with its own connections and remembered head, write
    at the same time: linked ahead, refused, locked — one chain without gaps."""
    others = []
    for _ in range(2):
        db = open_database(database_url)
        await db.open()
        others.append(Store(db))
    try:

        async def writes(writer: Store) -> list[str]:
            ids = []
            for n in range(12):
                batch = [trace() for _ in range(1 + n % 3)]
                await write(writer, *batch)
                ids += [r.trace_id for r in batch]
            return ids

        written = await asyncio.gather(*(writes(s) for s in (store, *others)))
    finally:
        for other in others:
            await other.db.close()
    chained = [r["trace_id"] for r in await chained_rows(store.db)]
    assert sorted(chained) == sorted(i for ids in written for i in ids)
    for ids in written:  # each writer's rows in the order it wrote them
        assert [i for i in chained if i in set(ids)] == ids
    await assert_one_chain(store.db, chained)


async def test_a_final_row_and_its_in_progress_row_in_either_order(
    store: Store, ledger: Ledger
) -> None:
    """The in-progress row may be on its way beside the writer loop when the final row
    goes: whichever lands first, the trace ends final and chained."""
    call = trace(CallStatus.IN_PROGRESS)
    began = ledger.begin(call)
    await asyncio.sleep(0)  # its batch is on the way
    call.status = CallStatus.COMPLETED
    await ledger.finish(call)
    await began
    late = trace()
    await store.write_traces([], [trace_row(late)])
    late_begin = trace(CallStatus.IN_PROGRESS, trace_id=late.trace_id)
    await store.write_traces([open_row(late_begin)], [])  # arrives after its final row
    for done in (call, late):
        assert (await store.get_trace(done.trace_id))["status"] == "completed"  # type: ignore[index]
    await assert_one_chain(store.db, [call.trace_id, late.trace_id])

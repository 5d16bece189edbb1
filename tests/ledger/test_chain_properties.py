"""Property: whatever the writers of one SQLite ledger do — several processes' stores
alternating, batches of any size, a batch written again after its commit's outcome was
lost, a remembered head that was never committed, calls in progress and found
`interrupted` — the chain holds every final row once, without gaps, and verifies."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmeu.calls.record import CallStatus
from llmeu.evidence import verify_chain
from llmeu.evidence.chain import ChainLink
from llmeu.ledger.chaining import chained_rows
from llmeu.ledger.sqlite import SqliteDatabase
from llmeu.ledger.store import Store
from llmeu.ledger.trace_writes import open_row, trace_row
from tests.ledger.conftest import trace

STEP = st.one_of(
    st.tuples(st.just("write"), st.integers(0, 2), st.integers(1, 70)),  # writer, batch size
    st.tuples(st.just("replay"), st.integers(0, 2), st.integers(0, 5)),  # writer, which batch
    st.tuples(st.just("forget"), st.integers(0, 2), st.integers(0, 3)),  # writer, wrong head
    st.tuples(st.just("stuck"), st.integers(0, 2), st.integers(1, 3)),  # in progress, then lost
)


async def run(steps: list[tuple[str, int, int]], directory: Path) -> None:
    path = directory / "ledger.db"
    databases = [SqliteDatabase(path) for _ in range(3)]
    for db in databases:
        await db.open()
    stores = [Store(db, interrupted_settle_seconds=0.0) for db in databases]
    await stores[0].migrate()
    finals: set[str] = set()
    batches: list[list[tuple[object, ...]]] = []
    try:
        for kind, writer, n in steps:
            store = stores[writer]
            if kind == "write":
                rows = [trace_row(trace()) for _ in range(n)]
                await store.write_traces([], rows)
                batches.append(rows)
                finals.update(str(r[0]) for r in rows)
            elif kind == "replay" and batches:
                extra = trace_row(trace())
                await store.write_traces([], [*batches[-1 - n % len(batches)], extra])
                finals.add(str(extra[0]))
            elif kind == "forget":
                head = store.writes.chain_tail.head
                if head is not None:  # rolled back, or never there: a wrong guess
                    store.writes.chain_tail.head = ChainLink(head.seq + n, "e" * 64, "trc_x")
            elif kind == "stuck":
                stuck = [trace(CallStatus.IN_PROGRESS, instance_id="gw_gone") for _ in range(n)]
                await store.heartbeat("gw_gone", 0.0)  # a process the ledger knows
                await store.write_traces([open_row(s) for s in stuck], [])
                await store.mark_interrupted(live_after=1e12, now=1.0)  # chained at once
                finals.update(s.trace_id for s in stuck)
        rows = await chained_rows(stores[0].db)
        assert [r["chain_seq"] for r in rows] == list(range(1, len(rows) + 1))
        assert sorted(r["trace_id"] for r in rows) == sorted(finals)
        assert verify_chain(rows).ok  # no row is suspect
    finally:
        for db in databases:
            await db.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(STEP, min_size=1, max_size=12))
def test_any_interleaving_of_writers_keeps_one_chain(steps: list[tuple[str, int, int]]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(run(steps, Path(directory)))

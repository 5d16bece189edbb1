"""Calls in progress live in `open_calls` until their final row goes into `traces`
(migration 11): a row of `traces` is written once, final."""

from __future__ import annotations

import contextlib
import sqlite3

import pytest

from llmeu.calls.record import CallStatus
from llmeu.ledger import migration_runner
from llmeu.ledger.database import Database
from llmeu.ledger.migrations import MIGRATIONS
from llmeu.ledger.migrations_later import _CACHE_HIT_TYPES, _MCP_CALL_TYPES, _OPEN_CALL_TYPES
from llmeu.ledger.opening import open_database
from llmeu.ledger.retention import calls_between
from llmeu.ledger.store import Store
from llmeu.ledger.trace_writes import OPEN_COLUMNS, TRACE_COLUMNS, open_row, trace_row
from llmeu.ledger.writer import Ledger
from tests.ledger.conftest import sqlite_path, trace, write


async def tables(db: Database, trace_id: str) -> dict[str, str]:
    """Where a trace's rows are, and their status there."""
    found = {}
    for table in ("traces", "open_calls"):
        rows = await db.fetch(f"SELECT status FROM {table} WHERE trace_id = ?", (trace_id,))
        if rows:
            found[table] = rows[0]["status"]
    return found


def test_an_open_call_has_every_column_a_trace_row_writes() -> None:
    added_since = (*_CACHE_HIT_TYPES, *_MCP_CALL_TYPES)  # migrations 13 and 14
    assert tuple(name for name, _ in (*_OPEN_CALL_TYPES, *added_since)) == TRACE_COLUMNS


def test_an_open_row_is_the_trace_row_of_its_columns() -> None:
    record = trace(CallStatus.IN_PROGRESS, personal_data={"email": 1}, subject_sha256="ab",
                   ignored_features="x-beta", excluded=[{"endpoint_id": "e"}])  # fmt: skip
    full = dict(zip(TRACE_COLUMNS, trace_row(record), strict=True))
    assert open_row(record) == tuple(full[column] for column in OPEN_COLUMNS)


async def test_a_call_is_open_until_its_final_row_replaces_it(store: Store, ledger: Ledger) -> None:
    call = trace(CallStatus.IN_PROGRESS)
    await ledger.begin(call)
    assert await tables(store.db, call.trace_id) == {"open_calls": "in_progress"}
    view = await store.get_trace(call.trace_id)
    assert view is not None and view["status"] == "in_progress"
    page = await store.list_traces(
        filters={"status": "in_progress"}, since=None, until=None, limit=10, cursor=None,
        key_id=None,
    )  # fmt: skip
    assert [t["id"] for t in page.traces] == [call.trace_id]
    assert await store.get_trace(call.trace_id, key_id="someone_else") is None
    call.status = CallStatus.COMPLETED
    await ledger.finish(call)
    assert await tables(store.db, call.trace_id) == {"traces": "completed"}
    assert (await store.get_trace(call.trace_id))["status"] == "completed"  # type: ignore[index]


async def test_open_calls_and_final_traces_list_as_one_newest_first(store: Store) -> None:
    records = [trace(CallStatus.IN_PROGRESS if i % 3 == 0 else CallStatus.COMPLETED)
               for i in range(10)]  # fmt: skip
    await store.write_traces(
        [open_row(r) for r in records if r.status is CallStatus.IN_PROGRESS],
        [trace_row(r) for r in records if r.status is not CallStatus.IN_PROGRESS],
    )
    newest_first = [r.trace_id for r in reversed(records)]
    seen, cursor = [], None
    while True:
        page = await store.list_traces(
            filters={}, since=None, until=None, limit=3, cursor=cursor, key_id=None
        )
        seen += [t["id"] for t in page.traces]
        if (cursor := page.next_cursor) is None:
            break
    assert seen == newest_first
    completed = await store.list_traces(
        filters={"status": "completed"}, since=None, until=None, limit=20, cursor=None,
        key_id=None,
    )  # fmt: skip
    assert [t["id"] for t in completed.traces] == [
        r.trace_id for r in reversed(records) if r.status is CallStatus.COMPLETED
    ]
    exported = await calls_between(store.db, 0.0, 2e9)
    assert [c["trace_id"] for c in exported] == [r.trace_id for r in records]


async def test_an_open_row_left_behind_its_final_row_is_hidden_then_removed(
    store: Store,
) -> None:
    """Both in flight at once (PostgreSQL writes in-progress rows beside the final ones), an
    in-progress row may land after its call's final row: reads show the final row only,
    and the next sweep removes the other."""
    await store.register_instance("gw_test", 100.0)
    done = trace()
    await write(store, done)
    opening = trace(CallStatus.IN_PROGRESS, trace_id=done.trace_id)
    begin = trace_row(opening)
    columns = ", ".join(TRACE_COLUMNS)
    await store.db.execute(
        f"INSERT INTO open_calls ({columns}) VALUES ({', '.join('?' * len(begin))})", begin
    )
    page = await store.list_traces(
        filters={}, since=None, until=None, limit=10, cursor=None, key_id=None
    )
    assert [(t["id"], t["status"]) for t in page.traces] == [(done.trace_id, "completed")]
    assert [c["status"] for c in await calls_between(store.db, 0.0, 2e9)] == ["completed"]
    assert (await store.get_trace(done.trace_id))["status"] == "completed"  # type: ignore[index]
    assert await store.mark_interrupted(live_after=50.0, now=200.0) == 0
    assert await tables(store.db, done.trace_id) == {"traces": "completed"}
    # ...and one arriving after its final row, the usual way, is not stored at all.
    await store.write_traces([open_row(opening)], [])
    assert await tables(store.db, done.trace_id) == {"traces": "completed"}


async def test_a_dead_process_leaves_interrupted_traces_and_no_open_calls(store: Store) -> None:
    await store.register_instance("gw_dead", 100.0)
    calls = [trace(CallStatus.IN_PROGRESS, instance_id="gw_dead") for _ in range(3)]
    await store.write_traces([open_row(c) for c in calls], [])
    assert await store.mark_instance_interrupted("gw_dead", 300.0) == 3
    for call in calls:
        assert await tables(store.db, call.trace_id) == {"traces": "interrupted"}
    assert await store.db.fetch("SELECT COUNT(*) AS n FROM open_calls") == [{"n": 0}]


async def test_migration_11_moves_rows_in_progress_out_of_traces(database_url: str) -> None:
    """A ledger written before migration 11 kept calls in progress in `traces`."""
    db = open_database(database_url)
    await db.open()
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(migration_runner, "MIGRATIONS", tuple(m for m in MIGRATIONS if m[0] < 11))
            await Store(db).migrate()
        running, done = trace(CallStatus.IN_PROGRESS), trace()
        then = [name for name, _ in _OPEN_CALL_TYPES]  # the columns of `traces` at the time
        for record in (running, done):
            full = dict(zip(TRACE_COLUMNS, trace_row(record), strict=True))
            await db.execute(
                f"INSERT INTO traces ({', '.join(then)}) VALUES ({', '.join('?' * len(then))})",
                tuple(full[name] for name in then),
            )
        assert (await Store(db).migrate())[:1] == [11]
        assert await tables(db, running.trace_id) == {"open_calls": "in_progress"}
        assert await tables(db, done.trace_id) == {"traces": "completed"}
    finally:
        await db.close()


async def test_open_calls_are_one_btree_on_sqlite(database_url: str, store: Store) -> None:
    """No rowid and no index besides the table: a call's in-progress row writes one page,
    where a row of `traces` writes one per index."""
    path = sqlite_path(database_url)
    if path is None:
        pytest.skip("a SQLite file's layout; PostgreSQL keeps a table and its key apart")
    with contextlib.closing(sqlite3.connect(path)) as conn:
        kinds = {r[0]: r[1] for r in conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE tbl_name = 'open_calls'")}  # fmt: skip
    assert list(kinds) == ["open_calls"], kinds  # no index besides the table itself
    assert "WITHOUT ROWID" in (kinds["open_calls"] or "")

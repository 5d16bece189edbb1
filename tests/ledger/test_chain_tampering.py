"""Edits the chain must not let through, on SQLite and on PostgreSQL, each named by
`llmeu audit verify` (a real process): a purged row rewritten, each column that erasure,
exports and compliance reports read, a final row forged without a place in the chain;
and rows chained under version 1 that still verify under it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from llmeu.calls.record import CallStatus
from llmeu.evidence.chain import VERSION_1_COLUMNS, link_after, version_1_body
from llmeu.ledger import migration_runner
from llmeu.ledger.chaining import chain_pending, chained_rows
from llmeu.ledger.database import Database
from llmeu.ledger.migrations import MIGRATIONS
from llmeu.ledger.migrations_later import _OPEN_CALL_TYPES
from llmeu.ledger.opening import open_database
from llmeu.ledger.retention import Retention
from llmeu.ledger.store import Store
from llmeu.ledger.trace_writes import TRACE_COLUMNS, open_row, trace_row
from tests.ledger.conftest import trace, write
from tests.ledger.test_chain import audit_verify

EXPIRED, PURGED_AT, FUTURE = 600.0, 1000.0, 4e9


async def ledger_of(store: Store, count: int = 6) -> list[str]:
    """`count` final traces, each with everything erasure and exports read, metadata
    expired (so a purge may empty it) except for the last."""
    ids = []
    for n in range(count):
        record = trace(
            subject_sha256="ab" * 32, personal_data={"email": 1}, cache_read_tokens=4,
            cache_creation_tokens=2, ignored_features="x-beta",
            metadata_expires_at=EXPIRED if n < count - 1 else FUTURE,
        )  # fmt: skip
        await write(store, record)
        ids.append(record.trace_id)
    return ids


Tamper = Callable[[Database, list[str]], Awaitable[None]]


async def _mark_purged_and_move(db: Database, ids: list[str]) -> None:
    """A row not purged says it was, and names another endpoint, class and cost."""
    await db.execute(
        "UPDATE traces SET metadata_purged_at = ?, endpoint_id = 'us-east-1', "
        "sovereignty_class = 'global', cost_eur = 0.0 WHERE trace_id = ?",
        (PURGED_AT, ids[-1]),
    )


async def _purged_then_filled(db: Database, ids: list[str]) -> None:
    """A row purged by retention, then given metadata again."""
    await Retention(db).purge_metadata(now=PURGED_AT)
    await db.execute(
        "UPDATE traces SET endpoint_id = 'us-east-1', cost_eur = 9.0 WHERE trace_id = ?",
        (ids[2],),
    )


async def _purged_then_kept_column_edited(db: Database, ids: list[str]) -> None:
    await Retention(db).purge_metadata(now=PURGED_AT)
    await db.execute("UPDATE traces SET status = 'failed' WHERE trace_id = ?", (ids[2],))


async def _purged_before_retention_ran_out(db: Database, ids: list[str]) -> None:
    """The last row emptied as a purge would, though its metadata is kept until FUTURE."""
    await db.execute(
        "UPDATE traces SET metadata_expires_at = ? WHERE trace_id = ?", (EXPIRED, ids[-1])
    )  # what the purge reads, so that it empties the row: the edit itself shows
    await Retention(db).purge_metadata(now=PURGED_AT)
    await db.execute(
        "UPDATE traces SET metadata_expires_at = ? WHERE trace_id = ?", (FUTURE, ids[-1])
    )


async def _purged_in_the_future(db: Database, ids: list[str]) -> None:
    """A purge dated when the last row's retention has run out: a date still to come."""
    await Retention(db).purge_metadata(now=FUTURE)


@pytest.mark.parametrize(
    ("tamper", "named"),
    [
        (_mark_purged_and_move, -1),
        (_purged_then_filled, 2),
        (_purged_then_kept_column_edited, 2),
        (_purged_before_retention_ran_out, -1),
        (_purged_in_the_future, -1),
    ],
    ids=[
        "marked-purged-and-moved",
        "purged-then-filled",
        "purged-then-status-edited",
        "purged-early",
        "purged-in-the-future",
    ],
)
async def test_a_rewritten_purged_row_is_named(
    store: Store, database_url: str, tmp_path: Path, tamper: Tamper, named: int
) -> None:
    ids = await ledger_of(store)
    await Retention(store.db).purge_metadata(now=PURGED_AT)  # a genuine purge verifies
    status, output = audit_verify(database_url, tmp_path)
    assert status == 0, output
    await tamper(store.db, ids)
    status, output = audit_verify(database_url, tmp_path)
    assert status == 1, output
    assert any(line.startswith("edited:") and ids[named] in line for line in output.splitlines())


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("personal_data", None),
        ("subject_sha256", "cd" * 32),
        ("cache_read_tokens", 0),
        ("cache_creation_tokens", None),
        ("ignored_features", ""),
        ("metadata_expires_at", FUTURE + 1),
    ],
)
async def test_each_column_erasure_and_exports_read_is_chained(
    store: Store, database_url: str, tmp_path: Path, column: str, value: object
) -> None:
    ids = await ledger_of(store)
    await store.db.execute(f"UPDATE traces SET {column} = ? WHERE trace_id = ?", (value, ids[3]))
    status, output = audit_verify(database_url, tmp_path)
    assert status == 1, output
    assert any(line.startswith("edited:") and ids[3] in line for line in output.splitlines())


async def test_a_forged_row_without_a_place_is_chained_as_suspect_and_named(
    store: Store, database_url: str, tmp_path: Path
) -> None:
    ids = await ledger_of(store, 3)
    forged = trace(trace_id="trc_forged")
    await store.db.execute(
        f"INSERT INTO traces ({', '.join(TRACE_COLUMNS)}) VALUES ({', '.join('?' * len(TRACE_COLUMNS))})",
        trace_row(forged),
    )
    await chain_pending(store.db, settled_before=0.0)  # what a gateway does when it starts
    await write(store, trace())
    rows = await chained_rows(store.db)
    assert [r["trace_id"] for r in rows][3] == "trc_forged" and rows[3]["chain_suspect"] == 1
    view = await store.get_trace("trc_forged")
    assert view is not None and view["evidence"]["chain_suspect"] is True
    status, output = audit_verify(database_url, tmp_path)
    assert status == 1, output
    assert [line for line in output.splitlines() if not line.startswith("suspect:")] == []
    assert "trc_forged (seq 4)" in output and ids[2] in output, output


async def test_an_interrupted_call_of_a_known_process_joins_unmarked(store: Store) -> None:
    call = trace(CallStatus.IN_PROGRESS, instance_id="gw_gone")
    await store.heartbeat("gw_gone", 0.0)
    await store.write_traces([open_row(call)], [])
    stranger = trace(CallStatus.IN_PROGRESS, instance_id="gw_never_registered")
    await store.write_traces([open_row(stranger)], [])
    await store.mark_interrupted(live_after=1.0, now=1.0)
    await chain_pending(store.db, settled_before=1.0)
    suspect = {r["trace_id"]: r["chain_suspect"] for r in await chained_rows(store.db)}
    assert suspect == {call.trace_id: None, stranger.trace_id: 1}
    await store.mark_interrupted(live_after=1.0, now=2.0)
    assert await store.db.fetch("SELECT trace_id FROM chain_admitted") == []  # chained: done


async def test_rows_chained_under_version_1_still_verify_under_it(
    database_url: str, tmp_path: Path
) -> None:
    """A ledger from before migration 12: rows chained under version 1 (purged or not) and a
    final row without a place. After the upgrade they verify, and the unplaced row joins
    the chain unmarked; an edit of a version-1 row is still named."""
    db = open_database(database_url)
    await db.open()
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(migration_runner, "MIGRATIONS", tuple(m for m in MIGRATIONS if m[0] < 12))
            await Store(db).migrate()
        old = [trace(metadata_expires_at=EXPIRED) for _ in range(3)]
        link = "0" * 64
        then = [name for name, _ in _OPEN_CALL_TYPES]  # the columns of `traces` at the time
        columns = (*then, "chain_seq", "chain_link")
        for seq, record in enumerate(old, start=1):
            row = dict(zip(TRACE_COLUMNS, trace_row(record), strict=True))
            link = link_after(link, version_1_body({c: row[c] for c in VERSION_1_COLUMNS}))
            await db.execute(
                f"INSERT INTO traces ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                (*(row[c] for c in then), seq, link),
            )
        unplaced = dict(zip(TRACE_COLUMNS, trace_row(trace()), strict=True))
        await db.execute(
            f"INSERT INTO traces ({', '.join(then)}) VALUES ({', '.join('?' * len(then))})",
            tuple(unplaced[c] for c in then),
        )
        store = Store(db)
        assert (await store.migrate())[0] == 12
        await Retention(db).purge_metadata(now=PURGED_AT)  # version-1 rows purged
        await write(store, trace())
        rows = await chained_rows(db)
        assert [r["chain_version"] for r in rows] == [None, None, None, 2, 2]
        assert rows[3]["trace_id"] == unplaced["trace_id"] and rows[3]["chain_suspect"] is None
        status, output = audit_verify(database_url, tmp_path)
        assert status == 0, output
        await db.execute(
            "UPDATE traces SET endpoint_id = 'us-east-1' WHERE trace_id = ?", (old[1].trace_id,)
        )
        status, output = audit_verify(database_url, tmp_path)
        assert status == 1 and "edited:" in output and old[1].trace_id in output, output
    finally:
        await db.close()

"""Every ledger test runs twice: on a SQLite file and on a fresh PostgreSQL database."""

from __future__ import annotations

import contextlib
import itertools
import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from llmeu.calls.record import CallStatus, TraceRecord, new_trace_id
from llmeu.ledger.database import Database
from llmeu.ledger.opening import open_database
from llmeu.ledger.sqlite import SqliteDatabase
from llmeu.ledger.store import Store
from llmeu.ledger.trace_writes import trace_row
from llmeu.ledger.writer import Ledger
from tests.support.databases import postgres_database, unreachable

_clock = itertools.count()


@pytest.fixture(
    params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)],
)
async def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'ledger.db'}"
        return
    async with postgres_database() as url:
        yield url


def sqlite_path(database_url: str) -> Path | None:
    return (
        Path(database_url.removeprefix("sqlite:///")) if database_url.startswith("sqlite") else None
    )


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[Database]:
    path = sqlite_path(database_url)
    # A short busy timeout: a locked SQLite file shows as unavailable within 0.2 s.
    database = (
        open_database(database_url) if path is None else SqliteDatabase(path, busy_timeout=0.2)
    )
    await database.open()
    yield database
    await database.close()


@pytest.fixture
async def store(db: Database) -> Store:
    ledger_store = Store(db)
    await ledger_store.migrate()
    return ledger_store


@pytest.fixture
async def ledger(store: Store) -> AsyncIterator[Ledger]:
    writer = Ledger(store, buffer_limit=50, max_backoff=0.05)
    writer.start()
    yield writer
    await writer.stop(timeout=5)


def trace(status: CallStatus = CallStatus.COMPLETED, **fields: Any) -> TraceRecord:
    """A finished call; `received_at` increases by one second per record unless given."""
    received = fields.pop("received_at", 1_700_000_000.0 + next(_clock))
    record = TraceRecord(
        trace_id=fields.pop("trace_id", new_trace_id()),
        key_id=fields.pop("key_id", "kalice"),
        route="chat.completions",
        request_model=fields.pop("request_model", "fake-model"),
        stream=fields.pop("stream", True),
        received_at=received,
        instance_id=fields.pop("instance_id", "gw_test"),
        status=status,
    )
    if status is not CallStatus.IN_PROGRESS:
        record.finished_at = received + 0.5
        record.endpoint_id = "fakeprov-fr-a"
        record.provider = "fakeprov"
        record.model_used = "fake"
        record.sovereignty_class = "eu_sovereign"
        record.input_tokens = 10
        record.output_tokens = 20
        record.cost_eur = 0.00005
    for name, value in fields.items():
        setattr(record, name, value)
    return record


async def write(store: Store, *records: TraceRecord) -> None:
    """Finished traces straight to the store, in one transaction."""
    await store.write_traces([], [trace_row(r) for r in records])


@contextlib.asynccontextmanager
async def outage(database_url: str) -> AsyncIterator[None]:
    """The database cannot take writes, for real: another process's lock on the SQLite
    file, or a PostgreSQL database that refuses connections and has lost its sessions."""
    path = sqlite_path(database_url)
    if path is None:
        async with unreachable(database_url):
            yield
        return
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


def now() -> float:
    return time.time()

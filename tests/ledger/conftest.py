"""Every ledger test runs twice: on a SQLite file and on a fresh PostgreSQL database."""

from __future__ import annotations

import itertools
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from llmeu.ledger.database import Database, open_database
from llmeu.ledger.records import CallStatus, TraceRecord, new_trace_id
from llmeu.ledger.store import Store
from llmeu.ledger.writer import Ledger
from tests.support.databases import postgres_database

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


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[Database]:
    database = open_database(database_url)
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
    from llmeu.ledger.store import trace_row

    await store.write_traces([], [trace_row(r) for r in records])


def now() -> float:
    return time.time()

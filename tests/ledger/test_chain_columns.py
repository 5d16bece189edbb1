"""Every column that erasure, the metadata purge, exports and compliance reports read is
inside the hash chain: what they act on or hand to a DPO cannot be edited unnoticed.

The readers are run against a real ledger and the SQL they send is read for the columns of
`traces` it names, so a column a reader starts to read tomorrow is held to this too; and
every column of `traces` is chained, content, or the chain's own bookkeeping, so a column a
migration adds must take a side."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from llmeu.api.services.exports import EXPORTS, Period, render
from llmeu.evidence.chain import CHAINED_COLUMNS
from llmeu.ledger.database import Database, Followup, Params, Row, Statement
from llmeu.ledger.retention import Retention, calls_between
from llmeu.ledger.store import Store
from llmeu.routing.load import load_config
from tests.ledger.conftest import trace, write

CONTENT = {"prompt", "completion", "content_expires_at"}
"""Never chained: purging or erasing content must not break the chain."""
BOOKKEEPING = {"chain_seq", "chain_link", "chain_version", "metadata_sha256"}
"""The chain's own: a row's place and what its link covers."""
PURGED_AT = {"metadata_purged_at"}
"""Set after the row is chained; what it claims (an empty row, a purge after the retention
ran out) is what the verifier checks (`llmeu.evidence.chained_rows`)."""


class Recording(Database):
    """A database that keeps the SQL it was sent."""

    def __init__(self, db: Database):
        self.db = db
        self.dialect = db.dialect
        self.sql: list[str] = []

    async def open(self, *, create: bool = True) -> None:
        await self.db.open(create=create)

    async def close(self) -> None:
        await self.db.close()

    async def fetch(self, sql: str, params: Params = ()) -> list[Row]:
        self.sql.append(sql)
        return await self.db.fetch(sql, params)

    async def transaction(
        self, statements: Sequence[Statement], followup: Followup | None = None
    ) -> list[int]:
        self.sql.extend(sql for sql, _ in statements)
        assert followup is None, "the readers here end no transaction with a followup"
        return await self.db.transaction(statements)

    def describe(self) -> str:
        return self.db.describe()


async def trace_columns(db: Database) -> set[str]:
    rows = await db.fetch("SELECT * FROM traces")
    return set(rows[0])


async def test_every_column_of_a_trace_is_chained_content_or_bookkeeping(store: Store) -> None:
    await write(store, trace())
    columns = await trace_columns(store.db)
    assert set(CHAINED_COLUMNS) <= columns
    assert columns - set(CHAINED_COLUMNS) - CONTENT - BOOKKEEPING - PURGED_AT == set()


async def test_every_column_erasure_purges_and_exports_read_is_chained(store: Store) -> None:
    await write(
        store, *(trace(subject_sha256="ab" * 32, metadata_expires_at=1.0) for _ in range(3))
    )
    recording = Recording(store.db)
    retention = Retention(recording)
    await retention.erase_subject("alice", "dpo", 100.0)
    await retention.purge_metadata(100.0)
    await Store(recording).purge_content(100.0)
    calls = await calls_between(recording, 0.0, 4e9)
    keys: list[Any] = await store.list_keys()
    config = load_config(None, host="test", local_country="FR")
    for name in EXPORTS:  # reports are made from what `calls_between` read, and nothing else
        render(name, calls, keys, config.catalog, Period(0.0, 4e9), config.tool_servers)
    columns = await trace_columns(store.db)
    read = {word for sql in recording.sql for word in re.findall(r"\w+", sql)} & columns
    assert {"subject_sha256", "metadata_expires_at", "endpoint_id"} <= read  # it did read
    assert read - set(CHAINED_COLUMNS) - CONTENT - PURGED_AT == set()

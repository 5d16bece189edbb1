"""Stored responses on SQLite and PostgreSQL: the creating key's alone, gone when expired,
purged with expired content, erased with their data subject."""

from __future__ import annotations

from llmeu.ledger.retention import Retention, subject_digest
from llmeu.ledger.store import Store
from llmeu.ledger.stored_responses import StoredResponse, StoredResponses


def stored(
    response_id: str, key_id: str, expires_at: float, subject: str | None = None
) -> StoredResponse:
    return StoredResponse(
        response_id=response_id, key_id=key_id,
        subject_sha256=subject_digest(subject) if subject else None, created_at=1.0,
        expires_at=expires_at, response=f'{{"id": "{response_id}"}}', input_items="[]",
        conversation="[]",
    )  # fmt: skip


async def test_a_stored_response_is_its_keys_alone_until_it_expires(store: Store) -> None:
    responses = StoredResponses(store.db)
    await responses.save(stored("resp_1", "key_a", expires_at=100.0))
    found = await responses.get("resp_1", "key_a", now=50.0)
    assert found is not None and found.response == '{"id": "resp_1"}'
    assert await responses.get("resp_1", "key_b", now=50.0) is None
    assert await responses.get("resp_1", "key_a", now=100.0) is None  # expired
    assert await responses.delete("resp_1", "key_b", now=50.0) is False
    assert await responses.delete("resp_1", "key_a", now=50.0) is True
    assert await responses.get("resp_1", "key_a", now=50.0) is None


async def test_expired_responses_are_purged_with_expired_content(store: Store) -> None:
    responses = StoredResponses(store.db)
    await responses.save(stored("resp_old", "k", expires_at=10.0))
    await responses.save(stored("resp_new", "k", expires_at=1000.0))
    await store.purge_content(now=20.0)
    rows = await store.db.fetch("SELECT response_id FROM stored_responses")
    assert [r["response_id"] for r in rows] == ["resp_new"]


async def test_erasing_a_subject_erases_their_stored_responses(store: Store) -> None:
    responses = StoredResponses(store.db)
    await responses.save(stored("resp_ana", "k", expires_at=1000.0, subject="ana"))
    await responses.save(stored("resp_bo", "k", expires_at=1000.0, subject="bo"))
    await responses.save(stored("resp_none", "k", expires_at=1000.0))
    await Retention(store.db).erase_subject("ana", requested_by="admin", now=5.0)
    rows = await store.db.fetch("SELECT response_id FROM stored_responses ORDER BY response_id")
    assert [r["response_id"] for r in rows] == ["resp_bo", "resp_none"]

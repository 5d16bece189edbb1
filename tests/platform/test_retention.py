"""Metadata retention, legal holds and erasure by data subject, on SQLite and PostgreSQL."""

from __future__ import annotations

import time
from typing import Any

from llmeu.api.app import App
from llmeu.ledger.retention import Retention, subject_digest
from tests.platform.conftest import Client, TenantFactory, chat

RECORDS = {
    "allow_classes": ["on_premise", "eu_sovereign"],
    "max_retention": "P0D",
    "store_content": "P1D",
    "keep_metadata": "PT1H",
}
HOUR = 3600.0


async def _traces(app: App) -> dict[str, dict[str, Any]]:
    await app.gateway.ledger.flush()
    rows = await app.gateway.store.db.fetch("SELECT * FROM traces", ())
    return {r["trace_id"]: dict(r) for r in rows}


async def _records_key(admin: Client, tenant: TenantFactory, name: str) -> tuple[Client, str]:
    put = await admin.put("/v1/platform/policies/records", json=RECORDS)
    assert put.status_code == 200, put.text
    assert put.json()["keep_metadata"] == "PT1H"
    client, key = await tenant(name, policy_id="records")
    return client, key["id"]


async def test_metadata_past_keep_metadata_is_purged_to_a_placeholder_row(
    app: App, admin: Client, tenant: TenantFactory
) -> None:
    client, _ = await _records_key(admin, tenant, "short")
    served = await chat(client, "the weather in Lyon")
    trace_id = served.headers["x-llmeu-trace-id"]
    default = await chat(admin, "kept six months")  # the admin key's policy keeps the default
    row = (await _traces(app))[trace_id]
    assert row["metadata_expires_at"] == row["received_at"] + HOUR
    default_row = (await _traces(app))[default.headers["x-llmeu-trace-id"]]
    assert default_row["metadata_expires_at"] == default_row["received_at"] + 180 * 86400

    retention = Retention(app.gateway.store.db)
    assert await retention.purge_metadata(time.time()) == 0  # not yet
    assert await retention.purge_metadata(time.time() + 2 * HOUR) == 1
    purged = (await _traces(app))[trace_id]
    assert purged["metadata_purged_at"] is not None
    assert purged["status"] == "completed" and purged["received_at"] == row["received_at"]
    for column in ("provider", "endpoint_id", "cost_eur", "input_tokens", "prompt",
                   "completion", "policy_id", "model_used"):  # fmt: skip
        assert purged[column] is None, column
    assert purged["request_model"] == "" and purged["attempts"] == "[]"
    assert (await _traces(app))[default.headers["x-llmeu-trace-id"]]["provider"] is not None
    assert await retention.purge_metadata(time.time() + 2 * HOUR) == 0  # once


async def test_a_legal_hold_keeps_metadata_until_it_is_released_and_stays_on_record(
    app: App, admin: Client, tenant: TenantFactory
) -> None:
    held_client, held_key = await _records_key(admin, tenant, "held")
    free_client, _ = await tenant("free", policy_id="records")
    held_trace = (await chat(held_client)).headers["x-llmeu-trace-id"]
    free_trace = (await chat(free_client)).headers["x-llmeu-trace-id"]

    refused = await held_client.post("/v1/platform/holds", json={"reason": "x"})
    assert refused.status_code == 403
    unknown = await admin.post("/v1/platform/holds", json={"key_id": "k0", "reason": "x"})
    assert unknown.status_code == 404
    placed = await admin.post(
        "/v1/platform/holds", json={"key_id": held_key, "reason": "litigation 2026-17"}
    )
    assert placed.status_code == 201, placed.text
    hold = placed.json()
    assert (hold["scope"], hold["active"], hold["created_by"]) == ("key", True, "admin")

    retention = Retention(app.gateway.store.db)
    later = time.time() + 2 * HOUR
    assert await retention.purge_metadata(later) == 1
    traces = await _traces(app)
    assert traces[held_trace]["metadata_purged_at"] is None
    assert traces[free_trace]["metadata_purged_at"] is not None

    everything = await admin.post("/v1/platform/holds", json={"reason": "regulator inquiry"})
    assert everything.json()["scope"] == "all"
    released = await admin.delete(f"/v1/platform/holds/{hold['id']}")
    assert released.status_code == 200 and released.json()["active"] is False
    assert await retention.purge_metadata(later) == 0  # the hold on all still holds
    await admin.delete(f"/v1/platform/holds/{everything.json()['id']}")
    assert await retention.purge_metadata(later) == 1
    again = await admin.delete(f"/v1/platform/holds/{hold['id']}")
    assert again.status_code == 404

    listing = (await admin.get("/v1/platform/holds")).json()["data"]
    assert [(h["reason"], h["active"], h["released_by"]) for h in listing] == [
        ("litigation 2026-17", False, "admin"),
        ("regulator inquiry", False, "admin"),
    ]


async def test_erasure_removes_exactly_one_subjects_content_and_keeps_metadata(
    app: App, admin: Client, tenant: TenantFactory
) -> None:
    client, _ = await _records_key(admin, tenant, "app")
    alice = [
        (await chat(client, "alice one", user="alice@example.eu")).headers["x-llmeu-trace-id"],
        (await chat(client, "alice two", metadata={"user_id": "alice@example.eu"})).headers[
            "x-llmeu-trace-id"
        ],
    ]
    bob = (await chat(client, "bob", user="bob/7")).headers["x-llmeu-trace-id"]
    anonymous = (await chat(client, "no user")).headers["x-llmeu-trace-id"]
    before = await _traces(app)
    assert before[alice[0]]["subject_sha256"] == subject_digest("alice@example.eu")
    assert all(before[t]["prompt"] for t in (*alice, bob, anonymous))
    assert "alice@example.eu" not in str(before)  # only the digest is kept

    assert (await client.delete("/v1/platform/subjects/alice@example.eu")).status_code == 403
    erased = await admin.delete("/v1/platform/subjects/alice@example.eu")
    assert erased.status_code == 200, erased.text
    assert erased.json()["traces_erased"] == 2
    after = await _traces(app)
    for trace_id in alice:
        assert after[trace_id]["prompt"] is None and after[trace_id]["completion"] is None
        assert after[trace_id]["provider"] == before[trace_id]["provider"]
        assert after[trace_id]["cost_eur"] == before[trace_id]["cost_eur"]
    for trace_id in (bob, anonymous):
        assert after[trace_id] == before[trace_id]

    slashed = await admin.delete("/v1/platform/subjects/bob%2F7")  # an encoded `/` is in the id
    assert slashed.json()["traces_erased"] == 1
    assert (await _traces(app))[bob]["prompt"] is None

    recorded = (await admin.get("/v1/platform/erasures")).json()["data"]
    assert [(e["subject_sha256"], e["traces_erased"], e["requested_by"]) for e in recorded] == [
        (subject_digest("alice@example.eu"), 2, "admin"),
        (subject_digest("bob/7"), 1, "admin"),
    ]

"""The answer cache in the call, in process: what it serves, to whom, and what it never keeps."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from llmeu.api.app import App
from llmeu.calls.record import TraceRecord
from llmeu.ledger.stored_responses import StoredResponse, StoredResponses
from llmeu.ledger.writer import Ledger
from tests.cache.conftest import CHAT, Client, Tenant, body, chat, upstream_calls
from tests.support.processes import FakeUpstream


async def test_a_repeated_call_is_answered_from_the_cache(
    app: App, tenant: Tenant, fake_upstream: FakeUpstream
) -> None:
    client, _ = await tenant("cached")
    first = await chat(client, "hello there")
    second = await chat(client, "hello there")
    assert upstream_calls(fake_upstream) == 1
    one, two = first.json(), second.json()
    assert two["choices"] == one["choices"]
    assert two["usage"] == one["usage"]
    assert "cache" not in one["llmeu"]
    routing = two["llmeu"]
    assert routing["cache"] == {
        "hit": True, "kind": "exact", "source_trace_id": one["llmeu"]["trace_id"],
        "saved_eur": one["llmeu"]["cost_estimate"]["amount"],
    }  # fmt: skip
    assert routing["trace_id"] == second.headers["x-llmeu-trace-id"] != one["llmeu"]["trace_id"]
    assert routing["cost_estimate"]["amount"] == 0.0
    assert {
        k: v for k, v in routing.items() if k not in ("trace_id", "cache", "cost_estimate")
    } == {k: v for k, v in one["llmeu"].items() if k not in ("trace_id", "cost_estimate")}
    trace = (await client.get(f"/v1/platform/traces/{routing['trace_id']}")).json()
    assert trace["status"] == "completed" and trace["cached"] is True
    assert trace["cache"]["source_trace_id"] == one["llmeu"]["trace_id"]
    assert trace["usage"]["cost_eur"] == 0.0 and trace["attempts"] == []
    usage = (await client.get("/v1/platform/usage")).json()["data"]
    assert sum(row["requests"] for row in usage) == 2
    assert sum(row["cached"] for row in usage) == 1
    assert sum(row["saved_eur"] for row in usage) == pytest.approx(trace["cache"]["saved_eur"])


@pytest.mark.parametrize(
    ("policy_id", "calls"),
    [("cached", 2), ("shared", 1), ("uncached", 2), ("eu-strict", 2)],
    ids=["scope-key", "scope-policy", "no-cache-section", "p0d-default"],
)
async def test_whose_calls_share_answers(
    tenant: Tenant, fake_upstream: FakeUpstream, policy_id: str, calls: int
) -> None:
    """Two keys, one prompt: answers are the key's own under `scope: key`, the policy's under
    `scope: policy`, and nobody's without a `cache:` section or under a P0D policy."""
    (first, _), (second, _) = await tenant(policy_id), await tenant(policy_id)
    one = await chat(first, "the same prompt")
    two = await chat(second, "the same prompt")
    assert upstream_calls(fake_upstream) == calls
    assert ("cache" in two.json()["llmeu"]) is (calls == 1)
    assert "cache" not in one.json()["llmeu"]


async def test_a_p0d_policy_never_caches(
    app: App, tenant: Tenant, fake_upstream: FakeUpstream
) -> None:
    client, _ = await tenant("eu-strict")
    for _ in range(3):
        await chat(client, "again and again", stream=True)
        await chat(client, "again and again")
    assert upstream_calls(fake_upstream) == 6
    stats = await app.gateway.answers.stats()
    assert (stats["entries"], stats["misses"], sum(stats["hits"].values())) == (0, 0, 0)


async def test_a_changed_policy_reads_nothing_its_earlier_version_kept(
    admin: Client, tenant: Tenant, fake_upstream: FakeUpstream
) -> None:
    client, _ = await tenant("cached")
    await chat(client, "before the change")
    put = await admin.put("/v1/platform/policies/cached", json={
        "allow_classes": ["on_premise", "eu_sovereign"], "max_retention": "P0D",
        "store_content": "P1D", "cache": {"ttl": "PT2H"},
    })  # fmt: skip
    assert put.status_code == 200, put.text
    after = await chat(client, "before the change")
    assert "cache" not in after.json()["llmeu"]
    assert upstream_calls(fake_upstream) == 2
    again = await chat(client, "before the change")
    assert again.json()["llmeu"]["cache"]["source_trace_id"] == after.json()["llmeu"]["trace_id"]


async def test_a_reloaded_configuration_that_changes_the_policy_drops_its_answers(
    app: App, admin: Client, tenant: Tenant, fake_upstream: FakeUpstream
) -> None:
    client, _ = await tenant("cached")
    await chat(client, "before the reload")
    config = app.gateway.settings.config_file
    assert config is not None
    config.write_text(config.read_text().replace("cache: {ttl: PT1H}\n", "cache: {ttl: PT2H}\n", 1))
    reloaded = await admin.post("/v1/platform/reload")
    assert reloaded.status_code == 200, reloaded.text
    assert (await app.gateway.answers.stats())["entries"] == 0  # dropped, not just unread
    assert "cache" not in (await chat(client, "before the reload")).json()["llmeu"]
    assert upstream_calls(fake_upstream) == 2


async def test_an_erasure_removes_its_subjects_answers(
    admin: Client, tenant: Tenant, fake_upstream: FakeUpstream
) -> None:
    client, _ = await tenant("cached")
    await chat(client, "alice asks", user="alice")
    await chat(client, "bob asks", user="bob")
    erased = await admin.delete("/v1/platform/subjects/alice")
    assert erased.status_code == 200, erased.text
    assert erased.json()["cache_entries_erased"] == 1
    assert "cache" not in (await chat(client, "alice asks", user="alice")).json()["llmeu"]
    assert "cache" in (await chat(client, "bob asks", user="bob")).json()["llmeu"]
    assert upstream_calls(fake_upstream) == 3


@pytest.mark.parametrize(
    ("ask", "reads", "keeps"),
    [
        ({"json": {"llmeu": {"cache": False}}}, False, False),
        ({"headers": {"cache-control": "no-cache"}}, False, True),
        ({"headers": {"cache-control": "no-store"}}, True, False),
        ({"headers": {"cache-control": "max-age=0, No-Store"}}, True, False),
    ],
    ids=["llmeu-cache-false", "no-cache", "no-store", "no-store-among-others"],
)
async def test_a_request_opts_out(
    tenant: Tenant, fake_upstream: FakeUpstream, ask: dict[str, Any], reads: bool, keeps: bool
) -> None:
    """`cache: false` neither reads nor keeps, `no-cache` keeps the fresh answer without
    reading one, `no-store` reads without keeping."""
    client, _ = await tenant("cached")

    async def asking(text: str) -> bool:
        answer = await client.post(CHAT, json={**body(text), **ask.get("json", {})},
                                   headers=ask.get("headers", {}))  # fmt: skip
        assert answer.status_code == 200, answer.text
        return "cache" in answer.json()["llmeu"]

    await chat(client, "kept before")
    assert await asking("kept before") is reads
    assert await asking("asked first") is False
    assert ("cache" in (await chat(client, "asked first")).json()["llmeu"]) is keeps
    assert upstream_calls(fake_upstream) == 2 + (not reads) + (not keeps)


async def test_masked_values_come_back_as_each_call_sent_them(
    tenant: Tenant, fake_upstream: FakeUpstream
) -> None:
    """The cache keeps what the upstream saw and produced: placeholders. A hit's answer gets
    the values of its own call back, never those of the call that produced it."""
    client, _ = await tenant("masked")
    first = await chat(client, "mail ann@example.org [[reply=echo]]")
    second = await chat(client, "mail bob@example.net [[reply=echo]]")
    assert upstream_calls(fake_upstream) == 1
    assert "ann@example.org" in first.json()["choices"][0]["message"]["content"]
    answer = second.json()["choices"][0]["message"]["content"]
    assert "bob@example.net" in answer and "ann@example.org" not in answer
    assert second.json()["llmeu"]["cache"]["kind"] == "exact"


async def test_a_legal_hold_does_not_extend_an_entry(
    admin: Client, tenant: Tenant, fake_upstream: FakeUpstream
) -> None:
    client, key_id = await tenant("brief")
    held = await admin.post("/v1/platform/holds", json={"key_id": key_id, "reason": "audit"})
    assert held.status_code == 201, held.text
    await chat(client, "short lived")
    assert "cache" in (await chat(client, "short lived")).json()["llmeu"]
    await asyncio.sleep(1.2)  # past the policy's one-second ttl
    assert "cache" not in (await chat(client, "short lived")).json()["llmeu"]
    assert upstream_calls(fake_upstream) == 2


async def test_cache_stats_clear_and_metrics(app: App, admin: Client, tenant: Tenant) -> None:
    client, _ = await tenant("cached")
    await chat(client, "counted")
    await chat(client, "counted")
    stats = (await admin.get("/v1/platform/cache")).json()
    assert stats["backend"] == "memory" and stats["shared"] is False
    assert (stats["entries"], stats["hits"]["exact"], stats["misses"]) == (1, 1, 1)
    assert stats["hit_ratio"] == 0.5
    metrics = (await admin.get("/metrics")).text
    assert 'llmeu_cache_lookups_total{outcome="exact"} 1.0' in metrics
    assert 'llmeu_cache_entries{backend="memory"} 1.0' in metrics
    assert (await client.get("/v1/platform/cache")).status_code == 403  # the admin's only
    cleared = await admin.delete("/v1/platform/cache")
    assert cleared.json()["entries"] == 1
    assert "cache" not in (await chat(client, "counted")).json()["llmeu"]


STORED = {"model": "fake-model", "input": "same again", "store": True}


@pytest.mark.parametrize(
    ("path", "request_body", "suspends", "open_rows"),
    [
        (CHAT, body("same again"), False, 0),
        ("/v1/responses", STORED, False, 0),
        ("/v1/responses", STORED, True, 1),
        (CHAT, body("same again", stream=True), False, 1),
    ],
    ids=["whole-answer", "stored-answer", "stored-answer-that-waits", "stream"],
)
async def test_a_hit_leaves_an_in_progress_row_only_where_the_loop_turns_before_its_trace(
    app: App,
    tenant: Tenant,
    monkeypatch: pytest.MonkeyPatch,
    path: str,
    request_body: dict[str, Any],
    suspends: bool,
    open_rows: int,
) -> None:
    """An in-progress row is for a crash to find the call, and only the ledger's writer
    writes it, on a turn of the loop: a whole answer from the cache that reaches its final
    trace without one (its stored response written at once) makes none; one that waits
    (the store's write lock taken: `suspends`), and a stream, leave one."""
    client, _ = await tenant("cached")
    first = await client.post(path, json=request_body)
    assert first.status_code == 200, first.text
    began: list[tuple[str, str]] = []
    begin = Ledger.begin

    def recording(
        ledger: Ledger, record: TraceRecord, *, awaited: bool = False
    ) -> asyncio.Future[None]:
        began.append((record.trace_id, record.status.value))
        return begin(ledger, record, awaited=awaited)

    monkeypatch.setattr(Ledger, "begin", recording)
    if suspends:
        save = StoredResponses.save

        async def waiting(rows: StoredResponses, stored: StoredResponse) -> None:
            await asyncio.sleep(0)
            await save(rows, stored)

        monkeypatch.setattr(StoredResponses, "save", waiting)
    hit = await client.post(path, json=request_body)
    assert hit.status_code == 200, hit.text
    trace_id = hit.headers["x-llmeu-trace-id"]
    trace = (await client.get(f"/v1/platform/traces/{trace_id}")).json()
    assert trace["status"] == "completed" and trace["cached"] is True
    assert began == [(trace_id, "in_progress")] * open_rows

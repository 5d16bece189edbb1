"""A tenant key sees only its own traces and usage; the admin key sees all of them."""

from __future__ import annotations

from typing import Any

import pytest

from tests.platform.conftest import Client, TenantFactory, chat


async def make_calls(client: Client, completed: int, rejected: int) -> list[str]:
    trace_ids = []
    for _ in range(completed):
        response = await chat(client)
        assert response.status_code == 200, response.text
        trace_ids.append(response.json()["llmeu"]["trace_id"])
    for _ in range(rejected):
        response = await client.post(
            "/v1/chat/completions", json={"model": "no-such-model", "messages": []}
        )
        assert response.status_code in (400, 404)
        trace_ids.append(response.headers["x-llmeu-trace-id"])
    return trace_ids


@pytest.fixture
async def two_tenants(tenant: TenantFactory) -> dict[str, Any]:
    alice, alice_key = await tenant("alice")
    bob, bob_key = await tenant("bob")
    return {
        "alice": alice, "alice_id": alice_key["id"],
        "bob": bob, "bob_id": bob_key["id"],
        "alice_traces": await make_calls(alice, completed=3, rejected=1),
        "bob_traces": await make_calls(bob, completed=2, rejected=2),
    }  # fmt: skip


def not_found_shape(response: Any, trace_id: str) -> tuple[int, dict[str, Any]]:
    body = response.json()
    body["error"]["message"] = body["error"]["message"].replace(trace_id, "ID")
    return response.status_code, body


async def test_another_tenants_trace_is_404_exactly_like_a_missing_one(
    two_tenants: dict[str, Any],
) -> None:
    alice: Client = two_tenants["alice"]
    bob_trace = two_tenants["bob_traces"][0]
    foreign = await alice.get(f"/v1/platform/traces/{bob_trace}")
    missing_id = "trc_" + "0" * 28
    missing = await alice.get(f"/v1/platform/traces/{missing_id}")
    assert foreign.status_code == 404
    assert not_found_shape(foreign, bob_trace) == not_found_shape(missing, missing_id)
    assert foreign.headers == missing.headers
    own = await alice.get(f"/v1/platform/traces/{two_tenants['alice_traces'][0]}")
    assert own.status_code == 200 and own.json()["key_id"] == two_tenants["alice_id"]


@pytest.mark.parametrize(
    "query", ["", "?key_id={bob}", "?status=completed&key_id={bob}", "?limit=1"],
    ids=["plain", "asks-for-bob", "filtered-for-bob", "paged"],
)  # fmt: skip
async def test_a_tenant_lists_only_its_own_traces(two_tenants: dict[str, Any], query: str) -> None:
    alice: Client = two_tenants["alice"]
    url = "/v1/platform/traces" + query.format(bob=two_tenants["bob_id"])
    seen: list[str] = []
    while url:
        page = (await alice.get(url)).json()
        seen += [t["id"] for t in page["data"]]
        url = (
            "/v1/platform/traces?limit=1&cursor=" + page["next_cursor"] if page["has_more"] else ""
        )
    assert set(seen) <= set(two_tenants["alice_traces"])
    assert {(await alice.get(f"/v1/platform/traces/{i}")).json()["key_id"] for i in seen} == {
        two_tenants["alice_id"]
    }
    if "status" not in query:
        assert sorted(seen) == sorted(two_tenants["alice_traces"])


@pytest.mark.parametrize("group_by", ["day", "model", "endpoint", "key", "status",
                                      "sovereignty_class"])  # fmt: skip
async def test_a_tenant_counts_only_its_own_usage(
    two_tenants: dict[str, Any], admin: Client, group_by: str
) -> None:
    for name, completed, rejected in (("alice", 3, 1), ("bob", 2, 2)):
        client: Client = two_tenants[name]
        for query in (f"?group_by={group_by}", f"?group_by={group_by}&key_id=admin"):
            usage = (await client.get(f"/v1/platform/usage{query}")).json()
            assert usage["totals"]["requests"] == completed + rejected
            assert usage["totals"]["completed"] == completed
            assert usage["totals"]["rejected"] == rejected
            if group_by == "key":
                assert [r["key"] for r in usage["data"]] == [two_tenants[f"{name}_id"]]
    everything = (await admin.get(f"/v1/platform/usage?group_by={group_by}")).json()
    assert everything["totals"]["requests"] == 8
    only_bob = (await admin.get(f"/v1/platform/usage?key_id={two_tenants['bob_id']}")).json()
    assert only_bob["totals"]["requests"] == 4


async def test_the_admin_sees_every_trace_and_can_filter_by_key(
    two_tenants: dict[str, Any], admin: Client
) -> None:
    listed = (await admin.get("/v1/platform/traces?limit=100")).json()["data"]
    assert {t["id"] for t in listed} == set(two_tenants["alice_traces"] + two_tenants["bob_traces"])
    bob_only = (await admin.get(f"/v1/platform/traces?key_id={two_tenants['bob_id']}")).json()
    assert sorted(t["id"] for t in bob_only["data"]) == sorted(two_tenants["bob_traces"])
    trace = (await admin.get(f"/v1/platform/traces/{two_tenants['bob_traces'][0]}")).json()
    assert trace["key_id"] == two_tenants["bob_id"]


async def test_a_revoked_key_gets_401_on_its_next_call(
    tenant: TenantFactory, admin: Client
) -> None:
    carol, created = await tenant("carol")
    assert (await chat(carol)).status_code == 200
    revoked = await admin.delete(f"/v1/platform/keys/{created['id']}")
    assert revoked.status_code == 200 and revoked.json()["revoked"] is True
    for response in (await chat(carol), await carol.get("/v1/platform/traces")):
        assert response.status_code == 401
        assert response.json()["error"]["type"] == "authentication_error"
    assert (await admin.delete(f"/v1/platform/keys/{created['id']}")).status_code == 404

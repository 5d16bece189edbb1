"""Admin-only routes and tenant isolation on every platform route, on SQLite and PostgreSQL.

Two tenants: bob's policy stores content, and his calls (completed, rejected,
failed with an upstream error quoting his prompt) leave his key id, his key's
name, his trace ids and his prompt in the ledger. Alice then calls every
platform route in every way that names bob, and none of her answers may
carry any of it; the admin's answers do, which shows the canaries are there
to be found. A new platform route fails `test_every_platform_route_is_covered`
until it is added here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from llmeu.api.routes.platform import PLATFORM_ROUTES
from tests.ledger.conftest import database_url  # noqa: F401  (the parametrized fixture)
from tests.platform.conftest import (  # noqa: F401  (fixtures)
    Client,
    TenantFactory,
    admin,
    app,
    chat,
    tenant,
)

BOB_PROMPT = "BOB-PAYROLL-PROMPT-51d0"
BOB_NAME = "bob-payroll-team"
MISSING_TRACE = "trc_" + "0" * 28
WIDER_POLICY = {"allow_classes": ["global"], "max_retention": "P30D"}


@dataclass
class Tenants:
    alice: Client
    alice_id: str
    alice_traces: list[str]
    bob: Client
    bob_id: str
    bob_traces: list[str]

    def bob_canaries(self) -> list[str]:
        return [self.bob_id, BOB_NAME, BOB_PROMPT, *self.bob_traces]


async def calls(client: Client, prompt: str, completed: int = 1) -> list[str]:
    """A rejected call, a failed one (the upstream quotes the prompt), then completed ones."""
    outcomes = [
        (await client.post("/v1/chat/completions", json={"model": "no-such-model",
            "messages": [{"role": "user", "content": prompt}]}), 404),
        (await chat(client, f"{prompt} [[fault=echo]]"), 400),
    ]  # fmt: skip
    for _ in range(completed):
        outcomes.append((await chat(client, prompt), 200))

    for response, status in outcomes:
        assert response.status_code == status, response.text
    return [response.headers["x-llmeu-trace-id"] for response, _ in outcomes]


@pytest.fixture
async def tenants(tenant: TenantFactory) -> Tenants:  # noqa: F811
    alice, alice_key = await tenant("alice-team")
    bob, bob_key = await tenant(BOB_NAME, policy_id="eu-store")
    return Tenants(
        alice=alice,
        alice_id=alice_key["id"],
        alice_traces=await calls(alice, "alice asks"),
        bob=bob,
        bob_id=bob_key["id"],
        bob_traces=await calls(bob, BOB_PROMPT, completed=2),
    )


# Every platform route, as alice calls it: (method, path, body, expected status).
ALICE_CALLS = [
    ("GET", "/v1/platform/keys", None, 403),
    ("POST", "/v1/platform/keys", {"name": "alice-extra"}, 403),
    ("DELETE", "/v1/platform/keys/{bob_id}", None, 403),
    ("GET", "/v1/platform/me", None, 200),
    ("GET", "/v1/platform/policies", None, 200),
    ("GET", "/v1/platform/policies/eu-store", None, 200),
    ("PUT", "/v1/platform/policies/eu-store", WIDER_POLICY, 403),
    ("GET", "/v1/platform/endpoints", None, 200),
    ("POST", "/v1/platform/reload", None, 403),
    ("GET", "/v1/platform/usage", None, 200),
    ("GET", "/v1/platform/usage?group_by=key", None, 200),
    ("GET", "/v1/platform/usage?key_id={bob_id}", None, 200),
    ("GET", "/v1/platform/usage?group_by=key&key_id={bob_id}", None, 200),
    ("GET", "/v1/platform/usage?group_by=status&key_id={bob_id}", None, 200),
    ("GET", "/v1/platform/traces", None, 200),
    ("GET", "/v1/platform/traces?key_id={bob_id}", None, 200),
    ("GET", "/v1/platform/traces?status=failed&key_id={bob_id}", None, 200),
    ("GET", "/v1/platform/traces?limit=500&key_id={bob_id}", None, 200),
    ("GET", "/v1/platform/traces/{bob_trace}", None, 404),
    ("GET", "/v1/platform/traces/{bob_failed}", None, 404),
    ("GET", "/v1/platform/cache", None, 403),
    ("DELETE", "/v1/platform/cache", None, 403),
    ("GET", "/v1/platform/admin-events", None, 403),
    ("GET", "/v1/platform/admin-events?actor={bob_id}", None, 403),
]


def call_id(call: tuple[str, str, Any, int]) -> str:
    return f"{call[0]} {call[1]}"


TEMPLATES = {(method, template) for method, template, *_ in PLATFORM_ROUTES}


def route_of(method: str, path: str) -> tuple[str, str]:
    """The route table entry a path belongs to (a template ends with one `{name}` segment)."""
    bare = path.split("?")[0]
    if (method, bare) in TEMPLATES:
        return method, bare
    parent = bare.rsplit("/", 1)[0] + "/{"
    return next((m, t) for m, t in TEMPLATES if m == method and t.startswith(parent))


def test_every_platform_route_is_covered() -> None:
    covered = {route_of(method, path) for method, path, _, _ in ALICE_CALLS}
    assert covered == TEMPLATES


async def alice_calls(tenants: Tenants, call: tuple[str, str, Any, int]) -> httpx.Response:
    method, path, body, status = call
    url = path.format(
        bob_id=tenants.bob_id, bob_trace=tenants.bob_traces[2], bob_failed=tenants.bob_traces[1]
    )
    response = await tenants.alice.request(method, url, json=body)
    assert response.status_code == status, response.text
    return response


@pytest.mark.parametrize("call", ALICE_CALLS, ids=call_id)
async def test_alice_sees_nothing_of_bob_on_any_route(
    tenants: Tenants, call: tuple[str, str, Any, int]
) -> None:
    response = await alice_calls(tenants, call)
    for canary in tenants.bob_canaries():
        if canary not in str(response.url):  # a 404 may name the id alice sent, nothing more
            assert canary not in response.text
    if response.status_code == 403:
        assert response.json()["error"]["code"] == "role_forbidden"


async def test_the_admin_sees_what_alice_does_not(tenants: Tenants, admin: Client) -> None:  # noqa: F811
    paths = [
        "/v1/platform/keys",
        "/v1/platform/usage?group_by=key",
        "/v1/platform/traces?limit=500",
        f"/v1/platform/traces/{tenants.bob_traces[2]}",
    ]
    seen = " ".join([(await admin.get(path)).text for path in paths])
    for canary in tenants.bob_canaries():
        assert canary in seen


@pytest.mark.parametrize(
    "query", ["", "?group_by=key", "?key_id={bob}", "?group_by=key&key_id={bob}",
              "?group_by=model&key_id={bob}"],
)  # fmt: skip
async def test_usage_counts_only_the_callers_own_calls(tenants: Tenants, query: str) -> None:
    usage = (
        await tenants.alice.get("/v1/platform/usage" + query.format(bob=tenants.bob_id))
    ).json()
    totals = usage["totals"]
    assert (totals["requests"], totals["completed"], totals["rejected"], totals["failed"]) == (
        3, 1, 1, 1,
    )  # fmt: skip
    if "group_by=key" in query:
        assert [row["key"] for row in usage["data"]] == [tenants.alice_id]


@pytest.mark.parametrize("query", ["", "?key_id={bob}", "?status=failed&key_id={bob}"])
async def test_trace_lists_hold_only_the_callers_own_traces(tenants: Tenants, query: str) -> None:
    url = "/v1/platform/traces" + query.format(bob=tenants.bob_id)
    listed = (await tenants.alice.get(url)).json()["data"]
    assert listed and {t["id"] for t in listed} <= set(tenants.alice_traces)
    assert {t["key_id"] for t in listed} == {tenants.alice_id}


@pytest.mark.parametrize("which", [0, 1, 2], ids=["rejected", "failed", "completed"])
async def test_another_tenants_trace_is_a_404_like_a_missing_one(
    tenants: Tenants, which: int
) -> None:
    foreign_id = tenants.bob_traces[which]
    foreign = await tenants.alice.get(f"/v1/platform/traces/{foreign_id}")
    missing = await tenants.alice.get(f"/v1/platform/traces/{MISSING_TRACE}")
    assert foreign.status_code == missing.status_code == 404
    assert foreign.text.replace(foreign_id, "ID") == missing.text.replace(MISSING_TRACE, "ID")
    assert foreign.headers == missing.headers


async def test_admin_only_routes_refused_to_a_tenant_change_nothing(
    tenants: Tenants,
    admin: Client,  # noqa: F811
) -> None:
    before = {
        path: (await admin.get(path)).json()
        for path in ("/v1/platform/keys", "/v1/platform/policies")
    }
    for method, path, body, status in ALICE_CALLS:
        if status == 403:
            await alice_calls(tenants, (method, path, body, status))
    new_policy = await tenants.alice.put("/v1/platform/policies/alice-own", json=WIDER_POLICY)
    assert new_policy.status_code == 403
    assert (await admin.get("/v1/platform/policies/alice-own")).status_code == 404
    for path, was in before.items():
        assert (await admin.get(path)).json() == was
    assert (await tenants.bob.get("/v1/platform/me")).status_code == 200


async def test_me_names_only_the_calling_key(tenants: Tenants) -> None:
    me = await tenants.alice.get("/v1/platform/me")
    assert (me.json()["id"], me.json()["name"]) == (tenants.alice_id, "alice-team")
    assert "sk-llmeu-" not in me.text and "hash" not in me.text

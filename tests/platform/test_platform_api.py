"""The platform API's rules: admin-only routes, no streaming, validation, keys, policies.

These rules do not depend on the database, so they run on SQLite only; the
tenant-isolation and outage tests run on both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from llmeu.api.app import App
from llmeu.ledger.secrets import hash_token
from tests.platform.conftest import CHAT, Client, TenantFactory, chat

ROUTES = [
    ("GET", "/v1/platform/keys"),
    ("POST", "/v1/platform/keys"),
    ("DELETE", "/v1/platform/keys/knone"),
    ("GET", "/v1/platform/me"),
    ("GET", "/v1/platform/policies"),
    ("GET", "/v1/platform/policies/eu-strict"),
    ("PUT", "/v1/platform/policies/eu-strict"),
    ("GET", "/v1/platform/endpoints"),
    ("GET", "/v1/platform/usage"),
    ("GET", "/v1/platform/traces"),
    ("GET", "/v1/platform/traces/trc_none"),
    ("GET", "/v1/platform/admin-events"),
]
ADMIN_ONLY = [
    ("GET", "/v1/platform/keys"),
    ("POST", "/v1/platform/keys"),
    ("DELETE", "/v1/platform/keys/knone"),
    ("PUT", "/v1/platform/policies/eu-strict"),
    ("GET", "/v1/platform/admin-events"),
]


@pytest.fixture
def database_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ledger.db'}"


def route_id(route: tuple[str, str]) -> str:
    return f"{route[0]} {route[1]}"


@pytest.mark.parametrize("route", ROUTES, ids=route_id)
@pytest.mark.parametrize("where", ["query", "body"])
async def test_no_platform_route_streams(admin: Client, route: tuple[str, str], where: str) -> None:
    method, path = route
    if where == "query":
        response = await admin.request(method, path + "?stream=true")
    else:
        response = await admin.request(method, path, json={"stream": True})
    assert response.status_code == 400, response.text
    assert response.json()["error"]["param"] == "stream"


@pytest.mark.parametrize("route", ADMIN_ONLY, ids=route_id)
async def test_admin_only_routes_refuse_tenant_keys(
    tenant: TenantFactory, route: tuple[str, str]
) -> None:
    client, _ = await tenant("tenant")
    response = await client.request(route[0], route[1], json={})
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "role_forbidden"


@pytest.mark.parametrize("route", ROUTES, ids=route_id)
async def test_every_platform_route_needs_a_key(app: App, route: tuple[str, str]) -> None:
    import httpx

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://g") as c:
        missing = await c.request(*route)
        wrong = await c.request(*route, headers={"authorization": "Bearer sk-llmeu-kx-nope"})
    assert missing.status_code == wrong.status_code == 401


async def test_a_key_secret_is_shown_once_and_stored_hashed(admin: Client, app: App) -> None:
    created = (await admin.post("/v1/platform/keys", json={"name": "ci", "budget_eur": 5,
                                                             "rpm_limit": 60})).json()  # fmt: skip
    token = created["key"]
    assert token.startswith(f"sk-llmeu-{created['id']}-")
    assert created["policy_id"] == "eu-strict" and created["budget_eur"] == 5
    listed = (await admin.get("/v1/platform/keys")).json()["data"]
    entry = next(k for k in listed if k["id"] == created["id"])
    assert "key" not in entry and token not in str(listed) and hash_token(token) not in str(listed)
    stored = await app.gateway.store.get_key(created["id"])
    assert stored is not None and stored.secret_hash == hash_token(token)


async def test_a_key_carries_its_tool_server_and_tool_patterns(admin: Client) -> None:
    created = await admin.post("/v1/platform/keys", json={
        "name": "agent", "allow_mcp_servers": ["crm"], "allow_tools": ["crm__get_*"]})  # fmt: skip
    assert created.status_code == 201, created.text
    key = created.json()
    assert (key["allow_mcp_servers"], key["allow_tools"]) == (["crm"], ["crm__get_*"])
    listed = (await admin.get("/v1/platform/keys")).json()["data"]
    assert next(k for k in listed if k["id"] == key["id"])["allow_tools"] == ["crm__get_*"]
    refused = await admin.post("/v1/platform/keys", json={"allow_tools": ["has space"]})
    assert refused.status_code == 400
    assert refused.json()["error"]["param"] == "key.allow_tools"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"policy_id": "no-such-policy"}, "policy_id"),
        ({"budget_eur": -1}, "budget_eur"),
        ({"rpm_limit": 0}, "rpm_limit"),
        ({"name": "x" * 201}, "name"),
        ({"name": "line\nbreak"}, "name"),
        ({"name": "nul\u0000"}, "name"),
        ({"colour": "blue"}, "colour"),
    ],
    ids=["policy", "budget", "rpm", "long-name", "newline", "nul", "unknown-field"],
)
async def test_invalid_keys_are_400_naming_the_field(
    admin: Client, body: dict[str, object], param: str
) -> None:
    response = await admin.post("/v1/platform/keys", json=body)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["param"] == param


async def test_the_admin_key_cannot_be_revoked_through_the_api(admin: Client) -> None:
    response = await admin.delete("/v1/platform/keys/admin")
    assert response.status_code == 400
    assert (await admin.get("/v1/platform/keys")).status_code == 200


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ("limit=0", "limit"), ("limit=501", "limit"), ("limit=ten", "limit"),
        ("cursor=garbage", "cursor"), ("from=yesterday", "from"), ("to=2024-13-01", "to"),
        ("status=finished", "status"),
    ],
    ids=["limit-0", "limit-501", "limit-text", "cursor", "from", "to", "status"],
)  # fmt: skip
async def test_invalid_trace_queries_are_400(admin: Client, query: str, param: str) -> None:
    response = await admin.get(f"/v1/platform/traces?{query}")
    assert response.status_code == 400, response.text
    assert response.json()["error"]["param"] == param


async def test_invalid_usage_queries_are_400(admin: Client) -> None:
    for query, param in (("group_by=week", "group_by"), ("from=soon", "from")):
        response = await admin.get(f"/v1/platform/usage?{query}")
        assert response.status_code == 400
        assert response.json()["error"]["param"] == param


async def test_usage_window_accepts_dates_times_and_epoch_seconds(admin: Client) -> None:
    assert (await chat(admin)).status_code == 200
    for window, expected in (
        ("from=2000-01-01", 1), ("from=2000-01-01T00:00:00%2B02:00", 1), ("from=946684800", 1),
        ("to=2000-01-01", 0), ("from=2999-01-01", 0),
    ):  # fmt: skip
        usage = (await admin.get(f"/v1/platform/usage?{window}")).json()
        assert usage["totals"]["requests"] == expected, window


async def test_a_policy_put_applies_to_the_next_call(admin: Client, tenant: TenantFactory) -> None:
    client, _ = await tenant("team", policy_id="team")
    assert (await chat(client)).status_code == 200
    policy = {"allow_classes": ["on_premise"], "max_retention": "P0D"}
    put = await admin.put("/v1/platform/policies/team", json=policy)
    assert put.status_code == 200, put.text
    assert (await admin.get("/v1/platform/policies/team")).json()["allow_classes"] == ["on_premise"]
    refused = await chat(client)
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "no_compliant_route"


TEAM = {"allow_classes": ["eu_sovereign"], "max_retention": "P0D"}


@pytest.mark.parametrize(
    ("change", "param"),
    [
        ({"allow_classes": ["galactic"]}, "allow_classes"),
        ({"policy_id": "other"}, "policy_id"),
        ({"max_retention": "forever"}, "max_retention"),
        ({"store_content": "P-1D"}, "store_content"),
        ({"store_content": "P" + "9" * 320 + "Y"}, "store_content"),
        ({"limits_fail": "sometimes"}, "limits_fail"),
        ({"allow_providers": ["acme\n2026-12-01 WARNING forged"]}, "allow_providers"),
        ({"colour": "blue"}, "colour"),
    ],
    ids=[
        "class",
        "id-mismatch",
        "retention",
        "store-content",
        "store-content-beyond-a-century",
        "limits-fail",
        "control-character",
        "unknown-field",
    ],
)
async def test_invalid_policies_are_400_and_change_nothing(
    admin: Client, change: dict[str, object], param: str
) -> None:
    response = await admin.put("/v1/platform/policies/team", json={**TEAM, **change})
    assert response.status_code == 400, response.text
    assert response.json()["error"]["param"] == param
    assert (await admin.get("/v1/platform/policies/team")).json()["allow_classes"] == [
        "eu_sovereign"
    ]


async def test_a_policy_id_with_a_newline_is_400(admin: Client) -> None:
    response = await admin.put("/v1/platform/policies/te%0Aam", json=TEAM)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["param"] == "policy_id"


async def test_unknown_policy_is_404(admin: Client) -> None:
    response = await admin.get("/v1/platform/policies/nope")
    assert response.status_code == 404


@pytest.mark.parametrize(
    ("body", "requested"),
    [
        pytest.param({"model": "nope", "messages": [{"role": "user", "content": "hi"}]}, "nope",
                     id="unknown-model"),
        # Refused while the body was read: what it asked for is not known.
        pytest.param({"model": "fake-model", "messages": []}, "", id="invalid-body"),
    ],
)  # fmt: skip
async def test_a_rejected_trace_shows_the_keys_policy(
    admin: Client, tenant: TenantFactory, body: dict[str, Any], requested: str
) -> None:
    client, created = await tenant("rejected", policy_id="eu")
    refused = await client.post(CHAT, json=body)
    assert refused.status_code in (400, 404)
    trace_id = refused.headers["x-llmeu-trace-id"]
    trace = (await admin.get(f"/v1/platform/traces/{trace_id}")).json()
    assert trace["status"] == "rejected"
    assert trace["routing"]["policy_id"] == created["policy_id"] == "eu"
    assert trace["routing"]["model_used"] is None
    by_model = (await admin.get("/v1/platform/usage", params={"group_by": "model"})).json()
    assert [(r["model"], r["rejected"]) for r in by_model["data"]] == [("", 1)]
    asked = (await admin.get("/v1/platform/usage", params={"group_by": "requested_model"})).json()
    assert [r["requested_model"] for r in asked["data"]] == [requested]

"""Tenant isolation against a real gateway process: a key never sees another key's
traces or usage; a revoked key is refused at once; the platform API never streams and
keeps its admin routes to the admin key."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.support.processes import FakeUpstream, Gateway, config_yaml, fake_endpoint


@pytest.fixture
def gateway(gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream) -> Gateway:
    return gateway_factory(config=config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream)))


@pytest.fixture
def admin(gateway: Gateway) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=gateway.url, timeout=30,
                      headers={"authorization": f"Bearer {gateway.admin_key}"}) as c:  # fmt: skip
        yield c


def tenant(gateway: Gateway, admin: httpx.Client, name: str) -> tuple[httpx.Client, str]:
    created = admin.post("/v1/platform/keys", json={"name": name})
    assert created.status_code == 201
    client = httpx.Client(base_url=gateway.url, timeout=30,
                          headers={"authorization": f"Bearer {created.json()['key']}"})  # fmt: skip
    return client, created.json()["id"]


def calls(client: httpx.Client, count: int) -> list[str]:
    ids = []
    for i in range(count):
        response = client.post("/v1/chat/completions", json={
            "model": "fake-model", "stream": i % 2 == 0,
            "messages": [{"role": "user", "content": "hi"}]})  # fmt: skip
        assert response.status_code == 200
        ids.append(response.headers["x-llmeu-trace-id"])
    return ids


def error_of(response: httpx.Response, trace_id: str) -> tuple[int, dict[str, Any]]:
    body = response.json()
    body["error"]["message"] = body["error"]["message"].replace(trace_id, "ID")
    return response.status_code, body


def test_keys_see_only_their_own_traces_and_usage(gateway: Gateway, admin: httpx.Client) -> None:
    alice, alice_id = tenant(gateway, admin, "alice")
    bob, bob_id = tenant(gateway, admin, "bob")
    with alice, bob:
        alice_ids, bob_ids = calls(alice, 3), calls(bob, 5)
        listed = alice.get("/v1/platform/traces", params={"key_id": bob_id, "limit": 500})
        assert sorted(t["id"] for t in listed.json()["data"]) == sorted(alice_ids)
        usage = alice.get("/v1/platform/usage", params={"key_id": bob_id, "group_by": "key"})
        assert usage.json()["data"] == [
            {**usage.json()["data"][0], "key": alice_id, "requests": 3, "completed": 3}
        ]
        foreign = alice.get(f"/v1/platform/traces/{bob_ids[0]}")
        missing = alice.get(f"/v1/platform/traces/{'trc_' + '0' * 28}")
        assert foreign.status_code == 404
        assert error_of(foreign, bob_ids[0]) == error_of(missing, "trc_" + "0" * 28)
        assert bob.get(f"/v1/platform/traces/{bob_ids[0]}").status_code == 200
        everything = admin.get("/v1/platform/usage").json()["totals"]
        assert everything["requests"] == 8


def test_a_revoked_key_gets_401_on_its_next_call(gateway: Gateway, admin: httpx.Client) -> None:
    carol, carol_id = tenant(gateway, admin, "carol")
    with carol:
        calls(carol, 1)
        assert admin.delete(f"/v1/platform/keys/{carol_id}").json()["revoked"] is True
        refused = carol.post("/v1/chat/completions", json={
            "model": "fake-model", "messages": [{"role": "user", "content": "hi"}]})  # fmt: skip
        assert refused.status_code == 401
        assert carol.get("/v1/platform/traces").status_code == 401
    listed = {k["id"]: k for k in admin.get("/v1/platform/keys").json()["data"]}
    assert listed[carol_id]["revoked_at"] is not None


@pytest.mark.parametrize(
    ("method", "path", "where"),
    [("GET", "/v1/platform/usage", "query"), ("GET", "/v1/platform/traces", "query"),
     ("GET", "/v1/platform/endpoints", "query"), ("POST", "/v1/platform/keys", "body"),
     ("PUT", "/v1/platform/policies/eu-strict", "body"), ("GET", "/v1/platform/traces", "body")],
)  # fmt: skip
def test_platform_routes_refuse_stream(
    admin: httpx.Client, method: str, path: str, where: str
) -> None:
    if where == "query":
        response = admin.request(method, path, params={"stream": "true"})
    else:
        response = admin.request(method, path, json={"stream": True})
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "stream"


def test_admin_routes_refuse_tenant_keys(gateway: Gateway, admin: httpx.Client) -> None:
    dave, _ = tenant(gateway, admin, "dave")
    with dave:
        for method, path in (("GET", "/v1/platform/keys"), ("POST", "/v1/platform/keys"),
                             ("DELETE", "/v1/platform/keys/kx"),
                             ("PUT", "/v1/platform/policies/eu-strict")):  # fmt: skip
            response = dave.request(method, path, json={})
            assert response.status_code == 403, (method, path)
            assert response.json()["error"]["code"] == "role_forbidden"

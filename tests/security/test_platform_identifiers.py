"""NUL and other control characters in platform lookups: a 400 naming the parameter, on a
real gateway process over SQLite and over PostgreSQL — never a 500."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator

import httpx
import pytest

from tests.faults.helpers import chat, create_key
from tests.support.databases import postgres_database_sync
from tests.support.processes import ADMIN_KEY, FakeUpstream, Gateway, config_yaml, fake_endpoint


def nul_cursor() -> str:
    raw = json.dumps([1.0e9, "trc_\x00"]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def nan_cursor() -> str:
    return base64.urlsafe_b64encode(b'[NaN, "trc_x"]').decode().rstrip("=")


# (method, path and query as sent, the parameter the 400 must name)
LOOKUPS = [
    ("GET", "/v1/platform/traces?model=%00", "model"),
    ("GET", "/v1/platform/traces?endpoint_id=%00", "endpoint_id"),
    ("GET", "/v1/platform/traces?status=%00", "status"),
    ("GET", "/v1/platform/traces?sovereignty_class=a%00b", "sovereignty_class"),
    ("GET", "/v1/platform/traces?key_id=%00", "key_id"),
    ("GET", "/v1/platform/traces/trc_%00", "trace_id"),
    ("GET", "/v1/platform/traces/trc_%01x", "trace_id"),
    ("GET", f"/v1/platform/traces?cursor={nul_cursor()}", "cursor"),
    ("GET", f"/v1/platform/traces?cursor={nan_cursor()}", "cursor"),
    ("GET", "/v1/platform/traces?from=1e999", "from"),
    ("GET", "/v1/platform/traces?to=nan", "to"),
    ("GET", "/v1/platform/usage?key_id=%00", "key_id"),
    ("GET", "/v1/platform/usage?group_by=%00", "group_by"),
    ("GET", "/v1/platform/keys?x=%00", "x"),
    ("GET", "/v1/platform/keys?a%00=1", "query"),
    ("DELETE", "/v1/platform/keys/k%00", "key_id"),
    ("GET", "/v1/platform/policies/p%00", "policy_id"),
    ("PUT", "/v1/platform/policies/p%00", "policy_id"),
    ("DELETE", "/v1/platform/holds/h%00", "hold_id"),
    ("DELETE", "/v1/platform/subjects/u%00", "user_id"),
    ("GET", "/v1/platform/exports/e%00", "name"),
    ("GET", "/v1/models/m%00", "model"),
]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def gateway(
    request: pytest.FixtureRequest,
    gateway_factory: Callable[..., Gateway],
    fake_upstream: FakeUpstream,
) -> Iterator[Gateway]:
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))
    if request.param == "sqlite":
        yield gateway_factory(config=config)
        return
    with postgres_database_sync() as url:
        gateway = gateway_factory(config=config, args=["--database-url", url])
        yield gateway
        gateway.stop()


@pytest.mark.parametrize(("method", "target", "param"), LOOKUPS, ids=[t for _, t, _ in LOOKUPS])
def test_a_control_character_in_a_lookup_is_a_400_naming_it(
    gateway: Gateway, method: str, target: str, param: str
) -> None:
    chat(gateway, "hello")  # a ledger with something in it
    response = httpx.request(
        method,
        gateway.url + target,
        headers={"authorization": f"Bearer {ADMIN_KEY}"},
        json={} if method == "PUT" else None,
        timeout=30,
    )
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param
    assert "internal" not in response.text


def test_a_tenant_gets_the_same_400_and_the_gateway_stays_well(gateway: Gateway) -> None:
    tenant = create_key(gateway)["key"]
    for target in ("/v1/platform/traces?model=%00", "/v1/platform/traces/trc_%00"):
        response = httpx.get(
            gateway.url + target, headers={"authorization": f"Bearer {tenant}"}, timeout=30
        )
        assert response.status_code == 400
    listed = httpx.get(
        gateway.url + "/v1/platform/traces?model=fake-model",
        headers={"authorization": f"Bearer {ADMIN_KEY}"},
        timeout=30,
    )
    assert listed.status_code == 200
    assert "internal_error" not in gateway.output()
    assert "Traceback" not in gateway.output()

"""Tenants as attackers, against real gateway processes: concurrent calls against a tiny
budget, and floods of made-up keys against the PostgreSQL ledger."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.faults.helpers import api_get, chat, create_key
from tests.support.databases import fetch, postgres_database_sync
from tests.support.processes import FakeUpstream, Gateway, config_yaml, fake_endpoint

GatewayFactory = Callable[..., Gateway]


@pytest.fixture
def config(fake_upstream: FakeUpstream) -> str:
    return config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))


@pytest.mark.parametrize(
    "limits",
    [
        [],
        # A Redis slower than its timeout makes limits fail open (tested elsewhere): here it
        # gets time enough, however loaded the machine.
        pytest.param(
            ["--redis-url", "redis://127.0.0.1:6379/0", "--redis-timeout", "10"],
            marks=pytest.mark.redis,
        ),
    ],
    ids=["in-memory", "redis"],
)
def test_concurrent_calls_cannot_spend_a_budget_many_times_over(
    gateway_factory: GatewayFactory, config: str, limits: list[str]
) -> None:
    gateway = gateway_factory(config=config, args=limits)
    budget = 0.00003
    key = create_key(gateway, budget_eur=budget)
    with ThreadPoolExecutor(40) as pool:
        outcomes = list(pool.map(lambda _: chat(gateway, "hi", key=key["key"]), range(40)))
    statuses = sorted(o.status for o in outcomes)
    assert set(statuses) <= {200, 429}
    assert 200 in statuses
    refused = [o for o in outcomes if o.status == 429]
    assert refused and all(o.json["error"]["code"] == "insufficient_quota" for o in refused)
    traces = api_get(gateway, f"/v1/platform/traces?key_id={key['id']}&limit=100").json()["data"]
    costs = [t["usage"]["cost_eur"] for t in traces if t["status"] == "completed"]
    assert len(costs) == statuses.count(200)
    # The documented bound: the spend passes the budget by at most the cost of the call
    # admitted just under it.
    assert sum(costs) <= budget + max(costs) + 1e-12


@pytest.mark.postgres
def test_made_up_keys_cost_no_query_each_and_are_rate_limited_per_address(
    gateway_factory: GatewayFactory, config: str
) -> None:
    with postgres_database_sync() as url:
        gateway = gateway_factory(config=config, args=["--database-url", url])
        tenant = create_key(gateway)["key"]
        assert chat(gateway, "hello", key=tenant).status == 200
        before = transactions(url)
        statuses = []
        with httpx.Client(base_url=gateway.url, timeout=30) as client:
            for _ in range(300):
                made_up = f"sk-llmeu-k{secrets.token_hex(8)}-{secrets.token_hex(16)}"
                response = client.get("/v1/models", headers={"authorization": f"Bearer {made_up}"})
                statuses.append(response.status_code)
                if response.status_code == 429:
                    error = response.json()["error"]
                    assert error["code"] == "too_many_failed_authentications"
                    assert int(response.headers["retry-after"]) >= 1
            # The tenant shares the attacker's address and is served all along.
            assert chat(gateway, "hello", key=tenant).status == 200
        after = transactions(url)
        assert statuses[0] == 401
        assert statuses.count(429) > 200
        # Without the bound: one lookup per made-up key (300). With it: the first 20, those
        # the bucket refilled meanwhile, and the gateway's own background work.
        assert after - before < 100, (before, after)
        revoked = create_key(gateway)
        assert chat(gateway, "hello", key=revoked["key"]).status == 200
        response = httpx.delete(
            f"{gateway.url}/v1/platform/keys/{revoked['id']}",
            headers={"authorization": f"Bearer {gateway.admin_key}"},
        )
        assert response.status_code == 200
        assert chat(gateway, "hello", key=revoked["key"]).status == 401  # at once
        gateway.stop()


def transactions(url: str) -> int:
    """The database's committed and rolled back transactions, once its statistics settle."""
    time.sleep(1.5)  # PostgreSQL publishes a backend's counts at most once a second
    rows = asyncio.run(
        fetch(
            url,
            "SELECT xact_commit + xact_rollback AS n FROM pg_stat_database "
            "WHERE datname = current_database()",
        )
    )
    return int(rows[0]["n"])  # type: ignore[call-overload]

"""A team's budget and rate limits over all its keys, against real gateway processes: one
process on SQLite (limits in memory), and two processes sharing PostgreSQL and Redis.

One call to the fake upstream costs 0.000023 EUR (11 prompt + 6 completion tokens at 1
and 2 EUR/Mtok); with `max_tokens=20` a call reserves more than that while in flight.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.faults.helpers import Outcome, api_get, chat, create_key, trace
from tests.support.databases import postgres_database_sync
from tests.support.processes import FakeUpstream, Gateway, config_yaml, fake_endpoint
from tests.support.waiting import wait_for

REDIS = ["--redis-url", "redis://127.0.0.1:6379/0", "--redis-timeout", "10"]
CALL_EUR = 0.000023


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("postgres+redis", marks=[pytest.mark.postgres, pytest.mark.redis]),
    ]
)
def gateways(
    request: pytest.FixtureRequest,
    gateway_factory: Callable[..., Gateway],
    fake_upstream: FakeUpstream,
) -> Iterator[list[Gateway]]:
    """One gateway, or two sharing one ledger and one Redis."""
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))
    if request.param == "sqlite":
        yield [gateway_factory(config=config)]
        return
    with postgres_database_sync() as url:
        shared = ["--database-url", url, *REDIS]
        pair = [gateway_factory(config=config, args=shared) for _ in range(2)]
        yield pair
        for gateway in pair:
            gateway.stop()


def make_team(gateway: Gateway, **spec: Any) -> dict[str, Any]:
    response = httpx.post(
        gateway.url + "/v1/platform/teams",
        json={"name": "team", **spec},
        headers={"authorization": f"Bearer {gateway.admin_key}"},
        timeout=30,
    )
    assert response.status_code == 201, response.text
    made: dict[str, Any] = response.json()
    return made


def assert_refused_by_team(gateway: Gateway, outcome: Outcome, team: dict[str, Any]) -> None:
    assert outcome.status == 429
    assert int(outcome.headers["retry-after"]) >= 1
    error = outcome.json["error"]
    assert (error["type"], error["code"]) == ("rate_limit_error", "insufficient_quota")
    assert error["message"].startswith(f"Budget exhausted for team {team['id']} in ")
    found = trace(gateway, outcome.trace_id)
    assert (found["status"], found["error"]["code"]) == ("rejected", "insufficient_quota")
    assert found["attempts"] == []


def team_costs(gateway: Gateway, keys: list[dict[str, Any]]) -> list[float]:
    costs = []
    for key in keys:
        listed = api_get(gateway, f"/v1/platform/traces?key_id={key['id']}&limit=100").json()
        costs += [t["usage"]["cost_eur"] for t in listed["data"] if t["status"] == "completed"]
    return costs


def test_the_team_budget_refuses_the_call_its_keys_budgets_would_admit(
    gateways: list[Gateway],
) -> None:
    first, last = gateways[0], gateways[-1]
    team = make_team(first, budget_eur_month=0.00004)  # two calls fit, not three
    keys = [create_key(first, team_id=team["id"], budget_eur=1.0) for _ in range(2)]
    assert chat(first, "hi", key=keys[0]["key"]).status == 200
    assert chat(last, "hi", key=keys[1]["key"]).status == 200

    def refused(gateway: Gateway, key: dict[str, Any]) -> Outcome | None:
        outcome = chat(gateway, "hi", key=key["key"])
        assert outcome.status in (200, 429)
        return outcome if outcome.status == 429 else None

    # Another process learns of the spend when the call settles: at once in Redis.
    assert_refused_by_team(first, wait_for(lambda: refused(first, keys[0]), what="a refusal"),
                           team)  # fmt: skip
    assert_refused_by_team(last, wait_for(lambda: refused(last, keys[1]), what="a refusal"),
                           team)  # fmt: skip
    assert sum(team_costs(first, keys)) == pytest.approx(2 * CALL_EUR)

    def shown() -> dict[str, Any] | None:
        found: dict[str, Any] = api_get(first, f"/v1/platform/teams/{team['id']}").json()
        return found if found["spent_eur_month"] == pytest.approx(2 * CALL_EUR) else None

    assert wait_for(shown, what="the team's spend this month")["remaining_eur_month"] == 0
    alone = create_key(first, budget_eur=1.0)
    assert chat(last, "hi", key=alone["key"]).status == 200  # a key in no team is not refused

    raised = httpx.patch(
        f"{first.url}/v1/platform/teams/{team['id']}",
        json={"budget_eur_month": 0.001},
        headers={"authorization": f"Bearer {first.admin_key}"},
        timeout=30,
    )
    assert raised.status_code == 200, raised.text
    # The other process is told of the change (or reads it at its next refresh).
    wait_for(lambda: chat(last, "hi", key=keys[1]["key"]).status == 200, what="the raised budget")


def test_concurrent_calls_never_overspend_the_team_budget(gateways: list[Gateway]) -> None:
    budget = 0.0001
    team = make_team(gateways[0], budget_eur_month=budget)
    keys = [create_key(gateways[0], team_id=team["id"], budget_eur=1.0) for _ in range(2)]

    def call(i: int) -> Outcome:
        gateway = gateways[i % len(gateways)]
        return chat(gateway, "hi [[delay=20]]", key=keys[i % 2]["key"], max_tokens=20)

    with ThreadPoolExecutor(16) as pool:
        outcomes = list(pool.map(call, range(16)))
    statuses = [o.status for o in outcomes]
    assert set(statuses) == {200, 429}, statuses
    for outcome in outcomes:
        if outcome.status == 429:
            assert outcome.json["error"]["code"] == "insufficient_quota"
            assert f"team {team['id']}" in outcome.json["error"]["message"]
    costs = team_costs(gateways[0], keys)
    assert len(costs) == statuses.count(200)
    # Each call reserved more than it cost: the spend passes the budget by at most the
    # cost of the call admitted just under it.
    assert sum(costs) <= budget + max(costs) + 1e-12


def test_a_teams_requests_per_minute_hold_across_its_keys(gateways: list[Gateway]) -> None:
    team = make_team(gateways[0], rpm_limit=4)
    keys = [create_key(gateways[0], team_id=team["id"], rpm_limit=100) for _ in range(2)]
    with ThreadPoolExecutor(12) as pool:
        outcomes = list(
            pool.map(
                lambda i: chat(gateways[i % len(gateways)], "hi", key=keys[i % 2]["key"]),
                range(12),
            )
        )
    assert sorted(o.status for o in outcomes) == [200] * 4 + [429] * 8
    refused = next(o for o in outcomes if o.status == 429)
    assert refused.json["error"]["code"] == "rate_limit_exceeded"
    assert refused.json["error"]["message"].startswith(f"Rate limit reached for team {team['id']}")
    assert trace(gateways[0], refused.trace_id)["status"] == "rejected"

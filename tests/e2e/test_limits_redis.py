"""Two gateway processes share one PostgreSQL ledger and one Redis: one limit for both.

Runs against the real PostgreSQL (127.0.0.1:5432) and Redis (127.0.0.1:6379);
each test has its own database, and key and endpoint ids are unique, so
concurrent runs never see each other's state.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import asyncpg
import pytest

from tests.faults.helpers import Outcome, chat, create_key, trace
from tests.support.processes import FakeUpstream, Gateway, config_yaml, fake_endpoint
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

REDIS_URL = "redis://127.0.0.1:6379/0"


async def _admin(sql: str) -> None:
    conn = await asyncpg.connect("postgresql://postgres@127.0.0.1:5432/postgres")
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@pytest.fixture
def database_url() -> Iterator[str]:
    name = f"llmeu_limits_{secrets.token_hex(4)}"
    asyncio.run(_admin(f"CREATE DATABASE {name}"))
    yield f"postgresql://postgres@127.0.0.1:5432/{name}"
    asyncio.run(_admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))


@pytest.fixture
def pair(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream, database_url: str
) -> Callable[..., tuple[Gateway, Gateway]]:
    def start(config: str, *args: str) -> tuple[Gateway, Gateway]:
        shared = ["--database-url", database_url, "--redis-url", REDIS_URL, *args]
        first = gateway_factory(config=config, args=shared)
        second = gateway_factory(config=config, args=shared)
        return first, second

    return start


def test_requests_per_minute_hold_across_two_processes(
    pair: Callable[..., tuple[Gateway, Gateway]], fake_upstream: FakeUpstream
) -> None:
    a, b = pair(config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream)))
    key = create_key(a, rpm_limit=5)["key"]
    wait_for(lambda: chat(b, "hi", key=key, max_tokens=1).status == 200, what="b knows the key")
    with ThreadPoolExecutor(12) as pool:
        outcomes = list(
            pool.map(lambda i: chat((a, b)[i % 2], "hi", key=key, stream=i % 3 == 0), range(12))
        )
    assert sorted(o.status for o in outcomes) == [200] * 4 + [429] * 8
    refused = next(o for o in outcomes if o.status == 429)
    assert int(refused.headers["retry-after"]) >= 1
    assert trace(a, refused.trace_id)["status"] == "rejected"


def test_a_budget_spent_through_one_process_stops_the_other(
    pair: Callable[..., tuple[Gateway, Gateway]], fake_upstream: FakeUpstream
) -> None:
    a, b = pair(config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream)))
    key = create_key(a, budget_eur=0.00003)["key"]
    assert chat(a, "hi", key=key).status == 200
    assert chat(a, "hi", key=key).status == 200  # 0.000046 EUR spent through a

    def refused_by_b() -> Outcome | None:
        outcome = chat(b, "hi", key=key)
        return outcome if outcome.status == 429 else None

    refused = wait_for(refused_by_b, what="b to refuse the spent key")
    assert refused.json["error"]["code"] == "insufficient_quota"


def test_an_endpoint_failing_in_one_process_is_avoided_by_the_other(
    pair: Callable[..., tuple[Gateway, Gateway]], fake_upstream: FakeUpstream
) -> None:
    flaky = f"flaky-fr-{secrets.token_hex(3)}"
    config = config_yaml(
        fake_endpoint(flaky, fake_upstream, model="fake;fault=status_503"),
        fake_endpoint("backup-fr-b", fake_upstream, priority=20),
    )
    a, b = pair(config, "--breaker-threshold", "2", "--breaker-cooldown", "600")
    for _ in range(2):
        served = chat(a, "hi")
        assert served.status == 200
        assert [x["outcome"] for x in trace(a, served.trace_id)["attempts"]] == ["failed", "served"]

    def avoided_by_b() -> dict[str, object] | None:
        found = trace(b, chat(b, "hi").trace_id)
        return found if [x["endpoint_id"] for x in found["attempts"]] == ["backup-fr-b"] else None

    found = wait_for(avoided_by_b, what="b to skip the endpoint a saw failing")
    assert {"endpoint_id": flaky, "rule": "health", "reason": "circuit open"} in found["excluded"]

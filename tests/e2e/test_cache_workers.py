"""The answer cache of `llmeu serve --workers 2`: shared through Redis, encrypted there, when the
gateway has `LLMEU_CACHE_KEY`; one per worker otherwise, kept in step by change notices."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx
import pytest

from llmeu.cache.redis_store import PREFIX, connect
from tests.e2e.test_cache_wire import CACHING
from tests.e2e.test_workers import READY, started
from tests.faults.helpers import trace
from tests.support.processes import ADMIN_KEY, FakeUpstream, Gateway, config_yaml, fake_endpoint
from tests.support.waiting import wait_for

pytestmark = pytest.mark.redis

REDIS_URL = "redis://127.0.0.1:6379/11"
SECRET = "the workers' shared secret, long enough to key AES-256"


def _empty_redis_cache() -> None:
    async def empty() -> None:
        redis = connect(REDIS_URL, 2.0)
        names = [name async for name in redis.scan_iter(match=PREFIX + "*")]
        if names:
            await redis.delete(*names)
        await redis.aclose()

    asyncio.run(empty())


def _workers(
    factory: Callable[..., Gateway], upstream: FakeUpstream, env: dict[str, str]
) -> Gateway:
    config = config_yaml(fake_endpoint("fakeprov-fr-a", upstream), policies=CACHING,
                         default_policy="cached")  # fmt: skip
    gateway = factory(config=config, env=env,
                      args=["--workers", "2", "--redis-url", REDIS_URL, "--log-level", "info"])  # fmt: skip
    wait_for(lambda: len(started(gateway)) == 2, what="both workers")
    wait_for(lambda: gateway.output().count(READY) == 2, what="both workers ready")
    return gateway


def _ask(gateway: Gateway, text: str, **extra: object) -> tuple[str, bool]:
    """One call on a new connection (the workers take turns accepting): who answered, and
    whether the answer came from the cache."""
    with httpx.Client(base_url=gateway.url, headers={"authorization": f"Bearer {ADMIN_KEY}"},
                      timeout=30) as client:  # fmt: skip
        body = {"model": "fake-model", "messages": [{"role": "user", "content": text}], **extra}
        response = client.post("/v1/chat/completions", json=body)
        assert response.status_code == 200, response.text
    routing = response.json()["llmeu"]
    return trace(gateway, routing["trace_id"])["instance_id"], "cache" in routing


def test_workers_share_one_encrypted_cache_through_redis(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream
) -> None:
    _empty_redis_cache()
    gateway = _workers(gateway_factory, fake_upstream, {"LLMEU_CACHE_KEY": SECRET})
    crossed = 0
    for i in range(12):
        first, hit_first = _ask(gateway, f"prompt {i}")
        second, hit_second = _ask(gateway, f"prompt {i}")
        assert (hit_first, hit_second) == (False, True)
        crossed += first != second
    assert crossed > 0  # a worker answered from what the other one kept
    assert len(fake_upstream.stats()) == 12
    stats = httpx.get(f"{gateway.url}/v1/platform/cache", timeout=30,
                      headers={"authorization": f"Bearer {ADMIN_KEY}"}).json()  # fmt: skip
    assert (stats["backend"], stats["shared"], stats["entries"]) == ("redis", True, 12)
    _empty_redis_cache()


def test_without_the_secret_each_worker_keeps_its_own_and_an_erasure_reaches_both(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream
) -> None:
    gateway = _workers(gateway_factory, fake_upstream, {"LLMEU_CACHE_KEY": ""})
    workers = set(started(gateway))
    hit_on: set[str] = set()
    for _ in range(80):  # until each worker has answered alice from its own cache
        worker, hit = _ask(gateway, "alice's question", user="alice")
        if hit:
            hit_on.add(worker)
        if hit_on == workers:
            break
    assert hit_on == workers
    assert "LLMEU_CACHE_KEY is not set" in gateway.output()
    erased = httpx.delete(f"{gateway.url}/v1/platform/subjects/alice", timeout=30,
                          headers={"authorization": f"Bearer {ADMIN_KEY}"})  # fmt: skip
    assert erased.status_code == 200, erased.text
    first_after: dict[str, bool] = {}
    for _ in range(80):  # until each worker has answered once since
        worker, hit = _ask(gateway, "alice's question", user="alice")
        first_after.setdefault(worker, hit)
        if set(first_after) == workers:
            break
    assert first_after == dict.fromkeys(workers, False)

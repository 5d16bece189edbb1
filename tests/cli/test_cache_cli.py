"""`llmeu cache stats|clear` against a real gateway whose default policy caches answers."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from tests.cli.test_platform_cli import as_json, llmeu
from tests.support.processes import FakeUpstream, Gateway, config_yaml, fake_endpoint

CACHING = """
  - policy_id: cached
    allow_classes: [on_premise, eu_sovereign]
    max_retention: P0D
    store_content: P1D
    cache: {ttl: PT1H}
"""


@pytest.fixture
def gateway(gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream) -> Gateway:
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream), policies=CACHING,
                         default_policy="cached")  # fmt: skip
    return gateway_factory(config=config)


def _ask(gateway: Gateway) -> dict[str, object]:
    answer = httpx.post(f"{gateway.base_url}/chat/completions", timeout=30,
                        headers={"authorization": f"Bearer {gateway.admin_key}"},
                        json={"model": "fake-model", "messages": [{"role": "user", "content": "hi"}]})  # fmt: skip
    routing: dict[str, object] = answer.json()["llmeu"]
    return routing


def test_cache_stats_and_clear(gateway: Gateway) -> None:
    env = {"LLMEU_BASE_URL": gateway.base_url, "LLMEU_API_KEY": gateway.admin_key}
    _ask(gateway)
    assert "cache" in _ask(gateway)
    stats = as_json(llmeu("cache", "stats", "--json", env=env))
    assert (stats["backend"], stats["entries"], stats["hits"]["exact"]) == ("memory", 1, 1)
    shown = llmeu("cache", "stats", env=env)
    assert shown.returncode == 0, shown.stderr
    assert "memory (this process)" in shown.stdout
    assert "1 exact, 0 semantic (ratio 50.0%)" in shown.stdout
    cleared = llmeu("cache", "clear", env=env)
    assert cleared.returncode == 0 and cleared.stdout.strip() == "cleared 1 entries"
    assert "cache" not in _ask(gateway)
    tenant = {**env, "LLMEU_API_KEY": "sk-not-a-key"}
    refused = llmeu("cache", "stats", env=tenant)
    assert refused.returncode == 1

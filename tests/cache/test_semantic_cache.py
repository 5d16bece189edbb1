"""The semantic cache with the bundled embedding model: a near prompt is answered with a cached
answer of the same partition and scope, a near miss never is, and what samples or offers
tools is answered semantically only where the policy says so."""

from __future__ import annotations

from collections.abc import AsyncIterator
from importlib.util import find_spec
from pathlib import Path

import pytest

from llmeu.api.app import App, create_app
from llmeu.config import Settings
from tests.cache.conftest import Tenant, chat, upstream_calls
from tests.support.processes import ADMIN_KEY, FakeUpstream, config_yaml, fake_endpoint

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(find_spec("onnxruntime") is None, reason="needs the `local` extra"),
]

EMBEDDER = """\
  - endpoint_id: local-minilm
    provider: llmeu-local
    kind: local
    model: all-MiniLM-L6-v2
    inference_region: local
    sovereignty_class: on_premise
    retention: P0D
    price_eur_per_mtok: {input: 0, output: 0}
    capabilities: [embeddings]
"""
POLICIES = """
  - policy_id: semantic
    allow_classes: [on_premise, eu_sovereign]
    max_retention: P0D
    store_content: P1D
    cache: {ttl: PT1H, semantic: {threshold: 0.95}}
  - policy_id: lenient
    allow_classes: [on_premise, eu_sovereign]
    max_retention: P0D
    store_content: P1D
    cache: {ttl: PT1H, semantic: {threshold: 0.9, tools: true, temperature: true}}
"""
ASKED = "What is the capital of France?"
NEAR = "What's the capital of France?"  # 0.99 similar to ASKED with all-MiniLM-L6-v2
NEAR_MISS = "Tell me the capital of France."  # 0.945: under 0.95, over 0.9
FAR = "What is the capital of Germany?"  # 0.66
DETERMINISTIC = {"temperature": 0}


@pytest.fixture
async def app(tmp_path: Path, fake_upstream: FakeUpstream) -> AsyncIterator[App]:
    config = tmp_path / "config.yaml"
    config.write_text(config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream), EMBEDDER,
                                  policies=POLICIES, default_policy="semantic"))  # fmt: skip
    application = create_app(Settings(data_dir=tmp_path, config_file=config, admin_key=ADMIN_KEY,
                                      local_threads=1))  # fmt: skip
    await application.gateway.start()
    yield application
    await application.gateway.stop()


async def test_a_near_prompt_is_answered_and_a_near_miss_is_not(
    tenant: Tenant, fake_upstream: FakeUpstream
) -> None:
    client, _ = await tenant("semantic")
    first = (await chat(client, ASKED, **DETERMINISTIC)).json()
    near = (await chat(client, NEAR, **DETERMINISTIC)).json()
    assert near["llmeu"]["cache"] == {
        "hit": True, "kind": "semantic", "source_trace_id": first["llmeu"]["trace_id"],
        "saved_eur": first["llmeu"]["cost_estimate"]["amount"],
    }  # fmt: skip
    assert near["choices"] == first["choices"]
    for text in (NEAR_MISS, FAR):
        assert "cache" not in (await chat(client, text, **DETERMINISTIC)).json()["llmeu"]
    assert upstream_calls(fake_upstream) == 3


async def test_the_semantic_cache_stays_in_its_partition_and_scope(
    tenant: Tenant, fake_upstream: FakeUpstream
) -> None:
    (one, _), (another, _) = await tenant("semantic"), await tenant("semantic")
    await chat(one, ASKED, **DETERMINISTIC)
    assert "cache" not in (await chat(another, NEAR, **DETERMINISTIC)).json()["llmeu"]
    other_system = {"messages": [{"role": "system", "content": "answer in French"},
                                 {"role": "user", "content": NEAR}]}  # fmt: skip
    response = await one.post(
        "/v1/chat/completions", json={"model": "fake-model", **other_system, **DETERMINISTIC}
    )
    assert "cache" not in response.json()["llmeu"]
    assert upstream_calls(fake_upstream) == 3


async def test_sampling_and_tools_are_answered_semantically_only_where_the_policy_says_so(
    tenant: Tenant, fake_upstream: FakeUpstream
) -> None:
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {}}}]
    strict, _ = await tenant("semantic")
    lenient, _ = await tenant("lenient")
    for client in (strict, lenient):
        await chat(client, ASKED)  # no temperature: the upstream's default samples
        await chat(client, ASKED, tools=tools, **DETERMINISTIC)
    hits = {}
    for name, client in (("strict", strict), ("lenient", lenient)):
        sampled = (await chat(client, NEAR)).json()["llmeu"]
        tooled = (await chat(client, NEAR, tools=tools, **DETERMINISTIC)).json()["llmeu"]
        hits[name] = ("cache" in sampled, "cache" in tooled)
    assert hits == {"strict": (False, False), "lenient": (True, True)}
    assert "cache" in (await chat(lenient, NEAR_MISS)).json()["llmeu"]  # over its 0.9


async def test_a_prompt_longer_than_the_model_reads_is_compared_exactly_only(
    tenant: Tenant, fake_upstream: FakeUpstream
) -> None:
    client, _ = await tenant("semantic")
    long = "word " * 400
    await chat(client, long + "one", **DETERMINISTIC)
    assert "cache" not in (await chat(client, long + "two", **DETERMINISTIC)).json()["llmeu"]
    again = (await chat(client, long + "one", **DETERMINISTIC)).json()["llmeu"]
    assert again["cache"]["kind"] == "exact"

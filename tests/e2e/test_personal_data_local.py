"""Personal data with the bundled model: `restrict` keeps a call on this machine, `block` stops it.

The alias `pd` is served by a fake `eu_sovereign` upstream (tried first) and by
the bundled SmolLM2 (`on_premise`). A prompt with a BSN under a policy that
restricts BSNs to `on_premise` must run on the bundled model, and the fake
upstream's log must stay empty; the same prompt under `block` reaches neither.
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib.util import find_spec
from typing import Any

import anthropic
import httpx
import openai
import pytest

from llmeu.personal.rules import Detector
from tests.personal.identifiers import valid_identifiers
from tests.support.processes import (
    FakeUpstream,
    Gateway,
    config_yaml,
    fake_endpoint,
    start_fake_upstream,
    start_gateway,
)

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(find_spec("llama_cpp") is None, reason="needs the `local` extra"),
]

BSN = valid_identifiers(Detector.NL_BSN, 1)[0]
LOCAL = """\
  - endpoint_id: local-pd
    provider: llmeu-local
    kind: local
    model: SmolLM2-135M-Instruct
    aliases: [pd]
    inference_region: local
    sovereignty_class: on_premise
    retention: P0D
    price_eur_per_mtok: {input: 0, output: 0}
    priority: 50
    default_max_tokens: 4
"""
POLICIES = """
  - policy_id: pd-local
    allow_classes: [on_premise, eu_sovereign]
    max_retention: P0D
    personal_data:
      detectors: {nl_bsn: restrict}
      restrict: {allow_classes: [on_premise]}
  - policy_id: pd-stop
    allow_classes: [on_premise, eu_sovereign]
    max_retention: P0D
    personal_data:
      detectors: {nl_bsn: block}
"""


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeUpstream]:
    started = start_fake_upstream(tmp_path_factory.mktemp("sov"))
    yield started
    started.stop()


@pytest.fixture(scope="module")
def gateway(upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    config = config_yaml(
        fake_endpoint("sov-fr", upstream, aliases=("pd",), priority=0), LOCAL, policies=POLICIES
    )
    started = start_gateway(
        tmp_path_factory.mktemp("gw"), config=config, local_models=True, timeout=120
    )
    yield started
    started.kill()


def key_for(gateway: Gateway, policy_id: str) -> str:
    response = httpx.post(
        f"{gateway.base_url}/platform/keys",
        json={"name": policy_id, "policy_id": policy_id},
        headers={"authorization": f"Bearer {gateway.admin_key}"},
        timeout=10,
    )
    assert response.status_code == 201, response.text
    return str(response.json()["key"])


def test_restrict_runs_on_the_bundled_model_and_block_runs_nowhere(
    gateway: Gateway, upstream: FakeUpstream
) -> None:
    with openai.OpenAI(base_url=gateway.base_url, api_key=key_for(gateway, "pd-local")) as local:
        restrict_keeps_the_call_local(local, upstream)
    with (
        openai.OpenAI(
            base_url=gateway.base_url, api_key=key_for(gateway, "pd-stop"), max_retries=0
        ) as stop,
        pytest.raises(openai.PermissionDeniedError) as caught,
    ):
        stop.chat.completions.create(model="pd", messages=[{"role": "user", "content": BSN}])
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["code"] == "personal_data_detected"
    assert caught.value.body["param"] == "messages[0].content"
    assert upstream.stats() == []


def restrict_keeps_the_call_local(local: openai.OpenAI, upstream: FakeUpstream) -> None:
    upstream.reset()
    plain = local.chat.completions.create(
        model="pd", messages=[{"role": "user", "content": "Say hi."}]
    )
    assert plain.model_extra["llmeu"]["endpoint_id"] == "sov-fr"  # type: ignore[index]
    upstream.reset()
    kept = local.chat.completions.create(
        model="pd", messages=[{"role": "user", "content": f"Is {BSN} a BSN?"}], temperature=0
    )
    routing = kept.model_extra["llmeu"]  # type: ignore[index]
    assert (routing["endpoint_id"], routing["sovereignty_class"]) == ("local-pd", "on_premise")
    assert kept.usage is not None and kept.usage.completion_tokens > 0, "the model ran"
    assert upstream.stats() == []


def test_count_tokens_counts_where_the_call_would_run_and_blocks_as_it_would(
    gateway: Gateway, upstream: FakeUpstream
) -> None:
    """`/v1/messages/count_tokens` under the same rules: restricted to the bundled model, which
    counts with its own tokenizer; blocked with the Messages refusal, nothing counted."""
    prompt: Any = [{"role": "user", "content": f"Is {BSN} a BSN?"}]
    upstream.reset()
    with anthropic.Anthropic(base_url=gateway.url, api_key=key_for(gateway, "pd-local")) as sdk:
        counted = sdk.messages.count_tokens(model="pd", messages=prompt)
    assert counted.model_extra == {"llmeu": {"endpoint_id": "local-pd"}}
    assert counted.input_tokens > 5
    with (
        anthropic.Anthropic(
            base_url=gateway.url, api_key=key_for(gateway, "pd-stop"), max_retries=0
        ) as sdk,
        pytest.raises(anthropic.PermissionDeniedError) as refused,
    ):
        sdk.messages.count_tokens(model="pd", messages=prompt)
    error = refused.value.body
    assert isinstance(error, dict) and error["error"]["code"] == "personal_data_detected"
    assert BSN not in str(error)
    assert upstream.stats() == []

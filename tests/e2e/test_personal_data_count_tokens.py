"""`/v1/messages/count_tokens` under a policy's personal-data rules, through the anthropic SDK.

One gateway serves `fake-model` (an OpenAI-compatible fake upstream, which
cannot count: the gateway estimates) and `claude-eu` (a `kind: anthropic`
endpoint in front of the fake Anthropic upstream, which counts
`100 + len(json of the messages) // 10` and logs every body it got). What the
counting upstream saw is read from its own log.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from llmeu.personal.rules import Detector
from tests.personal.identifiers import valid_identifiers
from tests.support.anthropic_upstream import (
    FAKE_ANTHROPIC_KEY,
    anthropic_endpoint,
    start_fake_anthropic,
)
from tests.support.processes import (
    FakeUpstream,
    Gateway,
    config_yaml,
    fake_endpoint,
    start_fake_upstream,
    start_gateway,
)

BSN = valid_identifiers(Detector.NL_BSN, 1)[0]
PESEL = valid_identifiers(Detector.PL_PESEL, 1)[0]
IBAN = "NL91 ABNA 0417 1643 00"
EMAIL = "jan.jansen@example.nl"
VALUES = (BSN, PESEL, IBAN, EMAIL)
PROMPT = f"Refund {IBAN} for {EMAIL} (BSN {BSN}, PESEL {PESEL}); again {IBAN}."
MASKED = "Refund [IBAN_1] for [EMAIL_1] (BSN [NL_BSN_1], PESEL [PL_PESEL_1]); again [IBAN_1]."

POLICIES = """
  - policy_id: pd-none
    allow_classes: [eu_sovereign, eu_resident]
    max_retention: P0D
  - policy_id: pd-mask
    allow_classes: [eu_sovereign, eu_resident]
    max_retention: P0D
    personal_data:
      detectors: {iban: mask, email: mask, nl_bsn: mask, pl_pesel: mask}
  - policy_id: pd-block
    allow_classes: [eu_sovereign, eu_resident]
    max_retention: P0D
    personal_data:
      detectors: {iban: block, email: allow}
  - policy_id: pd-restrict
    allow_classes: [eu_sovereign, eu_resident]
    max_retention: P0D
    personal_data:
      detectors: {nl_bsn: restrict}
      restrict: {allow_classes: [eu_resident]}
"""
KEYS = ("pd-none", "pd-mask", "pd-block", "pd-restrict")


@pytest.fixture(scope="module")
def counter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeUpstream]:
    upstream = start_fake_anthropic(tmp_path_factory.mktemp("anthropic"))
    yield upstream
    upstream.stop()


@pytest.fixture(scope="module")
def gateway(counter: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    chat = start_fake_upstream(tmp_path_factory.mktemp("chat"))
    config = config_yaml(
        fake_endpoint("resident-de", chat, country="DE", sovereignty_class="eu_resident"),
        anthropic_endpoint("anthro-fr-a", counter),
        policies=POLICIES,
    )
    started = start_gateway(
        tmp_path_factory.mktemp("gateway"),
        config=config,
        env={"FAKE_ANTHROPIC_KEY": FAKE_ANTHROPIC_KEY},
    )
    yield started
    started.kill()
    chat.stop()


@pytest.fixture(scope="module")
def keys(gateway: Gateway) -> dict[str, str]:
    return {policy_id: gateway.new_key(policy_id, policy_id) for policy_id in KEYS}


@pytest.fixture(autouse=True)
def fresh_log(counter: FakeUpstream) -> None:
    counter.reset()


def count(gateway: Gateway, key: str, model: str, text: str) -> anthropic.types.MessageTokensCount:
    with anthropic.Anthropic(base_url=gateway.url, api_key=key, max_retries=0) as sdk:
        return sdk.messages.count_tokens(model=model, messages=[{"role": "user", "content": text}])


def counted_bodies(counter: FakeUpstream) -> list[str]:
    return [json.dumps(r["body"], ensure_ascii=False) for r in counter.stats()]


def test_block_is_the_messages_refusal_and_reaches_no_counter(
    gateway: Gateway, keys: dict[str, str], counter: FakeUpstream
) -> None:
    with pytest.raises(anthropic.PermissionDeniedError) as refused:
        count(gateway, keys["pd-block"], "claude-eu", PROMPT)
    body = refused.value.body
    assert isinstance(body, dict) and body["type"] == "error"
    assert body["error"]["type"] == "permission_error"
    assert body["error"]["code"] == "personal_data_detected"
    assert body["error"]["param"] == "messages[0].content"
    assert "iban" in body["error"]["message"] and IBAN not in json.dumps(body)
    assert counter.stats() == []
    allowed = count(gateway, keys["pd-block"], "claude-eu", f"write to {EMAIL}")
    assert allowed.input_tokens > 100 and len(counter.stats()) == 1


def test_mask_counts_the_masked_prompt_on_a_counting_endpoint(
    gateway: Gateway, keys: dict[str, str], counter: FakeUpstream
) -> None:
    masked = count(gateway, keys["pd-mask"], "claude-eu", PROMPT)
    bodies = counted_bodies(counter)
    assert len(bodies) == 1 and bodies[0].count("[IBAN_1]") == 2
    assert not any(value in bodies[0] for value in VALUES)
    assert masked.model_extra == {"llmeu": {"endpoint_id": "anthro-fr-a"}}
    assert masked.input_tokens == count(gateway, keys["pd-none"], "claude-eu", MASKED).input_tokens
    assert masked.input_tokens != count(gateway, keys["pd-none"], "claude-eu", PROMPT).input_tokens


def test_mask_estimates_the_masked_prompt_where_nothing_counts(
    gateway: Gateway, keys: dict[str, str]
) -> None:
    masked = count(gateway, keys["pd-mask"], "fake-model", PROMPT)
    assert masked.model_extra == {"estimated": True}
    assert masked.input_tokens == math.ceil(len(MASKED) / 4) + 3
    as_sent = count(gateway, keys["pd-none"], "fake-model", PROMPT)
    assert as_sent.input_tokens == math.ceil(len(PROMPT) / 4) + 3 > masked.input_tokens


def test_restrict_narrows_the_endpoints_that_may_count(
    gateway: Gateway, keys: dict[str, str], counter: FakeUpstream
) -> None:
    plain = count(gateway, keys["pd-restrict"], "claude-eu", "hello")
    assert plain.model_extra == {"llmeu": {"endpoint_id": "anthro-fr-a"}}
    with pytest.raises(anthropic.PermissionDeniedError) as refused:
        count(gateway, keys["pd-restrict"], "claude-eu", f"my BSN is {BSN}")
    error: Any = refused.value.body
    assert error["error"]["code"] == "no_compliant_route"
    assert [d["rule"] for d in error["error"]["details"]] == ["allow_classes"]
    assert len(counter.stats()) == 1
    estimated = count(gateway, keys["pd-restrict"], "fake-model", f"my BSN is {BSN}")
    assert estimated.model_extra == {"estimated": True}

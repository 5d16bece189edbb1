"""Personal data on a real gateway: masking round trips, block, restrict, unscanned parts.

Two fake upstreams of different classes serve the alias `shared`: an
`eu_resident` one tried first and an `eu_sovereign` one. Each records the
requests it got (with `reply=echo`, their bodies), so what an upstream saw is
read from its own log, not assumed. The echoing upstream answers with the
prompt, streamed in pieces small enough to split every placeholder.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
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

BSN = valid_identifiers(Detector.NL_BSN, 1)[0]
PESEL = valid_identifiers(Detector.PL_PESEL, 1)[0]
IBAN = "NL91 ABNA 0417 1643 00"
EMAIL = "jan.jansen@example.nl"
VALUES = (BSN, PESEL, IBAN, EMAIL)
PROMPT = f"Refund {IBAN} for {EMAIL} (BSN {BSN}, PESEL {PESEL}); again {IBAN}."

POLICIES = """
  - policy_id: pd-mask
    allow_classes: [eu_sovereign, eu_resident]
    max_retention: P0D
    store_content: P1D
    personal_data:
      detectors: {iban: mask, email: mask, nl_bsn: mask, pl_pesel: mask}
  - policy_id: pd-block
    allow_classes: [eu_sovereign, eu_resident]
    max_retention: P0D
    personal_data:
      detectors: {iban: block, email: allow}
      unscanned: block
  - policy_id: pd-restrict
    allow_classes: [eu_sovereign, eu_resident]
    max_retention: P0D
    personal_data:
      detectors: {nl_bsn: restrict}
      restrict: {allow_classes: [eu_sovereign]}
  - policy_id: pd-nowhere
    allow_classes: [eu_sovereign, eu_resident]
    max_retention: P0D
    personal_data:
      detectors: {nl_bsn: restrict}
      restrict: {allow_countries: [SE]}
"""
KEYS = ("pd-mask", "pd-block", "pd-restrict", "pd-nowhere")


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, FakeUpstream]]:
    started = {n: start_fake_upstream(tmp_path_factory.mktemp(n)) for n in ("resident", "sov")}
    yield started
    for upstream in started.values():
        upstream.stop()


@pytest.fixture(scope="module")
def gateway(
    upstreams: dict[str, FakeUpstream], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gateway]:
    config = config_yaml(
        fake_endpoint("resident-de", upstreams["resident"], aliases=("shared",), country="DE",
                      sovereignty_class="eu_resident", priority=0),
        fake_endpoint("sov-fr", upstreams["sov"], aliases=("shared",), priority=10),
        policies=POLICIES,
    )  # fmt: skip
    started = start_gateway(tmp_path_factory.mktemp("gateway"), config=config)
    yield started
    started.kill()


@pytest.fixture(scope="module")
def keys(gateway: Gateway) -> dict[str, str]:
    return {policy_id: gateway.new_key(policy_id, policy_id) for policy_id in KEYS}


@pytest.fixture(autouse=True)
def fresh_logs(upstreams: dict[str, FakeUpstream]) -> None:
    for upstream in upstreams.values():
        upstream.reset()


@pytest.fixture
def client(gateway: Gateway) -> Iterator[Callable[[Gateway, str], openai.OpenAI]]:
    """SDK clients for the test's keys, closed when the test ends (no socket left open)."""
    made: list[openai.OpenAI] = []

    def make(gateway: Gateway, key: str) -> openai.OpenAI:
        made.append(openai.OpenAI(base_url=gateway.base_url, api_key=key, max_retries=0))
        return made[-1]

    yield make
    for sdk in made:
        sdk.close()


def seen_bodies(upstreams: dict[str, FakeUpstream]) -> list[str]:
    return [r["body"] or "" for u in upstreams.values() for r in u.stats()]


def trace(gateway: Gateway, trace_id: str) -> dict[str, Any]:
    response = httpx.get(
        f"{gateway.base_url}/platform/traces/{trace_id}",
        headers={"authorization": f"Bearer {gateway.admin_key}"},
        timeout=10,
    )
    assert response.status_code == 200, response.text
    return dict(response.json())


def test_masking_round_trip_whole_answer(
    gateway: Gateway,
    keys: dict[str, str],
    upstreams: dict[str, FakeUpstream],
    client: Callable[[Gateway, str], openai.OpenAI],
) -> None:
    completion = client(gateway, keys["pd-mask"]).chat.completions.create(
        model="shared", messages=[{"role": "user", "content": PROMPT + "[[reply=echo]]"}]
    )
    assert completion.choices[0].message.content == PROMPT
    bodies = seen_bodies(upstreams)
    assert len(bodies) == 1 and "[IBAN_1]" in bodies[0] and "[NL_BSN_1]" in bodies[0]
    assert not any(value in bodies[0] for value in VALUES)
    recorded = trace(gateway, completion.model_extra["llmeu"]["trace_id"])  # type: ignore[index]
    stored = json.dumps(recorded["content"])
    assert recorded["content"]["stored"] and "[EMAIL_1]" in stored
    assert not any(value in stored for value in VALUES)
    found = {(f["detector"], f["count"]) for f in recorded["personal_data"]["findings"]}
    assert found == {("iban", 2), ("email", 1), ("nl_bsn", 1), ("pl_pesel", 1)}
    assert not any(value in json.dumps(recorded) for value in VALUES)


@pytest.mark.parametrize("piece", [1, 3, 7])
def test_masking_round_trip_streamed_in_pieces(
    gateway: Gateway,
    keys: dict[str, str],
    upstreams: dict[str, FakeUpstream],
    piece: int,
    client: Callable[[Gateway, str], openai.OpenAI],
) -> None:
    stream = client(gateway, keys["pd-mask"]).chat.completions.create(
        model="shared",
        messages=[{"role": "user", "content": PROMPT + f"[[reply=echo;piece={piece}]]"}],
        stream=True,
    )
    pieces = [c.choices[0].delta.content or "" for c in stream if c.choices]
    assert "".join(pieces) == PROMPT
    for text in pieces:  # a placeholder never reaches the client, whole or in part
        assert "[" not in text and "_1" not in text
    # One frame per upstream delta (the role frame first, the finish frame last), even
    # while a placeholder is held back: none coalesced, none split.
    (served,) = [r for u in upstreams.values() for r in u.stats()]
    assert len(pieces) == 1 + served["chunks_sent"] + 1, pieces
    assert not any(value in body for body in seen_bodies(upstreams) for value in VALUES)


def test_embeddings_are_masked_before_the_upstream(
    gateway: Gateway,
    keys: dict[str, str],
    upstreams: dict[str, FakeUpstream],
    client: Callable[[Gateway, str], openai.OpenAI],
) -> None:
    response = client(gateway, keys["pd-mask"]).embeddings.create(
        model="shared", input=[f"customer {EMAIL}", "nothing personal"]
    )
    assert len(response.data) == 2
    bodies = seen_bodies(upstreams)
    assert len(bodies) == 1 and json.loads(bodies[0])["input"] == [
        "customer [EMAIL_1]", "nothing personal"
    ]  # fmt: skip
    recorded = trace(gateway, response.model_extra["llmeu"]["trace_id"])  # type: ignore[index]
    assert recorded["personal_data"]["findings"] == [
        {"detector": "email", "path": "input[0]", "count": 1, "action": "mask"}
    ]
    assert EMAIL not in json.dumps(recorded)


def test_block_names_detector_and_path_and_reaches_no_upstream(
    gateway: Gateway,
    keys: dict[str, str],
    upstreams: dict[str, FakeUpstream],
    client: Callable[[Gateway, str], openai.OpenAI],
) -> None:
    messages = [
        {"role": "user", "content": f"mail {EMAIL}"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [{"type": "text", "text": f"pay to {IBAN}"}]},
    ]
    with pytest.raises(openai.PermissionDeniedError) as caught:
        client(gateway, keys["pd-block"]).chat.completions.create(model="shared", messages=messages)
    error = caught.value.body
    assert isinstance(error, dict)
    assert error["code"] == "personal_data_detected"
    assert error["param"] == "messages[2].content[0].text"
    assert "iban" in error["message"] and IBAN not in json.dumps(error)
    assert all(not u.stats() for u in upstreams.values())
    trace_id = caught.value.response.headers["x-llmeu-trace-id"]
    recorded = trace(gateway, trace_id)
    assert recorded["status"] == "rejected"
    assert {f["detector"] for f in recorded["personal_data"]["findings"]} == {"email", "iban"}


def test_an_unscanned_part_is_blocked_where_the_policy_says(
    gateway: Gateway,
    keys: dict[str, str],
    upstreams: dict[str, FakeUpstream],
    client: Callable[[Gateway, str], openai.OpenAI],
) -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    with pytest.raises(openai.PermissionDeniedError) as caught:
        client(gateway, keys["pd-block"]).chat.completions.create(
            model="shared",
            messages=[{"role": "user", "content": [{"type": "text", "text": "what?"}, image]}],
        )
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["code"] == "personal_data_unscanned"
    assert caught.value.body["param"] == "messages[0].content[1]"
    assert all(not u.stats() for u in upstreams.values())


def test_restrict_narrows_the_route_to_the_other_class(
    gateway: Gateway,
    keys: dict[str, str],
    upstreams: dict[str, FakeUpstream],
    client: Callable[[Gateway, str], openai.OpenAI],
) -> None:
    openly = client(gateway, keys["pd-restrict"]).chat.completions.create(
        model="shared", messages=[{"role": "user", "content": "hello"}]
    )
    assert openly.model_extra["llmeu"]["endpoint_id"] == "resident-de"  # type: ignore[index]
    upstreams["resident"].reset()
    restricted = client(gateway, keys["pd-restrict"]).chat.completions.create(
        model="shared", messages=[{"role": "user", "content": f"my BSN is {BSN}"}]
    )
    routing = restricted.model_extra["llmeu"]  # type: ignore[index]
    assert (routing["endpoint_id"], routing["sovereignty_class"]) == ("sov-fr", "eu_sovereign")
    assert not upstreams["resident"].stats() and len(upstreams["sov"].stats()) == 1


def test_restrict_to_nowhere_is_the_usual_refusal_with_reasons(
    gateway: Gateway,
    keys: dict[str, str],
    upstreams: dict[str, FakeUpstream],
    client: Callable[[Gateway, str], openai.OpenAI],
) -> None:
    with pytest.raises(openai.PermissionDeniedError) as caught:
        client(gateway, keys["pd-nowhere"]).chat.completions.create(
            model="shared", messages=[{"role": "user", "content": f"BSN {BSN}"}]
        )
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["code"] == "no_compliant_route"
    assert all(not u.stats() for u in upstreams.values())


def test_a_policy_put_through_the_platform_api_governs_at_once(
    gateway: Gateway,
    upstreams: dict[str, FakeUpstream],
    client: Callable[[Gateway, str], openai.OpenAI],
) -> None:
    admin = {"authorization": f"Bearer {gateway.admin_key}"}
    section = {"detectors": {"email": "block"}, "unscanned": "allow"}
    put = httpx.put(
        f"{gateway.base_url}/platform/policies/pd-api",
        json={"allow_classes": ["eu_sovereign"], "max_retention": "P0D",
              "personal_data": section},
        headers=admin, timeout=10,
    )  # fmt: skip
    assert put.status_code == 200, put.text
    assert put.json()["personal_data"]["detectors"] == {"email": "block"}
    assert put.json()["personal_data"]["on_error"] == "closed"
    wrong = httpx.put(
        f"{gateway.base_url}/platform/policies/pd-api",
        json={"allow_classes": ["eu_sovereign"], "max_retention": "P0D",
              "personal_data": {"detectors": {"passport": "block"}}},
        headers=admin, timeout=10,
    )  # fmt: skip
    assert wrong.status_code == 400
    assert wrong.json()["error"]["param"] == "personal_data.detectors.passport"
    key = httpx.post(
        f"{gateway.base_url}/platform/keys", json={"name": "api", "policy_id": "pd-api"},
        headers=admin, timeout=10,
    ).json()["key"]  # fmt: skip
    with pytest.raises(openai.PermissionDeniedError) as caught:
        client(gateway, key).chat.completions.create(
            model="shared", messages=[{"role": "user", "content": f"write to {EMAIL}"}]
        )
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["code"] == "personal_data_detected"
    assert all(not u.stats() for u in upstreams.values())


def test_responses_surface_masks_and_restores_whole_and_streamed(
    gateway: Gateway,
    keys: dict[str, str],
    upstreams: dict[str, FakeUpstream],
    client: Callable[[Gateway, str], openai.OpenAI],
) -> None:
    sdk = client(gateway, keys["pd-mask"])
    whole = sdk.responses.create(model="shared", input=PROMPT + "[[reply=echo]]", store=False)
    assert whole.output_text == PROMPT
    stream = sdk.responses.create(
        model="shared", input=PROMPT + "[[reply=echo;piece=3]]", store=False, stream=True
    )
    deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
    assert "".join(deltas) == PROMPT
    assert not any("[" in d or "_1" in d for d in deltas)
    bodies = seen_bodies(upstreams)
    assert len(bodies) == 2 and all("[IBAN_1]" in body for body in bodies)
    assert not any(value in body for body in bodies for value in VALUES)
    recorded = trace(gateway, whole.model_extra["llmeu"]["trace_id"])  # type: ignore[index]
    found = {(f["detector"], f["count"]) for f in recorded["personal_data"]["findings"]}
    assert found == {("iban", 2), ("email", 1), ("nl_bsn", 1), ("pl_pesel", 1)}


def test_responses_surface_blocks_like_chat(
    gateway: Gateway,
    keys: dict[str, str],
    upstreams: dict[str, FakeUpstream],
    client: Callable[[Gateway, str], openai.OpenAI],
) -> None:
    with pytest.raises(openai.PermissionDeniedError) as refused:
        client(gateway, keys["pd-block"]).responses.create(model="shared", input=PROMPT)
    assert refused.value.code == "personal_data_detected"
    assert IBAN not in str(refused.value.body)
    assert seen_bodies(upstreams) == []


def test_messages_surface_masks_and_restores_whole_and_streamed(
    gateway: Gateway, keys: dict[str, str], upstreams: dict[str, FakeUpstream]
) -> None:
    with anthropic.Anthropic(base_url=gateway.url, api_key=keys["pd-mask"], max_retries=0) as sdk:
        whole = sdk.messages.create(
            model="shared",
            max_tokens=200,
            messages=[{"role": "user", "content": PROMPT + "[[reply=echo]]"}],
        )
        assert [b.text for b in whole.content if b.type == "text"] == [PROMPT]
        with sdk.messages.stream(
            model="shared",
            max_tokens=200,
            messages=[{"role": "user", "content": PROMPT + "[[reply=echo;piece=3]]"}],
        ) as stream:
            deltas = list(stream.text_stream)
    assert "".join(deltas) == PROMPT
    assert not any("[" in d or "_1" in d for d in deltas)
    bodies = seen_bodies(upstreams)
    assert len(bodies) == 2 and all("[IBAN_1]" in body for body in bodies)
    assert not any(value in body for body in bodies for value in VALUES)


def test_messages_surface_blocks_like_chat(
    gateway: Gateway, keys: dict[str, str], upstreams: dict[str, FakeUpstream]
) -> None:
    sdk = anthropic.Anthropic(base_url=gateway.url, api_key=keys["pd-block"], max_retries=0)
    with sdk, pytest.raises(anthropic.PermissionDeniedError) as refused:
        sdk.messages.create(
            model="shared", max_tokens=20, messages=[{"role": "user", "content": PROMPT}]
        )
    body = refused.value.body
    assert isinstance(body, dict) and body["error"]["type"] == "permission_error"
    assert "iban" in body["error"]["message"] and IBAN not in json.dumps(body)
    assert seen_bodies(upstreams) == []

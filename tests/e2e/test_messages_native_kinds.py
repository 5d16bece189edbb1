"""The official `anthropic` SDK through `/v1/messages` against every native provider kind.

One real `llmeu serve` fronts the fake Azure OpenAI, Bedrock and Vertex
(Gemini and Claude) upstreams of `tests/support/native_upstreams.py` and the
fake Anthropic upstream, all real processes speaking their provider's wire. Each
kind answers one streamed and one whole Messages call; the text, the usage and
the routing block (`llmeu` on the message, on the streamed `message_delta`)
must say what the upstream said and where it ran. Every body and event the SDK
receives is also validated against the SDK's own types.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import pytest
from anthropic.types import Message, RawMessageStreamEvent
from pydantic import TypeAdapter

from tests.support.anthropic_upstream import (
    FAKE_ANTHROPIC_KEY,
    anthropic_endpoint,
    start_fake_anthropic,
)
from tests.support.client_traces import settled_trace
from tests.support.native_upstreams import SECRETS, NativeFakes
from tests.support.processes import FakeUpstream, Gateway, start_gateway

EVENT = TypeAdapter(RawMessageStreamEvent)
KINDS = {
    # alias: (provider, inference region, sovereignty class)
    "azure-model": ("azure", "swedencentral", "eu_resident"),
    "azure-v1-model": ("azure", "swedencentral", "eu_resident"),
    "bedrock-model": ("bedrock", "eu-central-1", "eu_resident"),
    "vertex-model": ("vertex", "europe-west4", "eu_resident"),
    "vertex-claude-model": ("vertex", "europe-west1", "eu_resident"),  # Claude on Vertex
    "claude-eu": ("anthro", "test-1", "eu_sovereign"),
}
MODELS = list(KINDS)
TEXT = "tok0 tok1 tok2 tok3 "


@pytest.fixture(scope="module")
def fakes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NativeFakes]:
    started = NativeFakes.start(tmp_path_factory.mktemp("native"))
    yield started
    started.stop()


@pytest.fixture(scope="module")
def fake_anthropic(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeUpstream]:
    upstream = start_fake_anthropic(tmp_path_factory.mktemp("anthropic"))
    yield upstream
    upstream.stop()


@pytest.fixture(scope="module")
def gateway(
    fakes: NativeFakes, fake_anthropic: FakeUpstream, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gateway]:
    native = fakes.config()
    endpoints, policies = native.split("policies:", 1)
    config = endpoints + anthropic_endpoint("anthro-fr-a", fake_anthropic) + "policies:" + policies
    env = {**fakes.environ(), "FAKE_ANTHROPIC_KEY": FAKE_ANTHROPIC_KEY}
    started = start_gateway(tmp_path_factory.mktemp("gw"), config=config, env=env,
                            args=["--log-level", "debug"])  # fmt: skip
    yield started
    started.kill()


@pytest.fixture
def client(
    gateway: Gateway, fakes: NativeFakes, fake_anthropic: FakeUpstream
) -> anthropic.Anthropic:
    fakes.reset()
    fake_anthropic.reset()
    return anthropic.Anthropic(base_url=gateway.url, api_key=gateway.admin_key, max_retries=0)


def user(text: str) -> list[Any]:
    return [{"role": "user", "content": text}]


def assert_routed(routing: dict[str, Any], model: str) -> None:
    provider, region, sovereignty = KINDS[model]
    assert (routing["provider"], routing["inference_region"], routing["sovereignty_class"]) == (
        provider, region, sovereignty)  # fmt: skip
    assert routing["trace_id"].startswith("trc_")
    assert routing["cost_estimate"]["estimated"] is False


@pytest.mark.parametrize("model", MODELS)
def test_streamed_message_with_usage_and_routing_block(
    client: anthropic.Anthropic, gateway: Gateway, model: str
) -> None:
    events = []
    with client.messages.stream(
        model=model, max_tokens=50, system="be brief", messages=user("hi [[chunks=4]]")
    ) as stream:
        for event in stream:
            if event.type in ("message_start", "content_block_start", "content_block_delta",
                              "content_block_stop", "message_delta", "message_stop"):  # fmt: skip
                EVENT.validate_python(event.model_dump())
                events.append(event)
        final = stream.get_final_message()
    kinds = [e.type for e in events]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    assert [b.type for b in final.content] == ["text"]
    assert final.content[0].text == TEXT  # type: ignore[union-attr]
    assert final.stop_reason == "end_turn"
    assert (final.usage.input_tokens, final.usage.output_tokens) == (11, 4)
    delta = next(e for e in events if e.type == "message_delta")
    routing = delta.model_extra["llmeu"]  # type: ignore[index]
    assert_routed(routing, model)
    assert final.id[4:] == routing["trace_id"][4:]
    trace = settled_trace(gateway, routing["trace_id"])
    assert trace["route"] == "/v1/messages" and trace["status"] == "completed"
    assert (trace["usage"]["input_tokens"], trace["usage"]["output_tokens"]) == (11, 4)


@pytest.mark.parametrize("model", MODELS)
def test_whole_message_with_usage_and_routing_block(
    client: anthropic.Anthropic, gateway: Gateway, model: str
) -> None:
    raw = client.messages.with_raw_response.create(
        model=model,
        max_tokens=50,
        messages=user("hi [[chunks=4]]"),
        extra_body={"temperature": 0.2},
    )
    body = raw.http_response.json()
    Message.model_validate(body)
    message = raw.parse()
    assert message.type == "message" and message.role == "assistant"
    assert [b.type for b in message.content] == ["text"]
    assert message.content[0].text == TEXT  # type: ignore[union-attr]
    assert message.stop_reason == "end_turn" and message.stop_sequence is None
    assert (message.usage.input_tokens, message.usage.output_tokens) == (11, 4)
    assert_routed(body["llmeu"], model)
    trace = settled_trace(gateway, body["llmeu"]["trace_id"])
    assert trace["route"] == "/v1/messages" and trace["status"] == "completed"


def test_no_upstream_credential_in_logs_or_traces(
    client: anthropic.Anthropic, gateway: Gateway, fakes: NativeFakes
) -> None:
    for model in MODELS:
        client.messages.create(model=model, max_tokens=50, messages=user("hi [[chunks=1]]"))
    headers = {"authorization": f"Bearer {gateway.admin_key}"}
    traces = httpx.get(f"{gateway.url}/v1/platform/traces?limit=200", headers=headers).text
    assert "/v1/messages" in traces
    for text in (gateway.output(), traces):
        for secret in (*SECRETS, FAKE_ANTHROPIC_KEY, fakes.private_key.splitlines()[1],
                       "ya29.fake-"):  # fmt: skip
            assert secret not in text

"""The official `anthropic` SDK against a real `llmeu serve`: chat upstreams and native Anthropic.

One gateway serves `fake-model` (an OpenAI-compatible fake upstream) and
`claude-eu` (a `kind: anthropic` endpoint in front of the fake Anthropic
upstream, both real processes). Every body and event the SDK receives is
also validated against the SDK's own types.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
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
from tests.support.processes import (
    FakeUpstream,
    Gateway,
    config_yaml,
    fake_endpoint,
    start_gateway,
)

EVENT = TypeAdapter(RawMessageStreamEvent)
TOOLS: Any = [
    {
        "name": "get_weather",
        "description": "The weather in a city",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]


@pytest.fixture(scope="module")
def fake_anthropic(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeUpstream]:
    upstream = start_fake_anthropic(tmp_path_factory.mktemp("anthropic"))
    yield upstream
    upstream.stop()


@pytest.fixture(scope="module")
def gateway(
    upstream_process: FakeUpstream,
    fake_anthropic: FakeUpstream,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Gateway]:
    tmp: Path = tmp_path_factory.mktemp("messages")
    config = config_yaml(
        fake_endpoint("fakeprov-fr-a", upstream_process),
        anthropic_endpoint("anthro-fr-a", fake_anthropic),
        default_policy="eu-store",
    )
    gateway = start_gateway(tmp, config=config, env={"FAKE_ANTHROPIC_KEY": FAKE_ANTHROPIC_KEY})
    yield gateway
    gateway.kill()


@pytest.fixture
def client(gateway: Gateway) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gateway.url, api_key=gateway.admin_key, max_retries=0)


def user(text: str) -> list[Any]:
    return [{"role": "user", "content": text}]


def test_create_answers_a_message_with_usage_and_routing(client: anthropic.Anthropic) -> None:
    raw = client.messages.with_raw_response.create(
        model="fake-model", max_tokens=50, system="be brief", messages=user("hi [[chunks=3]]"),
        stop_sequences=["END"], metadata={"user_id": "alice"}, inference_geo="eu",
        extra_body={"temperature": 0.2, "top_k": 5},
    )  # fmt: skip
    body = raw.http_response.json()
    Message.model_validate(body)
    message = raw.parse()
    assert message.id.startswith("msg_") and message.type == "message"
    assert [b.type for b in message.content] == ["text"]
    assert message.content[0].text == "tok0 tok1 tok2 "  # type: ignore[union-attr]
    assert message.stop_reason == "end_turn" and message.stop_sequence is None
    assert message.usage.input_tokens == 11 and message.usage.output_tokens == 3
    routing = body["llmeu"]
    assert routing["endpoint_id"] == "fakeprov-fr-a" and routing["trace_id"].startswith("trc_")
    assert message.id[4:] == routing["trace_id"][4:]


def test_stream_helpers_give_the_text_and_the_final_message(
    client: anthropic.Anthropic, gateway: Gateway
) -> None:
    with client.messages.stream(
        model="fake-model", max_tokens=50, messages=user("hi [[chunks=4]]")
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "tok0 tok1 tok2 tok3 "
    assert final.content[0].text == text  # type: ignore[union-attr]
    assert final.stop_reason == "end_turn"
    assert final.usage.output_tokens == 4 and final.usage.input_tokens == 11
    trace = settled_trace(gateway, "trc_" + final.id[4:])
    assert trace["route"] == "/v1/messages" and trace["status"] == "completed"


def test_a_tool_use_round_trip_over_a_chat_upstream(client: anthropic.Anthropic) -> None:
    with client.messages.stream(
        model="fake-model", max_tokens=50, tools=TOOLS, tool_choice={"type": "any"},
        messages=user("weather in Paris?"),
    ) as stream:  # fmt: skip
        first = stream.get_final_message()
    assert first.stop_reason == "tool_use"
    (call,) = [b for b in first.content if b.type == "tool_use"]
    assert call.name == "get_weather" and call.input == {"city": "Paris"}
    answer = client.messages.create(
        model="fake-model", max_tokens=50, tools=TOOLS,
        messages=[
            *user("weather in Paris?"),
            {"role": "assistant", "content": first.content},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": call.id, "content": "sunny"},
                {"type": "text", "text": "so? [[chunks=1]]"}]},
        ],
    )  # fmt: skip
    assert answer.content[0].text == "tok0 "  # type: ignore[union-attr]


def test_native_anthropic_keeps_thinking_signatures_and_cache_tokens(
    client: anthropic.Anthropic, gateway: Gateway, fake_anthropic: FakeUpstream
) -> None:
    fake_anthropic.reset()
    events = []
    with client.messages.stream(
        model="claude-eu", max_tokens=2000, thinking={"type": "enabled", "budget_tokens": 1024},
        messages=user("hi [[thinking=1;cache=1;chunks=2]]"),
    ) as stream:  # fmt: skip
        for event in stream:
            if event.type in ("message_start", "content_block_start", "content_block_delta",
                              "content_block_stop", "message_delta", "message_stop"):  # fmt: skip
                EVENT.validate_python(event.model_dump())
                events.append(event)
        final = stream.get_final_message()
    assert [b.type for b in final.content] == ["thinking", "text"]
    assert final.content[0].thinking == "Let me think. Paris it is."  # type: ignore[union-attr]
    assert final.content[0].signature  # type: ignore[union-attr]
    start = next(e for e in events if e.type == "message_start")
    assert start.message.usage.input_tokens == 11  # the upstream's own count, said early
    delta = next(e for e in events if e.type == "message_delta")
    assert delta.usage.cache_read_input_tokens == 5
    assert delta.usage.cache_creation_input_tokens == 3
    assert delta.usage.input_tokens == 11 and delta.usage.output_tokens == 2
    assert delta.model_extra["llmeu"]["provider"] == "anthro"  # type: ignore[index]
    (seen,) = fake_anthropic.stats()
    assert seen["headers"]["x-api-key"] == FAKE_ANTHROPIC_KEY
    assert seen["headers"]["anthropic-version"] == "2023-06-01"
    assert seen["body"]["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    trace = settled_trace(gateway, delta.model_extra["llmeu"]["trace_id"])  # type: ignore[index]
    assert trace["usage"]["input_tokens"] == 11 + 5 + 3  # every input token, cached or not
    assert trace["usage"]["cache_read_tokens"] == 5
    assert trace["usage"]["cache_creation_tokens"] == 3


def test_native_anthropic_tool_use_non_streamed(client: anthropic.Anthropic) -> None:
    message = client.messages.create(
        model="claude-eu", max_tokens=50, tools=TOOLS, messages=user("weather? [[tools=1]]")
    )
    (call,) = message.content
    assert call.type == "tool_use" and call.input == {"city": "Paris"}
    assert message.stop_reason == "tool_use"


def test_count_tokens_asks_a_native_endpoint_else_estimates(client: anthropic.Anthropic) -> None:
    native = client.messages.count_tokens(model="claude-eu", messages=user("hello there"))
    assert native.input_tokens > 100 and not (native.model_extra or {}).get("estimated")
    estimated = client.messages.count_tokens(model="fake-model", messages=user("hello there"))
    assert estimated.input_tokens == 3 + 3  # ⌈11 / 4⌉ characters, 3 for the message
    assert estimated.model_extra["estimated"] is True  # type: ignore[index]


def test_thinking_on_a_chat_upstream_is_a_400_naming_it(client: anthropic.Anthropic) -> None:
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(
            model="fake-model", max_tokens=2000, messages=user("hi"),
            thinking={"type": "enabled", "budget_tokens": 1024},
        )  # fmt: skip
    assert "thinking" in caught.value.message


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"extra_body": {"temperature": 3}}, anthropic.BadRequestError),
        ({"tools": [{"name": "get_weather"}]}, anthropic.BadRequestError),
        ({"model": "no-such-model"}, anthropic.NotFoundError),
        ({"extra_body": {"llmeu": {"allow_classes": ["on_premise"]}}},
         anthropic.PermissionDeniedError),
    ],
    ids=["temperature-range", "tool-without-schema", "unknown-model", "no-compliant-route"],
)  # fmt: skip
def test_sdk_error_classes(
    client: anthropic.Anthropic, kwargs: dict[str, Any], error: type[anthropic.APIStatusError]
) -> None:
    request: dict[str, Any] = {"model": "fake-model", "max_tokens": 10, "messages": user("x")}
    request.update(kwargs)
    with pytest.raises(error) as caught:
        client.messages.create(**request)
    body = caught.value.body
    assert isinstance(body, dict) and body["type"] == "error"
    assert body["error"]["type"] == {
        400: "invalid_request_error", 403: "permission_error", 404: "not_found_error"
    }[caught.value.status_code]  # fmt: skip
    if error is anthropic.PermissionDeniedError:
        assert body["error"]["code"] == "no_compliant_route"
        assert {d["endpoint_id"] for d in body["error"]["details"]} >= {"fakeprov-fr-a"}


def test_a_bad_key_is_an_authentication_error(gateway: Gateway) -> None:
    client = anthropic.Anthropic(base_url=gateway.url, api_key="sk-llmeu-nope", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as caught:
        client.messages.create(model="fake-model", max_tokens=10, messages=user("x"))
    assert caught.value.body["error"]["type"] == "authentication_error"  # type: ignore[index]


def test_over_the_rate_limit_is_a_rate_limit_error(gateway: Gateway) -> None:
    created = httpx.post(
        f"{gateway.base_url}/platform/keys",
        headers={"authorization": f"Bearer {gateway.admin_key}"},
        json={"name": "one-a-minute", "rpm_limit": 1},
    )
    assert created.status_code == 201, created.text
    client = anthropic.Anthropic(base_url=gateway.url, api_key=created.json()["key"], max_retries=0)
    client.messages.create(model="fake-model", max_tokens=10, messages=user("x [[chunks=1]]"))
    with pytest.raises(anthropic.RateLimitError) as caught:
        client.messages.create(model="fake-model", max_tokens=10, messages=user("x"))
    assert caught.value.body["error"]["type"] == "rate_limit_error"  # type: ignore[index]
    assert caught.value.response.headers["retry-after"]


def test_a_claude_code_shaped_request_is_served_by_a_chat_upstream(
    client: anthropic.Anthropic,
) -> None:
    """What Claude Code sends: beta headers, `?beta=true`, adaptive thinking (served by not
    thinking where the upstream cannot), context management, an effort, a system turn."""
    message = client.messages.create(
        model="fake-model", max_tokens=4000, thinking={"type": "adaptive"},
        system=[{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}],
        messages=[*user("hi"), {"role": "assistant", "content": "hello"},
                  {"role": "system", "content": "reminder"},  # type: ignore[list-item]
                  *user("again [[chunks=2]]")],
        extra_body={"context_management": {"edits": [{"type": "clear_thinking_20251015"}]},
                    "output_config": {"effort": "high"}},
        extra_headers={"anthropic-beta": "claude-code-20250219,effort-2025-11-24"},
        extra_query={"beta": "true"},
    )  # fmt: skip
    assert message.content[0].text == "tok0 tok1 "  # type: ignore[union-attr]
    assert message.stop_reason == "end_turn"

"""The Responses API through the official `openai` SDK against a real `llmeu serve` process and
a real fake upstream: created streamed and not, the `responses.stream` helpers, a function-tool
round trip, OpenAI-shaped errors; every event and body validated against the SDK's own types."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import openai
import pytest
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from tests.support.openai_schema import check_response, check_stream_event
from tests.support.processes import FakeUpstream, Gateway, config_yaml, fake_endpoint

EVENTS: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
TOOLS: list[Any] = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]


@pytest.fixture
def gateway(gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream) -> Gateway:
    return gateway_factory(config=config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream)))


@pytest.fixture
def client(gateway: Gateway) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.base_url, api_key=gateway.admin_key, max_retries=0)


def test_create_returns_a_response_with_usage_and_routing(
    client: openai.OpenAI, fake_upstream: FakeUpstream
) -> None:
    response = client.responses.create(
        model="fake-model",
        instructions="be brief",
        input="hi [[chunks=3]]",
        temperature=0.2,
        max_output_tokens=10,
        metadata={"team": "a"},
        safety_identifier="alice",
    )
    Response.model_validate(response.model_dump())
    check_response(response.model_dump(mode="json", exclude_unset=True))
    assert response.id.startswith("resp_")
    assert response.status == "completed"
    assert response.output_text == "tok tok tok"
    assert response.instructions == "be brief" and response.max_output_tokens == 10
    assert response.usage is not None and response.usage.output_tokens == 3
    assert response.usage.total_tokens == response.usage.input_tokens + 3
    routing = response.model_extra["llmeu"]  # type: ignore[index]
    assert routing["endpoint_id"] == "fakeprov-fr-a"
    assert routing["trace_id"][4:] == response.id[5:]
    assert response.store is False  # eu-strict keeps no content
    seen = fake_upstream.stats()[-1]
    assert seen["stream"] is False


def test_create_streamed_yields_every_event_in_order(client: openai.OpenAI) -> None:
    stream = client.responses.create(model="fake-model", input="hi [[chunks=4]]", stream=True)
    events = list(stream)
    for event in events:
        EVENTS.validate_python(event.model_dump())
        check_stream_event(event.model_dump(mode="json", exclude_unset=True))
    assert [e.sequence_number for e in events] == list(range(len(events)))
    types = [e.type for e in events]
    assert types[:4] == [
        "response.created", "response.in_progress", "response.output_item.added",
        "response.content_part.added",
    ]  # fmt: skip
    assert types.count("response.output_text.delta") == 4
    assert types[-4:] == [
        "response.output_text.done", "response.content_part.done", "response.output_item.done",
        "response.completed",
    ]  # fmt: skip
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert deltas == ["tok0 ", "tok1 ", "tok2 ", "tok3 "]
    completed = events[-1]
    assert completed.type == "response.completed"
    assert completed.response.output_text == "tok0 tok1 tok2 tok3 "
    assert completed.response.model_extra["llmeu"]["provider"] == "fakeprov"  # type: ignore[index]


def test_stream_helpers_accumulate_the_final_response(client: openai.OpenAI) -> None:
    with client.responses.stream(model="fake-model", input="hi [[chunks=3;reasoning=2]]") as stream:
        texts = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert texts == ["tok0 ", "tok1 ", "tok2 "]
    assert [item.type for item in final.output] == ["reasoning", "message"]
    reasoning = final.output[0]
    assert reasoning.type == "reasoning" and reasoning.content is not None
    assert reasoning.content[0].text == "think0 think1 "
    assert final.output_text == "tok0 tok1 tok2 "


@pytest.mark.parametrize("stream", [False, True], ids=["created", "streamed"])
def test_function_tool_round_trip(
    client: openai.OpenAI, fake_upstream: FakeUpstream, stream: bool
) -> None:
    request: dict[str, Any] = {
        "model": "fake-model", "input": "weather in Paris? [[tools=1;chunks=4]]", "tools": TOOLS,
    }  # fmt: skip
    if stream:
        with client.responses.stream(**request) as events:
            arguments = [
                e.delta for e in events if e.type == "response.function_call_arguments.delta"
            ]
            first = events.get_final_response()
        assert "".join(arguments) == '{"city": "Paris"}' and len(arguments) == 3
    else:
        first = client.responses.create(**request)
    calls = [item for item in first.output if item.type == "function_call"]
    assert len(calls) == 1
    call = calls[0]
    assert call.name == "get_weather" and json.loads(call.arguments) == {"city": "Paris"}
    assert call.call_id == "call_1"
    followup = client.responses.create(
        model="fake-model",
        input=[
            {"role": "user", "content": "weather in Paris?"},
            *[item.model_dump(exclude_none=True) for item in first.output],  # type: ignore[misc]
            {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"},
        ],
        tools=TOOLS,
    )
    assert followup.output_text == "tok tok tok tok tok tok"
    assert fake_upstream.stats()[-1]["messages"] == [
        {"role": "user", "content": "weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [{"type": "function",
         "id": "call_1", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "content": "sunny", "tool_call_id": "call_1"},
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("kwargs", "status", "param"),
    [
        ({"model": "no-such-model"}, 404, "model"),
        ({"tools": [{"type": "frobnicator"}]}, 400, "tools[0].type"),
        ({"tools": [{"type": "function", "name": "f"}, {"type": "custom", "name": "f"}]},
         400, "tools[1].name"),
        ({"include": ["message.output_text.logprobs"]}, 400, "include[0]"),
        ({"temperature": 5}, 400, "temperature"),
        ({"input": [{"type": "item_reference", "id": "x"}]}, 400, "input[0].type"),
        ({"input": [{"type": "function_call_output", "output": "x"}]}, 400, "input[0].call_id"),
        ({"extra_body": {"frobnicate": True}}, 400, "frobnicate"),
        ({"background": True}, 400, "background"),
        ({"conversation": "conv_1"}, 404, "conversation"),
        ({"prompt": {"id": "pmpt_1"}}, 404, "prompt"),
    ],
    ids=["unknown-model", "unknown-tool-type", "tool-names-collide", "include", "temperature",
         "item-reference", "output-without-call-id", "unknown-field", "background",
         "conversation", "prompt"],
)  # fmt: skip
def test_errors_are_openai_shaped(
    client: openai.OpenAI, kwargs: dict[str, Any], status: int, param: str
) -> None:
    request: dict[str, Any] = {"model": "fake-model", "input": "x"}
    request.update(kwargs)
    with pytest.raises(openai.APIStatusError) as caught:
        client.responses.create(**request)
    assert caught.value.status_code == status
    body = caught.value.body
    assert isinstance(body, dict) and body["param"] == param


def test_no_compliant_route_is_403_with_reasons(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream
) -> None:
    endpoint = fake_endpoint("usprov-us-a", fake_upstream, sovereignty_class="global", country="US")
    gateway = gateway_factory(config=config_yaml(endpoint))
    client = openai.OpenAI(base_url=gateway.base_url, api_key=gateway.admin_key, max_retries=0)
    with pytest.raises(openai.PermissionDeniedError) as caught:
        client.responses.create(model="fake-model", input="x", stream=True)
    body = caught.value.body
    assert isinstance(body, dict) and body["code"] == "no_compliant_route"
    assert fake_upstream.stats() == []


def test_reasoning_summaries_from_a_chat_upstream(client: openai.OpenAI) -> None:
    """A chat upstream's `reasoning_content` deltas are the reasoning item's summary when the
    request asks for one, in OpenAI's events, read by the SDK's stream helper."""
    request: dict[str, Any] = {
        "model": "fake-model", "input": "hi [[chunks=2;reasoning=3]]",
        "reasoning": {"effort": "low", "summary": "auto"},
    }  # fmt: skip
    with client.responses.stream(**request) as stream:
        events = list(stream)
        final = stream.get_final_response()
    for event in events:  # the helper's parsed types, dumped as the plain ones
        EVENTS.validate_python(event.model_dump(warnings=False))
        check_stream_event(event.model_dump(mode="json", exclude_unset=True, warnings=False))
    types = [e.type for e in events]
    assert types[2:10] == [
        "response.output_item.added", "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta", "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.delta", "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done", "response.output_item.done",
    ]  # fmt: skip
    assert [e.delta for e in events if e.type == "response.reasoning_summary_text.delta"] == [
        "think0 ", "think1 ", "think2 "
    ]  # fmt: skip
    reasoning = final.output[0]
    assert reasoning.type == "reasoning" and reasoning.content is None
    assert [s.text for s in reasoning.summary] == ["think0 think1 think2 "]
    assert final.output_text == "tok0 tok1 "

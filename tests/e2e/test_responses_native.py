"""Native pass-through: an endpoint declaring the `responses` capability gets the caller's
Responses request on its own `/responses`, through a real `llmeu serve` and a real fake
Responses upstream, with the guarantees of the translated path — llmeu's ids and sequence
numbers, the routing block, the trace and usage, fallback before the first event,
`response.failed` after it, a hang-up that closes the upstream — and reasoning items kept
with their summaries and `encrypted_content`. Every event and body is validated against the
`openai` SDK's types and OpenAI's published schema."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from agents import (
    Agent,
    ModelSettings,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from openai import AsyncOpenAI
from openai.types.responses import Response, ResponseStreamEvent
from openai.types.shared import Reasoning
from pydantic import TypeAdapter

from tests.support.client_traces import settled_trace
from tests.support.openai_schema import check_response, check_stream_event
from tests.support.processes import (
    FakeUpstream,
    Gateway,
    config_yaml,
    fake_endpoint,
    start_fake_upstream,
)
from tests.support.waiting import wait_for

EVENTS: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
TOOLS: list[Any] = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]
NATIVE = ("chat", "tools", "responses")


@pytest.fixture
def responses_upstream(tmp_path: Path) -> Iterator[FakeUpstream]:
    upstream = start_fake_upstream(tmp_path, "fake_responses_upstream.py")
    yield upstream
    upstream.stop()


@pytest.fixture
def gateway(gateway_factory: Callable[..., Gateway], responses_upstream: FakeUpstream) -> Gateway:
    endpoint = fake_endpoint(
        "nativeprov-fr-a", responses_upstream, model="up-model", capabilities=NATIVE
    )
    return gateway_factory(config=config_yaml(endpoint, default_policy="eu-store"))


@pytest.fixture
def client(gateway: Gateway) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.base_url, api_key=gateway.admin_key, max_retries=0)


def validated(events: list[Any]) -> list[Any]:
    for event in events:
        EVENTS.validate_python(event.model_dump())
        check_stream_event(event.model_dump(mode="json", exclude_unset=True))
    assert [e.sequence_number for e in events] == list(range(len(events)))
    return events


def upstream_request(upstream: FakeUpstream) -> dict[str, Any]:
    seen = upstream.stats()[-1]
    assert seen["path"] == "/v1/responses"
    body: dict[str, Any] = seen["body"]
    return body


def test_a_streamed_call_passes_through_with_llmeu_ids_and_reasoning(
    client: openai.OpenAI, gateway: Gateway, responses_upstream: FakeUpstream
) -> None:
    stream = client.responses.create(
        model="fake-model", input="hi [[reasoning=3;chunks=4]]", stream=True, store=False,
        reasoning={"effort": "low", "summary": "auto"}, max_output_tokens=100,
    )  # fmt: skip
    events = validated(list(stream))
    types = [e.type for e in events]
    assert types[:6] == [
        "response.created", "response.in_progress", "response.output_item.added",
        "response.reasoning_summary_part.added", "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.delta",
    ]  # fmt: skip
    assert types.count("response.reasoning_summary_text.delta") == 3
    assert types.count("response.output_text.delta") == 4
    assert types[-1] == "response.completed"
    final = events[-1].response
    assert final.id == events[0].response.id and final.id != "resp_upstream"
    assert final.model == "up-model" and final.store is False
    reasoning, message = final.output
    assert reasoning.type == "reasoning" and reasoning.encrypted_content == "enc-3"
    assert [s.text for s in reasoning.summary] == ["think0 think1 think2 "]
    assert reasoning.id.startswith("rs_") and reasoning.id != "rs_up"
    assert message.type == "message" and final.output_text == "tok0 tok1 tok2 tok3 "
    assert final.usage is not None
    assert (final.usage.input_tokens, final.usage.output_tokens) == (13, 7)
    routing = final.model_extra["llmeu"]  # type: ignore[index]
    assert routing["endpoint_id"] == "nativeprov-fr-a"
    sent = upstream_request(responses_upstream)
    assert sent["model"] == "up-model" and sent["store"] is False and sent["stream"] is True
    assert sent["include"] == ["reasoning.encrypted_content"]
    assert sent["reasoning"] == {"effort": "low", "summary": "auto"}
    assert sent["max_output_tokens"] == 100 and "llmeu" not in sent
    trace = settled_trace(gateway, routing["trace_id"])
    assert trace["status"] == "completed" and trace["route"] == "responses"
    assert (trace["usage"]["input_tokens"], trace["usage"]["output_tokens"]) == (13, 7)
    assert trace["usage"]["estimated"] is False
    assert trace["content"]["completion"] == "tok0 tok1 tok2 tok3 "
    usage = httpx.get(
        f"{gateway.base_url}/platform/usage",
        headers={"authorization": f"Bearer {gateway.admin_key}"},
        timeout=10,
    ).json()["totals"]
    assert (usage["requests"], usage["completed"]) == (1, 1)
    assert (usage["input_tokens"], usage["output_tokens"]) == (13, 7)
    assert usage["cost_eur"] == trace["usage"]["cost_eur"] > 0


def test_a_whole_call_passes_through_with_the_same_items(
    client: openai.OpenAI, gateway: Gateway, responses_upstream: FakeUpstream
) -> None:
    response = client.responses.create(
        model="fake-model", input="hi [[reasoning=2;parts=2]]", store=False,
        reasoning={"summary": "detailed"}, include=["reasoning.encrypted_content"],
    )  # fmt: skip
    Response.model_validate(response.model_dump())
    check_response(response.model_dump(mode="json", exclude_unset=True))
    assert response.status == "completed" and response.output_text == "tok0 tok1 tok2 "
    reasoning = response.output[0]
    assert reasoning.type == "reasoning" and reasoning.encrypted_content == "enc-2"
    assert "".join(s.text for s in reasoning.summary) == "think0 \n\nthink1 "
    assert response.usage is not None and response.usage.total_tokens == 20
    sent = upstream_request(responses_upstream)
    assert sent["stream"] is False and sent["store"] is False and sent["model"] == "up-model"
    trace = settled_trace(gateway, response.model_extra["llmeu"]["trace_id"])  # type: ignore[index]
    assert trace["status"] == "completed"
    assert (trace["usage"]["input_tokens"], trace["usage"]["output_tokens"]) == (13, 7)


@pytest.mark.parametrize("stream", [False, True], ids=["created", "streamed"])
def test_function_calls_pass_through(
    client: openai.OpenAI, responses_upstream: FakeUpstream, stream: bool
) -> None:
    request: dict[str, Any] = {
        "model": "fake-model", "input": "weather? [[tools=1]]", "tools": TOOLS, "store": False,
    }  # fmt: skip
    if stream:
        with client.responses.stream(**request) as events:
            pieces = [e.delta for e in events if e.type == "response.function_call_arguments.delta"]
            first = events.get_final_response()
        assert pieces == ['{"city": ', '"Paris"}']
    else:
        first = client.responses.create(**request)
    call = first.output[0]
    assert call.type == "function_call" and call.call_id == "call_up1"
    assert call.name == "get_weather" and json.loads(call.arguments) == {"city": "Paris"}
    assert upstream_request(responses_upstream)["tools"][0]["name"] == "get_weather"
    second = client.responses.create(
        model="fake-model", tools=TOOLS, store=False,
        input=[
            {"role": "user", "content": "weather?"},
            {"type": "function_call", "call_id": call.call_id, "name": call.name,
             "arguments": call.arguments},
            {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"},
        ],
    )  # fmt: skip
    assert second.output_text == "tok0 tok1 tok2 "
    items = upstream_request(responses_upstream)["input"]
    assert [i["type"] for i in items] == ["message", "function_call", "function_call_output"]
    assert items[2] == {"type": "function_call_output", "call_id": "call_up1", "output": "sunny"}


def test_a_continued_conversation_is_resolved_by_llmeu(
    client: openai.OpenAI, responses_upstream: FakeUpstream
) -> None:
    first = client.responses.create(
        model="fake-model", input="hi [[reasoning=1]]", reasoning={"summary": "auto"}
    )
    assert first.store is True
    client.responses.create(model="fake-model", input="more", previous_response_id=first.id)
    sent = upstream_request(responses_upstream)
    assert "previous_response_id" not in sent and sent["store"] is False
    kinds = [(i["type"], i.get("role")) for i in sent["input"]]
    assert kinds == [
        ("message", "user"), ("reasoning", None), ("message", "assistant"), ("message", "user")
    ]  # fmt: skip
    assert sent["input"][1]["encrypted_content"] == "enc-1"
    assert sent["input"][2]["content"][0]["text"] == "tok0 tok1 tok2 "


def test_a_failure_before_the_first_event_falls_back_to_a_chat_endpoint(
    gateway_factory: Callable[..., Gateway],
    responses_upstream: FakeUpstream,
    fake_upstream: FakeUpstream,
) -> None:
    native = fake_endpoint(
        "nativeprov-fr-a", responses_upstream, model="fake;fault=status_503", priority=1,
        capabilities=NATIVE,
    )  # fmt: skip
    chat = fake_endpoint("chatprov-fr-b", fake_upstream, priority=2)
    gateway = gateway_factory(config=config_yaml(native, chat))
    client = openai.OpenAI(base_url=gateway.base_url, api_key=gateway.admin_key, max_retries=0)
    events = validated(list(client.responses.create(model="fake-model", input="hi", stream=True)))
    final = events[-1]
    assert final.type == "response.completed"
    routing = final.response.model_extra["llmeu"]  # type: ignore[index]
    assert routing["endpoint_id"] == "chatprov-fr-b"
    assert [r["path"] for r in responses_upstream.stats()] == ["/v1/responses"]
    assert fake_upstream.stats()[-1]["path"] == "/v1/chat/completions"
    trace = settled_trace(gateway, routing["trace_id"])
    attempts = [(a["endpoint_id"], a["outcome"]) for a in trace["attempts"]]
    assert attempts[0][0] == "nativeprov-fr-a" and attempts[0][1] != "served"
    assert attempts[1] == ("chatprov-fr-b", "served")


@pytest.mark.parametrize("fault", ["error_mid_stream", "missing_terminal"])
def test_a_failure_after_the_first_event_ends_in_response_failed(
    client: openai.OpenAI, gateway: Gateway, fault: str
) -> None:
    stream = client.responses.create(
        model="fake-model", input=f"hi [[chunks=6;fault={fault}]]", stream=True
    )
    events = validated(list(stream))
    last = events[-1]
    assert last.type == "response.failed"
    assert [e.type for e in events].count("response.failed") == 1
    assert last.response.error is not None
    routing = last.response.model_extra["llmeu"]  # type: ignore[index]
    assert routing["endpoint_id"] == "nativeprov-fr-a"
    assert settled_trace(gateway, routing["trace_id"])["status"] == "failed"


def test_a_hang_up_closes_the_upstream_and_is_cancelled_with_the_text_sent(
    gateway: Gateway, responses_upstream: FakeUpstream
) -> None:
    body = {"model": "fake-model", "input": "story [[chunks=50;delay=200]]", "stream": True}
    payload = json.dumps(body).encode()
    head = (
        f"POST /v1/responses HTTP/1.1\r\nhost: 127.0.0.1\r\n"
        f"authorization: Bearer {gateway.admin_key}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(payload)}\r\nconnection: close\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=30) as sock:
        sock.sendall(head + payload)
        data = b""
        while data.count(b"event: response.output_text.delta") < 2:
            chunk = sock.recv(65536)
            assert chunk, "the gateway closed the stream early"
            data += chunk
    headers = data.partition(b"\r\n\r\n")[0].decode("latin-1").lower().split("\r\n")
    trace_id = next(h.split(": ", 1)[1] for h in headers if h.startswith("x-llmeu-trace-id"))
    trace = settled_trace(gateway, trace_id)
    assert trace["status"] == "cancelled"
    assert trace["content"]["completion"].startswith("tok0 tok1 ")
    seen = wait_for(lambda: responses_upstream.stats()[-1].get("closed_at") and
                    responses_upstream.stats()[-1], what="the upstream closed")  # fmt: skip
    assert seen["completed"] is False


IBAN = "NL91 ABNA 0417 1643 00"
EMAIL = "jan.jansen@example.nl"
PROMPT = f"Refund {IBAN} for {EMAIL}; again {IBAN}."
MASKING = """
  - policy_id: pd-mask
    allow_classes: [eu_sovereign]
    max_retention: P0D
    personal_data:
      detectors: {iban: mask, email: mask}
"""


def test_personal_data_is_masked_upstream_and_restored_for_the_caller(
    gateway_factory: Callable[..., Gateway], responses_upstream: FakeUpstream
) -> None:
    endpoint = fake_endpoint("nativeprov-fr-a", responses_upstream, capabilities=NATIVE)
    gateway = gateway_factory(
        config=config_yaml(endpoint, policies=MASKING, default_policy="pd-mask")
    )
    client = openai.OpenAI(base_url=gateway.base_url, api_key=gateway.admin_key, max_retries=0)
    whole = client.responses.create(model="fake-model", input=PROMPT + "[[reply=echo]]")
    assert whole.output_text == PROMPT
    stream = client.responses.create(
        model="fake-model", input=PROMPT + "[[reply=echo;piece=3]]", stream=True
    )
    deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
    assert "".join(deltas) == PROMPT
    sent = [json.dumps(r["body"]) for r in responses_upstream.stats()]
    assert len(sent) == 2 and all("[IBAN_1]" in body and "[EMAIL_1]" in body for body in sent)
    assert not any(value in body for body in sent for value in (IBAN, EMAIL))


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run-streamed"])
async def test_an_agent_runs_its_tool_over_a_native_endpoint(
    gateway: Gateway, responses_upstream: FakeUpstream, streamed: bool
) -> None:
    set_tracing_disabled(True)
    cities: list[str] = []

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        cities.append(city)
        return f"sunny in {city}"

    question = "What is the weather in Paris? [[tools=1;reasoning=1]]"
    config = RunConfig(tracing_disabled=True)
    async with AsyncOpenAI(
        base_url=gateway.base_url, api_key=gateway.admin_key, max_retries=0
    ) as client:
        agent = Agent(
            name="weather", instructions="Answer with the weather.", tools=[get_weather],
            model=OpenAIResponsesModel(model="fake-model", openai_client=client),
            model_settings=ModelSettings(reasoning=Reasoning(effort="low", summary="auto")),
        )  # fmt: skip
        if streamed:
            result = Runner.run_streamed(agent, question, run_config=config)
            async for _ in result.stream_events():
                pass
            final = result.final_output
        else:
            final = (await Runner.run(agent, question, run_config=config)).final_output
    assert cities == ["Paris"] and final == "tok0 tok1 tok2 "
    second = upstream_request(responses_upstream)
    assert second["store"] is False and second["model"] == "up-model"
    items = second["input"]
    assert items[0] == {"type": "message", "role": "system", "content": "Answer with the weather."}
    assert {"type": "reasoning", "encrypted_content": "enc-1"}.items() <= items[2].items()
    assert items[-2]["type"] == "function_call" and items[-2]["call_id"] == "call_up1"
    assert items[-1] == {
        "type": "function_call_output", "call_id": "call_up1", "output": "sunny in Paris"
    }  # fmt: skip

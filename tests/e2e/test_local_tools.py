"""Tool calls on the embedded default, on every surface: the calls a 135M model picks are
often poor, but their wire is exact and their arguments always fit the tool's schema."""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib.util import find_spec
from typing import Any

import anthropic
import httpx
import jsonschema
import openai
import pytest

from tests.support.processes import Gateway, start_gateway

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(find_spec("llama_cpp") is None, reason="needs the `local` extra"),
]
WEATHER_PARAMETERS = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "The city's name"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer"},
    },
    "required": ["city", "unit"],
    "additionalProperties": False,
}
TIME_PARAMETERS = {
    "type": "object",
    "properties": {"zone": {"type": "string"}},
    "required": ["zone"],
}
SCHEMAS = {"get_weather": WEATHER_PARAMETERS, "get_time": TIME_PARAMETERS}
TOOLS: Any = [
    {"type": "function", "function": {"name": name, "description": f"{name} of a place",
                                       "parameters": parameters}}
    for name, parameters in SCHEMAS.items()
]  # fmt: skip
ASK: Any = [{"role": "user", "content": "What is the weather in Paris and the time in Tokyo?"}]


@pytest.fixture(scope="module")
def local_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    gateway = start_gateway(tmp_path_factory.mktemp("local-tools"), local_models=True,
                            timeout=180)  # fmt: skip
    yield gateway
    gateway.kill()


@pytest.fixture
def client(local_gateway: Gateway) -> openai.OpenAI:
    return openai.OpenAI(base_url=local_gateway.base_url, api_key=local_gateway.admin_key)


def _valid(name: str, arguments: str | dict[str, Any]) -> None:
    value = json.loads(arguments) if isinstance(arguments, str) else arguments
    jsonschema.validate(value, SCHEMAS[name])


def _chunks(local_gateway: Gateway, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The raw stream, as OpenAI's wire carries it."""
    headers = {"authorization": f"Bearer {local_gateway.admin_key}"}
    body = {"model": "smollm2", "messages": ASK, "tools": TOOLS, "temperature": 0,
            "stream": True, "max_tokens": 120, **body}  # fmt: skip
    with httpx.stream("POST", f"{local_gateway.base_url}/chat/completions", json=body,
                      headers=headers, timeout=120) as response:  # fmt: skip
        assert response.status_code == 200, response.read()
        lines = [line[6:] for line in response.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    return [json.loads(line) for line in lines[:-1]]


@pytest.mark.parametrize(
    ("choice", "names"),
    [
        ("required", {"get_weather", "get_time"}),
        ({"type": "function", "function": {"name": "get_time"}}, {"get_time"}),
    ],
    ids=["required", "named"],
)
def test_streamed_calls_arrive_as_openai_streams_them(
    local_gateway: Gateway, choice: Any, names: set[str]
) -> None:
    chunks = _chunks(local_gateway, {"tool_choice": choice})
    pieces = [c for chunk in chunks if chunk["choices"]
              for c in chunk["choices"][0]["delta"].get("tool_calls", [])]  # fmt: skip
    assert pieces, "the grammar leaves the model no way but a call"
    calls: dict[int, dict[str, str]] = {}
    for piece in pieces:
        if "id" in piece:
            assert piece["id"].startswith("call_") and piece["type"] == "function"
            assert piece["function"]["arguments"] == ""
            assert piece["index"] == len(calls), "each call opens once, in order"
            calls[piece["index"]] = {"name": piece["function"]["name"], "arguments": ""}
        else:
            assert set(piece) == {"index", "function"} and set(piece["function"]) == {"arguments"}
            calls[piece["index"]]["arguments"] += piece["function"]["arguments"]
    assert {call["name"] for call in calls.values()} <= names
    for call in calls.values():
        _valid(call["name"], call["arguments"])
    finish = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
    assert finish[-1] == "tool_calls"
    assert not any(c["choices"][0]["delta"].get("content") for c in chunks if c["choices"])


def test_a_whole_answer_carries_the_calls(client: openai.OpenAI) -> None:
    answer = client.chat.completions.create(
        model="smollm2", messages=ASK, tools=TOOLS, tool_choice="required", temperature=0,
        max_tokens=120,
    )  # fmt: skip
    choice = answer.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls or []
    assert calls and len({call.id for call in calls}) == len(calls)
    for call in calls:
        assert call.type == "function" and call.id.startswith("call_")
        _valid(call.function.name, call.function.arguments)  # type: ignore[union-attr]
    assert answer.usage is not None and answer.usage.completion_tokens > 0


def test_one_call_at_most_when_parallel_calls_are_off(client: openai.OpenAI) -> None:
    answer = client.chat.completions.create(
        model="smollm2", messages=ASK, tools=TOOLS, tool_choice="required", temperature=0,
        parallel_tool_calls=False, max_tokens=120,
    )  # fmt: skip
    assert len(answer.choices[0].message.tool_calls or []) == 1


def test_auto_answers_in_words_or_in_calls_and_none_in_words(client: openai.OpenAI) -> None:
    auto = client.chat.completions.create(
        model="smollm2", messages=ASK, tools=TOOLS, temperature=0, max_tokens=60
    ).choices[0]
    if auto.message.tool_calls:
        assert auto.finish_reason == "tool_calls"
        for call in auto.message.tool_calls:
            _valid(call.function.name, call.function.arguments)  # type: ignore[union-attr]
    else:
        assert auto.message.content and auto.finish_reason in ("stop", "length")
    none = client.chat.completions.create(
        model="smollm2", messages=ASK, tools=TOOLS, tool_choice="none", temperature=0,
        max_tokens=12,
    ).choices[0]  # fmt: skip
    assert none.message.tool_calls is None and none.message.content
    assert "<tool_call>" not in none.message.content


def test_a_tool_result_goes_back_to_the_model(client: openai.OpenAI) -> None:
    first = client.chat.completions.create(
        model="smollm2", messages=ASK, tools=TOOLS, temperature=0, max_tokens=120,
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
    ).choices[0].message  # fmt: skip
    assert first.tool_calls
    call = first.tool_calls[0]
    messages: Any = [*ASK, first.model_dump(exclude_none=True),
                     {"role": "tool", "tool_call_id": call.id, "content": "Sunny, 21 C"}]  # fmt: skip
    second = client.chat.completions.create(
        model="smollm2", messages=messages, tools=TOOLS, tool_choice="none", temperature=0,
        max_tokens=16,
    )  # fmt: skip
    assert second.choices[0].message.content


def test_responses_carry_function_calls(client: openai.OpenAI) -> None:
    tools: Any = [{"type": "function", "name": t["function"]["name"],
                   "parameters": t["function"]["parameters"]} for t in TOOLS]  # fmt: skip
    whole = client.responses.create(
        model="smollm2", input=ASK[0]["content"], tools=tools, tool_choice="required",
        temperature=0, max_output_tokens=120,
    )  # fmt: skip
    calls = [item for item in whole.output if item.type == "function_call"]
    assert calls
    for item in calls:
        assert item.call_id.startswith("call_")  # type: ignore[union-attr]
        _valid(item.name, item.arguments)  # type: ignore[union-attr]
    events = list(client.responses.create(
        model="smollm2", input=ASK[0]["content"], tools=tools, temperature=0,
        tool_choice={"type": "function", "name": "get_time"}, max_output_tokens=120, stream=True,
    ))  # fmt: skip
    added = [e.item for e in events if e.type == "response.output_item.added"]
    assert [item.type for item in added] == ["function_call"]
    deltas = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
    done = next(e for e in events if e.type == "response.function_call_arguments.done")
    assert deltas == done.arguments
    _valid("get_time", done.arguments)
    assert events[-1].type == "response.completed"


def test_messages_carry_tool_use_blocks(local_gateway: Gateway) -> None:
    client = anthropic.Anthropic(
        base_url=local_gateway.url, api_key=local_gateway.admin_key, max_retries=0
    )
    tools: Any = [{"name": t["function"]["name"], "input_schema": t["function"]["parameters"]}
                  for t in TOOLS]  # fmt: skip
    message = client.messages.create(
        model="smollm2", max_tokens=120, messages=ASK, tools=tools, extra_body={"temperature": 0},
        tool_choice={"type": "tool", "name": "get_weather"},
    )  # fmt: skip
    uses = [block for block in message.content if block.type == "tool_use"]
    assert message.stop_reason == "tool_use" and len(uses) == 1
    assert uses[0].name == "get_weather"
    _valid("get_weather", uses[0].input)  # type: ignore[arg-type]
    with client.messages.stream(
        model="smollm2", max_tokens=120, messages=ASK, tools=tools, extra_body={"temperature": 0},
        tool_choice={"type": "any"},
    ) as stream:  # fmt: skip
        final = stream.get_final_message()
    streamed = [block for block in final.content if block.type == "tool_use"]
    assert final.stop_reason == "tool_use" and streamed
    for block in streamed:
        _valid(block.name, block.input)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("parameters", "said"),
    [
        ({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}}, "`minimum`"),
        ({"type": "object", "properties": {"p": {"type": "nonsense"}}}, "cannot build a grammar"),
    ],
    ids=["unenforceable-keyword", "unreadable-schema"],
)
def test_a_schema_the_grammar_cannot_hold_is_a_400_naming_the_tool(
    client: openai.OpenAI, parameters: dict[str, Any], said: str
) -> None:
    tools: Any = [*TOOLS, {"type": "function", "function": {"name": "bad",
                                                             "parameters": parameters}}]  # fmt: skip
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="smollm2", messages=ASK, tools=tools)
    error = caught.value.body
    assert isinstance(error, dict)
    assert error["param"] == "tools[2]" and said in error["message"] and "`bad`" in error["message"]


def test_a_json_response_format_is_held_to_its_schema(client: openai.OpenAI) -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "sunny": {
        "type": "boolean"}}, "required": ["city", "sunny"], "additionalProperties": False}  # fmt: skip
    answer = client.chat.completions.create(
        model="smollm2", messages=ASK, temperature=0, max_tokens=60,
        response_format={"type": "json_schema", "json_schema": {"name": "w", "schema": schema}},
    ).choices[0]  # fmt: skip
    assert answer.finish_reason == "stop" and answer.message.content
    jsonschema.validate(json.loads(answer.message.content), schema)


def test_a_prompt_beyond_the_trained_context_is_refused(client: openai.OpenAI) -> None:
    long: Any = [{"role": "user", "content": "word " * 9000}]
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="smollm2", messages=long, max_tokens=4)
    assert caught.value.code == "context_length_exceeded"
    assert "context is 8192" in caught.value.message

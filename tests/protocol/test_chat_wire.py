"""The chat-completions request as llmeu serves it: OpenAI's alternative spellings, what stays
in the gateway, and the deprecated `functions` answered in their own form."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from openai.types.chat import ChatCompletion as SdkCompletion
from openai.types.chat import ChatCompletionChunk as SdkChunk

from llmeu.calls.output import (
    AssistantOutput,
    Delta,
    ToolCallDelta,
    ToolCallFunctionDelta,
    Usage,
)
from llmeu.calls.request import GATEWAY_FIELDS, ChatRequest, upstream_fields
from llmeu.calls.tools import FunctionCall, ToolCall
from llmeu.errors import InvalidRequest
from llmeu.protocol.chat_stream import ChatFrames
from llmeu.protocol.chat_wire import (
    ChatCompletion,
    Choice,
    accepted_chat,
    chat_request_decoder,
    ignored_fields,
    legacy_answer,
)
from llmeu.protocol.routing_block import CostEstimate, RoutingBlock
from llmeu.protocol.sse import SSEDecoder

USER = [{"role": "user", "content": "hi"}]
WEATHER = {"name": "get_weather", "parameters": {"type": "object"}}
TIME = {"name": "get_time", "parameters": {"type": "object"}}
ROUTING = RoutingBlock(
    "trc_1", "m", "1", "p", "e", "r", "eu_sovereign", "eu-strict", "P0D",
    CostEstimate("EUR", 1, 2, 0.0, False),
)  # fmt: skip


def decoded(**fields: Any) -> ChatRequest:
    return chat_request_decoder.decode(json.dumps({"model": "m", "messages": USER, **fields}))


def served(**fields: Any) -> dict[str, Any]:
    return msgspec.to_builtins(accepted_chat(decoded(**fields)))  # type: ignore[no-any-return]


def test_legacy_functions_are_served_as_tools_one_call_at_a_time() -> None:
    chat = served(functions=[WEATHER], function_call={"name": "get_weather"})
    assert chat["tools"] == [{"type": "function", "function": WEATHER}]
    assert chat["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert chat["parallel_tool_calls"] is False
    assert served(functions=[WEATHER], function_call="none")["tool_choice"] == "none"


def test_allowed_tools_are_served_as_the_tools_they_name() -> None:
    tools = [{"type": "function", "function": f} for f in (WEATHER, TIME)]
    choice = {"type": "allowed_tools", "allowed_tools": {
        "mode": "required", "tools": [{"type": "function", "function": {"name": "get_time"}}]}}  # fmt: skip
    chat = served(tools=tools, tool_choice=choice)
    assert chat["tools"] == [tools[1]] and chat["tool_choice"] == "required"


def test_safety_identifier_is_the_end_user_unless_user_is_set() -> None:
    assert served(safety_identifier="h-ana")["user"] == "h-ana"
    assert served(safety_identifier="h-ana", user="bob")["user"] == "bob"


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"n": 2}, "n"),
        ({"logprobs": True}, "logprobs"),
        ({"stream_options": {"include_usage": True}}, "stream_options"),
        ({"modalities": ["text", "audio"], "audio": {"format": "wav", "voice": "alloy"}},
         "modalities"),
        ({"function_call": "auto"}, "function_call"),
        ({"functions": [WEATHER], "tools": [{"type": "function", "function": TIME}]},
         "functions"),
        ({"tools": [{"type": "function", "function": WEATHER}],
          "tool_choice": {"type": "allowed_tools", "allowed_tools": {
              "mode": "auto", "tools": [{"type": "function", "function": {"name": "nope"}}]}}},
         "tool_choice.allowed_tools.tools[0]"),
        ({"tool_choice": {"type": "custom", "custom": {"name": "apply_patch"}}}, "tool_choice"),
    ],
    ids=["n", "logprobs", "stream-options-unstreamed", "audio-out", "function-call-alone",
         "functions-and-tools", "allowed-unknown-tool", "custom-choice"],
)  # fmt: skip
def test_what_cannot_be_served_is_a_400_naming_it(fields: dict[str, Any], param: str) -> None:
    with pytest.raises(InvalidRequest) as caught:
        served(**fields)
    assert caught.value.param == param


def test_fields_without_effect_are_named_and_never_go_upstream() -> None:
    chat = accepted_chat(
        decoded(
            stream=True, stream_options={"include_usage": True, "include_obfuscation": True},
            store=True, service_tier="flex", prompt_cache_key="k", prompt_cache_retention="24h",
            verbosity="low", prediction={"type": "content", "content": "x"},
            web_search_options={}, moderation={"model": "m"}, audio={"format": "wav"},
            safety_identifier="h-ana", metadata={"team": "a"},
        )
    )  # fmt: skip
    assert ignored_fields(chat) == [
        "audio", "moderation", "prediction", "prompt_cache_key", "prompt_cache_retention",
        "service_tier", "store", "verbosity", "web_search_options",
        "stream_options.include_obfuscation",
    ]  # fmt: skip
    upstream = msgspec.to_builtins(upstream_fields(chat))
    assert not set(upstream) & set(GATEWAY_FIELDS)
    assert upstream["user"] == "h-ana" and upstream["metadata"] == {"team": "a"}
    assert ignored_fields(decoded(store=False)) == []


def test_a_legacy_answer_carries_function_call_whole_and_streamed() -> None:
    call = ToolCall("call_1", FunctionCall("get_weather", '{"city": "Paris"}'))
    choice = legacy_answer(
        Choice(0, AssistantOutput("assistant", None, None, [call]), "tool_calls")
    )
    body = ChatCompletion(id="chatcmpl-1", created=1, model="m", choices=[choice],
                          usage=Usage(1, 2, 3), llmeu=ROUTING)  # fmt: skip
    message = SdkCompletion.model_validate_json(msgspec.json.encode(body)).choices[0]
    assert message.finish_reason == "function_call" and message.message.tool_calls is None
    assert message.message.function_call is not None
    assert message.message.function_call.name == "get_weather"

    frames = ChatFrames("chatcmpl-1", 1, "m", include_usage=False, legacy_functions=True)
    deltas = [
        Delta(tool_calls=[ToolCallDelta(0, id="call_1", type="function",
                                        function=ToolCallFunctionDelta("get_weather", ""))]),
        Delta(tool_calls=[ToolCallDelta(0, function=ToolCallFunctionDelta(arguments="{}"))]),
    ]  # fmt: skip
    raw = (
        frames.start()
        + b"".join(map(frames.delta, deltas))
        + frames.finish("tool_calls", Usage(1, 2, 3), ROUTING)
    )
    chunks = [SdkChunk.model_validate_json(e.data) for e in SSEDecoder().feed(raw)[:-1]]
    calls = [c.choices[0].delta.function_call for c in chunks if c.choices[0].delta.function_call]
    assert [(c.name, c.arguments) for c in calls] == [("get_weather", ""), (None, "{}")]
    assert chunks[-1].choices[0].finish_reason == "function_call"

"""The canonical request as Bedrock's Converse and Gemini's generateContent take it (pure)."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from llmeu.calls.request import ChatRequest
from llmeu.errors import UpstreamRejected
from llmeu.providers.bedrock_request import converse_body
from llmeu.providers.vertex_request import gemini_body

PNG = "data:image/png;base64,iVBORw0KGgo="
TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
CALL = {"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}  # fmt: skip


def request(**fields: Any) -> ChatRequest:
    fields.setdefault("messages", [{"role": "user", "content": "hi"}])
    return msgspec.convert({"model": "m", **fields}, ChatRequest)


def bedrock(**fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(converse_body(request(**fields)))
    return body


def gemini(**fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(gemini_body(request(**fields)))
    return body


TOOL_TURNS = [
    {"role": "user", "content": "weather?"},
    {"role": "assistant", "content": None, "tool_calls": [CALL, {**CALL, "id": "call_2"}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    {"role": "tool", "tool_call_id": "call_2", "content": "boom", "is_error": True},
]


def test_bedrock_system_sampling_and_stop() -> None:
    body = bedrock(
        messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
        max_tokens=50, temperature=0.5, top_p=0.9, stop="END", top_k=40,
    )  # fmt: skip
    assert body["system"] == [{"text": "be brief"}]
    assert body["messages"] == [{"role": "user", "content": [{"text": "hi"}]}]
    assert body["inferenceConfig"] == {"maxTokens": 50, "temperature": 0.5, "topP": 0.9,
                                       "stopSequences": ["END"]}  # fmt: skip
    assert body["additionalModelRequestFields"] == {"top_k": 40}


def test_bedrock_tool_turns_alternate_and_results_merge() -> None:
    body = bedrock(messages=TOOL_TURNS, tools=[TOOL], tool_choice="required")
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    uses = body["messages"][1]["content"]
    assert uses[0] == {"toolUse": {"toolUseId": "call_1", "name": "get_weather",
                                   "input": {"city": "Paris"}}}  # fmt: skip
    results = body["messages"][2]["content"]
    assert results[0]["toolResult"] == {"toolUseId": "call_1", "content": [{"text": "sunny"}]}
    assert results[1]["toolResult"]["status"] == "error"
    assert body["toolConfig"]["toolChoice"] == {"any": {}}
    assert body["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"] == {"json": {"type": "object"}}


def test_bedrock_thinking_both_ways() -> None:
    turns = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a", "thinking_blocks": [
            {"type": "thinking", "thinking": "hmm", "signature": "sig"}]},
        {"role": "user", "content": "q2"},
    ]  # fmt: skip
    body = bedrock(messages=turns, thinking={"type": "enabled", "budget_tokens": 2048})
    assert body["additionalModelRequestFields"]["thinking"] == {"type": "enabled",
                                                               "budget_tokens": 2048}  # fmt: skip
    assert body["messages"][1]["content"][0] == {
        "reasoningContent": {"reasoningText": {"text": "hmm", "signature": "sig"}}}  # fmt: skip


def test_images_are_sent_as_bytes() -> None:
    parts = [{"type": "text", "text": "what?"}, {"type": "image_url", "image_url": {"url": PNG}}]
    converse = bedrock(messages=[{"role": "user", "content": parts}])
    assert converse["messages"][0]["content"][1]["image"]["format"] == "png"
    generate = gemini(messages=[{"role": "user", "content": parts}])
    assert generate["contents"][0]["parts"][1]["inlineData"]["mimeType"] == "image/png"


def test_gemini_roles_system_and_config() -> None:
    body = gemini(
        messages=[{"role": "developer", "content": "be brief"}, {"role": "user", "content": "hi"},
                  {"role": "assistant", "content": "hello"}, {"role": "user", "content": "bye"}],
        max_completion_tokens=64, temperature=0.1, seed=7, response_format={"type": "json_object"},
        thinking={"type": "enabled", "budget_tokens": 512},
    )  # fmt: skip
    assert body["systemInstruction"] == {"parts": [{"text": "be brief"}]}
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    assert body["generationConfig"] == {
        "temperature": 0.1, "seed": 7, "maxOutputTokens": 64,
        "responseMimeType": "application/json",
        "thinkingConfig": {"thinkingBudget": 512, "includeThoughts": True},
    }  # fmt: skip


def test_gemini_tool_results_name_their_function() -> None:
    choice = {"type": "function", "function": {"name": "get_weather"}}
    body = gemini(messages=TOOL_TURNS, tools=[TOOL], tool_choice=choice)
    model_turn, results = body["contents"][1], body["contents"][2]
    assert model_turn["parts"][0] == {"functionCall": {"name": "get_weather",
                                                       "args": {"city": "Paris"}}}  # fmt: skip
    assert [p["functionResponse"]["name"] for p in results["parts"]] == ["get_weather"] * 2
    assert body["toolConfig"]["functionCallingConfig"] == {
        "mode": "ANY", "allowedFunctionNames": ["get_weather"]}  # fmt: skip


REFUSED = [
    pytest.param({"logit_bias": {"1": 2}}, "logit_bias", id="logit-bias"),
    pytest.param({"n": 2}, "n", id="n"),
    pytest.param({"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "https://x/cat.png"}}]}]},
        "messages[0].content[0]", id="image-url"),
    pytest.param({"messages": [{"role": "user", "content": "q"}, {"role": "assistant",
        "tool_calls": [{**CALL, "function": {"name": "f", "arguments": "[1]"}}]}]},
        "messages[1].tool_calls[0].function.arguments", id="arguments-not-an-object"),
]  # fmt: skip


@pytest.mark.parametrize("build", [converse_body, gemini_body], ids=["bedrock", "vertex"])
@pytest.mark.parametrize(("fields", "param"), REFUSED)
def test_what_a_wire_cannot_carry_is_the_requests_error(
    build: Any, fields: dict[str, Any], param: str
) -> None:
    with pytest.raises(UpstreamRejected) as raised:
        build(request(**fields))
    assert raised.value.param == param


def test_gemini_refuses_a_tool_result_for_no_call() -> None:
    turns = [{"role": "user", "content": "q"},
             {"role": "tool", "tool_call_id": "call_x", "content": "r"}]  # fmt: skip
    with pytest.raises(UpstreamRejected) as raised:
        gemini_body(request(messages=turns))
    assert raised.value.param == "messages[1].tool_call_id"

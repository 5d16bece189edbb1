"""The Responses wire toward a native upstream, without a network: the request llmeu builds
(the endpoint's model, `store: false`, the resolved conversation as input items) and the
upstream's events and whole responses as deltas."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from llmeu.calls.output import (
    Delta,
    StreamOutput,
    ToolCallCustomDelta,
    ToolCallDelta,
    ToolCallFunctionDelta,
    Usage,
)
from llmeu.calls.request import (
    AssistantMessage,
    ImagePart,
    ImageURL,
    RedactedThinkingBlock,
    SystemMessage,
    TextPart,
    ThinkingBlock,
    ToolMessage,
    UserMessage,
)
from llmeu.calls.tools import FunctionCall, ToolCall
from llmeu.errors import UpstreamError
from llmeu.protocol.responses_upstream import (
    UpstreamEvents,
    input_items,
    native_body,
    whole_deltas,
)
from llmeu.protocol.responses_wire import ResponsesRequest, to_chat
from tests.support.fake_responses_upstream import output_items, response_object, stream_events

_request = msgspec.json.Decoder(ResponsesRequest)


def request(**fields: Any) -> ResponsesRequest:
    return _request.decode(json.dumps({"model": "alias", "input": "hi", **fields}))


def body_of(req: ResponsesRequest, stream: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(
        native_body(req, to_chat(req, [], stream), "up", stream=stream, namespaced={})
    )
    return body


def test_the_upstream_gets_its_model_no_state_and_the_callers_settings() -> None:
    req = request(
        instructions="be brief", store=True, temperature=0.5, max_output_tokens=9,
        metadata={"team": "a"}, safety_identifier="u1", text={"format": {"type": "json_object"}},
        tools=[{"type": "function", "name": "f", "parameters": {"type": "object"}}],
        tool_choice="required", llmeu={"policy_id": "eu-strict"},
    )  # fmt: skip
    body = body_of(req)
    assert body["model"] == "up" and body["store"] is False and body["stream"] is True
    assert body["input"] == [
        {"type": "message", "role": "system", "content": "be brief"},
        {"type": "message", "role": "user", "content": "hi"},
    ]
    assert body["tools"] == [{"type": "function", "name": "f", "parameters": {"type": "object"}}]
    assert (body["tool_choice"], body["temperature"], body["max_output_tokens"]) == (
        "required", 0.5, 9,
    )  # fmt: skip
    assert body["text"] == {"format": {"type": "json_object"}}
    assert body["metadata"] == {"team": "a"} and body["safety_identifier"] == "u1"
    assert "llmeu" not in body and "include" not in body and "instructions" not in body


@pytest.mark.parametrize(
    ("reasoning", "include"),
    [({"effort": "low"}, ["reasoning.encrypted_content"]), (None, None)],
    ids=["reasoning", "none"],
)
def test_encrypted_reasoning_is_asked_for_only_with_reasoning(
    reasoning: dict[str, Any] | None, include: list[str] | None
) -> None:
    req = request(reasoning=reasoning) if reasoning else request()
    assert body_of(req).get("include") == include


def test_a_conversation_becomes_input_items() -> None:
    messages = [
        SystemMessage(content="sys"),
        UserMessage(content=[TextPart(text="look"), ImagePart(image_url=ImageURL(url="data:x"))]),
        AssistantMessage(
            content="let me check",
            thinking_blocks=[
                ThinkingBlock(thinking="kept", signature="enc-a"),
                ThinkingBlock(thinking="plain text, nothing to hand back"),
                RedactedThinkingBlock(data="enc-b"),
            ],
            tool_calls=[ToolCall(id="c1", function=FunctionCall("f", "{}"))],
        ),
        ToolMessage(content="42", tool_call_id="c1"),
    ]
    assert input_items(messages, {}) == [  # type: ignore[arg-type]
        {"type": "message", "role": "system", "content": "sys"},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "look"},
            {"type": "input_image", "image_url": "data:x", "detail": "auto"}]},
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "kept"}],
         "encrypted_content": "enc-a"},
        {"type": "reasoning", "summary": [], "encrypted_content": "enc-b"},
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "let me check", "annotations": []}]},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "42"},
    ]  # fmt: skip


def test_a_reasoning_item_keeps_its_token_through_a_chat_conversation() -> None:
    item = {"type": "reasoning", "summary": [{"type": "summary_text", "text": "t"}],
            "encrypted_content": "enc"}  # fmt: skip
    req = request(input=[item, {"role": "user", "content": "next"}])
    assert body_of(req)["input"][0] == {**item, "type": "reasoning"}


def decode(events: list[dict[str, Any]]) -> tuple[list[Delta], UpstreamEvents]:
    decoder = UpstreamEvents()
    deltas = [d for e in events if (d := decoder.take(json.dumps(e))) is not None]
    return deltas, decoder


def arguments(index: int, piece: str) -> Delta:
    return Delta(tool_calls=[ToolCallDelta(index, function=ToolCallFunctionDelta(arguments=piece))])


STREAMS = [
    pytest.param(
        {"chunks": "2"}, [Delta(content="tok0 "), Delta(content="tok1 ")], "stop", id="text"
    ),
    pytest.param(
        {"chunks": "1", "reasoning": "2", "parts": "2"},
        [
            Delta(reasoning_content="think0 "),
            Delta(reasoning_content="\n\n"),
            Delta(reasoning_content="think1 "),
            Delta(reasoning_signature="enc-2"),
            Delta(content="tok0 "),
        ],
        "stop",
        id="reasoning",
    ),
    pytest.param(
        {"tools": "1"},
        [
            Delta(
                tool_calls=[
                    ToolCallDelta(
                        0,
                        id="call_up1",
                        type="function",
                        function=ToolCallFunctionDelta("get_weather", ""),
                    )
                ]
            ),
            arguments(0, '{"city": '),
            arguments(0, '"Paris"}'),
        ],
        "tool_calls",
        id="function-call",
    ),
    pytest.param(
        {"tools": "custom"},
        [
            Delta(tool_calls=[ToolCallDelta(0, id="call_up1", type="custom",
                                            custom=ToolCallCustomDelta("apply_patch", ""))]),
            *(Delta(tool_calls=[ToolCallDelta(0, custom=ToolCallCustomDelta(input=piece))])
              for piece in ("*** Begin Patch\n", "*** Add File: hello.txt\n",
                            '+Grüß "dich"\n*** End Patch\n')),
        ],
        "tool_calls",
        id="custom-call",
    ),
    pytest.param(
        {"tools": "namespace"},
        [
            Delta(tool_calls=[ToolCallDelta(0, id="call_up1", type="function",
                  function=ToolCallFunctionDelta("collaboration__spawn_agent", ""))]),
            arguments(0, '{"city": '),
            arguments(0, '"Paris"}'),
        ],
        "tool_calls",
        id="namespace-call",
    ),
    pytest.param(
        {"web_search": "1", "chunks": "1"}, [Delta(content="tok0 ")], "stop",
        id="hosted-item-read-past",
    ),
    pytest.param(
        {"chunks": "1", "fault": "incomplete"}, [Delta(content="tok0 ")], "length", id="incomplete"
    ),
]  # fmt: skip


@pytest.mark.parametrize(("directives", "expected", "finish"), STREAMS)
def test_an_upstream_stream_becomes_deltas(
    directives: dict[str, str], expected: list[Delta], finish: str
) -> None:
    body = {"include": ["reasoning.encrypted_content"]}
    deltas, decoder = decode(stream_events(body, directives))
    assert deltas == expected
    assert decoder.ended and decoder.finish_reason == finish
    assert decoder.usage == Usage(13, 7, 20)


@pytest.mark.parametrize(("directives", "expected", "finish"), STREAMS)
def test_a_whole_response_becomes_the_same_text(
    directives: dict[str, str], expected: list[Delta], finish: str
) -> None:
    body = {"include": ["reasoning.encrypted_content"]}
    raw = json.dumps(response_object(body, directives, output_items(body, directives)))
    deltas, reason, usage = whole_deltas(raw.encode())
    assert reason == finish and usage == Usage(13, 7, 20)
    for name in ("content", "reasoning_content", "reasoning_signature"):
        assert "".join(getattr(d, name) or "" for d in deltas) == "".join(
            getattr(d, name) or "" for d in expected
        )
    produced, wanted = StreamOutput(), StreamOutput()
    for delta in deltas:
        produced.add(delta)
    for delta in expected:
        wanted.add(delta)
    assert produced.tool_calls() == wanted.tool_calls()


def test_an_item_sent_whole_is_one_delta() -> None:
    item = {"type": "message", "id": "m", "role": "assistant",
            "content": [{"type": "output_text", "text": "all at once"}]}  # fmt: skip
    deltas, _ = decode([{"type": "response.output_item.done", "output_index": 0, "item": item}])
    assert deltas == [Delta(content="all at once")]


@pytest.mark.parametrize(
    "event",
    [
        {"type": "error", "code": "server_error", "message": "boom"},
        {"type": "response.failed", "response": {"error": {"code": "x", "message": "boom"}}},
    ],
    ids=["error", "failed"],
)
def test_an_upstream_failure_is_an_upstream_error(event: dict[str, Any]) -> None:
    with pytest.raises(UpstreamError, match="boom"):
        decode([event])


@pytest.mark.parametrize("raw", [b"{not json", b'{"status": "failed"}'], ids=["json", "failed"])
def test_a_bad_whole_response_is_an_upstream_error(raw: bytes) -> None:
    with pytest.raises(UpstreamError):
        whole_deltas(raw)

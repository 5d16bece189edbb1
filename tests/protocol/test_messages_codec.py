"""Anthropic's Messages wire, pure: requests in, translation both ways, events out and back.

Every event the encoder writes is validated against the `anthropic` SDK's own
types; the decoder reads the encoder's own output back into the same deltas.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from anthropic.types import ErrorResponse, Message, RawMessageStreamEvent
from pydantic import TypeAdapter

from llmeu.api.http.bodies import decode_body
from llmeu.calls.output import Delta, ToolCallDelta, ToolCallFunctionDelta, Usage
from llmeu.calls.request import (
    AssistantMessage,
    FilePart,
    ImagePart,
    SystemMessage,
    ThinkingBlock,
    ToolMessage,
    UserMessage,
)
from llmeu.calls.tools import ToolChoiceFunction
from llmeu.errors import InvalidRequest, NotFound, UpstreamError, UpstreamUnavailable
from llmeu.protocol.messages_codec import check_state, to_chat_request
from llmeu.protocol.messages_reply import MessageAssembler
from llmeu.protocol.messages_request import ignored_fields, messages_request_decoder
from llmeu.protocol.messages_stream import MessagesEventDecoder, MessagesFrames
from llmeu.protocol.messages_upstream import anthropic_request, completion_of
from llmeu.protocol.routing_block import CostEstimate, RoutingBlock
from llmeu.protocol.sse import SSEDecoder

EVENT = TypeAdapter(RawMessageStreamEvent)
ROUTING = RoutingBlock(
    "trc_1", "m", "1", "p", "e", "r", "eu_sovereign", "eu-strict", "P0D",
    CostEstimate("EUR", 1, 2, 0.0, False),
)  # fmt: skip


def parse(body: dict[str, Any]) -> Any:
    return to_chat_request(decode_body(messages_request_decoder.decode, json.dumps(body).encode()))


def base(**extra: Any) -> dict[str, Any]:
    return {
        "model": "m",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "hi"}],
        **extra,
    }


def test_a_tool_round_trip_becomes_chat_turns_in_chat_order() -> None:
    chat = parse(
        base(
            system=[{"type": "text", "text": "be brief"}],
            messages=[
                {"role": "user", "content": "weather?"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                    {"type": "text", "text": "Let me look."},
                    {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                     "input": {"city": "Paris"}},
                ]},
                {"role": "user", "content": [
                    {"type": "text", "text": "here:"},
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny",
                     "is_error": False},
                ]},
            ],
            tools=[{"name": "get_weather", "input_schema": {"type": "object"}}],
            tool_choice={"type": "tool", "name": "get_weather",
                         "disable_parallel_tool_use": True},
        )
    )  # fmt: skip
    system, user, assistant, tool, after = chat.messages
    assert isinstance(system, SystemMessage) and system.content == "be brief"
    assert isinstance(user, UserMessage)
    assert isinstance(assistant, AssistantMessage)
    assert assistant.content == "Let me look."
    assert assistant.tool_calls[0].function.arguments == '{"city":"Paris"}'
    assert assistant.thinking_blocks == [ThinkingBlock("hmm", "sig")]
    # The tool result answers the assistant turn: it comes first, the user's text after.
    assert isinstance(tool, ToolMessage) and tool.content == "sunny" and tool.is_error is False
    assert isinstance(after, UserMessage)
    assert isinstance(chat.tool_choice, ToolChoiceFunction)
    assert chat.parallel_tool_calls is False


def test_images_and_documents_become_content_parts() -> None:
    chat = parse(base(messages=[{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAA"}},
        {"type": "image", "source": {"type": "url", "url": "https://example.eu/a.png"}},
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                        "data": "JVBE"}, "title": "a.pdf"},
        {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                        "data": "plain"}},
    ]}]))  # fmt: skip
    parts = chat.messages[0].content
    assert isinstance(parts[0], ImagePart) and parts[0].image_url.url == "data:image/png;base64,AAA"
    assert isinstance(parts[1], ImagePart) and parts[1].image_url.url.startswith("https://")
    assert isinstance(parts[2], FilePart) and parts[2].file.filename == "a.pdf"
    assert parts[3].text == "plain"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"max_tokens": 0}, "max_tokens"),
        ({"temperature": 1.5}, "temperature"),
        ({"frobnicate": 1}, "frobnicate"),
        ({"messages": []}, "messages"),
        ({"messages": [{"role": "tool", "content": "x"}]}, "messages[0].role"),
        ({"messages": [{"role": "system", "content": [{"type": "image", "source": {
            "type": "url", "url": "https://x.eu/a.png"}}]}]}, "messages[0].content"),
        ({"tools": [{"name": "f", "input_schema": {"type": "object"}, "description": 3}]},
         "tools[0].description"),
        ({"tools": [{"name": "f"}]}, "tools[0].input_schema"),
        ({"messages": [{"role": "user", "content": [{"type": "document", "source": {
            "type": "url", "url": "https://x.eu/a.pdf"}}]}]}, "messages[0].content[0].source"),
        ({"messages": [{"role": "user", "content": [{"type": "tool_use", "id": "t",
            "name": "f", "input": {}}]}]}, "messages[0].content[0].type"),
        ({"thinking": {"type": "sometimes"}}, "thinking.type"),
    ],
    ids=["max-tokens-zero", "temperature-range", "unknown-field", "no-messages", "tool-role", "system-turn-image",
         "tool-description-type", "no-input-schema", "document-url", "tool-use-from-user", "thinking-type"],
)  # fmt: skip
def test_invalid_requests_name_what_is_wrong(body: dict[str, Any], param: str) -> None:
    with pytest.raises(InvalidRequest) as caught:
        parse(base(**body))
    assert caught.value.param == param


def events(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    decoder = SSEDecoder()
    return [(e.event, json.loads(e.data)) for e in [*decoder.feed(raw), *decoder.close()]]


DELTAS = [
    Delta(reasoning_content="Let me "),
    Delta(reasoning_content="think."),
    Delta(reasoning_signature="c2ln"),
    Delta(content="Hello"),
    Delta(content=" world"),
    Delta(tool_calls=[ToolCallDelta(0, id="toolu_a", type="function",
                                    function=ToolCallFunctionDelta(name="f", arguments=""))]),
    Delta(tool_calls=[ToolCallDelta(0, function=ToolCallFunctionDelta(arguments='{"a":'))]),
    Delta(tool_calls=[ToolCallDelta(0, function=ToolCallFunctionDelta(arguments="1}"))]),
    Delta(tool_calls=[ToolCallDelta(1, id="toolu_b", type="function",
                                    function=ToolCallFunctionDelta(name="g", arguments=""))]),
    Delta(tool_calls=[ToolCallDelta(1, function=ToolCallFunctionDelta(arguments="{}"))]),
]  # fmt: skip


def encode_stream(deltas: list[Delta], usage: Usage) -> bytes:
    frames = MessagesFrames("msg_1", "m", 7)
    return (
        frames.start()
        + b"".join(frames.delta(d) for d in deltas)
        + frames.finish("tool_calls", usage, ROUTING)
    )


def test_every_event_is_anthropics_and_in_order() -> None:
    usage = Usage(20, 9, 29, cache_read_input_tokens=5)
    got = events(encode_stream(DELTAS, usage))
    for name, data in got:
        assert EVENT.validate_python(data).type == name == data["type"]
    names = [name for name, _ in got]
    assert names == [
        "message_start",
        "content_block_start", "content_block_delta", "content_block_delta",
        "content_block_delta", "content_block_stop",
        "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
        "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
        "content_block_start", "content_block_delta", "content_block_stop",
        "message_delta", "message_stop",
    ]  # fmt: skip
    delta = got[-2][1]
    assert delta["delta"]["stop_reason"] == "tool_use"
    assert delta["usage"] == {"input_tokens": 15, "cache_read_input_tokens": 5, "output_tokens": 9}
    assert delta["llmeu"]["trace_id"] == "trc_1"
    assert [d["index"] for n, d in got if n == "content_block_start"] == [0, 1, 2, 3]


def test_the_decoder_reads_the_encoders_events_back_into_the_same_deltas() -> None:
    decoder = MessagesEventDecoder()
    sse = SSEDecoder()
    back = []
    for event in sse.feed(encode_stream(DELTAS, Usage(20, 9, 29, cache_creation_input_tokens=2))):
        delta = decoder.decode(event.data)
        if delta is not None:
            back.append(delta)
    assert decoder.done and decoder.finish_reason == "tool_calls"
    assert decoder.usage == Usage(20, 9, 29, cache_creation_input_tokens=2)
    assert [msgspec.to_builtins(d) for d in back] == [msgspec.to_builtins(d) for d in DELTAS]


def test_the_error_event_ends_the_stream_in_anthropics_shape() -> None:
    frames = MessagesFrames("msg_1", "m", 7)
    raw = (
        frames.start()
        + frames.delta(Delta(content="x"))
        + frames.error(UpstreamUnavailable("overloaded", upstream_status=529), ROUTING)
    )
    (name, data) = events(raw)[-1]
    assert name == "error"
    assert ErrorResponse.model_validate(data).error.type == "overloaded_error"
    assert data["error"]["type"] == "overloaded_error"
    assert data["llmeu"]["endpoint_id"] == "e"


@pytest.mark.parametrize(
    ("event", "error"),
    [
        ('{"type":"error","error":{"type":"overloaded_error","message":"busy"}}', UpstreamUnavailable),
        ('{"type":"content_block_delta","index":4,"delta":{"type":"input_json_delta","partial_json":"{"}}', UpstreamError),
        ("{not json", UpstreamError),
    ],
    ids=["overloaded", "orphan-tool-input", "invalid-json"],
)  # fmt: skip
def test_upstream_faults_are_upstream_errors(event: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        MessagesEventDecoder().decode(event)


def test_the_assembled_message_is_anthropics() -> None:
    assembler = MessageAssembler()
    for delta in DELTAS:
        assembler.add(delta)
    body = assembler.message("trc_1", "m", "tool_calls", Usage(3, 4, 7), ROUTING)
    message = Message.model_validate(json.loads(msgspec.json.encode(body)))
    assert [b.type for b in message.content] == ["thinking", "text", "tool_use", "tool_use"]
    assert message.content[0].signature == "c2ln"  # type: ignore[union-attr]
    assert message.content[2].input == {"a": 1}  # type: ignore[union-attr]
    assert message.stop_reason == "tool_use"
    assert message.id == "msg_1"


def test_the_canonical_request_goes_upstream_as_anthropics() -> None:
    chat = parse(base(
        system="sys",
        messages=[
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"city": "Paris"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"},
                {"type": "text", "text": "so?"}]},
        ],
        tools=[{"name": "f", "input_schema": {"type": "object"}}],
        tool_choice={"type": "any"}, stop_sequences=["END"], top_k=5,
        thinking={"type": "enabled", "budget_tokens": 1024},
        metadata={"user_id": "u1"},
    ))  # fmt: skip
    body = anthropic_request(chat, "claude-x", stream=True, default_max_tokens=None)
    assert body["system"] == "sys"
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][1]["content"][0] == {
        "type": "thinking", "thinking": "hmm", "signature": "sig"}  # fmt: skip
    assert [b["type"] for b in body["messages"][2]["content"]] == ["tool_result", "text"]
    assert body["tool_choice"] == {"type": "any"}
    assert body["stop_sequences"] == ["END"] and body["top_k"] == 5
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert body["metadata"] == {"user_id": "u1"} and body["max_tokens"] == 10


def test_a_whole_anthropic_message_reads_as_a_completion() -> None:
    raw = json.dumps({"id": "msg_x", "type": "message", "role": "assistant", "model": "c",
        "content": [{"type": "text", "text": "hi"}, {"type": "tool_use", "id": "t", "name": "f",
        "input": {"a": 1}}], "stop_reason": "tool_use", "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 4, "cache_read_input_tokens": 2}}).encode()  # fmt: skip
    completion = completion_of(raw)
    assert completion.finish_reason == "tool_calls"
    assert completion.message.content == "hi"
    assert completion.message.tool_calls[0].function.arguments == '{"a": 1}'  # type: ignore[index]
    assert completion.usage == Usage(5, 4, 9, cache_read_input_tokens=2)


def test_a_system_turn_mid_conversation_and_adaptive_thinking_are_kept() -> None:
    chat = parse(base(thinking={"type": "adaptive"}, messages=[
        {"role": "user", "content": "hi"},
        {"role": "system", "content": [{"type": "text", "text": "reminder"}]},
        {"role": "user", "content": "again"},
    ]))  # fmt: skip
    assert [type(m).__name__ for m in chat.messages] == ["UserMessage", "SystemMessage",
                                                         "UserMessage"]  # fmt: skip
    assert chat.messages[1].content == "reminder"
    assert chat.thinking.type == "adaptive"


def test_structured_output_is_the_chat_calls_response_format_and_goes_back_to_anthropic() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    chat = parse(base(output_config={"effort": "high", "format": {"type": "json_schema",
                                                                  "schema": schema}}))  # fmt: skip
    assert msgspec.to_builtins(chat.response_format) == {
        "type": "json_schema", "json_schema": {"name": "output", "schema": schema, "strict": True}}  # fmt: skip
    body = anthropic_request(chat, "claude-x", stream=False, default_max_tokens=None)
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": schema}}


@pytest.mark.parametrize(
    ("extra", "error", "param"),
    [
        ({"compaction": {"type": "summarize"}}, InvalidRequest, "compaction"),
        ({"thread": {"type": "continue", "previous_message_id": "msg_1"}}, NotFound,
         "thread.previous_message_id"),
    ],
    ids=["compaction", "thread-continue"],
)  # fmt: skip
def test_state_llmeu_does_not_keep_is_refused_by_name(
    extra: dict[str, Any], error: type[Exception], param: str
) -> None:
    wire = decode_body(messages_request_decoder.decode, json.dumps(base(**extra)).encode())
    with pytest.raises(error) as caught:
        check_state(wire)
    assert getattr(caught.value, "param", None) == param


def test_fields_without_effect_are_named_for_the_trace() -> None:
    wire = decode_body(messages_request_decoder.decode, json.dumps(base(
        service_tier="auto", container="cnt_1",
        thread={"type": "create"}, output_config={"effort": "max"}, top_k=3,
    )).encode())  # fmt: skip
    check_state(wire)
    assert ignored_fields(wire) == [
        "container",
        "service_tier",
        "output_config.effort",
        "thread",
    ]

"""The chat-stream assembler, one rule of the issue per row."""

from __future__ import annotations

import json
from typing import Any

import pytest

from llmeu.client import (
    ChatResult,
    ChatStreamAssembler,
    ContentDelta,
    CostEstimate,
    IncompleteStreamError,
    MalformedStreamError,
    ReasoningDelta,
    RefusalDelta,
    RoutingBlock,
    ServerSentEvent,
    StreamError,
    ToolCall,
    ToolCallDelta,
    Usage,
    parse_completion,
)

ROUTING: dict[str, Any] = {
    "trace_id": "trc_1",
    "model_used": "mistral-small-2503",
    "model_version": "2503",
    "provider": "scaleway",
    "endpoint_id": "scaleway-fr-par-mistral-small",
    "inference_region": "fr-par",
    "sovereignty_class": "eu_sovereign",
    "policy_id": "eu-strict",
    "retention": "P0D",
    "cost_estimate": {
        "currency": "EUR",
        "input_tokens": 12,
        "output_tokens": 40,
        "amount": 0.0000123,
        "estimated": False,
    },
}


def frame(payload: Any, event: str = "message") -> ServerSentEvent:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return ServerSentEvent(event=event, data=data)


def chunk(
    delta: dict[str, Any] | None = None,
    finish: str | None = None,
    index: int = 0,
    **top: Any,
) -> ServerSentEvent:
    choice = {"index": index, "delta": delta or {}, "finish_reason": finish}
    payload = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [choice]}
    return frame({**payload, **top})


ROLE = chunk({"role": "assistant"})
DONE = frame("[DONE]")


def text(*parts: str) -> list[ServerSentEvent]:
    return [chunk({"content": part}) for part in parts]


def tool(index: int | None, **fields: Any) -> dict[str, Any]:
    fragment: dict[str, Any] = {k: v for k, v in fields.items() if k in ("id", "type")}
    function = {k: v for k, v in fields.items() if k in ("name", "arguments")}
    if function:
        fragment["function"] = function
    if index is not None:
        fragment["index"] = index
    return fragment


def outcome(events: list[ServerSentEvent]) -> tuple[type[Exception] | None, ChatResult]:
    assembler = ChatStreamAssembler()
    for event in events:
        assembler.add(event)
    try:
        return None, assembler.finish()
    except IncompleteStreamError as exc:
        return type(exc), exc.result


CASES = [
    pytest.param(
        [ROLE, *text("Hel", "lo"), chunk(finish="stop"), DONE],
        None,
        {"content": "Hello", "finish_reason": "stop", "complete": True, "usage": None},
        id="content-joined",
    ),
    pytest.param([ROLE, DONE], None, {"content": "", "complete": True}, id="role-only"),
    pytest.param(
        [chunk({"content": None}), *text("a"), DONE], None, {"content": "a"}, id="null-content"
    ),
    pytest.param(
        [*text("a"), frame({"choices": [], "usage": {"prompt_tokens": 3}}), DONE],
        None,
        {"usage": Usage(prompt_tokens=3)},
        id="partial-usage-stays-none-not-zero",
    ),
    pytest.param(
        [
            frame({"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}),
            frame({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 7}}),
            chunk(usage=None),
            DONE,
        ],
        None,
        {"usage": Usage(prompt_tokens=5, completion_tokens=7)},
        id="last-non-null-usage",
    ),
    pytest.param([*text("a"), DONE], None, {"usage": None}, id="no-usage-is-none"),
    pytest.param(
        [*text("a"), chunk(finish="stop", llmeu=ROUTING), DONE],
        None,
        {
            "llmeu": RoutingBlock(
                **{**ROUTING, "cost_estimate": CostEstimate(**ROUTING["cost_estimate"])}
            )
        },
        id="routing-block",
    ),
    pytest.param([*text("a"), DONE], None, {"llmeu": None}, id="no-routing-block-is-none"),
    pytest.param(
        [ROLE, *text("half an ans")],
        IncompleteStreamError,
        {"content": "half an ans", "complete": False},
        id="missing-done-is-incomplete",
    ),
    pytest.param([], IncompleteStreamError, {"content": ""}, id="empty-stream-is-incomplete"),
    pytest.param(
        [*text("say [DONE]"), chunk({"content": "[DONE]"})],
        IncompleteStreamError,
        {"content": "say [DONE][DONE]"},
        id="done-in-content-is-not-done",
    ),
    pytest.param(
        [*text("a"), frame("[DONE] ")],
        MalformedStreamError,
        {"content": "a"},
        id="done-is-an-exact-match",
    ),
    pytest.param(
        [*text("a"), DONE, *text("b"), frame("not json")],
        None,
        {"content": "a", "complete": True},
        id="after-done-ignored",
    ),
    pytest.param(
        [
            *text("par"),
            frame({"error": {"message": "upstream died", "type": "api_error", "code": "x"}}),
        ],
        StreamError,
        {"content": "par", "complete": False},
        id="error-frame",
    ),
    pytest.param(
        [*text("a"), frame({"error": {"message": "boom"}, "llmeu": {"trace_id": "trc_9"}})],
        StreamError,
        {"llmeu": RoutingBlock(trace_id="trc_9")},
        id="error-frame-with-partial-routing-block",
    ),
    pytest.param(
        [*text("a"), frame({"error": {"message": "boom"}}), DONE],
        StreamError,
        {"complete": False},
        id="done-after-error-is-not-complete",
    ),
    pytest.param(
        [*text("a"), frame({"error": {"message": "boom"}}), *text("b")],
        StreamError,
        {"content": "a"},
        id="text-after-error-ignored",
    ),
    pytest.param(
        [*text("a"), DONE, frame({"error": {"message": "late"}})],
        None,
        {"error": None, "complete": True},
        id="error-after-done-ignored",
    ),
    pytest.param(
        [*text("a"), frame({"message": "overloaded"}, event="error")],
        StreamError,
        {"content": "a"},
        id="error-event-json",
    ),
    pytest.param(
        [*text("a"), frame("upstream went away", event="error")],
        StreamError,
        {"content": "a"},
        id="error-event-text",
    ),
    pytest.param([frame({"error": "boom"})], StreamError, {"content": ""}, id="error-as-a-string"),
    pytest.param(
        [chunk({"content": "a"}, error=None), DONE], None, {"error": None}, id="null-error-ignored"
    ),
    pytest.param(
        [frame({"error": {"message": "boom"}, "choices": "nonsense"})],
        StreamError,
        {},
        id="error-with-odd-fields-is-still-an-error",
    ),
    pytest.param(
        [*text("a"), frame("{}", event="ping"), frame(" "), DONE],
        None,
        {"content": "a"},
        id="ping-and-blank-frames-ignored",
    ),
    pytest.param(
        [*text("a"), frame("{not json"), *text("b"), DONE],
        MalformedStreamError,
        {"content": "a"},
        id="not-json",
    ),
    pytest.param([frame("[1, 2]")], MalformedStreamError, {}, id="json-array"),
    pytest.param([frame("42")], MalformedStreamError, {}, id="json-number"),
    pytest.param([chunk({"content": 5})], MalformedStreamError, {}, id="content-wrong-type"),
    pytest.param(
        [
            chunk({"tool_calls": [tool(0, id="call_a", type="function", name="get_w")]}),
            chunk({"tool_calls": [tool(1, id="call_b", type="function", name="get_t")]}),
            chunk({"tool_calls": [tool(0, name="eather", arguments='{"ci')]}),
            chunk({"tool_calls": [tool(1, arguments="{}")]}),
            chunk({"tool_calls": [tool(0, arguments='ty": "Paris"}')]}),
            chunk(finish="tool_calls"),
            DONE,
        ],
        None,
        {
            "tool_calls": [
                ToolCall(0, "call_a", "function", "get_weather", '{"city": "Paris"}'),
                ToolCall(1, "call_b", "function", "get_t", "{}"),
            ],
            "finish_reason": "tool_calls",
        },
        id="tool-calls-by-index",
    ),
    pytest.param(
        [
            chunk({"tool_calls": [tool(0, id="call_a", name="f", arguments="{")]}),
            chunk({"tool_calls": [tool(0, id="call_a", arguments="}")]}),
            DONE,
        ],
        None,
        {"tool_calls": [ToolCall(0, "call_a", "function", "f", "{}")]},
        id="repeated-tool-call-id-not-joined",
    ),
    pytest.param(
        [chunk({"tool_calls": [tool(None, id="a", name="f"), tool(None, id="b", name="g")]}), DONE],
        None,
        {
            "tool_calls": [
                ToolCall(0, "a", "function", "f", ""),
                ToolCall(1, "b", "function", "g", ""),
            ]
        },
        id="tool-call-without-index-takes-its-position",
    ),
    pytest.param(
        [chunk({"content": "other"}, index=1), *text("a"), DONE],
        None,
        {"content": "a"},
        id="only-choice-0",
    ),
    pytest.param(
        [chunk(finish="length"), chunk(finish=None), DONE],
        None,
        {"finish_reason": "length"},
        id="last-non-null-finish-reason",
    ),
    pytest.param(
        [chunk({"content": "a"}, model="m1"), chunk({"content": "b"}, id="x", model="m2"), DONE],
        None,
        {"id": "chatcmpl-1", "model": "m2"},
        id="id-first-model-last",
    ),
    pytest.param(
        [chunk({"reasoning_content": "hmm, "}), chunk({"reasoning_content": "ok"}), DONE],
        None,
        {"reasoning": "hmm, ok", "content": ""},
        id="reasoning-joined",
    ),
    pytest.param(
        [chunk({"refusal": "I can"}), chunk({"refusal": "not."}), DONE],
        None,
        {"refusal": "I cannot."},
        id="refusal-joined",
    ),
]


@pytest.mark.parametrize(("events", "error", "expected"), CASES)
def test_assembler_rule(
    events: list[ServerSentEvent], error: type[Exception] | None, expected: dict[str, Any]
) -> None:
    raised, result = outcome(events)
    assert raised is error
    assert {name: getattr(result, name) for name in expected} == expected


def test_stream_error_carries_the_error_object() -> None:
    assembler = ChatStreamAssembler()
    assembler.add(chunk({"content": "partial"}))
    error = {"message": "upstream died", "type": "api_error", "param": None, "code": "upstream"}
    assembler.add(frame({"error": error}))
    with pytest.raises(StreamError) as caught:
        assembler.finish()
    assert caught.value.error.message == "upstream died"
    assert caught.value.error.code == "upstream"
    assert caught.value.result.error == caught.value.error
    assert caught.value.result.content == "partial"


def test_malformed_error_keeps_the_frame() -> None:
    assembler = ChatStreamAssembler()
    assembler.add(frame("{oops"))
    with pytest.raises(MalformedStreamError) as caught:
        assembler.finish()
    assert caught.value.data == "{oops"


def test_stream_error_is_an_incomplete_stream() -> None:
    assert issubclass(StreamError, IncompleteStreamError)
    assert issubclass(MalformedStreamError, IncompleteStreamError)


def test_fold_returns_the_output_deltas_in_order() -> None:
    assembler = ChatStreamAssembler()
    event = chunk(
        {
            "reasoning_content": "r",
            "content": "c",
            "refusal": "n",
            "tool_calls": [tool(0, id="call_1", name="f", arguments="{")],
        }
    )
    assert assembler.fold(ROLE) == []
    assert assembler.fold(event) == [
        ReasoningDelta("r"),
        ContentDelta("c"),
        RefusalDelta("n"),
        ToolCallDelta(0, "call_1", "f", "{"),
    ]
    assert assembler.fold(DONE) == []
    assert assembler.ended


def test_result_so_far_does_not_judge() -> None:
    assembler = ChatStreamAssembler()
    for event in text("a", "b"):
        assembler.add(event)
    assert assembler.result().content == "ab"
    assert not assembler.result().complete


COMPLETION = {
    "id": "chatcmpl-9",
    "object": "chat.completion",
    "model": "smol",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "Hi",
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
    "llmeu": {"trace_id": "trc_2"},
}


def test_parse_completion() -> None:
    result = parse_completion(json.dumps(COMPLETION).encode())
    assert result.content == "Hi"
    assert result.tool_calls == [ToolCall(0, "c1", "function", "f", "{}")]
    assert result.usage == Usage(prompt_tokens=3, completion_tokens=1, total_tokens=4)
    assert result.llmeu == RoutingBlock(trace_id="trc_2")
    assert result.complete
    assert result.finish_reason == "stop"

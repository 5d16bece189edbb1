"""`ResponsesStreamAssembler`: a Responses stream is complete only with its terminal event."""

from __future__ import annotations

import json
from typing import Any

import pytest

from llmeu.calls.output import Delta, ToolCallDelta, ToolCallFunctionDelta, Usage
from llmeu.client import (
    ContentDelta,
    IncompleteStreamError,
    MalformedStreamError,
    ResponsesStreamAssembler,
    StreamError,
    parse_response,
)
from llmeu.client import (
    ToolCallDelta as ClientToolCallDelta,
)
from llmeu.errors import UpstreamError
from llmeu.protocol.responses_object import response_shell
from llmeu.protocol.responses_stream import ResponsesEvents
from llmeu.protocol.responses_wire import ResponsesRequest
from llmeu.protocol.routing_block import CostEstimate, RoutingBlock
from llmeu.protocol.sse import ServerSentEvent, SSEDecoder

ROUTING = RoutingBlock(
    "trc_01", "m", "1", "prov", "prov-fr", "fr-par", "eu_sovereign", "eu-strict", "P0D",
    CostEstimate("EUR", 3, 4, 0.001, False),
)  # fmt: skip


def stream_bytes(deltas: list[Delta], end: str = "stop") -> bytes:
    shell = response_shell(
        ResponsesRequest(model="m"), response_id="resp_01", created_at=1, model="m", store=False
    )
    events = ResponsesEvents(shell)
    raw = events.start() + b"".join(events.delta(d) for d in deltas)
    if end == "fail":
        return raw + events.error(UpstreamError("broke"), ROUTING)
    if end == "cut":
        return raw
    return raw + events.finish(end, Usage(3, 4, 7), ROUTING)


def fold(raw: bytes) -> tuple[ResponsesStreamAssembler, list[Any]]:
    assembler = ResponsesStreamAssembler()
    decoder = SSEDecoder()
    deltas: list[Any] = []
    for event in decoder.feed(raw) + decoder.close():
        deltas += assembler.fold(event)
    return assembler, deltas


def test_a_completed_stream_gives_text_usage_routing() -> None:
    assembler, deltas = fold(stream_bytes([Delta(content="Bon"), Delta(content="jour")]))
    result = assembler.finish()
    assert deltas == [ContentDelta("Bon"), ContentDelta("jour")]
    assert result.complete and result.content == "Bonjour" and result.finish_reason == "stop"
    assert result.usage is not None and result.usage.prompt_tokens == 3
    assert result.llmeu is not None and result.llmeu.endpoint_id == "prov-fr"
    assert result.id == "resp_01"


def test_tool_calls_are_assembled_in_item_order() -> None:
    call = ToolCallDelta(index=0, id="call_a", function=ToolCallFunctionDelta(name="f"))
    args = ToolCallDelta(index=0, function=ToolCallFunctionDelta(arguments="{}"))
    assembler, deltas = fold(stream_bytes([Delta(tool_calls=[call]), Delta(tool_calls=[args])],
                                          "tool_calls"))  # fmt: skip
    result = assembler.finish()
    assert deltas == [ClientToolCallDelta(0, "call_a", "f", None),
                      ClientToolCallDelta(0, None, None, "{}")]  # fmt: skip
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [("call_a", "f", "{}")]
    assert result.finish_reason == "tool_calls"


def test_response_incomplete_is_complete_with_finish_reason_length() -> None:
    assembler, _ = fold(stream_bytes([Delta(content="cut")], "length"))
    assert assembler.finish().finish_reason == "length"


@pytest.mark.parametrize(
    ("end", "error"),
    [("cut", IncompleteStreamError), ("fail", StreamError)],
    ids=["no-terminal-event", "response-failed"],
)
def test_a_stream_without_its_terminal_event_is_never_complete(
    end: str, error: type[Exception]
) -> None:
    assembler, _ = fold(stream_bytes([Delta(content="half")], end))
    with pytest.raises(error) as caught:
        assembler.finish()
    assert caught.value.result.content == "half"  # type: ignore[attr-defined]
    assert caught.value.result.complete is False  # type: ignore[attr-defined]


def test_a_gap_in_sequence_numbers_is_malformed() -> None:
    decoder = SSEDecoder()
    events = decoder.feed(stream_bytes([Delta(content="a"), Delta(content="b")]))
    assembler = ResponsesStreamAssembler()
    for event in events[:3] + events[4:]:
        assembler.fold(event)
    with pytest.raises(MalformedStreamError):
        assembler.finish()


def test_events_after_the_terminal_event_change_nothing() -> None:
    assembler, _ = fold(stream_bytes([Delta(content="x")]))
    late = {"type": "response.output_text.delta", "sequence_number": 99, "delta": "y"}
    assembler.fold(ServerSentEvent(event=late["type"], data=json.dumps(late)))  # type: ignore[arg-type]
    assert assembler.finish().content == "x"


def test_parse_response_reads_a_whole_body() -> None:
    body = {
        "id": "resp_1", "object": "response", "status": "completed", "model": "m",
        "output": [
            {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "hi", "annotations": []}]},
            {"type": "function_call", "id": "fc_1", "call_id": "c", "name": "f",
             "arguments": "{}"},
        ],
        "usage": {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
    }  # fmt: skip
    result = parse_response(json.dumps(body).encode())
    assert result.content == "hi" and result.tool_calls[0].name == "f"
    assert result.usage is not None and result.usage.completion_tokens == 2

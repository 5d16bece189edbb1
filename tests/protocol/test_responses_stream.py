"""The Responses stream encoder, fed deltas directly: OpenAI's event order, one delta event per
upstream delta, `sequence_number` from 0 by one, and every event valid for the `openai` SDK's
types and for OpenAI's published OpenAPI schema."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from llmeu.calls.output import Delta, ToolCallDelta, ToolCallFunctionDelta, Usage
from llmeu.errors import UpstreamError
from llmeu.protocol.responses_object import response_shell
from llmeu.protocol.responses_stream import ResponsesEvents
from llmeu.protocol.responses_wire import ResponsesRequest
from llmeu.protocol.routing_block import CostEstimate, RoutingBlock
from tests.support.openai_schema import check_response, check_stream_event

EVENTS: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
ROUTING = RoutingBlock(
    "trc_0123", "m", "1", "prov", "prov-fr", "fr-par", "eu_sovereign", "eu-strict", "P0D",
    CostEstimate("EUR", 3, 4, 0.001, False),
)  # fmt: skip


def text(piece: str) -> Delta:
    return Delta(content=piece)


def tool(index: int, *, call_id: str = "", name: str = "", arguments: str = "") -> Delta:
    function = ToolCallFunctionDelta()
    if name:
        function.name = name
    if arguments:
        function.arguments = arguments
    call = ToolCallDelta(index=index, function=function)
    if call_id:
        call.id = call_id
    return Delta(tool_calls=[call])


def run(deltas: list[Delta], finish: str = "stop", fail: bool = False) -> list[dict[str, Any]]:
    shell = response_shell(
        ResponsesRequest(model="m"), response_id="resp_0123", created_at=1, model="m", store=False
    )
    events = ResponsesEvents(shell)
    raw = events.start() + b"".join(events.delta(d) for d in deltas)
    if fail:
        raw += events.error(UpstreamError("upstream broke"), ROUTING)
    else:
        raw += events.finish(finish, Usage(3, 4, 7), ROUTING)
    blocks = raw.split(b"\n\n")
    assert blocks[-1] == b""
    parsed = []
    for block in blocks[:-1]:
        event_line, data_line = block.decode().split("\n")
        assert event_line.startswith("event: ") and data_line.startswith("data: ")
        payload = json.loads(data_line[len("data: ") :])
        assert payload["type"] == event_line[len("event: ") :]
        EVENTS.validate_python(payload)
        check_stream_event(payload)
        if "response" in payload:
            check_response(payload["response"])
        parsed.append(payload)
    assert [p["sequence_number"] for p in parsed] == list(range(len(parsed)))
    return parsed


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"].removeprefix("response.") for e in events]


CASES = [
    pytest.param(
        [text("Bon"), text("jour")], "stop",
        ["created", "in_progress", "output_item.added", "content_part.added",
         "output_text.delta", "output_text.delta", "output_text.done", "content_part.done",
         "output_item.done", "completed"],
        id="text",
    ),
    pytest.param(
        [Delta(reasoning_content="hm"), text("ok")], "stop",
        ["created", "in_progress", "output_item.added", "content_part.added",
         "reasoning_text.delta", "reasoning_text.done", "content_part.done", "output_item.done",
         "output_item.added", "content_part.added", "output_text.delta", "output_text.done",
         "content_part.done", "output_item.done", "completed"],
        id="reasoning-then-text",
    ),
    pytest.param(
        [tool(0, call_id="call_a", name="f"), tool(0, arguments='{"a":'), tool(0, arguments="1}"),
         tool(1, call_id="call_b", name="g", arguments="{}")], "tool_calls",
        ["created", "in_progress", "output_item.added", "function_call_arguments.delta",
         "function_call_arguments.delta", "function_call_arguments.done", "output_item.done",
         "output_item.added", "function_call_arguments.delta", "function_call_arguments.done",
         "output_item.done", "completed"],
        id="two-tool-calls",
    ),
    pytest.param(
        [Delta(refusal="no")], "stop",
        ["created", "in_progress", "output_item.added", "content_part.added", "refusal.delta",
         "refusal.done", "content_part.done", "output_item.done", "completed"],
        id="refusal",
    ),
    pytest.param(
        [text("cut")], "length",
        ["created", "in_progress", "output_item.added", "content_part.added",
         "output_text.delta", "output_text.done", "content_part.done", "output_item.done",
         "incomplete"],
        id="max-output-tokens",
    ),
    pytest.param([], "stop", ["created", "in_progress", "completed"], id="empty"),
]  # fmt: skip


@pytest.mark.parametrize(("deltas", "finish", "expected"), CASES)
def test_event_order(deltas: list[Delta], finish: str, expected: list[str]) -> None:
    assert kinds(run(deltas, finish)) == expected


def test_the_terminal_response_holds_the_whole_output_usage_and_routing() -> None:
    events = run(
        [Delta(reasoning_content="think"), text("a"), text("b"),
         tool(0, call_id="call_a", name="f", arguments="{}")],
        "tool_calls",
    )  # fmt: skip
    done = events[-1]["response"]
    response = Response.model_validate(done)
    assert response.status == "completed"
    assert [item.type for item in response.output] == ["reasoning", "message", "function_call"]
    assert response.output_text == "ab"
    assert done["output"][2]["call_id"] == "call_a" and done["output"][2]["arguments"] == "{}"
    assert done["usage"]["input_tokens"] == 3 and done["usage"]["total_tokens"] == 7
    assert done["llmeu"]["trace_id"] == "trc_0123"
    added = [e["item"] for e in events if e["type"] == "response.output_item.added"]
    finished = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert (
        [i["id"] for i in added] == [i["id"] for i in finished] == [i["id"] for i in done["output"]]
    )
    assert [i["status"] for i in added] == ["in_progress"] * 3
    text_done = next(e for e in events if e["type"] == "response.output_text.done")
    assert text_done["text"] == "ab"


def test_a_failure_ends_with_response_failed_and_the_partial_output() -> None:
    events = run([text("half")], fail=True)
    assert kinds(events) == [
        "created", "in_progress", "output_item.added", "content_part.added", "output_text.delta",
        "failed",
    ]  # fmt: skip
    response = events[-1]["response"]
    assert response["status"] == "failed"
    assert response["error"] == {"code": "server_error", "message": "upstream broke"}
    assert response["output"][0]["status"] == "incomplete"
    assert response["output"][0]["content"][0]["text"] == "half"
    assert response["llmeu"]["endpoint_id"] == "prov-fr"
    assert response["usage"]["output_tokens"] == 4

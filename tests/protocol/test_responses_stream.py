"""The Responses stream encoder, fed deltas directly: OpenAI's event order, one delta event per
upstream delta, `sequence_number` from 0 by one, and every event valid for the `openai` SDK's
types and for OpenAI's published OpenAPI schema."""

from __future__ import annotations

import json
from typing import Any

import pytest
from msgspec import UNSET
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from llmeu.calls.output import (
    Delta,
    ToolCallCustomDelta,
    ToolCallDelta,
    ToolCallFunctionDelta,
    Usage,
)
from llmeu.errors import UpstreamError
from llmeu.protocol.responses_object import response_shell
from llmeu.protocol.responses_stream import ResponsesEvents
from llmeu.protocol.responses_wire import ReasoningConfig, ResponsesRequest
from llmeu.protocol.routing_block import CostEstimate, RoutingBlock
from tests.support.openai_schema import check_response, check_stream_event

EVENTS: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
ROUTING = RoutingBlock(
    "trc_0123", "m", "1", "prov", "prov-fr", "fr-par", "eu_sovereign", "eu-strict", "P0D",
    CostEstimate("EUR", 3, 4, 0.001, False),
)  # fmt: skip


def text(piece: str) -> Delta:
    return Delta(content=piece)


def custom(index: int, *, call_id: str = "", name: str = "", text: str = "") -> Delta:
    """A piece of a custom tool's call, as `llmeu.calls.tool_forms` makes it."""
    piece = ToolCallCustomDelta(name=name or UNSET, input=text if text or name else UNSET)
    call = ToolCallDelta(index, id=call_id or UNSET, type="custom" if call_id else UNSET,
                         custom=piece)  # fmt: skip
    return Delta(tool_calls=[call])


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


def run(
    deltas: list[Delta],
    finish: str = "stop",
    fail: bool = False,
    summary: str | None = None,
    namespaced: dict[str, tuple[str, str]] | None = None,
) -> list[dict[str, Any]]:
    request = ResponsesRequest(model="m")
    if summary is not None:
        request.reasoning = ReasoningConfig(summary=summary)
    shell = response_shell(request, response_id="resp_0123", created_at=1, model="m", store=False)
    events = ResponsesEvents(shell, namespaced)
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
        [custom(0, call_id="call_p", name="apply_patch"), custom(0, text="*** Begin"),
         custom(0, text=" Patch"), tool(1, call_id="call_f", name="f", arguments="{}")],
        "tool_calls",
        ["created", "in_progress", "output_item.added", "custom_tool_call_input.delta",
         "custom_tool_call_input.delta", "custom_tool_call_input.done", "output_item.done",
         "output_item.added", "function_call_arguments.delta", "function_call_arguments.done",
         "output_item.done", "completed"],
        id="custom-then-function",
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


def test_reasoning_is_a_summary_when_one_was_asked_for() -> None:
    deltas = [Delta(reasoning_content="Let me "), Delta(reasoning_content="think."), text("Hi")]
    events = run(deltas, summary="auto")
    assert kinds(events)[:9] == [
        "created", "in_progress", "output_item.added", "reasoning_summary_part.added",
        "reasoning_summary_text.delta", "reasoning_summary_text.delta",
        "reasoning_summary_text.done", "reasoning_summary_part.done", "output_item.done",
    ]  # fmt: skip
    assert [e.get("summary_index") for e in events[3:8]] == [0] * 5
    assert events[6]["text"] == "Let me think."
    assert events[7]["part"] == {"type": "summary_text", "text": "Let me think."}
    reasoning = events[-1]["response"]["output"][0]
    assert reasoning["summary"] == [{"type": "summary_text", "text": "Let me think."}]
    assert "content" not in reasoning
    Response.model_validate(events[-1]["response"])


def test_reasoning_without_a_summary_is_reasoning_text() -> None:
    events = run([Delta(reasoning_content="hmm"), text("Hi")])
    assert "reasoning_text.delta" in kinds(events)
    reasoning = events[-1]["response"]["output"][0]
    assert reasoning["summary"] == [] and reasoning["content"][0]["text"] == "hmm"


def test_an_opaque_token_seals_its_reasoning_item() -> None:
    deltas = [
        Delta(reasoning_content="one", reasoning_signature="sig-1"),
        Delta(reasoning_content="two"),
        Delta(reasoning_signature="sig-2"),
        Delta(reasoning_signature="sig-3"),  # reasoning with no text to show
        text("Hi"),
    ]
    events = run(deltas, summary="concise")
    output = events[-1]["response"]["output"]
    assert [(i["type"], i.get("encrypted_content")) for i in output] == [
        ("reasoning", "sig-1"), ("reasoning", "sig-2"), ("reasoning", "sig-3"), ("message", None)
    ]  # fmt: skip
    assert [i["summary"] for i in output[:3]] == [
        [{"type": "summary_text", "text": "one"}], [{"type": "summary_text", "text": "two"}], []
    ]  # fmt: skip
    assert len({i["id"] for i in output}) == 4
    assert [e["item"]["type"] for e in events if e["type"] == "response.output_item.done"] == [
        "reasoning", "reasoning", "reasoning", "message"
    ]  # fmt: skip


def test_a_token_arriving_with_text_is_kept() -> None:
    events = run([text("a"), Delta(content="b", reasoning_signature="sig")])
    output = events[-1]["response"]["output"]
    assert [i["type"] for i in output] == ["message", "reasoning", "message"]
    assert output[1]["encrypted_content"] == "sig"


def test_a_custom_call_is_a_custom_tool_call_item_with_its_input() -> None:
    events = run([custom(0, call_id="call_p", name="apply_patch"), custom(0, text="a\n"),
                  custom(0, text="b")], "tool_calls")  # fmt: skip
    done = next(e for e in events if e["type"] == "response.custom_tool_call_input.done")
    assert done["input"] == "a\nb"
    (item,) = events[-1]["response"]["output"]
    assert item == {"id": done["item_id"], "type": "custom_tool_call", "call_id": "call_p",
                    "name": "apply_patch", "input": "a\nb"}  # fmt: skip


def test_a_namespace_s_tool_is_named_by_its_namespace_and_name() -> None:
    events = run([tool(0, call_id="call_s", name="crm__find", arguments="{}"),
                  custom(1, call_id="call_n", name="crm__note", text="hi")], "tool_calls",
                 namespaced={"crm__find": ("crm", "find"), "crm__note": ("crm", "note")})  # fmt: skip
    done = next(e for e in events if e["type"] == "response.function_call_arguments.done")
    assert done["name"] == "find"
    found, noted = events[-1]["response"]["output"]
    assert (found["namespace"], found["name"]) == ("crm", "find")
    assert (noted["type"], noted["namespace"], noted["name"]) == ("custom_tool_call", "crm", "note")

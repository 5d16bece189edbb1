"""Custom tools both ways: the function form an upstream is offered, and its calls read back.

A custom tool goes upstream as a function with one string argument, `input`;
a call of that function comes back as a custom call whose input is the
string, streamed piece by piece whatever the upstream's pieces split (an
escape, a surrogate pair), and read whole at the end when the arguments were
not `{"input": "…"}`.
"""

from __future__ import annotations

import json

import msgspec
import pytest

from llmeu.calls.output import Delta, ToolCallCustomDelta, ToolCallDelta, ToolCallFunctionDelta
from llmeu.calls.request import AssistantMessage, ChatRequest
from llmeu.calls.tool_forms import CustomCalls, custom_names, function_form
from llmeu.calls.tools import CUSTOM_INPUT, CustomCall, CustomToolCall, FunctionCall, ToolCall

decode = msgspec.json.Decoder(ChatRequest).decode
PATCH = '*** Begin Patch\n*** Add File: a.txt\n+héllo "wörld" \\ \U0001f600\n*** End Patch\n'
GRAMMAR = {"type": "grammar", "grammar": {"syntax": "lark", "definition": 'start: "x"'}}


def request(**fields: object) -> ChatRequest:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], **fields}
    return decode(json.dumps(body))


def test_a_custom_tool_is_offered_as_a_function_of_one_string() -> None:
    chat = request(
        tools=[
            {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}},
            {"type": "custom", "custom": {"name": "apply_patch", "description": "Edit files",
                                          "format": GRAMMAR}},
        ],
        tool_choice={"type": "custom", "custom": {"name": "apply_patch"}},
    )  # fmt: skip
    sent = msgspec.to_builtins(function_form(chat))
    function, patch = sent["tools"]
    assert function == {"type": "function", "function": {"name": "f",
                                                         "parameters": {"type": "object"}}}  # fmt: skip
    assert patch["type"] == "function"
    assert patch["function"]["name"] == "apply_patch"
    assert patch["function"]["description"] == "Edit files"
    parameters = patch["function"]["parameters"]
    assert parameters["required"] == [CUSTOM_INPUT] and parameters["additionalProperties"] is False
    assert parameters["properties"][CUSTOM_INPUT]["type"] == "string"
    assert 'lark grammar:\nstart: "x"' in parameters["properties"][CUSTOM_INPUT]["description"]
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "apply_patch"}}
    assert custom_names(chat) == {"apply_patch"}


def test_an_earlier_custom_call_goes_upstream_as_a_function_call() -> None:
    chat = request(
        messages=[
            {"role": "user", "content": "patch it"},
            {"role": "assistant", "tool_calls": [
                {"type": "custom", "id": "c1", "custom": {"name": "apply_patch", "input": PATCH}},
                {"type": "function", "id": "c2", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "done"},
        ],
    )  # fmt: skip
    turn = function_form(chat).messages[1]
    assert isinstance(turn, AssistantMessage) and isinstance(turn.tool_calls, list)
    patch, other = turn.tool_calls
    assert isinstance(patch, ToolCall) and patch.id == "c1"
    assert json.loads(patch.function.arguments) == {CUSTOM_INPUT: PATCH}
    assert other == ToolCall("c2", FunctionCall("f", "{}"))


def test_a_request_without_custom_tools_is_sent_as_it_is() -> None:
    chat = request(tools=[{"type": "function", "function": {"name": "f"}}])
    assert function_form(chat) is chat
    assert custom_names(chat) == frozenset()


def _streamed(arguments: str, step: int) -> list[Delta]:
    first = ToolCallDelta(0, id="call_1", type="function",
                          function=ToolCallFunctionDelta(name="apply_patch", arguments=""))  # fmt: skip
    pieces = [arguments[i : i + step] for i in range(0, len(arguments), step)]
    rest = [Delta(tool_calls=[ToolCallDelta(0, function=ToolCallFunctionDelta(arguments=p))])
            for p in pieces]  # fmt: skip
    return [Delta(tool_calls=[first]), *rest]


def _read_back(deltas: list[Delta]) -> tuple[list[Delta], str]:
    calls = CustomCalls(frozenset({"apply_patch"}))
    out = [calls.delta(d) for d in deltas]
    if (tail := calls.flush()) is not None:
        out.append(tail)
    text = "".join(
        c.custom.input
        for d in out
        for c in d.tool_calls or ()
        if isinstance(c.custom, ToolCallCustomDelta) and isinstance(c.custom.input, str)
    )
    return out, text


@pytest.mark.parametrize("step", [1, 2, 3, 5, 7, 1000], ids=lambda s: f"pieces-of-{s}")
@pytest.mark.parametrize(
    "arguments",
    [
        json.dumps({CUSTOM_INPUT: PATCH}),
        json.dumps({CUSTOM_INPUT: PATCH}, ensure_ascii=False),
        '{ "input" :\n  ' + json.dumps(PATCH) + " }",
    ],
    ids=["ascii-escapes", "utf8", "spaced"],
)
def test_a_streamed_call_comes_back_as_its_input_in_pieces(arguments: str, step: int) -> None:
    out, text = _read_back(_streamed(arguments, step))
    assert text == PATCH
    first = out[0].tool_calls[0]  # type: ignore[index]
    assert (first.index, first.id, first.type) == (0, "call_1", "custom")
    assert first.custom.name == "apply_patch"
    if step < len(arguments):  # the input streams: more than the first delta carries text
        assert sum(1 for d in out if d.carries_output()) > 2


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"patch": "a\\nb"}', "a\nb"),
        ("*** Begin Patch", "*** Begin Patch"),
        ('{"input": 3}', '{"input": 3}'),
    ],
    ids=["other-argument-name", "not-json", "not-a-string"],
)
def test_arguments_of_another_shape_are_read_whole_at_the_end(
    arguments: str, expected: str
) -> None:
    for step in (1, 4, 100):
        out, text = _read_back(_streamed(arguments, step))
        assert text == expected
        assert out[-1].tool_calls[0].custom.input == expected  # type: ignore[index,union-attr]


def test_a_function_call_is_left_as_it_is() -> None:
    calls = CustomCalls(frozenset({"apply_patch"}))
    first = Delta(tool_calls=[ToolCallDelta(0, id="c", type="function",
                                            function=ToolCallFunctionDelta(name="f", arguments=""))])  # fmt: skip
    more = Delta(tool_calls=[ToolCallDelta(0, function=ToolCallFunctionDelta(arguments="{}"))])
    assert [calls.delta(first), calls.delta(more)] == [first, more]
    assert calls.flush() is None


def test_a_whole_answer_s_calls_come_back_as_custom_calls() -> None:
    calls = CustomCalls(frozenset({"apply_patch"}))
    answer = [
        ToolCall("c1", FunctionCall("apply_patch", json.dumps({CUSTOM_INPUT: PATCH}))),
        ToolCall("c2", FunctionCall("f", '{"a": 1}')),
    ]
    assert calls.calls(answer) == [  # type: ignore[arg-type]
        CustomToolCall("c1", CustomCall("apply_patch", PATCH)),
        ToolCall("c2", FunctionCall("f", '{"a": 1}')),
    ]


def test_the_function_form_of_a_custom_call_round_trips() -> None:
    call = CustomToolCall("c1", CustomCall("apply_patch", PATCH))
    back = CustomCalls(frozenset({"apply_patch"})).calls([ToolCall(call.id, call.function)])
    assert back == [call]

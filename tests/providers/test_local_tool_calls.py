"""The bundled model's text read as deltas: plain answers, calls, pieces split anywhere."""

from __future__ import annotations

import json
from itertools import count
from typing import Any

import msgspec
import pytest

from llmeu.calls.output import Delta, StreamOutput
from llmeu.providers.local_tool_calls import PlainText, ToolCallText, finish_reason

ONE = '<tool_call>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_call>'
TWO = (
    '<tool_call>[{"name": "get_weather", "arguments": {"city": "Par\\"is", "days": [1, 2]}}, '
    '{"name":"get_time","arguments":{}}]</tool_call>'
)
NESTED = '<tool_call>[{"name": "f", "arguments": {"a": {"b": "}, ]"}, "c": null}}]</tool_call>'


def _reader() -> ToolCallText:
    ids = count()
    return ToolCallText(new_id=lambda: f"call_{next(ids)}")


def _read(text: str, size: int) -> tuple[list[Delta], int]:
    reader = _reader()
    deltas = [d for i in range(0, len(text), size) for d in reader.feed(text[i : i + size])]
    return deltas + reader.end(), reader.calls


def _wire(deltas: list[Delta]) -> list[Any]:
    return [msgspec.to_builtins(d) for d in deltas]


@pytest.mark.parametrize("size", [1, 3, 7, 1000], ids=lambda s: f"pieces-of-{s}")
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(ONE, [("call_0", "get_weather", {"city": "Paris"})], id="one-call"),
        pytest.param(TWO, [("call_0", "get_weather", {"city": 'Par"is', "days": [1, 2]}),
                           ("call_1", "get_time", {})], id="parallel-calls"),
        pytest.param(NESTED, [("call_0", "f", {"a": {"b": "}, ]"}, "c": None})],
                     id="brackets-inside-strings"),
    ],
)  # fmt: skip
def test_calls_are_read_whole_however_the_text_is_split(
    text: str, expected: list[tuple[str, str, Any]], size: int
) -> None:
    deltas, calls = _read(text, size)
    output = StreamOutput()
    for delta in deltas:
        output.add(delta)
    made = [(c.id, c.function.name, json.loads(c.function.arguments)) for c in output.tool_calls()]
    assert made == expected
    assert calls == len(expected)
    assert output.content == ""


def test_each_call_opens_as_openai_streams_it() -> None:
    deltas, _ = _read(TWO, 1000)
    assert _wire(deltas) == [
        {"tool_calls": [{"index": 0, "id": "call_0", "type": "function",
                         "function": {"name": "get_weather", "arguments": ""}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments":
                                                  '{"city":"Par\\"is","days":[1,2]}'}}]},
        {"tool_calls": [{"index": 1, "id": "call_1", "type": "function",
                         "function": {"name": "get_time", "arguments": ""}}]},
        {"tool_calls": [{"index": 1, "function": {"arguments": "{}"}}]},
    ]  # fmt: skip


def test_arguments_stream_as_they_are_generated() -> None:
    reader = _reader()
    pieces = ['<tool_call>[{"name": "get_weather", "arguments": {"ci', 'ty": "Pa', 'ris"}}]']
    arguments = [
        [c.function.arguments for c in d.tool_calls if not isinstance(c.id, str)]  # type: ignore[union-attr]
        for piece in pieces
        for d in reader.feed(piece)
    ]
    assert arguments == [[], ['{"ci'], ['ty":"Pa'], ['ris"}']]


@pytest.mark.parametrize(
    "text",
    ["Paris is sunny.", " <b>bold</b> is not a call", "It costs < 5 euros"],
    ids=["plain", "leading-space-then-markup", "angle-bracket-later"],
)
def test_a_plain_answer_passes_through_as_content(text: str) -> None:
    reader = _reader()
    deltas = [d for piece in (text[:2], text[2:]) for d in reader.feed(piece)]
    assert "".join(d.content for d in deltas if isinstance(d.content, str)) == text
    assert reader.calls == 0


def test_a_call_cut_by_the_token_limit_keeps_what_was_written() -> None:
    deltas, calls = _read('<tool_call>[{"name": "f", "arguments": {"q": "lon', 5)
    output = StreamOutput()
    for delta in deltas:
        output.add(delta)
    assert [(c.function.name, c.function.arguments) for c in output.tool_calls()] == [
        ("f", '{"q":"lon')
    ]
    assert calls == 1


def test_without_tools_every_piece_is_content() -> None:
    reader = PlainText()
    assert _wire(reader.feed("<tool_call>")) == [{"content": "<tool_call>"}]
    assert reader.feed("") == [] and reader.end() == [] and reader.calls == 0


@pytest.mark.parametrize(
    ("reason", "calls", "expected"),
    [("stop", 1, "tool_calls"), ("stop", 0, "stop"), ("length", 2, "length"),
     ("cancelled", 1, "cancelled")],
    ids=["calls-made", "no-calls", "cut-by-length", "cancelled"],
)  # fmt: skip
def test_finish_reason(reason: str, calls: int, expected: str) -> None:
    assert finish_reason(reason, calls) == expected

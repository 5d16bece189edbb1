"""The bundled model's text as chat deltas: plain content, or tool calls as OpenAI streams them.

With tools on offer the model writes either a plain answer or, held there by
its grammar (`llmeu.providers.local_tools`),
`<tool_call>[{"name": "f", "arguments": {…}}, …]</tool_call>`. `ToolCallText`
reads that text piece by piece as it is generated: the first character
decides (`<` opens calls), and each call becomes a first delta with its
`index`, an `id`, `type: function`, its name and empty arguments, then
deltas carrying the arguments' JSON as it arrives (whitespace between JSON
tokens left out). Pure: text in, deltas out.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable

from llmeu.calls.output import Delta, ToolCallDelta, ToolCallFunctionDelta
from llmeu.providers.local_tools import CALL_OPEN


def new_call_id() -> str:
    return "call_" + secrets.token_hex(12)


class PlainText:
    """No tools on offer: every piece is content."""

    calls = 0

    def feed(self, text: str) -> list[Delta]:
        return [Delta(content=text)] if text else []

    def end(self) -> list[Delta]:
        return []


class ToolCallText:
    """Tools on offer: a plain answer passes through, calls become `tool_calls` deltas."""

    def __init__(self, new_id: Callable[[], str] = new_call_id) -> None:
        self._new_id = new_id
        self._mode = "undecided"  # then "text" or "calls"
        self._opening = 0  # characters of `<tool_call>` read so far
        self._depth = 0
        self._in_string = False
        self._escaped = False
        self._string = ""
        self._key = ""
        self._expect_key = False
        self._in_arguments = False
        self._arguments = ""
        self.calls = 0

    def feed(self, text: str) -> list[Delta]:
        if self._mode == "undecided" and text:
            self._mode = "calls" if text[0] == "<" else "text"
        if self._mode == "text":
            return [Delta(content=text)] if text else []
        deltas: list[Delta] = []
        for char in text:
            deltas.extend(self._read(char))
        deltas.extend(self._flush())
        return deltas

    def end(self) -> list[Delta]:
        return self._flush()

    def _flush(self) -> list[Delta]:
        if not self._arguments:
            return []
        arguments, self._arguments = self._arguments, ""
        function = ToolCallFunctionDelta(arguments=arguments)
        return [Delta(tool_calls=[ToolCallDelta(index=self.calls - 1, function=function)])]

    def _read(self, char: str) -> list[Delta]:
        if self._opening < len(CALL_OPEN):
            self._opening += 1
            return []
        if self._in_string:
            return self._read_string(char)
        if char.isspace():
            return []
        if char == '"':
            self._in_string, self._string = True, ""
            self._argument(char)
            return []
        if self._in_arguments and self._depth == 2 and char in ",}":
            self._in_arguments = False
        elif self._in_arguments:
            self._argument(char)
        if char in "[{":
            self._depth += 1
            if char == "{" and self._depth == 2:
                self._expect_key = True
                flushed = self._flush()
                self.calls += 1
                return flushed
        elif char in "]}":
            self._depth -= 1
        elif char == "," and self._depth == 2:
            self._expect_key = True
        elif char == ":" and self._depth == 2:
            self._expect_key = False
            self._in_arguments = self._key == "arguments"
        return []

    def _read_string(self, char: str) -> list[Delta]:
        self._argument(char)
        if self._escaped:
            self._escaped = False
        elif char == "\\":
            self._escaped = True
        elif char == '"':
            self._in_string = False
            return self._string_read()
        self._string += char
        return []

    def _string_read(self) -> list[Delta]:
        if self._depth != 2 or self._in_arguments:
            return []
        if self._expect_key:
            self._key = self._string
            return []
        if self._key != "name":
            return []
        call = ToolCallDelta(
            index=self.calls - 1,
            id=self._new_id(),
            type="function",
            function=ToolCallFunctionDelta(name=_unescaped(self._string), arguments=""),
        )
        return [Delta(tool_calls=[call])]

    def _argument(self, char: str) -> None:
        if self._in_arguments:
            self._arguments += char


def finish_reason(reason: str, calls: int) -> str:
    """`tool_calls` for an answer that made calls and ended by itself."""
    return "tool_calls" if calls and reason == "stop" else reason


def _unescaped(text: str) -> str:
    try:
        value = json.loads(f'"{text}"')
    except ValueError:
        return text
    return value if isinstance(value, str) else text

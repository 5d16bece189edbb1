"""Restoring a streamed answer delta by delta.

Each text field of the stream (content, refusal, reasoning, each tool call's
arguments or custom input) has its own `Restorer`, so a placeholder split across deltas is
put together within its field; a function call's arguments, JSON, get their values back
JSON-escaped. A delta keeps its frame even when all of its
text is held back (it then carries an empty string), so the stream keeps one
frame per upstream delta; what is still held when the upstream ends (never a
placeholder, only text that looked like the start of one) goes out in one
more delta before the end.
"""

from __future__ import annotations

from msgspec import UNSET
from msgspec.structs import replace

from llmeu.calls.output import Delta, ToolCallCustomDelta, ToolCallDelta, ToolCallFunctionDelta
from llmeu.personal.masking import Masking, Restorer

_TEXT_FIELDS = ("content", "refusal", "reasoning_content")


class StreamRestorer:
    def __init__(self, masking: Masking):
        self._masking = masking
        self._fields: dict[str, Restorer] = {}
        self._tools: dict[int, Restorer] = {}
        self._custom: set[int] = set()  # the indexes of custom tools' calls

    def push(self, delta: Delta) -> Delta:
        changes: dict[str, object] = {}
        for name in _TEXT_FIELDS:
            text = getattr(delta, name)
            if isinstance(text, str) and text:
                changes[name] = self._field(name).push(text)
        if isinstance(delta.tool_calls, list):
            changes["tool_calls"] = [self._tool_call(call) for call in delta.tool_calls]
        return replace(delta, **changes) if changes else delta

    def flush(self) -> Delta | None:
        """The text held back at the end of the stream, as one delta; None when none is."""
        changes: dict[str, object] = {
            name: held for name, r in self._fields.items() if (held := r.flush())
        }
        tools = [
            ToolCallDelta(index=index, custom=ToolCallCustomDelta(input=held))
            if index in self._custom
            else ToolCallDelta(index=index, function=ToolCallFunctionDelta(arguments=held))
            for index, r in sorted(self._tools.items())
            if (held := r.flush())
        ]
        if tools:
            changes["tool_calls"] = tools
        return Delta(**changes) if changes else None  # type: ignore[arg-type]

    def _field(self, name: str) -> Restorer:
        restorer = self._fields.get(name)
        if restorer is None:
            restorer = self._fields[name] = self._masking.restorer()
        return restorer

    def _tool_call(self, call: ToolCallDelta) -> ToolCallDelta:
        custom = call.custom
        if isinstance(custom, ToolCallCustomDelta) and isinstance(custom.input, str):
            self._custom.add(call.index)
            restored = self._tool(call.index).push(custom.input)
            return replace(call, custom=replace(custom, input=restored))
        function = call.function
        if function is UNSET or not isinstance(function.arguments, str):
            return call
        restored = self._tool(call.index, json=True).push(function.arguments)
        return replace(call, function=replace(function, arguments=restored))

    def _tool(self, index: int, json: bool = False) -> Restorer:
        restorer = self._tools.get(index)
        if restorer is None:
            restorer = self._tools[index] = self._masking.restorer(json)
        return restorer

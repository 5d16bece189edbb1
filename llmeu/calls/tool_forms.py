"""Custom tools on upstreams that only know functions: the request one way, the calls back.

A custom tool (OpenAI's free-form tools, Codex's `apply_patch`) takes text,
not JSON. Few upstreams have such tools, so every upstream is offered its
function form (`CustomTool.function`): a function of the same name with one
string argument, `input`, whose description carries the tool's grammar where
it has one. `function_form` makes the whole request so — tools, a
`tool_choice` naming a custom tool, earlier custom calls in the conversation —
and is the one place that mapping is made: every chat attempt goes through it
(`llmeu.api.call.asks`), and a provider may call it on a request it gets
(it leaves a request without custom tools as it is).

`CustomCalls` maps the answer back: a call of a custom tool's function form
becomes a custom call whose `input` is the string argument, streamed piece
by piece as the arguments' JSON arrives (escapes split across deltas held
until whole). Arguments that are not `{"input": "…"}` (a model that named the
argument otherwise, or wrote no JSON) are read whole at the end: the one
string value of an object, else the arguments as they came.
"""

from __future__ import annotations

import json
import re
from typing import Any

from msgspec import UNSET
from msgspec.structs import replace

from llmeu.calls.output import Delta, ToolCallCustomDelta, ToolCallDelta, ToolCallFunctionDelta
from llmeu.calls.request import AssistantMessage, ChatRequest, Message
from llmeu.calls.tools import (
    CUSTOM_INPUT,
    AnyToolCall,
    CustomCall,
    CustomTool,
    CustomToolCall,
    NamedFunction,
    Tool,
    ToolCall,
    ToolChoiceCustom,
    ToolChoiceFunction,
)

__all__ = ["CustomCalls", "custom_names", "function_form"]


def custom_names(chat: ChatRequest) -> frozenset[str]:
    """The names of the request's custom tools."""
    return frozenset(t.custom.name for t in chat.tools or () if isinstance(t, CustomTool))


def function_form(chat: ChatRequest) -> ChatRequest:
    """`chat` with its custom tools, a `tool_choice` naming one and earlier custom calls in
    their function form; `chat` itself when it has none."""
    changes: dict[str, Any] = {}
    tools = chat.tools or ()
    if any(isinstance(tool, CustomTool) for tool in tools):
        changes["tools"] = [
            Tool(tool.function) if isinstance(tool, CustomTool) else tool for tool in tools
        ]
    if isinstance(chat.tool_choice, ToolChoiceCustom):
        changes["tool_choice"] = ToolChoiceFunction(NamedFunction(chat.tool_choice.custom.name))
    if any(_has_custom_calls(message) for message in chat.messages):
        changes["messages"] = [_function_calls(message) for message in chat.messages]
    return replace(chat, **changes) if changes else chat


def _has_custom_calls(message: Message) -> bool:
    return isinstance(message, AssistantMessage) and any(
        isinstance(call, CustomToolCall) for call in message.tool_calls or ()
    )


def _function_calls(message: Message) -> Message:
    if not _has_custom_calls(message):
        return message
    assert isinstance(message, AssistantMessage)
    calls = [
        ToolCall(call.id, call.function) if isinstance(call, CustomToolCall) else call
        for call in message.tool_calls or ()
    ]
    return replace(message, tool_calls=calls)


_OPENING = re.compile(r'\s*\{\s*"' + CUSTOM_INPUT + r'"\s*:\s*"')
_COMPLETE = re.compile(
    r'(?:[^"\\]+|\\["\\/bfnrt]|\\u(?![dD][89abAB])[0-9a-fA-F]{4}'
    r"|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})*"
)
"""The longest start of a JSON string's body made of whole characters (an escape, a
surrogate pair of escapes): what can be decoded before the rest arrives."""


class _Input:
    """One custom call's input, read out of its function form's arguments as they arrive."""

    __slots__ = ("arguments", "held", "state")

    def __init__(self) -> None:
        self.arguments = ""  # everything received
        self.held = ""  # received, not yet decoded
        self.state = "opening"  # opening → string → closed; or whole: read at the end

    def push(self, piece: str) -> str:
        """The input text `piece` completes."""
        self.arguments += piece
        if self.state == "opening":
            found = _OPENING.match(self.arguments)
            if found is None:
                if not _may_open(self.arguments):
                    self.state = "whole"
                return ""
            self.state = "string"
            piece = self.arguments[found.end() :]
        if self.state != "string":
            return ""
        text = self.held + piece
        whole = _COMPLETE.match(text)
        end = whole.end() if whole is not None else 0
        if end < len(text) and text[end] == '"':
            self.state, self.held = "closed", ""
        elif len(text) - end > 12:  # no escape is that long: not JSON after all
            self.state = "whole"
            return ""
        else:
            self.held = text[end:]
        return str(json.loads(f'"{text[:end]}"', strict=False)) if end else ""

    def rest(self) -> str | None:
        """The whole input, at the end, when it could not be read piece by piece; else None."""
        if self.state in ("string", "closed"):
            return None
        try:
            value = json.loads(self.arguments, strict=False)
        except ValueError:
            return self.arguments
        if isinstance(value, dict):
            strings = [v for v in value.values() if isinstance(v, str)]
            if len(strings) == 1:
                return strings[0]
        return value if isinstance(value, str) else self.arguments


def _may_open(arguments: str) -> bool:
    """Whether `arguments` may still become `{"input": "` as more arrives."""
    compact = re.sub(r"\s+", "", arguments)
    return f'{{"{CUSTOM_INPUT}":"'.startswith(compact)


class CustomCalls:
    """An answer's calls of custom tools' function forms, made back into custom calls: a
    stream's deltas one by one (`delta`, then `flush` at its end), or a whole answer's
    calls (`calls`)."""

    __slots__ = ("_inputs", "_names", "_tools")

    def __init__(self, names: frozenset[str]) -> None:
        self._names = names
        self._tools: dict[int, bool] = {}  # tool-call index → a custom tool's call
        self._inputs: dict[int, _Input] = {}

    def delta(self, delta: Delta) -> Delta:
        """`delta` with its pieces of custom calls as such (a piece that completes no input
        character is left out; the delta may then carry nothing)."""
        if not delta.tool_calls:
            return delta
        calls = [mapped for call in delta.tool_calls if (mapped := self._call(call))]
        return replace(delta, tool_calls=calls or UNSET)

    def flush(self) -> Delta | None:
        """At the end of the stream: the inputs that could only be read whole, as one delta."""
        calls = [
            ToolCallDelta(index, custom=ToolCallCustomDelta(input=rest))
            for index, read in sorted(self._inputs.items())
            if (rest := read.rest())
        ]
        return Delta(tool_calls=calls) if calls else None

    def calls(self, calls: list[AnyToolCall]) -> list[AnyToolCall]:
        """A whole answer's calls, those of custom tools as custom calls."""
        return [
            CustomToolCall(call.id, CustomCall(call.function.name, _whole(call.function.arguments)))
            if isinstance(call, ToolCall) and call.function.name in self._names
            else call
            for call in calls
        ]

    def _call(self, call: ToolCallDelta) -> ToolCallDelta | None:
        function = call.function
        custom = self._tools.get(call.index)
        if custom is None:
            name = function.name if isinstance(function, ToolCallFunctionDelta) else UNSET
            custom = self._tools[call.index] = name in self._names
            if custom:
                self._inputs[call.index] = _Input()
        if not custom:
            return call
        arguments = function.arguments if isinstance(function, ToolCallFunctionDelta) else UNSET
        text = self._inputs[call.index].push(arguments) if isinstance(arguments, str) else ""
        if call.id is UNSET and not text:
            return None
        name = function.name if isinstance(function, ToolCallFunctionDelta) else UNSET
        piece = ToolCallCustomDelta(name=name, input=text if text or name else UNSET)
        kind = "custom" if call.id is not UNSET or call.type is not UNSET else UNSET
        return ToolCallDelta(call.index, id=call.id, type=kind, custom=piece)


def _whole(arguments: str) -> str:
    read = _Input()
    text = read.push(arguments)
    rest = read.rest()
    return text if rest is None else rest

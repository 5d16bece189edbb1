"""What comes back from an upstream, whatever its kind: deltas, the end of a stream, completions.

A streamed answer is a sequence of `Delta`s — each carries the text,
refusal, reasoning and tool-call parts of one upstream delta, so that a
surface can keep one frame per upstream delta — followed by its end: a
finish reason and the usage (None when the upstream reported none). A
failure is an `UpstreamError` raised where the next delta was expected.
`StreamOutput` collects what a stream carried, for the trace and for
estimates when the upstream reports no usage.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from msgspec import UNSET, Struct, UnsetType

from llmeu.calls.tools import AnyToolCall, CustomCall, CustomToolCall, FunctionCall, ToolCall


class ToolCallFunctionDelta(Struct, omit_defaults=True):
    name: str | UnsetType = UNSET
    arguments: str | UnsetType = UNSET


class ToolCallCustomDelta(Struct, omit_defaults=True):
    """A piece of a custom tool's call: its name first, then pieces of its free-form input."""

    name: str | UnsetType = UNSET
    input: str | UnsetType = UNSET


class ToolCallDelta(Struct, omit_defaults=True):
    """A piece of one tool call (by `index`): a function's (`function`) or, with `type:
    custom`, a custom tool's (`custom`), in the shape of OpenAI's chat stream."""

    index: int
    id: str | UnsetType = UNSET
    type: str | UnsetType = UNSET
    function: ToolCallFunctionDelta | UnsetType = UNSET
    custom: ToolCallCustomDelta | UnsetType = UNSET


class Delta(Struct, omit_defaults=True):
    """One streamed delta; upstream deltas decode into it and are forwarded as they are."""

    role: str | UnsetType = UNSET
    content: str | UnsetType | None = UNSET
    refusal: str | UnsetType | None = UNSET
    reasoning_content: str | UnsetType | None = UNSET
    # What some OpenAI-compatible servers (vLLM, OpenRouter) call `reasoning_content`; the
    # provider moves it there, so it is never forwarded under this name.
    reasoning: str | UnsetType | None = UNSET
    tool_calls: list[ToolCallDelta] | UnsetType | None = UNSET
    # The signature that closes a reasoning step (Anthropic's signature_delta); kept for the
    # surfaces that carry it, left out of chat-completions frames.
    reasoning_signature: str | UnsetType = UNSET

    def carries_output(self) -> bool:
        return bool(
            self.content
            or self.refusal
            or self.reasoning_content
            or self.tool_calls
            or self.reasoning_signature
        )


class Usage(Struct, omit_defaults=True):
    """Token counts; `prompt_tokens` counts every input token, cached ones included (as
    OpenAI's do), and the cache's share is apart where an upstream reports it (Anthropic)."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    cache_creation_input_tokens: int | UnsetType = UNSET
    cache_read_input_tokens: int | UnsetType = UNSET


class AssistantOutput(Struct):
    role: str
    content: str | None
    refusal: str | None = None
    tool_calls: list[AnyToolCall] | UnsetType = UNSET
    # The deprecated form of one tool call, for a request that used `functions`.
    function_call: FunctionCall | UnsetType = UNSET


@dataclass(frozen=True, slots=True)
class Completion:
    """A whole answer, not streamed."""

    message: AssistantOutput
    finish_reason: str | None
    usage: Usage | None


@dataclass(frozen=True, slots=True)
class DeltaAnswer:
    """A whole answer as the deltas a stream of it carries, and its end: what a surface whose
    whole answers are built like its streams (Anthropic's content blocks, a Responses API
    passed through natively) gets back."""

    deltas: list[Delta]
    finish_reason: str
    usage: Usage | None


@dataclass(frozen=True, slots=True)
class Embeddings:
    vectors: Sequence[Sequence[float]]
    prompt_tokens: int | None


_CONTENT = attrgetter("content")
_REFUSAL = attrgetter("refusal")
_TOOL_CALLS = attrgetter("tool_calls")


class StreamOutput:
    """What a stream actually carried: text, refusal, tool calls by index, delta count."""

    __slots__ = ("_content", "_refusal", "_tools", "deltas")

    def __init__(self) -> None:
        self._content: list[str] = []
        self._refusal: list[str] = []
        self._tools: dict[int, dict[str, Any]] = {}
        self.deltas = 0

    def add(self, delta: Delta) -> None:
        self.deltas += 1
        if delta.content:
            self._content.append(delta.content)
        if delta.refusal:
            self._refusal.append(delta.refusal)
        if delta.tool_calls:
            for call in delta.tool_calls:
                self._tool_call(call)

    def add_all(self, deltas: Sequence[Delta]) -> None:
        """`add` of each of `deltas`, in order: a whole answer replayed at once (the answer
        cache), its text gathered without a call a delta."""
        self.deltas += len(deltas)
        self._content.extend(filter(None, map(_CONTENT, deltas)))
        self._refusal.extend(filter(None, map(_REFUSAL, deltas)))
        for delta in filter(_TOOL_CALLS, deltas):
            for call in delta.tool_calls or ():
                self._tool_call(call)

    def _tool_call(self, call: ToolCallDelta) -> None:
        slot = self._tools.setdefault(
            call.index, {"id": "", "type": "function", "name": "", "arguments": ""}
        )
        if isinstance(call.id, str):
            slot["id"] = call.id
        if isinstance(call.type, str):
            slot["type"] = call.type
        name: str | UnsetType = UNSET
        text: str | UnsetType = UNSET  # a custom call's input is kept as its `arguments`
        if isinstance(call.custom, ToolCallCustomDelta):
            name, text = call.custom.name, call.custom.input
        elif isinstance(call.function, ToolCallFunctionDelta):
            name, text = call.function.name, call.function.arguments
        if isinstance(name, str):
            slot["name"] += name
        if isinstance(text, str):
            slot["arguments"] += text

    @property
    def content(self) -> str:
        return "".join(self._content)

    @property
    def refusal(self) -> str | None:
        return "".join(self._refusal) or None

    def tool_calls(self) -> list[AnyToolCall]:
        """The calls made, a custom tool's with its input as `arguments`."""
        return [
            CustomToolCall(slot["id"], CustomCall(slot["name"], slot["arguments"]))
            if slot["type"] == "custom"
            else ToolCall(slot["id"], FunctionCall(slot["name"], slot["arguments"]))
            for _, slot in sorted(self._tools.items())
        ]

    def characters(self) -> int:
        tools = sum(len(s["name"]) + len(s["arguments"]) for s in self._tools.values())
        return len(self.content) + len(self.refusal or "") + tools

    def estimated_tokens(self) -> int:
        """What the stream produced so far, in tokens, as the gateway estimates an output
        nobody counted: the larger of the delta count and ~4 characters a token."""
        return max(self.deltas, math.ceil(self.characters() / 4))

    def stored(self) -> str:
        """The output as the trace keeps it (when the policy stores content)."""
        if not self._tools and not self._refusal:
            return self.content
        return json.dumps(
            {
                "content": self.content,
                "refusal": self.refusal,
                "tool_calls": [dict(slot, index=i) for i, slot in sorted(self._tools.items())],
            }
        )

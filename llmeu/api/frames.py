"""The frames of one chat stream (DESIGN §2), and what the stream carried.

Delta frames are built from a per-call prefix and suffix around the encoded
delta, so the hot loop encodes only the delta itself; the role, finish and
usage frames are encoded once per call.
"""

from __future__ import annotations

import json
from typing import Any

from llmeu.protocol.sse import encode_frame
from llmeu.protocol.wire import (
    ChatCompletionChunk,
    ChunkChoice,
    Delta,
    FunctionCall,
    RoutingBlock,
    ToolCall,
    ToolCallFunctionDelta,
    Usage,
    encoder,
)


class FrameEncoder:
    __slots__ = ("_prefix", "_suffix", "completion_id", "created", "model")

    def __init__(self, completion_id: str, created: int, model: str):
        self.completion_id = completion_id
        self.created = created
        self.model = model
        self._prefix = (
            b'data: {"id":' + encoder.encode(completion_id)
            + b',"object":"chat.completion.chunk","created":' + str(created).encode()
            + b',"model":' + encoder.encode(model) + b',"choices":[{"index":0,"delta":'
        )  # fmt: skip
        self._suffix = b',"finish_reason":null,"logprobs":null}]}\n\n'

    def role(self) -> bytes:
        return self._prefix + b'{"role":"assistant"}' + self._suffix

    def delta(self, delta: Delta) -> bytes:
        return self._prefix + encoder.encode(delta) + self._suffix

    def finish(self, finish_reason: str, routing: RoutingBlock) -> bytes:
        return self._chunk([ChunkChoice(0, Delta(), finish_reason)], llmeu=routing)

    def usage(self, usage: Usage) -> bytes:
        return self._chunk([], usage=usage)

    def _chunk(self, choices: list[ChunkChoice], **extra: Any) -> bytes:
        chunk = ChatCompletionChunk(
            id=self.completion_id, created=self.created, model=self.model, choices=choices, **extra
        )
        return encode_frame(encoder.encode(chunk))


def error_frame(error_body: bytes) -> bytes:
    """The frame that ends a broken stream (no `[DONE]` follows it)."""
    return encode_frame(error_body)


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
                slot = self._tools.setdefault(
                    call.index, {"id": "", "type": "function", "name": "", "arguments": ""}
                )
                if isinstance(call.id, str):
                    slot["id"] = call.id
                if isinstance(call.type, str):
                    slot["type"] = call.type
                function = call.function
                if isinstance(function, ToolCallFunctionDelta):
                    if isinstance(function.name, str):
                        slot["name"] += function.name
                    if isinstance(function.arguments, str):
                        slot["arguments"] += function.arguments

    @property
    def content(self) -> str:
        return "".join(self._content)

    @property
    def refusal(self) -> str | None:
        return "".join(self._refusal) or None

    def tool_calls(self) -> list[ToolCall]:
        return [
            ToolCall(
                type="function",
                id=slot["id"],
                function=FunctionCall(name=slot["name"], arguments=slot["arguments"]),
            )
            for _, slot in sorted(self._tools.items())
        ]

    def characters(self) -> int:
        tools = sum(len(s["name"]) + len(s["arguments"]) for s in self._tools.values())
        return len(self.content) + len(self.refusal or "") + tools

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

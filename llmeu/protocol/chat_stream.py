"""The frames of one chat-completions stream (docs/design.md §2), encoded from the call's deltas.

Delta frames are built from a per-call prefix and suffix around the encoded
delta, so the hot loop encodes only the delta itself; the role, finish and
usage frames are encoded once per call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
from msgspec import UNSET

from llmeu.calls.output import Delta, Usage
from llmeu.errors import ApiError
from llmeu.protocol.chat_wire import ChatCompletionChunk, ChunkChoice, legacy_delta
from llmeu.protocol.error_shape import error_body
from llmeu.protocol.json_codec import encoder
from llmeu.protocol.routing_block import RoutingBlock
from llmeu.protocol.sse import DONE_FRAME, encode_frame


def _signed(delta: Delta) -> bool:
    return delta.reasoning_signature is not UNSET


class ChatFrames:
    """The stream encoder of the chat surface: role frame, one frame per delta, then the end.

    With `legacy_functions` (a request with the deprecated `functions`), a tool call streams
    as `function_call` and finishes as `function_call`, as OpenAI answers such a request."""

    __slots__ = ("_prefix", "_suffix", "completion_id", "created", "include_usage", "legacy",
                 "model")  # fmt: skip

    def __init__(
        self,
        completion_id: str,
        created: int,
        model: str,
        *,
        include_usage: bool,
        legacy_functions: bool = False,
    ):
        self.completion_id = completion_id
        self.created = created
        self.model = model
        self.include_usage = include_usage
        self.legacy = legacy_functions
        self._prefix = (
            b'data: {"id":' + encoder.encode(completion_id)
            + b',"object":"chat.completion.chunk","created":' + str(created).encode()
            + b',"model":' + encoder.encode(model) + b',"choices":[{"index":0,"delta":'
        )  # fmt: skip
        self._suffix = b',"finish_reason":null,"logprobs":null}]}\n\n'

    def start(self) -> bytes:
        return self._prefix + b'{"role":"assistant"}' + self._suffix

    def delta(self, delta: Delta) -> bytes:
        if delta.reasoning_signature is not UNSET:  # no such field on this wire
            delta = msgspec.structs.replace(delta, reasoning_signature=UNSET)
            if not delta.carries_output():
                return b""
        if self.legacy:
            return self._prefix + encoder.encode(legacy_delta(delta)) + self._suffix
        return self._prefix + encoder.encode(delta) + self._suffix

    def deltas(self, deltas: Sequence[Delta]) -> bytes:
        """The frames of `deltas`, byte for byte those of `delta` one by one: each frame the
        prefix, the encoded delta and the suffix, encoded and joined in C where no delta
        needs more (a reasoning signature, the legacy form)."""
        if self.legacy or any(map(_signed, deltas)):
            return b"".join(map(self.delta, deltas))
        if not deltas:
            return b""
        between = self._suffix + self._prefix
        return self._prefix + between.join(map(encoder.encode, deltas)) + self._suffix

    def finish(self, finish_reason: str, usage: Usage, routing: RoutingBlock) -> bytes:
        """The finish frame with the routing block, the usage frame when asked, `[DONE]`."""
        if self.legacy and finish_reason == "tool_calls":
            finish_reason = "function_call"
        tail = self._chunk([ChunkChoice(0, Delta(), finish_reason)], llmeu=routing)
        if self.include_usage:
            tail += self._chunk([], usage=usage)
        return tail + DONE_FRAME

    def error(self, error: ApiError, routing: RoutingBlock) -> bytes:
        """The frame that ends a broken stream; no `[DONE]` follows it."""
        return encode_frame(error_body(error, routing))

    def _chunk(self, choices: list[ChunkChoice], **extra: Any) -> bytes:
        chunk = ChatCompletionChunk(
            id=self.completion_id, created=self.created, model=self.model, choices=choices, **extra
        )
        return encode_frame(encoder.encode(chunk))

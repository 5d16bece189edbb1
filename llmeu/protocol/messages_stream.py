"""Anthropic's streamed Messages events, both ways: written from deltas, read into deltas.

`MessagesFrames` is the stream encoder of the `/v1/messages` surface:

    event: message_start        the message, empty `content`, input usage
    event: content_block_start  per block: text, thinking or tool_use
    event: content_block_delta  one per upstream delta: text_delta, thinking_delta,
                                signature_delta, input_json_delta
    event: content_block_stop
    event: message_delta        stop_reason, usage (input, cache, output) and `llmeu`
    event: message_stop

A stream that breaks after `message_start` ends with `event: error` (its
`llmeu` block too) and nothing after it. `MessagesEventDecoder` reads
Anthropic's own events (from the `anthropic` provider kind, and from any
upstream speaking this wire) into canonical `Delta`s, usage with the cache's
share, and the finish reason. Both are pure: bytes and events, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
from msgspec import UNSET, Struct, UnsetType

from llmeu.calls.output import Delta, ToolCallDelta, ToolCallFunctionDelta, Usage
from llmeu.errors import ApiError, UpstreamError, UpstreamUnavailable
from llmeu.protocol.json_codec import encoder
from llmeu.protocol.messages_codec import FINISH_REASONS
from llmeu.protocol.messages_reply import error_object, stop_reason, tool_use_id, usage_object
from llmeu.protocol.routing_block import RoutingBlock

_TEXT_DELTA = b'event: content_block_delta\ndata: {"type":"content_block_delta","index":'


_TEXT_HEAD = b'{"type":"text_delta","text":'


def event(name: str, payload: bytes) -> bytes:
    """One event: its name and its already-encoded JSON data."""
    return b"event: " + name.encode() + b"\ndata: " + payload + b"\n\n"


class MessagesFrames:
    """The events of one streamed message, one content-block delta per upstream delta."""

    __slots__ = ("_block", "_index", "_input_tokens", "_message_id", "_model", "_prefix", "_tool")

    def __init__(self, message_id: str, model: str, input_tokens: int):
        self._message_id = message_id
        self._model = model
        self._input_tokens = input_tokens
        self._index = -1  # the open block's index; -1 before the first
        self._block = ""  # its type, "" when none is open
        self._tool = -1  # the upstream's index of the tool call in the open tool_use block
        self._prefix = b""  # a content_block_delta event of the open block, up to its delta

    def start(self) -> bytes:
        message: dict[str, Any] = {
            "id": self._message_id, "type": "message", "role": "assistant",
            "model": self._model, "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": self._input_tokens, "output_tokens": 0},
        }  # fmt: skip
        return event("message_start", encoder.encode({"type": "message_start", "message": message}))

    def delta(self, delta: Delta) -> bytes:
        text = delta.content
        if (
            text
            and self._block == "text"
            and not (delta.reasoning_content or delta.refusal or delta.tool_calls)
            and delta.reasoning_signature is UNSET
        ):  # the common case, a text delta in the open text block: one event, nothing else
            return self._prefix + _TEXT_HEAD + encoder.encode(text) + b"}}\n\n"
        out = b""
        if delta.reasoning_content:
            out += self._ensure("thinking", {"type": "thinking", "thinking": "", "signature": ""})
            out += self._delta(b'{"type":"thinking_delta","thinking":', delta.reasoning_content)
        if isinstance(delta.reasoning_signature, str) and delta.reasoning_signature:
            out += self._ensure("thinking", {"type": "thinking", "thinking": "", "signature": ""})
            out += self._delta(b'{"type":"signature_delta","signature":', delta.reasoning_signature)
        text = (delta.content or "") + (delta.refusal or "")
        if text:
            out += self._ensure("text", {"type": "text", "text": ""})
            out += self._delta(_TEXT_HEAD, text)
        for call in delta.tool_calls or ():
            out += self._tool_delta(call)
        return out

    def deltas(self, deltas: Sequence[Delta]) -> bytes:
        """The events of `deltas`, in order, as `delta` writes each."""
        return b"".join(map(self.delta, deltas))

    def finish(self, finish_reason: str, usage: Usage, routing: RoutingBlock) -> bytes:
        body = {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason(finish_reason), "stop_sequence": None},
            "usage": usage_object(usage),
            "llmeu": routing,
        }
        return (
            self._close()
            + event("message_delta", encoder.encode(body))
            + event("message_stop", b'{"type":"message_stop"}')
        )

    def error(self, error: ApiError, routing: RoutingBlock) -> bytes:
        status = 529 if getattr(error, "upstream_status", None) == 529 else error.status
        body = {"type": "error", "error": error_object(error, status), "llmeu": routing}
        return event("error", encoder.encode(body))

    def _tool_delta(self, call: ToolCallDelta) -> bytes:
        function = call.function
        out = b""
        if self._block != "tool_use" or self._tool != call.index:
            name = function.name if isinstance(function, ToolCallFunctionDelta) else UNSET
            block = {
                "type": "tool_use",
                "id": call.id if isinstance(call.id, str) else tool_use_id(call.index),
                "name": name if isinstance(name, str) else "",
                "input": {},
            }
            out += self._open("tool_use", block)
            self._tool = call.index
        if isinstance(function, ToolCallFunctionDelta) and function.arguments:
            out += self._delta(b'{"type":"input_json_delta","partial_json":', function.arguments)
        return out

    def _ensure(self, kind: str, block: dict[str, Any]) -> bytes:
        return b"" if self._block == kind else self._open(kind, block)

    def _open(self, kind: str, block: dict[str, Any]) -> bytes:
        out = self._close()
        self._index += 1
        self._block = kind
        self._prefix = _TEXT_DELTA + str(self._index).encode() + b',"delta":'
        start = {"type": "content_block_start", "index": self._index, "content_block": block}
        return out + event("content_block_start", encoder.encode(start))

    def _close(self) -> bytes:
        if not self._block:
            return b""
        self._block = ""
        stop = b'{"type":"content_block_stop","index":' + str(self._index).encode() + b"}"
        return event("content_block_stop", stop)

    def _delta(self, head: bytes, value: str) -> bytes:
        return self._prefix + head + encoder.encode(value) + b"}}\n\n"


class _Block(Struct, omit_defaults=True):
    type: str
    id: str | UnsetType = UNSET
    name: str | UnsetType = UNSET
    text: str | UnsetType = UNSET
    thinking: str | UnsetType = UNSET
    signature: str | UnsetType = UNSET


class _Usage(Struct, omit_defaults=True):
    input_tokens: int | UnsetType | None = UNSET
    output_tokens: int | UnsetType | None = UNSET
    cache_creation_input_tokens: int | UnsetType | None = UNSET
    cache_read_input_tokens: int | UnsetType | None = UNSET


class _MessageHead(Struct):
    usage: _Usage = msgspec.field(default_factory=_Usage)


class _ErrorDetail(Struct):
    type: str = "api_error"
    message: str = "upstream error"


class _Event(Struct, omit_defaults=True):
    type: str
    index: int = 0
    message: _MessageHead | UnsetType = UNSET
    content_block: _Block | UnsetType = UNSET
    delta: dict[str, Any] | UnsetType = UNSET
    usage: _Usage | UnsetType = UNSET
    error: _ErrorDetail | UnsetType = UNSET


_event_decoder = msgspec.json.Decoder(_Event)


_CARRIED = frozenset({"text", "thinking", "redacted_thinking", "tool_use"})
"""The blocks read into deltas; any other (a server tool's) is read past."""

_DELTA_FIELDS = {
    "text_delta": "text",
    "thinking_delta": "thinking",
    "signature_delta": "signature",
    "input_json_delta": "partial_json",
}


class MessagesEventDecoder:
    """Anthropic's events → canonical deltas; `usage`, `finish_reason` and `done` as they come.

    Tool calls are numbered in the order their blocks start (the canonical index), whatever
    their content-block index is. The blocks of a server tool (its `server_tool_use`, its
    result) are the record of what the provider ran: what it found comes back in the text
    the model writes with it, so they are read past, not carried. An `error` event, invalid
    JSON or an event out of place is an `UpstreamError`; `overloaded_error` keeps
    Anthropic's 529.
    """

    __slots__ = ("_server", "_tools", "_usage", "done", "finish_reason")

    def __init__(self) -> None:
        self._tools: dict[int, int] = {}  # content-block index → tool-call index
        self._server: set[int] = set()  # content-block indexes of server tools' blocks
        self._usage = _Usage()
        self.done = False
        self.finish_reason: str | None = None

    @property
    def usage(self) -> Usage | None:
        return usage_of(self._usage)

    @property
    def input_tokens(self) -> int | None:
        """The uncached input tokens, once `message_start` reported them."""
        value = self._usage.input_tokens
        return value if isinstance(value, int) else None

    def decode(self, data: str | bytes) -> Delta | None:
        """The delta one event carries, or None (a start without content, a stop, a ping)."""
        try:
            item = _event_decoder.decode(data)
        except (msgspec.DecodeError, RecursionError) as error:
            raise UpstreamError(f"upstream sent an invalid event: {error}") from None
        kind = item.type
        if kind == "content_block_delta":
            return self._block_delta(item)
        if kind == "content_block_start" and isinstance(item.content_block, _Block):
            return self._block_start(item.index, item.content_block)
        if kind == "message_start" and isinstance(item.message, _MessageHead):
            _merge(self._usage, item.message.usage)
        elif kind == "message_delta":
            if isinstance(item.usage, _Usage):
                _merge(self._usage, item.usage)
            if isinstance(item.delta, dict) and item.delta.get("stop_reason"):
                reason = str(item.delta["stop_reason"])
                self.finish_reason = FINISH_REASONS.get(reason, "stop")
        elif kind == "message_stop":
            self.done = True
        elif kind == "error":
            raise _event_error(item.error if isinstance(item.error, _ErrorDetail) else None)
        return None

    def _block_start(self, index: int, block: _Block) -> Delta | None:
        if block.type not in _CARRIED:
            self._server.add(index)
            return None
        if block.type == "tool_use":
            tool = self._tools[index] = len(self._tools)
            function = ToolCallFunctionDelta(name=block.name or "", arguments="")
            call = ToolCallDelta(tool, id=block.id, type="function", function=function)
            return Delta(tool_calls=[call])
        if block.type == "text" and block.text:
            return Delta(content=block.text)
        if block.type == "thinking" and block.thinking:
            return Delta(reasoning_content=block.thinking)
        return None

    def _block_delta(self, item: _Event) -> Delta | None:
        delta = item.delta if isinstance(item.delta, dict) else {}
        kind = delta.get("type")
        value = delta.get(_DELTA_FIELDS.get(str(kind), ""))
        if not isinstance(value, str) or not value:
            return None
        if kind == "text_delta":
            return Delta(content=value)
        if kind == "thinking_delta":
            return Delta(reasoning_content=value)
        if kind == "signature_delta":
            return Delta(reasoning_signature=value)
        tool = self._tools.get(item.index)
        if tool is None:
            if item.index in self._server:
                return None
            raise UpstreamError("upstream sent tool input outside a tool_use block")
        function = ToolCallFunctionDelta(arguments=value)
        return Delta(tool_calls=[ToolCallDelta(tool, function=function)])


def _merge(into: _Usage, update: _Usage) -> None:
    for name in into.__struct_fields__:
        value = getattr(update, name)
        if isinstance(value, int):
            setattr(into, name, value)


def usage_of(usage: _Usage | Any) -> Usage | None:
    """Anthropic's usage as canonical counts (the prompt counts cached tokens too); None until
    both input and output were reported."""
    inputs, outputs = usage.input_tokens, usage.output_tokens
    if not isinstance(inputs, int) or not isinstance(outputs, int):
        return None
    created, read = usage.cache_creation_input_tokens, usage.cache_read_input_tokens
    prompt = inputs + (created if isinstance(created, int) else 0)
    prompt += read if isinstance(read, int) else 0
    return Usage(
        prompt, outputs, prompt + outputs,
        cache_creation_input_tokens=created if isinstance(created, int) else UNSET,
        cache_read_input_tokens=read if isinstance(read, int) else UNSET,
    )  # fmt: skip


def _event_error(detail: _ErrorDetail | None) -> UpstreamError:
    detail = detail or _ErrorDetail()
    message = f"upstream sent an error event ({detail.type}): {detail.message[:300]}"
    if detail.type == "overloaded_error":
        return UpstreamUnavailable(message, upstream_status=529)
    if detail.type in ("api_error", "rate_limit_error"):
        return UpstreamUnavailable(message)
    return UpstreamError(message)

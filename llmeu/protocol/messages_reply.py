"""What a Messages call answers: the whole `message`, its usage, and Anthropic's errors.

The `message` of a non-streamed call is assembled from the deltas of the
upstream's stream (`MessageAssembler`), so thinking with its signature and tool
use come back as the same blocks whether the call streamed or not; the stream
encoder (`llmeu.protocol.messages_stream`) shares the usage and stop reason.
"""

from __future__ import annotations

import json
from typing import Any

from msgspec import UNSET

from llmeu.calls.output import Delta, ToolCallDelta, ToolCallFunctionDelta, Usage
from llmeu.errors import ApiError
from llmeu.protocol.json_codec import encoder
from llmeu.protocol.routing_block import RoutingBlock

STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
    "stop_sequence": "stop_sequence",
}
"""The canonical (OpenAI) finish reason → Anthropic's `stop_reason`."""


def message_id(trace_id: str) -> str:
    """`msg_` and the trace id's own digits: one id links the message and its trace."""
    return "msg_" + trace_id[4:]


def stop_reason(finish_reason: str | None) -> str:
    return STOP_REASONS.get(finish_reason or "stop", "end_turn")


def usage_object(usage: Usage) -> dict[str, int]:
    """Anthropic's usage: `input_tokens` are the uncached ones, cache reads and writes apart
    (the canonical `prompt_tokens` count all of them, as OpenAI's do)."""
    created = usage.cache_creation_input_tokens
    read = usage.cache_read_input_tokens
    cached = (created if isinstance(created, int) else 0) + (read if isinstance(read, int) else 0)
    body = {"input_tokens": max(0, usage.prompt_tokens - cached)}
    if isinstance(created, int):
        body["cache_creation_input_tokens"] = created
    if isinstance(read, int):
        body["cache_read_input_tokens"] = read
    body["output_tokens"] = usage.completion_tokens
    return body


class MessageAssembler:
    """The content blocks of a whole message, built from the deltas of a stream (the same
    blocks a streamed call's events carry: thinking, text, tool use, in upstream order)."""

    __slots__ = ("_arguments", "blocks")

    def __init__(self) -> None:
        self.blocks: list[dict[str, Any]] = []
        self._arguments: dict[int, str] = {}

    def add(self, delta: Delta) -> None:
        if delta.reasoning_content:
            self._open("thinking", thinking="", signature="")["thinking"] += delta.reasoning_content
        if isinstance(delta.reasoning_signature, str):
            self._open("thinking", thinking="", signature="")["signature"] += (
                delta.reasoning_signature
            )
        text = (delta.content or "") + (delta.refusal or "")
        if text:
            self._open("text", text="")["text"] += text
        for call in delta.tool_calls or ():
            self._tool(call)

    def message(
        self,
        trace_id: str,
        model: str,
        finish_reason: str | None,
        usage: Usage,
        routing: RoutingBlock,
    ) -> dict[str, Any]:
        content = []
        for position, block in enumerate(self.blocks):
            if block["type"] == "tool_use":
                arguments = self._arguments.get(position, "")
                block = {k: v for k, v in block.items() if k != "_index"}
                block["input"] = _tool_input(arguments)
            content.append(block)
        return {
            "id": message_id(trace_id),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": stop_reason(finish_reason),
            "stop_sequence": None,
            "usage": usage_object(usage),
            "llmeu": routing,
        }

    def _open(self, kind: str, **fields: str) -> dict[str, Any]:
        if self.blocks and self.blocks[-1]["type"] == kind:
            return self.blocks[-1]
        block: dict[str, Any] = {"type": kind, **fields}
        self.blocks.append(block)
        return block

    def _tool(self, call: ToolCallDelta) -> None:
        function = call.function
        name = function.name if isinstance(function, ToolCallFunctionDelta) else UNSET
        last = self.blocks[-1] if self.blocks else None
        if last is None or last["type"] != "tool_use" or last["_index"] != call.index:
            last = {"type": "tool_use", "id": call.id or tool_use_id(call.index), "name": "",
                    "input": {}, "_index": call.index}  # fmt: skip
            self.blocks.append(last)
        if isinstance(name, str):
            last["name"] += name
        if isinstance(function, ToolCallFunctionDelta) and isinstance(function.arguments, str):
            position = len(self.blocks) - 1
            self._arguments[position] = self._arguments.get(position, "") + function.arguments


def tool_use_id(index: int) -> str:
    """An id for a tool call whose upstream gave none (Anthropic's clients need one)."""
    return f"toolu_llmeu_{index}"


def _tool_input(arguments: str) -> Any:
    if not arguments:
        return {}
    try:
        value = json.loads(arguments)
    except ValueError:
        return {"_raw_arguments": arguments}  # the upstream produced no JSON: kept, not lost
    return value if isinstance(value, dict) else {"value": value}


ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "request_too_large",
    429: "rate_limit_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def error_type(status: int) -> str:
    return ERROR_TYPES.get(status, "api_error")


def error_object(error: ApiError, status: int) -> dict[str, Any]:
    """Anthropic's `error` object; llmeu's `code` and per-endpoint reasons ride along."""
    detail: dict[str, Any] = {"type": error_type(status), "message": error.message}
    if error.code:
        detail["code"] = error.code
    if error.param:
        detail["param"] = error.param
    if error.details is not None:
        detail["details"] = [dict(d) for d in error.details]
    return detail


def error_body(error: ApiError, status: int, routing: object | None) -> bytes:
    body: dict[str, Any] = {"type": "error", "error": error_object(error, status)}
    if routing is not None:
        body["llmeu"] = routing
    return encoder.encode(body)

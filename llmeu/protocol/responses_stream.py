"""The events of one Responses stream, encoded from the call's deltas, in OpenAI's order.

    response.created, response.in_progress,
    per output item: response.output_item.added,
        message:   (response.content_part.added, response.output_text.delta…,
                    response.output_text.done, response.content_part.done) per part
                   (a refusal part with response.refusal.delta… / .done),
        reasoning: the same with a reasoning_text part and response.reasoning_text.*, or,
                   when the request asked for a summary (`reasoning.summary`), a
                   summary_text part: response.reasoning_summary_part.added,
                   response.reasoning_summary_text.delta… / .done,
                   response.reasoning_summary_part.done,
        function_call: response.function_call_arguments.delta… / .done,
        custom_tool_call: response.custom_tool_call_input.delta… / .done,
      response.output_item.done,
    response.completed | response.incomplete (max_output_tokens) | response.failed.

Every event is `event: <type>` and `data: <json>` with a `sequence_number`
from 0, one more each event; one delta event per part of an upstream delta,
written when it arrives; nothing follows the terminal event (no `[DONE]` on
this API). An upstream delta opens a new output item when its kind differs
from the item being streamed (text after reasoning, a tool call of a new
index), closing the one before. Delta events are built from a per-item
prefix around the encoded text, so the hot loop encodes only that text.

Reasoning: llmeu writes no summaries itself. The upstream's reasoning text
(a chat upstream's `reasoning_content`, a Responses upstream's summary) is
the item's `summary` when one was asked for, its `content` otherwise. The
opaque token that closes a reasoning step (a Responses upstream's
`encrypted_content`, an Anthropic signature: `Delta.reasoning_signature`)
becomes the item's `encrypted_content` and seals it: reasoning after it is a
new item, as the upstream made it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
from msgspec import UNSET

from llmeu.calls.output import (
    Delta,
    ToolCallCustomDelta,
    ToolCallDelta,
    ToolCallFunctionDelta,
    Usage,
)
from llmeu.errors import ApiError
from llmeu.protocol.json_codec import encoder
from llmeu.protocol.responses_object import (
    Namespaced,
    ResponseObject,
    custom_call_item,
    final_status,
    function_call_item,
    item_id,
    message_item,
    reasoning_item,
    refusal_part,
    response_error,
    response_usage,
    text_part,
)
from llmeu.protocol.routing_block import RoutingBlock


@dataclass(frozen=True, slots=True)
class _PartKind:
    """A kind of part: its type, its delta/done event stem, the done event's text field, the
    events that open and close it, and the name of its index."""

    type: str
    stem: str
    field: str
    opened: str = "response.content_part.added"
    closed: str = "response.content_part.done"
    index: str = "content_index"


_TEXT = _PartKind("output_text", "response.output_text", "text")
_REFUSAL = _PartKind("refusal", "response.refusal", "refusal")
_REASONING = _PartKind("reasoning_text", "response.reasoning_text", "text")
_SUMMARY = _PartKind(
    "summary_text", "response.reasoning_summary_text", "text",
    "response.reasoning_summary_part.added", "response.reasoning_summary_part.done",
    "summary_index",
)  # fmt: skip
SUMMARIES = frozenset({"auto", "concise", "detailed"})
"""The `reasoning.summary` values that ask for one."""
_TEXT_SUFFIX = b',"logprobs":[]}\n\n'
_CALLS = {
    "function_call": ("fc", "response.function_call_arguments"),
    "custom_tool_call": ("ctc", "response.custom_tool_call_input"),
}
"""The items of tool calls: their id prefix and the stem of their input's events."""


class _Item:
    """The output item being streamed: its kind, id, index, and what it carried so far."""

    __slots__ = ("arguments", "call_id", "chunks", "encrypted", "id", "index", "kind", "name",
                 "parts", "tool_index")  # fmt: skip

    def __init__(self, kind: str, item_id: str, index: int) -> None:
        self.kind = kind
        self.id = item_id
        self.index = index
        self.parts: list[tuple[_PartKind, str]] = []  # closed parts
        self.chunks: list[str] = []  # the open part's (or the arguments') pieces
        self.tool_index = -1
        self.call_id = ""
        self.name = ""
        self.arguments = ""
        self.encrypted: str | None = None  # a reasoning item's opaque token; sealed once set


class ResponsesEvents:
    """The stream encoder of the Responses surface (`StreamEncoder` of `api/lifecycle.py`)."""

    def __init__(self, shell: ResponseObject, namespaced: Namespaced | None = None) -> None:
        self._shell = shell
        self._namespaced = namespaced or {}
        self._sequence = 0
        self._output: list[dict[str, Any]] = []
        self._item: _Item | None = None
        self._part: _PartKind | None = None
        summary = shell.reasoning.get("summary")
        self._reasoning = _SUMMARY if summary in SUMMARIES else _REASONING
        self._delta_head = (b"", b"")
        self._text_chunks: list[str] = []  # the open part's pieces (its item's `chunks`)

    def start(self) -> bytes:
        return self._event("response.created", response=self._shell) + self._event(
            "response.in_progress", response=self._shell
        )

    def delta(self, delta: Delta) -> bytes:
        content = delta.content
        if (
            content
            and self._part is _TEXT
            and not (
                delta.reasoning_content
                or delta.refusal
                or delta.tool_calls
                or delta.reasoning_signature
            )
        ):  # the common case, inlined: more text of the open text part
            self._text_chunks.append(content)
            sequence = self._sequence
            self._sequence = sequence + 1
            start, rest = self._delta_head
            return b"%s%d%s%s%s" % (start, sequence, rest, encoder.encode(content), _TEXT_SUFFIX)
        out = b""
        if delta.reasoning_content:
            out += self._piece("reasoning", self._reasoning, delta.reasoning_content)
        if delta.reasoning_signature:
            out += self._seal(delta.reasoning_signature)
        if delta.content:
            out += self._piece("message", _TEXT, delta.content)
        if delta.refusal:
            out += self._piece("message", _REFUSAL, delta.refusal)
        if delta.tool_calls:
            for call in delta.tool_calls:
                out += self._tool_piece(call)
        return out

    def _tool_piece(self, call: ToolCallDelta) -> bytes:
        """A piece of a tool call: a function's arguments or a custom tool's input, opening
        its item when the call is new."""
        out = b""
        piece: ToolCallFunctionDelta | ToolCallCustomDelta | None = None
        if isinstance(call.custom, ToolCallCustomDelta):
            kind, piece = "custom_tool_call", call.custom
        elif isinstance(call.function, ToolCallFunctionDelta):
            kind, piece = "function_call", call.function
        else:
            kind = "function_call"
        item = self._item
        if item is None or item.kind != kind or item.tool_index != call.index:
            out += self._close_item()
            item = self._open_call(kind, call.index, call.id, piece)
            out += self._added(item)
        elif piece is not None and piece.name:
            item.name += piece.name
        text = piece.input if isinstance(piece, ToolCallCustomDelta) else (
            piece.arguments if piece is not None else UNSET
        )  # fmt: skip
        if isinstance(text, str) and text:
            item.chunks.append(text)
            out += self._numbered() + encoder.encode(text) + b"}\n\n"
        return out

    def deltas(self, deltas: Sequence[Delta]) -> bytes:
        """The events of `deltas`, in order, as `delta` writes each."""
        return b"".join(map(self.delta, deltas))

    def finish(self, finish_reason: str, usage: Usage, routing: RoutingBlock) -> bytes:
        out = self._close_item("completed" if final_status(finish_reason)[1] is None else
                               "incomplete")  # fmt: skip
        response = self.response(finish_reason, usage, routing)
        return out + self._event(f"response.{response.status}", response=response)

    def response(self, finish_reason: str, usage: Usage, routing: RoutingBlock) -> ResponseObject:
        """The response the terminal event carries, once every item is closed."""
        status, details = final_status(finish_reason)
        output = list(self._output)
        if self._item is not None:
            output.append(self._item_object(self._item, "incomplete" if details else "completed"))
        return msgspec.structs.replace(
            self._shell,
            status=status,
            incomplete_details=details,
            output=output,
            usage=response_usage(usage.prompt_tokens, usage.completion_tokens),
            llmeu=routing,
        )

    def error(self, error: ApiError, routing: RoutingBlock) -> bytes:
        """`response.failed`: what was produced so far (its open item `incomplete`), the
        error, the routing block; nothing follows it."""
        output = list(self._output)
        if self._item is not None:
            output.append(self._item_object(self._item, "incomplete"))
        cost = routing.cost_estimate
        response = msgspec.structs.replace(
            self._shell,
            status="failed",
            error=response_error(error.status, error.message),
            output=output,
            usage=response_usage(cost.input_tokens, cost.output_tokens),
            llmeu=routing,
        )
        return self._event("response.failed", response=response)

    def _seal(self, token: str) -> bytes:
        """The opaque token that closes a reasoning step, on the reasoning item being streamed
        (one opened for it when there is none: reasoning with no text to show)."""
        out = b""
        item = self._item
        if item is None or item.kind != "reasoning" or item.encrypted is not None:
            out += self._close_item()
            item = self._open("reasoning", "rs")
            out += self._added(item)
        item.encrypted = token
        return out

    def _piece(self, kind: str, part: _PartKind, text: str) -> bytes:
        """A text piece of a message or reasoning item, opening the item and part it needs."""
        out = b""
        item = self._item
        if item is None or item.kind != kind or item.encrypted is not None:
            out += self._close_item()
            item = self._open(kind, "msg" if kind == "message" else "rs")
            out += self._added(item)
        if self._part is not part:
            out += self._close_part(item)
            out += self._open_part(item, part)
        item.chunks.append(text)
        self._text_chunks = item.chunks
        return out + self._numbered() + encoder.encode(text) + self._suffix

    @property
    def _suffix(self) -> bytes:
        return _TEXT_SUFFIX if self._part is _TEXT else b"}\n\n"

    def _open(self, kind: str, prefix: str) -> _Item:
        index = len(self._output)
        item = self._item = _Item(kind, item_id(prefix, self._shell.id, index), index)
        return item

    def _open_call(
        self,
        kind: str,
        tool_index: int,
        call_id: object,
        piece: ToolCallFunctionDelta | ToolCallCustomDelta | None,
    ) -> _Item:
        prefix, stem = _CALLS[kind]
        item = self._open(kind, prefix)
        item.tool_index = tool_index
        digits = item.id[len(prefix) + 1 :]
        item.call_id = call_id if isinstance(call_id, str) and call_id else "call_" + digits
        if piece is not None and isinstance(piece.name, str):
            item.name = piece.name
        self._delta_head = self._item_head(f"{stem}.delta", item)
        return item

    def _open_part(self, item: _Item, part: _PartKind) -> bytes:
        self._part = part
        index = len(item.parts)
        self._delta_head = self._item_head(f"{part.stem}.delta", item, (part.index, index))
        common = {"item_id": item.id, "output_index": item.index, part.index: index}
        return self._event(part.opened, **common, part=_part_object(part, ""))

    def _close_part(self, item: _Item) -> bytes:
        part = self._part
        if part is None:
            return b""
        self._part = None
        text = "".join(item.chunks)
        item.chunks = []
        index = len(item.parts)
        item.parts.append((part, text))
        extra: dict[str, Any] = {"logprobs": []} if part is _TEXT else {}
        common = {"item_id": item.id, "output_index": item.index, part.index: index}
        return self._event(f"{part.stem}.done", **common, **{part.field: text}, **extra) + (
            self._event(part.closed, **common, part=_part_object(part, text))
        )

    def _close_item(self, status: str = "completed") -> bytes:
        item = self._item
        if item is None:
            return b""
        out = self._close_part(item)
        if item.kind == "function_call":
            item.arguments = "".join(item.chunks)
            out += self._event(
                "response.function_call_arguments.done", item_id=item.id,
                output_index=item.index, name=self._item_object(item, status)["name"],
                arguments=item.arguments,
            )  # fmt: skip
        elif item.kind == "custom_tool_call":
            item.arguments = "".join(item.chunks)
            out += self._event(
                "response.custom_tool_call_input.done", item_id=item.id,
                output_index=item.index, input=item.arguments,
            )  # fmt: skip
        done = self._item_object(item, status)
        self._output.append(done)
        self._item = None
        return out + self._event("response.output_item.done", output_index=item.index, item=done)

    def _added(self, item: _Item) -> bytes:
        return self._event(
            "response.output_item.added",
            output_index=item.index,
            item=self._item_object(item, "in_progress"),
        )

    def _item_object(self, item: _Item, status: str) -> dict[str, Any]:
        if item.kind in _CALLS:
            arguments = item.arguments or "".join(item.chunks)
            if item.kind == "custom_tool_call":
                return custom_call_item(
                    item.id, item.call_id, item.name, arguments, self._namespaced
                )
            return function_call_item(
                item.id, item.call_id, item.name, arguments, status, self._namespaced
            )
        parts = list(item.parts)
        if self._part is not None and self._item is item and status != "in_progress":
            parts.append((self._part, "".join(item.chunks)))
        if item.kind == "reasoning":
            return reasoning_item(
                item.id, status,
                content=[t for p, t in parts if p is _REASONING],
                summary=[t for p, t in parts if p is _SUMMARY],
                encrypted=item.encrypted,
            )  # fmt: skip
        return message_item(item.id, [_part_object(p, text) for p, text in parts], status)

    def _item_head(
        self, event: str, item: _Item, part_index: tuple[str, int] | None = None
    ) -> tuple[bytes, bytes]:
        """A delta event of `item` up to its sequence number, and from there up to the delta."""
        head = f',"item_id":"{item.id}","output_index":{item.index}'
        if part_index is not None:
            head += f',"{part_index[0]}":{part_index[1]}'
        start = f'event: {event}\ndata: {{"type":"{event}","sequence_number":'
        return start.encode(), f'{head},"delta":'.encode()

    def _numbered(self) -> bytes:
        start, rest = self._delta_head
        sequence = self._sequence
        self._sequence = sequence + 1
        return start + str(sequence).encode() + rest

    def _event(self, kind: str, **fields: Any) -> bytes:
        sequence = self._sequence
        self._sequence = sequence + 1
        body = encoder.encode({"type": kind, "sequence_number": sequence, **fields})
        return b"event: " + kind.encode() + b"\ndata: " + body + b"\n\n"


def _part_object(part: _PartKind, text: str) -> dict[str, Any]:
    if part is _REFUSAL:
        return refusal_part(text)
    if part is _TEXT:
        return text_part(text)
    return {"type": part.type, "text": text}

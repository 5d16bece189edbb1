"""Folding a Responses-API event stream into one `ChatResult`, as strictly as a chat stream.

`ResponsesStreamAssembler` is pure: events in, deltas and a result out. The
rules, each of them tested:

- A stream is complete only with its terminal event: `response.completed`,
  or `response.incomplete` (the output was cut, e.g. by `max_output_tokens`:
  complete, with finish reason `length`). A stream that just stops is
  incomplete; `response.failed` or an `error` event is an error; whatever
  follows the terminal event is ignored.
- `sequence_number` starts at 0 and grows by one: a gap or a repeat means an
  event was lost or doubled, and the stream is malformed, never guessed at.
- A frame that is not a JSON object with a `type` is malformed.
- Text, reasoning (`reasoning_text` and `reasoning_summary_text`) and refusal
  deltas are joined in order; each `function_call` output item is one tool
  call, numbered in the order the items were added, its arguments joined.
- `usage` and `llmeu` come from the terminal event's `response`: `None` when
  absent, never zeros.
"""

from __future__ import annotations

from typing import Any

import msgspec

from llmeu.client._fold import FoldState, StreamFold
from llmeu.client._types import (
    ChatDelta,
    ChatResult,
    ContentDelta,
    ReasoningDelta,
    RefusalDelta,
    RoutingBlock,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from llmeu.protocol.sse import ServerSentEvent

_decoder = msgspec.json.Decoder()
_TERMINAL = {"response.completed", "response.incomplete", "response.failed"}
_REASONING = {"response.reasoning_text.delta", "response.reasoning_summary_text.delta"}


class ResponsesStreamAssembler(StreamFold):
    """Folds the events of one Responses stream; `finish()` gives the result."""

    incomplete = "the stream ended without response.completed or response.incomplete"

    def __init__(self) -> None:
        super().__init__()
        self._next_sequence = 0
        self._calls: list[dict[str, Any]] = []
        self._call_by_item: dict[str, int] = {}

    def fold(self, event: ServerSentEvent) -> list[ChatDelta]:
        """Fold one event in; returns the output deltas it carried, in order."""
        if self.ended or not event.data.strip():
            return []
        try:
            payload = _decoder.decode(event.data)
        except msgspec.DecodeError as exc:
            return self._reject(event.data, f"an event is not JSON ({exc})")
        if not isinstance(payload, dict) or not isinstance(payload.get("type"), str):
            return self._reject(event.data, "an event is not a JSON object with a type")
        kind = payload["type"]
        if kind == "error" or event.event == "error":
            self._fail(payload.get("error", payload))
            return []
        sequence = payload.get("sequence_number")
        if sequence != self._next_sequence:
            return self._reject(
                event.data, f"sequence_number {sequence!r} where {self._next_sequence} was due"
            )
        self._next_sequence += 1
        if kind in _TERMINAL or kind in ("response.created", "response.in_progress"):
            self._response(payload.get("response"), kind)
            return []
        return self._output(kind, payload)

    def _tool_calls(self) -> list[ToolCall]:
        return [
            ToolCall(i, c["id"], "function", "".join(c["name"]), "".join(c["arguments"]))
            for i, c in enumerate(self._calls)
        ]

    def _response(self, response: object, kind: str) -> None:
        if not isinstance(response, dict):
            self._reject("", f"{kind} carries no response object")
            return
        self._id = response.get("id") or self._id
        self._model = response.get("model") or self._model
        if kind not in _TERMINAL:
            return
        try:
            routing = response.get("llmeu")
            if routing is not None:
                self._llmeu = msgspec.convert(routing, RoutingBlock)
        except msgspec.ValidationError as exc:
            self._reject("", f"the routing block does not fit ({exc})")
            return
        self._usage = _usage(response.get("usage"))
        if kind == "response.failed":
            self._fail(response.get("error") or "the response failed")
            return
        if kind == "response.incomplete":
            details = response.get("incomplete_details") or {}
            reason = details.get("reason") if isinstance(details, dict) else None
            self._finish_reason = "length" if reason == "max_output_tokens" else str(reason)
        else:
            self._finish_reason = "tool_calls" if self._calls else "stop"
        self._state = FoldState.DONE

    def _output(self, kind: str, payload: dict[str, Any]) -> list[ChatDelta]:
        delta = payload.get("delta")
        if kind == "response.output_text.delta" and isinstance(delta, str):
            self._content.append(delta)
            return [ContentDelta(delta)]
        if kind in _REASONING and isinstance(delta, str):
            self._reasoning.append(delta)
            return [ReasoningDelta(delta)]
        if kind == "response.refusal.delta" and isinstance(delta, str):
            self._refusal.append(delta)
            return [RefusalDelta(delta)]
        item = payload.get("item")
        if kind == "response.output_item.added" and isinstance(item, dict):
            if item.get("type") != "function_call":
                return []
            index = len(self._calls)
            name = str(item.get("name") or "")
            call_id = item.get("call_id")
            self._calls.append({"id": call_id, "name": [name], "arguments": []})
            self._call_by_item[str(item.get("id"))] = index
            return [ToolCallDelta(index, call_id, name or None, None)]
        if kind == "response.function_call_arguments.delta" and isinstance(delta, str):
            index = self._call_by_item.get(str(payload.get("item_id")), -1)
            if index < 0:
                return self._reject(str(payload), "arguments for a function call never added")
            self._calls[index]["arguments"].append(delta)
            return [ToolCallDelta(index, None, None, delta)]
        return []

    def _read_output(self, items: list[Any]) -> None:
        """The `output` of a whole response, as its stream would have carried it."""
        for item in items:
            kind = item.get("type") if isinstance(item, dict) else None
            if kind == "message":
                for part in item.get("content") or ():
                    if part.get("type") == "output_text":
                        self._content.append(str(part.get("text", "")))
                    elif part.get("type") == "refusal":
                        self._refusal.append(str(part.get("refusal", "")))
            elif kind == "reasoning":
                for part in (item.get("content") or []) + (item.get("summary") or []):
                    self._reasoning.append(str(part.get("text", "")))
            elif kind == "function_call":
                self._calls.append({"id": item.get("call_id"), "name": [item.get("name", "")],
                                    "arguments": [item.get("arguments", "")]})  # fmt: skip


def _usage(raw: object) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    return Usage(
        prompt_tokens=raw.get("input_tokens"),
        completion_tokens=raw.get("output_tokens"),
        total_tokens=raw.get("total_tokens"),
    )


def parse_response(body: bytes) -> ChatResult:
    """A non-streamed `response` object as a `ChatResult` (complete unless it failed).

    Raises `msgspec.DecodeError` or `msgspec.ValidationError` when it is not one.
    """
    response = _decoder.decode(body)
    if not isinstance(response, dict) or response.get("object") != "response":
        raise msgspec.ValidationError("not a response object")
    assembler = ResponsesStreamAssembler()
    assembler._read_output(response.get("output") or [])
    status = response.get("status")
    kind = f"response.{status}" if status in ("completed", "incomplete", "failed") else ""
    assembler._response(response, kind or "response.completed")
    if assembler._state is FoldState.ERROR:
        raise msgspec.ValidationError(f"the response failed: {assembler._error}")
    return assembler.result()

"""Folding a chat-completion event stream into one `ChatResult`.

`ChatStreamAssembler` is pure: events in, deltas and a result out, no I/O and
no clock. The rules, each of them tested:

- Only `message` events carry chunks. `event: error` is an error; any other
  event type (a `ping` keep-alive, say) is ignored, and so is a frame whose
  data is empty or blank, which some servers send to keep a proxy awake.
- `[DONE]` is an exact match of the data, not a substring: a chunk whose text
  says "[DONE]" does not end anything. Whatever follows `[DONE]` is ignored.
- The first error ends the fold: a `{"error": ...}` payload (with its `llmeu`
  block, if any) or an `event: error`. A `[DONE]` after an error does not
  make the stream complete.
- A frame that is not a JSON object, or whose fields have the wrong types,
  ends the fold as malformed: guessing would risk showing a wrong answer.
- Content, reasoning and refusal text of choice 0 is joined in order; the
  other choices (`n > 1`) are not assembled.
- Tool calls are assembled by `index` (a fragment without one takes its
  position in the frame's list): the first non-empty `id` wins (some servers
  repeat it on every fragment), `name` and `arguments` fragments are joined.
- `finish_reason` is the last non-null one, `usage` the last non-null usage
  object and `llmeu` the last routing block: `None` when none arrived, never
  zeros.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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
from llmeu.protocol.sse import DONE_DATA, ServerSentEvent


class _FunctionDelta(msgspec.Struct):
    name: str | None = None
    arguments: str | None = None


class _ToolCallFragment(msgspec.Struct):
    index: int | None = None
    id: str | None = None
    type: str | None = None
    function: _FunctionDelta | None = None


class _Delta(msgspec.Struct):
    content: str | None = None
    reasoning_content: str | None = None
    refusal: str | None = None
    tool_calls: list[_ToolCallFragment] | None = None


class _ChunkChoice(msgspec.Struct):
    index: int = 0
    delta: _Delta | None = None
    finish_reason: str | None = None


class _Chunk(msgspec.Struct):
    id: str | None = None
    model: str | None = None
    choices: list[_ChunkChoice] | None = None
    usage: Usage | None = None
    llmeu: RoutingBlock | None = None
    error: Any = None


_chunk_decoder = msgspec.json.Decoder(_Chunk)
_any_decoder = msgspec.json.Decoder()


@dataclass(slots=True)
class _ToolCallBuilder:
    index: int
    id: str | None = None
    type: str = "function"
    name: list[str] = field(default_factory=list)
    arguments: list[str] = field(default_factory=list)

    def build(self) -> ToolCall:
        return ToolCall(
            index=self.index,
            id=self.id,
            type=self.type,
            name="".join(self.name),
            arguments="".join(self.arguments),
        )


class ChatStreamAssembler(StreamFold):
    """Folds the events of one chat-completion stream; `finish()` gives the result.

    `add()` is the plain interface; `fold()` does the same and also returns
    the output deltas the event carried, for callers that show them live.
    """

    incomplete = "the stream ended without [DONE]"

    def __init__(self) -> None:
        super().__init__()
        self._builders: dict[int, _ToolCallBuilder] = {}

    def fold(self, event: ServerSentEvent) -> list[ChatDelta]:
        """Fold one event in; returns the output deltas it carried, in order."""
        if self.ended:
            return []
        if event.event == "error":
            self._fail(_error_event_payload(event.data))
            return []
        if event.event != "message" or not event.data.strip():
            return []
        if event.data == DONE_DATA:
            self._state = FoldState.DONE
            return []
        try:
            chunk = _chunk_decoder.decode(event.data)
        except msgspec.MsgspecError as exc:
            self._reject_or_fail(event.data, exc)
            return []
        if chunk.llmeu is not None:
            self._llmeu = chunk.llmeu
        if chunk.error is not None:
            self._fail(chunk.error)
            return []
        return self._fold_chunk(chunk)

    def _tool_calls(self) -> list[ToolCall]:
        return [self._builders[i].build() for i in sorted(self._builders)]

    def _fold_chunk(self, chunk: _Chunk) -> list[ChatDelta]:
        if chunk.id is not None and self._id is None:
            self._id = chunk.id
        if chunk.model is not None:
            self._model = chunk.model
        if chunk.usage is not None:
            self._usage = chunk.usage
        deltas: list[ChatDelta] = []
        for choice in chunk.choices or ():
            if choice.index != 0:
                continue
            if choice.finish_reason is not None:
                self._finish_reason = choice.finish_reason
            if choice.delta is not None:
                self._fold_delta(choice.delta, deltas)
        return deltas

    def _fold_delta(self, delta: _Delta, deltas: list[ChatDelta]) -> None:
        if delta.reasoning_content:
            self._reasoning.append(delta.reasoning_content)
            deltas.append(ReasoningDelta(delta.reasoning_content))
        if delta.content:
            self._content.append(delta.content)
            deltas.append(ContentDelta(delta.content))
        if delta.refusal:
            self._refusal.append(delta.refusal)
            deltas.append(RefusalDelta(delta.refusal))
        for position, fragment in enumerate(delta.tool_calls or ()):
            index = position if fragment.index is None else fragment.index
            builder = self._builders.get(index)
            if builder is None:
                builder = self._builders[index] = _ToolCallBuilder(index)
            if fragment.id and builder.id is None:
                builder.id = fragment.id
            if fragment.type:
                builder.type = fragment.type
            function = fragment.function or _FunctionDelta()
            if function.name:
                builder.name.append(function.name)
            if function.arguments:
                builder.arguments.append(function.arguments)
            deltas.append(ToolCallDelta(index, fragment.id, function.name, function.arguments))

    def _reject_or_fail(self, data: str, exc: msgspec.MsgspecError) -> None:
        # An error payload whose other fields do not fit a chunk is still an error.
        try:
            payload = _any_decoder.decode(data)
        except msgspec.DecodeError:
            self._reject(data, f"a frame is not JSON ({exc})")
            return
        if isinstance(payload, dict) and payload.get("error") is not None:
            self._fail(payload["error"])
            return
        self._reject(data, f"a frame is not a chat-completion chunk ({exc})")


def _error_event_payload(data: str) -> object:
    """The error of an `event: error`: its JSON `error` member, its JSON, or its text."""
    try:
        payload = _any_decoder.decode(data)
    except msgspec.DecodeError:
        return data or "the server sent an error event"
    if isinstance(payload, dict) and payload.get("error") is not None:
        return payload["error"]
    return payload


class _Message(msgspec.Struct):
    content: str | None = None
    reasoning_content: str | None = None
    refusal: str | None = None
    tool_calls: list[_ToolCallFragment] | None = None


class _CompletionChoice(msgspec.Struct):
    index: int = 0
    message: _Message | None = None
    finish_reason: str | None = None


class _Completion(msgspec.Struct):
    id: str | None = None
    model: str | None = None
    choices: list[_CompletionChoice] | None = None
    usage: Usage | None = None
    llmeu: RoutingBlock | None = None


_completion_decoder = msgspec.json.Decoder(_Completion)


def parse_completion(body: bytes) -> ChatResult:
    """A non-streaming `chat.completion` body as a complete `ChatResult`.

    Raises `msgspec.DecodeError` or `msgspec.ValidationError` when it is not one.
    """
    completion = _completion_decoder.decode(body)
    choice = next((c for c in completion.choices or () if c.index == 0), None)
    message = choice.message if choice is not None and choice.message else _Message()
    tool_calls = [
        ToolCall(
            index=position,
            id=call.id,
            type=call.type or "function",
            name=(call.function.name or "") if call.function else "",
            arguments=(call.function.arguments or "") if call.function else "",
        )
        for position, call in enumerate(message.tool_calls or ())
    ]
    return ChatResult(
        content=message.content or "",
        tool_calls=tool_calls,
        finish_reason=choice.finish_reason if choice is not None else None,
        usage=completion.usage,
        llmeu=completion.llmeu,
        complete=True,
        id=completion.id,
        model=completion.model,
        reasoning=message.reasoning_content or "",
        refusal=message.refusal or "",
    )

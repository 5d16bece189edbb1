"""What the cache keeps of an answer, and the answer again in the shape each ask wants it.

An entry holds the answer as the upstream produced it — before any masked
value was put back, so an entry holds placeholders, never the values a call's
masking took out — with the trace of the call that produced it, the endpoint
that served it and what that call cost. A chat answer is kept as its deltas
(`Streamed`), whichever way it was asked: a stream replays them one frame
each, as they first came; a whole answer that was never streamed is kept in
word-sized pieces, so that a stream served from it still arrives in chunks.
Embeddings are kept as their vectors (`Embedded`).
"""

from __future__ import annotations

import re

import msgspec
from msgspec import UNSET, Struct

from llmeu.calls.output import (
    AssistantOutput,
    Completion,
    Delta,
    DeltaAnswer,
    Embeddings,
    StreamOutput,
    ToolCallDelta,
    ToolCallFunctionDelta,
    Usage,
)


class Streamed(Struct, tag="streamed", omit_defaults=True):
    deltas: list[Delta]
    finish_reason: str
    usage: Usage | None = None
    input_tokens: int | None = None
    """The prompt's input tokens as the upstream said them before its first delta."""


class Embedded(Struct, tag="embedded", omit_defaults=True):
    vectors: list[list[float]]
    prompt_tokens: int | None = None


Answer = Streamed | Embedded


class Entry(Struct, omit_defaults=True):
    source_trace_id: str
    endpoint_id: str
    answer: Answer
    cost_eur: float | None = None


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(Entry)


def encode_entry(entry: Entry) -> bytes:
    return _encoder.encode(entry)


def decode_entry(data: bytes) -> Entry:
    return _decoder.decode(data)


_WORDS = re.compile(r"\s*\S+\s*")


def streamed_of_completion(completion: Completion) -> Streamed:
    """A whole answer as deltas: its text a word each, its refusal and each tool call whole."""
    message = completion.message
    text = message.content or ""
    deltas = [Delta(content=piece) for piece in _WORDS.findall(text) or ([text] if text else [])]
    if message.refusal:
        deltas.append(Delta(refusal=message.refusal))
    tool_calls = message.tool_calls if isinstance(message.tool_calls, list) else []
    for index, call in enumerate(tool_calls):
        function = ToolCallFunctionDelta(name=call.function.name,
                                         arguments=call.function.arguments)  # fmt: skip
        call_delta = ToolCallDelta(index=index, id=call.id, type=call.type, function=function)
        deltas.append(Delta(tool_calls=[call_delta]))
    return Streamed(deltas, completion.finish_reason or "stop", completion.usage)


def completion_of(answer: Streamed) -> Completion:
    """The whole answer a kept one gives: its text, refusal and tool calls joined."""
    output = StreamOutput()
    for delta in answer.deltas:
        output.add(delta)
    tool_calls = output.tool_calls()
    message = AssistantOutput(
        "assistant", output.content or None, output.refusal, tool_calls or UNSET
    )
    return Completion(message, answer.finish_reason, answer.usage)


def streamed_of_deltas(answer: DeltaAnswer) -> Streamed:
    return Streamed(list(answer.deltas), answer.finish_reason, answer.usage)


def deltas_of(answer: Streamed) -> DeltaAnswer:
    return DeltaAnswer(list(answer.deltas), answer.finish_reason, answer.usage)


def embedded_of(result: Embeddings) -> Embedded:
    return Embedded([list(v) for v in result.vectors], result.prompt_tokens)


def embeddings_of(answer: Embedded) -> Embeddings:
    return Embeddings(answer.vectors, answer.prompt_tokens)

"""What the cache keeps of an answer, and the answer again in the shape each ask wants it.

An entry holds the answer as the upstream produced it — before any masked
value was put back, so an entry holds placeholders, never the values a call's
masking took out — with the trace of the call that produced it, the endpoint
that served it and what that call cost. A streamed answer is kept as its
deltas (`Streamed`), replayed one frame each as they first came; a whole
answer as it came (`Whole`), cut into word-sized deltas only when a stream is
served from it, so that it still arrives in chunks. Each kind serves the other
kind of ask. Embeddings are kept as their vectors (`Embedded`).
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
    ToolCallCustomDelta,
    ToolCallDelta,
    ToolCallFunctionDelta,
    Usage,
)
from llmeu.calls.tools import CustomToolCall


class Streamed(Struct, tag="streamed", omit_defaults=True):
    deltas: list[Delta]
    finish_reason: str
    usage: Usage | None = None
    input_tokens: int | None = None
    """The prompt's input tokens as the upstream said them before its first delta."""


class Whole(Struct, tag="whole", omit_defaults=True):
    message: AssistantOutput
    finish_reason: str | None
    usage: Usage | None = None


class Embedded(Struct, tag="embedded", omit_defaults=True):
    vectors: list[list[float]]
    prompt_tokens: int | None = None


Answer = Streamed | Whole | Embedded
Chat = Streamed | Whole
"""What a chat call's entry keeps."""


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


def whole_of(completion: Completion) -> Whole:
    return Whole(completion.message, completion.finish_reason, completion.usage)


def streamed_of_deltas(answer: DeltaAnswer) -> Streamed:
    return Streamed(list(answer.deltas), answer.finish_reason, answer.usage)


def completion_of(answer: Chat) -> Completion:
    """The whole answer a kept one gives: as kept, or its deltas' text, refusal and tool
    calls joined."""
    if isinstance(answer, Whole):
        return Completion(answer.message, answer.finish_reason, answer.usage)
    deltas = answer.deltas
    if all(d.tool_calls in (UNSET, None) and not d.refusal for d in deltas):
        text = "".join(d.content for d in deltas if isinstance(d.content, str))
        message = AssistantOutput("assistant", text or None)
        return Completion(message, answer.finish_reason, answer.usage)
    output = StreamOutput()
    for delta in deltas:
        output.add(delta)
    tool_calls = output.tool_calls()
    message = AssistantOutput(
        "assistant", output.content or None, output.refusal, tool_calls or UNSET
    )
    return Completion(message, answer.finish_reason, answer.usage)


def streamed_of(answer: Chat) -> Streamed:
    """The deltas a stream served from a kept answer carries: as kept, or a whole answer's
    text a word each, its refusal and each tool call whole."""
    if isinstance(answer, Streamed):
        return answer
    message = answer.message
    text = message.content or ""
    deltas = [Delta(content=piece) for piece in _WORDS.findall(text) or ([text] if text else [])]
    if message.refusal:
        deltas.append(Delta(refusal=message.refusal))
    tool_calls = message.tool_calls if isinstance(message.tool_calls, list) else []
    for index, call in enumerate(tool_calls):
        if isinstance(call, CustomToolCall):
            custom = ToolCallCustomDelta(name=call.custom.name, input=call.custom.input)
            call_delta = ToolCallDelta(index=index, id=call.id, type="custom", custom=custom)
        else:
            function = ToolCallFunctionDelta(name=call.function.name,
                                             arguments=call.function.arguments)  # fmt: skip
            call_delta = ToolCallDelta(index=index, id=call.id, type="function",
                                       function=function)  # fmt: skip
        deltas.append(Delta(tool_calls=[call_delta]))
    return Streamed(deltas, answer.finish_reason or "stop", answer.usage)


def deltas_of(answer: Chat) -> DeltaAnswer:
    streamed = streamed_of(answer)
    return DeltaAnswer(list(streamed.deltas), streamed.finish_reason, streamed.usage)


def embedded_of(result: Embeddings) -> Embedded:
    return Embedded([list(v) for v in result.vectors], result.prompt_tokens)


def embeddings_of(answer: Embedded) -> Embeddings:
    return Embeddings(answer.vectors, answer.prompt_tokens)

"""What a surface asks of an endpoint, as the operation one attempt runs on its provider.

A route says what it wants — a chat stream, a whole chat answer, a whole
answer gathered from a stream, embeddings, or the Responses API passed
through natively where an endpoint speaks it — and hands the operation to
`Call.stream` or `Call.complete`, which run it on each endpoint of the route
plan in turn. Routes never see a provider: this is the one place where a
surface's request meets one.

A whole answer is asked as an `Ask`: the operation, and how its answer is kept
in the answer cache and read back from it (`llmeu.cache.entry`), so that a
call served from the cache gets the answer in the very shape a live one does.
A stream needs no such pair: the cache keeps its deltas as they pass.

A chat attempt offers the upstream the function form of the request's custom
tools (`llmeu.calls.tool_forms`) and makes the calls of those functions back
into custom calls, streamed or whole, so every provider serves custom tools
without knowing them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from msgspec.structs import replace as struct_replace

from llmeu.cache.entry import (
    Answer,
    Chat,
    Embedded,
    Streamed,
    Whole,
    completion_of,
    deltas_of,
    embedded_of,
    embeddings_of,
    streamed_of_deltas,
    whole_of,
)
from llmeu.calls.hangup import Hangup
from llmeu.calls.hosted_tools import HostedTool
from llmeu.calls.output import Completion, Delta, DeltaAnswer, Embeddings
from llmeu.calls.request import ChatRequest, EmbeddingInputs
from llmeu.calls.tool_forms import CustomCalls, custom_names, function_form
from llmeu.providers.anthropic import AnthropicWire
from llmeu.providers.base import ChatStream, Provider
from llmeu.providers.responses_native import native
from llmeu.routing.catalog import Endpoint

T = TypeVar("T")

Operation = Callable[[Provider, Hangup], Awaitable[T]]
"""What one attempt asks of an endpoint's provider."""

NativeBody = Callable[[Endpoint, str, bool], bytes]
"""The body of a native Responses request: (the endpoint, the upstream's model name,
streamed) → bytes."""
Hosted = Callable[[Endpoint], Sequence[HostedTool]]
"""The hosted tools an endpoint gets (`llmeu.api.call.governance.ToolPassage.passed`)."""
Chosen = Callable[[bool], None]
"""Told, at each attempt, whether it goes to the endpoint's own Responses API (True)."""


@dataclass(frozen=True, slots=True)
class Ask(Generic[T]):
    """A whole answer's operation, and its answer as the cache keeps it and gives it back."""

    run: Operation[T]
    kept: Callable[[T], Answer]
    replayed: Callable[[Answer], T]


def _chat(answer: Answer) -> Chat:
    assert isinstance(answer, Streamed | Whole), "a chat call's entry keeps a chat answer"
    return answer


def _embedded(answer: Answer) -> Embedded:
    assert isinstance(answer, Embedded), "an embeddings call's entry keeps its vectors"
    return answer


def _kept_whole(answer: Completion | DeltaAnswer) -> Answer:
    if isinstance(answer, DeltaAnswer):
        return streamed_of_deltas(answer)
    return whole_of(answer)


def _upstream_form(chat: ChatRequest) -> tuple[ChatRequest, frozenset[str]]:
    """The request as an upstream gets it (custom tools in their function form) and the names
    of those tools. Made when an attempt runs, not when the operation is built: a call the
    answer cache serves runs none, and pays nothing for it."""
    return function_form(chat), custom_names(chat)


def chat_stream(chat: ChatRequest) -> Operation[ChatStream]:
    async def ask(provider: Provider, hangup: Hangup) -> ChatStream:
        upstream, names = _upstream_form(chat)
        stream = await provider.stream_chat(upstream, hangup)
        return _CustomCallStream(stream, CustomCalls(names)) if names else stream

    return ask


def chat_answer(chat: ChatRequest) -> Ask[Completion]:
    async def ask(provider: Provider, hangup: Hangup) -> Completion:
        upstream, names = _upstream_form(chat)
        completion = await provider.complete_chat(upstream, hangup)
        message = completion.message
        if not names or not message.tool_calls:
            return completion
        calls = CustomCalls(names).calls(message.tool_calls)
        return replace(completion, message=struct_replace(message, tool_calls=calls))

    return Ask(ask, whole_of, lambda kept: completion_of(_chat(kept)))


def messages_stream(chat: ChatRequest, hosted: Hosted) -> Operation[ChatStream]:
    """A chat stream; on an endpoint that speaks Anthropic's wire, with the server tools it
    gets (`hosted`: the governance step's `ToolPassage.passed`), whole as sent."""
    streamed = chat_stream(chat)

    async def ask(provider: Provider, hangup: Hangup) -> ChatStream:
        tools = [tool.as_sent() for tool in hosted(provider.endpoint)]
        if tools and isinstance(provider, AnthropicWire):
            return await provider.stream_chat(function_form(chat), hangup, server_tools=tools)
        return await streamed(provider, hangup)

    return ask


def gathered_answer(chat: ChatRequest, hosted: Hosted | None = None) -> Ask[DeltaAnswer]:
    """A whole answer read from the upstream's stream, so that what a stream carries (thinking
    with its signature, tool use) comes back the same streamed or not; with `hosted`, as
    `messages_stream` asks it."""

    streamed = chat_stream(chat) if hosted is None else messages_stream(chat, hosted)

    async def ask(provider: Provider, hangup: Hangup) -> DeltaAnswer:
        deltas: list[Delta] = []
        stream = await streamed(provider, hangup)
        try:
            while (delta := await stream.next_delta()) is not None:
                deltas.append(delta)
        finally:
            await stream.aclose()
        return DeltaAnswer(deltas, stream.finish_reason or "stop", stream.usage)

    return Ask(ask, streamed_of_deltas, lambda kept: deltas_of(_chat(kept)))


def embeddings(inputs: EmbeddingInputs, dimensions: int | None) -> Ask[Embeddings]:
    async def ask(provider: Provider, hangup: Hangup) -> Embeddings:
        return await provider.embed(inputs, dimensions, hangup)

    return Ask(ask, embedded_of, lambda kept: embeddings_of(_embedded(kept)))


def responses_stream(
    chat: ChatRequest, native_body: NativeBody, chosen: Chosen
) -> Operation[ChatStream]:
    """The endpoint's own Responses API where it declares one, else chat completions."""
    streamed = chat_stream(chat)

    async def ask(provider: Provider, hangup: Hangup) -> ChatStream:
        responses = native(provider)
        chosen(responses is not None)
        if responses is not None:
            body = native_body(provider.endpoint, responses.model, True)
            return await responses.stream(body, hangup)
        return await streamed(provider, hangup)

    return ask


def responses_answer(
    chat: ChatRequest, native_body: NativeBody, chosen: Chosen
) -> Ask[Completion | DeltaAnswer]:
    """A whole answer: the endpoint's own Responses API where it declares one (its answer as
    the deltas a stream of it carries), else a chat completion. From the cache it comes back
    as deltas, built into the response by the stream encoder like a native answer."""
    answered = chat_answer(chat).run

    async def ask(provider: Provider, hangup: Hangup) -> Completion | DeltaAnswer:
        responses = native(provider)
        chosen(responses is not None)
        if responses is not None:
            body = native_body(provider.endpoint, responses.model, False)
            return await responses.complete(body, hangup)
        return await answered(provider, hangup)

    return Ask(ask, _kept_whole, lambda kept: deltas_of(_chat(kept)))


class _CustomCallStream(ChatStream):
    """An upstream's stream with its calls of custom tools' function forms made custom calls
    (`CustomCalls`); a delta left with nothing to carry is skipped, and what could only be
    read whole comes in one more delta at the end."""

    __slots__ = ("_calls", "_ended", "_stream")

    def __init__(self, stream: ChatStream, calls: CustomCalls) -> None:
        self._stream = stream
        self._calls = calls
        self._ended = False

    async def next_delta(self) -> Delta | None:
        if self._ended:
            return None
        while (delta := await self._stream.next_delta()) is not None:
            mapped = self._mapped(delta)
            if mapped is not None:
                return mapped
        stream = self._stream
        self.finish_reason, self.usage = stream.finish_reason, stream.usage
        self._ended = True
        return self._calls.flush()

    def buffered_delta(self) -> Delta | None:
        while (delta := self._stream.buffered_delta()) is not None:
            mapped = self._mapped(delta)
            if mapped is not None:
                return mapped
        return None

    async def aclose(self) -> None:
        await self._stream.aclose()

    def _mapped(self, delta: Delta) -> Delta | None:
        self.input_tokens = self._stream.input_tokens
        mapped = self._calls.delta(delta)
        return mapped if mapped.carries_output() else None

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
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

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
from llmeu.calls.output import Completion, Delta, DeltaAnswer, Embeddings
from llmeu.calls.request import ChatRequest, EmbeddingInputs
from llmeu.providers.base import ChatStream, Provider
from llmeu.providers.responses_native import native

T = TypeVar("T")

Operation = Callable[[Provider, Hangup], Awaitable[T]]
"""What one attempt asks of an endpoint's provider."""

NativeBody = Callable[[str, bool], bytes]
"""The body of a native Responses request: (the upstream's model name, streamed) → bytes."""
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


def chat_stream(chat: ChatRequest) -> Operation[ChatStream]:
    async def ask(provider: Provider, hangup: Hangup) -> ChatStream:
        return await provider.stream_chat(chat, hangup)

    return ask


def chat_answer(chat: ChatRequest) -> Ask[Completion]:
    async def ask(provider: Provider, hangup: Hangup) -> Completion:
        return await provider.complete_chat(chat, hangup)

    return Ask(ask, whole_of, lambda kept: completion_of(_chat(kept)))


def gathered_answer(chat: ChatRequest) -> Ask[DeltaAnswer]:
    """A whole answer read from the upstream's stream, so that what a stream carries (thinking
    with its signature, tool use) comes back the same streamed or not."""

    async def ask(provider: Provider, hangup: Hangup) -> DeltaAnswer:
        deltas: list[Delta] = []
        stream = await provider.stream_chat(chat, hangup)
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

    async def ask(provider: Provider, hangup: Hangup) -> ChatStream:
        responses = native(provider)
        chosen(responses is not None)
        if responses is not None:
            return await responses.stream(native_body(responses.model, True), hangup)
        return await provider.stream_chat(chat, hangup)

    return ask


def responses_answer(
    chat: ChatRequest, native_body: NativeBody, chosen: Chosen
) -> Ask[Completion | DeltaAnswer]:
    """A whole answer: the endpoint's own Responses API where it declares one (its answer as
    the deltas a stream of it carries), else a chat completion. From the cache it comes back
    as deltas, built into the response by the stream encoder like a native answer."""

    async def ask(provider: Provider, hangup: Hangup) -> Completion | DeltaAnswer:
        responses = native(provider)
        chosen(responses is not None)
        if responses is not None:
            return await responses.complete(native_body(responses.model, False), hangup)
        return await provider.complete_chat(chat, hangup)

    return Ask(ask, _kept_whole, lambda kept: deltas_of(_chat(kept)))

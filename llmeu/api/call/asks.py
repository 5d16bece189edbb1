"""What a surface asks of an endpoint, as the operation one attempt runs on its provider.

A route says what it wants — a chat stream, a whole chat answer, a whole
answer gathered from a stream, embeddings, or the Responses API passed
through natively where an endpoint speaks it — and hands the operation to
`Call.stream` or `Call.complete`, which run it on each endpoint of the route
plan in turn. Routes never see a provider: this is the one place where a
surface's request meets one.
"""

from __future__ import annotations

from collections.abc import Callable

from llmeu.api.call.attempts import Operation
from llmeu.calls.hangup import Hangup
from llmeu.calls.output import Completion, Delta, DeltaAnswer, Embeddings
from llmeu.calls.request import ChatRequest, EmbeddingInputs
from llmeu.providers.base import ChatStream, Provider
from llmeu.providers.responses_native import native

NativeBody = Callable[[str, bool], bytes]
"""The body of a native Responses request: (the upstream's model name, streamed) → bytes."""
Chosen = Callable[[bool], None]
"""Told, at each attempt, whether it goes to the endpoint's own Responses API (True)."""


def chat_stream(chat: ChatRequest) -> Operation[ChatStream]:
    async def ask(provider: Provider, hangup: Hangup) -> ChatStream:
        return await provider.stream_chat(chat, hangup)

    return ask


def chat_answer(chat: ChatRequest) -> Operation[Completion]:
    async def ask(provider: Provider, hangup: Hangup) -> Completion:
        return await provider.complete_chat(chat, hangup)

    return ask


def gathered_answer(chat: ChatRequest) -> Operation[DeltaAnswer]:
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

    return ask


def embeddings(inputs: EmbeddingInputs, dimensions: int | None) -> Operation[Embeddings]:
    async def ask(provider: Provider, hangup: Hangup) -> Embeddings:
        return await provider.embed(inputs, dimensions, hangup)

    return ask


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
) -> Operation[Completion | DeltaAnswer]:
    """A whole answer: the endpoint's own Responses API where it declares one (its answer as
    the deltas a stream of it carries), else a chat completion."""

    async def ask(provider: Provider, hangup: Hangup) -> Completion | DeltaAnswer:
        responses = native(provider)
        chosen(responses is not None)
        if responses is not None:
            return await responses.complete(native_body(responses.model, False), hangup)
        return await provider.complete_chat(chat, hangup)

    return ask

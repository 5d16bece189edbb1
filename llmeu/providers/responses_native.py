"""Native pass-through of the Responses API to an endpoint that declares it.

An endpoint of kind `openai` or `azure_openai` with `responses` among its
`capabilities` serves `/v1/responses` on its own Responses API (`/responses`
under its base URL; Azure's `/openai/v1/responses`, or `/openai/responses`
with the deployment as the model). Routing does not change: the plan is the
policy's, in its order (priority, health, price), and the capability never
brings an endpoint into it. Each attempt is native when its endpoint declares
the capability and translated onto chat completions otherwise, so a fallback
may pass from one to the other before the first event.

This module does the I/O of one native attempt; what is sent and how the
answer becomes deltas is `llmeu.protocol.responses_upstream`. The stream is a
`ChatStream`, so the lifecycle serves it exactly as a chat upstream's: the
first-token, idle and total timeouts, a hang-up aborting the upstream
connection, fallback before the first delta, an `UpstreamError` for every
failure (a stream that ends without its terminal event included).
"""

from __future__ import annotations

import time

from llmeu.calls.hangup import Hangup
from llmeu.calls.output import Delta, DeltaAnswer
from llmeu.protocol.responses_upstream import UpstreamEvents, whole_deltas
from llmeu.providers.base import ChatStream, Provider
from llmeu.providers.openai import OpenAIProvider
from llmeu.providers.sse_stream import SseStream
from llmeu.providers.transport import Response
from llmeu.routing.catalog import Capability, Endpoint
from llmeu.routing.endpoint_kinds import RESPONSES_NATIVE_KINDS


def native(provider: Provider) -> NativeResponses | None:
    """The Responses API of `provider`'s endpoint, when it declares one llmeu can speak: the
    `responses` capability on a kind of `RESPONSES_NATIVE_KINDS`."""
    endpoint = provider.endpoint
    speaks = Capability.RESPONSES in endpoint.capabilities
    if speaks and endpoint.kind in RESPONSES_NATIVE_KINDS and isinstance(provider, OpenAIProvider):
        return NativeResponses(provider)
    return None


class NativeResponses:
    def __init__(self, provider: OpenAIProvider) -> None:
        self._provider = provider

    @property
    def model(self) -> str:
        """The model named in the upstream request."""
        return self._provider.responses_model

    async def stream(self, body: bytes, hangup: Hangup) -> ChatStream:
        started = time.monotonic()
        response = await self._provider.post_responses(body, hangup, stream=True)
        return _NativeStream(self._provider.endpoint, response, started, hangup)

    async def complete(self, body: bytes, hangup: Hangup) -> DeltaAnswer:
        started = time.monotonic()
        provider = self._provider
        response = await provider.post_responses(body, hangup, stream=False)
        raw = await provider.upstream_http.read_all(response, started, hangup)
        return DeltaAnswer(*whole_deltas(raw))


class _NativeStream(SseStream):
    __slots__ = ("_wire",)

    def __init__(self, endpoint: Endpoint, response: Response, started: float, hangup: Hangup):
        super().__init__(endpoint, response, started, hangup)
        self._wire = UpstreamEvents()

    async def next_delta(self) -> Delta | None:
        while True:
            delta = self._from_queue()
            if delta is not None:
                return delta
            if self._wire.ended:
                if not self._done:
                    await self._finish()
                return None
            await self._read_events("upstream Responses stream ended without its final event")

    def buffered_delta(self) -> Delta | None:
        while True:
            delta = self._from_queue()
            if delta is not None or self._wire.ended or not self._read_buffered_events():
                return delta

    def _from_queue(self) -> Delta | None:
        queue, wire = self._events, self._wire
        while queue and not wire.ended:
            delta = wire.take(queue.popleft().data)
            if wire.ended:
                self.finish_reason, self.usage = wire.finish_reason, wire.usage
            if delta is not None:
                return delta
        return None

"""Anthropic's Messages API, natively: `x-api-key`, `anthropic-version`, Anthropic's events.

The canonical request is written as Anthropic's (`protocol.messages_upstream`),
with the server tools a Messages call may pass on to it (`server_tools`, whole
as the caller sent them), and its streamed events read into canonical deltas
(`protocol.messages_stream.MessagesEventDecoder`): text, tool use, thinking
with its signature, usage with the cache's share. A stream is complete only
at `message_stop`; one that ends before it, or sends an `error` event, is a
failed stream (`overloaded_error` keeps its 529). Counting a prompt's tokens
asks the upstream's `/messages/count_tokens`.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

import msgspec

from llmeu.calls.hangup import Hangup
from llmeu.calls.output import Completion, Delta
from llmeu.calls.request import ChatRequest
from llmeu.errors import UpstreamError
from llmeu.protocol.json_codec import encoder
from llmeu.protocol.messages_request import ANTHROPIC_VERSION
from llmeu.protocol.messages_stream import MessagesEventDecoder
from llmeu.protocol.messages_upstream import anthropic_request, completion_of
from llmeu.providers.base import ChatStream, Provider
from llmeu.providers.sse_stream import SseStream
from llmeu.providers.transport import HttpClient, Response
from llmeu.providers.upstream_http import HttpUpstream
from llmeu.routing.catalog import Endpoint


class _Count(msgspec.Struct):
    input_tokens: int


_count_decoder = msgspec.json.Decoder(_Count)


class AnthropicWire(Provider):
    """Anthropic's Messages wire over some transport: the request written as Anthropic's,
    the answer and the events read back. A subclass says where and how the body is sent
    (`_post`) and how the payload differs from Anthropic's own API (`_payload`)."""

    def __init__(self, endpoint: Endpoint, client: HttpClient):
        super().__init__(endpoint)
        self._http = HttpUpstream(endpoint, client)

    def _payload(self, request: ChatRequest, *, stream: bool) -> dict[str, Any]:
        endpoint = self.endpoint
        return anthropic_request(
            request, endpoint.model, stream=stream,
            default_max_tokens=endpoint.default_max_tokens,
        )  # fmt: skip

    @abstractmethod
    async def _post(self, body: bytes, *, stream: bool, hangup: Hangup) -> Response:
        """Send `body` for a streamed or a whole answer; an HTTP error leaves as raised."""

    async def stream_chat(
        self, request: ChatRequest, hangup: Hangup, server_tools: Sequence[dict[str, Any]] = ()
    ) -> ChatStream:
        """The streamed answer; `server_tools` (Anthropic's, as a Messages caller sent them)
        go with the request's own tools."""
        payload = self._payload(request, stream=True)
        if server_tools:
            payload["tools"] = [*payload.get("tools", ()), *server_tools]
        body = encoder.encode(payload)
        started = time.monotonic()
        response = await self._post(body, stream=True, hangup=hangup)
        return _AnthropicStream(self.endpoint, response, started, hangup)

    async def complete_chat(self, request: ChatRequest, hangup: Hangup) -> Completion:
        body = encoder.encode(self._payload(request, stream=False))
        started = time.monotonic()
        response = await self._post(body, stream=False, hangup=hangup)
        raw = await self._http.read_all(response, started, hangup)
        try:
            return completion_of(raw)
        except (msgspec.DecodeError, RecursionError) as error:
            raise UpstreamError(f"upstream sent an invalid message: {error}") from None


class AnthropicProvider(AnthropicWire):
    def __init__(self, endpoint: Endpoint, client: HttpClient, api_key: str | None):
        super().__init__(endpoint, client)
        headers = [
            (b"content-type", b"application/json"),
            (b"user-agent", b"llmeu"),
            (b"anthropic-version", ANTHROPIC_VERSION.encode()),
        ]
        if api_key:
            headers.append((b"x-api-key", api_key.encode()))
        self._headers = headers
        self._stream_headers = [*headers, (b"accept", b"text/event-stream")]

    async def _post(self, body: bytes, *, stream: bool, hangup: Hangup) -> Response:
        headers = self._stream_headers if stream else self._headers
        return await self._http.post("/messages", body, headers, hangup)

    async def count_tokens(self, request: ChatRequest, hangup: Hangup) -> int | None:
        payload = anthropic_request(request, self.endpoint.model, stream=False,
                                    default_max_tokens=None)  # fmt: skip
        del payload["max_tokens"]
        started = time.monotonic()
        body = encoder.encode(payload)
        response = await self._http.post("/messages/count_tokens", body, self._headers, hangup)
        raw = await self._http.read_all(response, started, hangup)
        try:
            return _count_decoder.decode(raw).input_tokens
        except (msgspec.DecodeError, RecursionError) as error:
            raise UpstreamError(f"upstream sent an invalid token count: {error}") from None


class _AnthropicStream(SseStream):
    __slots__ = ("_messages",)

    def __init__(self, endpoint: Endpoint, response: Response, started: float, hangup: Hangup):
        super().__init__(endpoint, response, started, hangup)
        self._messages = MessagesEventDecoder()

    async def next_delta(self) -> Delta | None:
        while True:
            delta = self.buffered_delta()
            if delta is not None:
                return delta
            if self._messages.done:
                if not self._done:
                    self.usage = self._messages.usage
                    self.finish_reason = self._messages.finish_reason or "stop"
                    await self._finish()
                return None
            await self._read_events("upstream stream ended before message_stop")

    def buffered_delta(self) -> Delta | None:
        events = self._events
        messages = self._messages
        while not messages.done:
            while events:
                try:
                    delta = messages.decode(events.popleft().data)
                except UpstreamError:
                    self._done = True
                    self._response.abort()
                    raise
                if delta is not None:
                    self.input_tokens = messages.input_tokens
                    return delta
                if messages.done:
                    return None
            if self._done or not self._read_buffered_events():
                return None
        return None

"""Any OpenAI-compatible HTTP upstream: vLLM, llama.cpp server, Mistral, Scaleway, OVHcloud, IONOS…

Streams are requested with `stream_options.include_usage` so token counts are
the upstream's own. An upstream stream is complete only when `[DONE]`
arrived: one that ends without it, sends invalid JSON or an error payload is
a failed stream, exactly as our own clients are told to treat ours.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence

import msgspec
from msgspec import UNSET, Struct

from llmeu.errors import UpstreamError, UpstreamRejected, UpstreamTimeout, UpstreamUnavailable
from llmeu.protocol.sse import DONE_DATA, ServerSentEvent, SSEDecoder
from llmeu.protocol.wire import (
    AssistantOutput,
    ChatCompletionRequest,
    Delta,
    StreamOptions,
    Usage,
    encoder,
)
from llmeu.providers.base import ChatStream, Completion, Embeddings, Provider
from llmeu.providers.http import HttpClient, Origin, Response, TransportError, TransportTimeout
from llmeu.routing.catalog import Endpoint

_ERROR_BODY_LIMIT = 64 << 10


class _UpstreamChoice(Struct):
    delta: Delta = msgspec.field(default_factory=Delta)
    finish_reason: str | None = None
    index: int = 0


class _UpstreamErrorDetail(Struct):
    message: str = "upstream error"


class _UpstreamChunk(Struct):
    choices: list[_UpstreamChoice] = []
    usage: Usage | None = None
    error: _UpstreamErrorDetail | str | None = None


class _UpstreamMessageChoice(Struct):
    message: AssistantOutput
    finish_reason: str | None = None


class _UpstreamCompletion(Struct):
    choices: list[_UpstreamMessageChoice]
    usage: Usage | None = None


class _UpstreamEmbedding(Struct):
    embedding: list[float]
    index: int = 0


class _UpstreamEmbeddings(Struct):
    data: list[_UpstreamEmbedding]
    usage: dict[str, int] | None = None


_chunk_decoder = msgspec.json.Decoder(_UpstreamChunk)
_completion_decoder = msgspec.json.Decoder(_UpstreamCompletion)
_embeddings_decoder = msgspec.json.Decoder(_UpstreamEmbeddings)
_error_decoder = msgspec.json.Decoder(_UpstreamChunk)


class OpenAIProvider(Provider):
    def __init__(self, endpoint: Endpoint, client: HttpClient, api_key: str | None):
        super().__init__(endpoint)
        self._client = client
        self._origin = Origin.parse(endpoint.base_url)
        headers = [(b"content-type", b"application/json"), (b"user-agent", b"llmeu")]
        if api_key:
            headers.append((b"authorization", b"Bearer " + api_key.encode()))
        self._headers = headers
        self._stream_headers = [*headers, (b"accept", b"text/event-stream")]

    async def stream_chat(self, request: ChatCompletionRequest) -> ChatStream:
        body = encoder.encode(
            msgspec.structs.replace(
                request,
                model=self.endpoint.model,
                llmeu=UNSET,
                stream=True,
                stream_options=StreamOptions(include_usage=True),
            )
        )
        started = time.monotonic()
        response = await self._post("/chat/completions", body, self._stream_headers)
        return _OpenAIChatStream(self.endpoint, response, started)

    async def complete_chat(self, request: ChatCompletionRequest) -> Completion:
        body = encoder.encode(
            msgspec.structs.replace(
                request, model=self.endpoint.model, llmeu=UNSET, stream=UNSET, stream_options=UNSET
            )
        )
        response = await self._post("/chat/completions", body, self._headers)
        raw = await self._read_all(response)
        try:
            parsed = _completion_decoder.decode(raw)
        except (msgspec.DecodeError, RecursionError) as error:
            raise UpstreamError(f"upstream sent an invalid completion: {error}") from None
        if not parsed.choices:
            raise UpstreamError("upstream completion has no choices")
        choice = parsed.choices[0]
        return Completion(choice.message, choice.finish_reason, parsed.usage)

    async def embed(
        self, inputs: Sequence[str] | Sequence[Sequence[int]], dimensions: int | None
    ) -> Embeddings:
        payload: dict[str, object] = {"model": self.endpoint.model, "input": list(inputs)}
        if dimensions is not None:
            payload["dimensions"] = dimensions
        response = await self._post("/embeddings", encoder.encode(payload), self._headers)
        raw = await self._read_all(response)
        try:
            parsed = _embeddings_decoder.decode(raw)
        except (msgspec.DecodeError, RecursionError) as error:
            raise UpstreamError(f"upstream sent invalid embeddings: {error}") from None
        vectors = [d.embedding for d in sorted(parsed.data, key=lambda d: d.index)]
        tokens = (parsed.usage or {}).get("prompt_tokens")
        return Embeddings(vectors, tokens)

    async def _post(
        self, path: str, body: bytes, headers: Sequence[tuple[bytes, bytes]]
    ) -> Response:
        timeouts = self.endpoint.timeouts
        try:
            response = await self._client.request(
                self._origin,
                b"POST",
                path,
                headers,
                body,
                connect_timeout=timeouts.connect,
                response_timeout=timeouts.first_token,
            )
        except TransportTimeout as error:
            raise UpstreamTimeout(str(error)) from None
        except TransportError as error:
            raise UpstreamUnavailable(str(error)) from None
        if response.status != 200:
            raise await _status_error(response, timeouts.idle)
        return response

    async def _read_all(self, response: Response) -> bytes:
        try:
            raw = await response.read(self.endpoint.timeouts.total)
        except TransportTimeout as error:
            response.abort()
            raise UpstreamTimeout(str(error)) from None
        except TransportError as error:
            response.abort()
            raise UpstreamUnavailable(str(error)) from None
        response.release()
        return raw


async def _status_error(response: Response, timeout: float) -> UpstreamError:
    status = response.status
    try:
        raw = await response.read(timeout, limit=_ERROR_BODY_LIMIT)
        response.release()
    except TransportError:
        response.abort()
        raw = b""
    message = _error_message(raw) or f"HTTP {status}"
    text = f"upstream answered {status}: {message}"
    if status == 429 or status >= 500:
        return UpstreamUnavailable(text, upstream_status=status)
    if status == 408:
        return UpstreamTimeout(text, upstream_status=status)
    if status in (400, 413, 422):
        return UpstreamRejected(text, upstream_status=status)
    # 401/403/404 and the like describe our credentials or the endpoint, not the
    # request: another endpoint can serve it.
    return UpstreamError(text, upstream_status=status, retryable=True)


def _error_message(raw: bytes) -> str:
    try:
        error = _error_decoder.decode(raw).error
    except (msgspec.DecodeError, RecursionError):
        return raw[:300].decode("utf-8", "replace").strip()
    if isinstance(error, _UpstreamErrorDetail):
        return error.message[:500]
    return (error or "")[:500]


class _OpenAIChatStream(ChatStream):
    __slots__ = ("_deadline", "_decoder", "_done", "_endpoint", "_events", "_first", "_response")

    def __init__(self, endpoint: Endpoint, response: Response, started: float):
        self._endpoint = endpoint
        self._response = response
        self._decoder = SSEDecoder()
        self._events: deque[ServerSentEvent] = deque()
        self._done = False
        self._first = True
        self._deadline = started + endpoint.timeouts.total

    async def next_delta(self) -> Delta | None:
        while True:
            while self._events:
                delta = self._take(self._events.popleft())
                if delta is not None:
                    return delta
                if self._done:
                    await self._finish()
                    return None
            if self._done:
                return None
            chunk = await self._read()
            if chunk is None:
                self._events.extend(self._decoder.close())
                if not self._events:
                    await self.aclose()
                    raise UpstreamError("upstream stream ended without [DONE]")
            else:
                self._events.extend(self._decoder.feed(chunk))

    def buffered_delta(self) -> Delta | None:
        events = self._events
        while True:
            while events:
                if events[0].data == DONE_DATA:
                    return None  # the end is handled by next_delta
                delta = self._take(events.popleft())
                if delta is not None:
                    return delta
            if self._done:
                return None
            chunk = self._response.read_buffered()
            if chunk is None:
                return None
            events.extend(self._decoder.feed(chunk))

    def _take(self, event: ServerSentEvent) -> Delta | None:
        data = event.data
        if data == DONE_DATA:
            self._done = True
            return None
        if event.event == "error":
            raise UpstreamError(f"upstream sent an error event: {data[:300]}")
        try:
            chunk = _chunk_decoder.decode(data)
        except (msgspec.DecodeError, RecursionError) as error:
            raise UpstreamError(f"upstream sent an invalid chunk: {error}") from None
        if chunk.error is not None:
            message = (
                chunk.error.message
                if isinstance(chunk.error, _UpstreamErrorDetail)
                else chunk.error
            )
            raise UpstreamError(f"upstream failed mid-stream: {message[:300]}")
        if chunk.usage is not None:
            self.usage = chunk.usage
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            if choice.finish_reason is not None:
                self.finish_reason = choice.finish_reason
            delta = choice.delta
            if delta.carries_output():
                delta.role = UNSET
                return delta
        return None

    async def _read(self) -> bytes | None:
        timeouts = self._endpoint.timeouts
        budget = timeouts.first_token if self._first else timeouts.idle
        remaining = self._deadline - time.monotonic()
        try:
            if remaining <= 0:
                raise TransportTimeout("")
            chunk = await self._response.read_chunk(min(budget, remaining))
        except TransportTimeout as error:
            await self.aclose()
            message = str(error)
            if budget >= remaining:
                message = f"upstream call exceeded its total timeout of {timeouts.total:g} s"
            raise UpstreamTimeout(message) from None
        except TransportError as error:
            await self.aclose()
            raise UpstreamError(f"upstream stream broke: {error}") from None
        self._first = False
        return chunk

    async def _finish(self) -> None:
        """After [DONE]: read to the end of the body so the connection can be reused."""
        try:
            while await self._response.read_chunk(self._endpoint.timeouts.idle) is not None:
                pass
        except TransportError:
            self._response.abort()
            return
        self._response.release()

    async def aclose(self) -> None:
        if not self._done:
            self._done = True
            self._response.abort()

"""Any OpenAI-compatible HTTP upstream: vLLM, llama.cpp server, Mistral, Scaleway, OVHcloud, IONOS…

Streams are requested with `stream_options.include_usage` so token counts are
the upstream's own. An upstream stream is complete only when `[DONE]`
arrived: one that ends without it, sends invalid JSON or an error payload is
a failed stream, exactly as our own clients are told to treat ours.
"""

from __future__ import annotations

import time

import msgspec
from msgspec import UNSET, Struct

from llmeu.calls.hangup import Hangup
from llmeu.calls.output import AssistantOutput, Completion, Delta, Embeddings, Usage
from llmeu.calls.request import (
    AssistantMessage,
    ChatRequest,
    EmbeddingInputs,
    Message,
    StreamOptions,
    TextPart,
    Thinking,
    ToolMessage,
    upstream_fields,
)
from llmeu.errors import UpstreamError, UpstreamRejected
from llmeu.protocol.json_codec import encoder
from llmeu.protocol.sse import DONE_DATA, ServerSentEvent
from llmeu.providers.base import ChatStream, Provider
from llmeu.providers.sse_stream import SseStream
from llmeu.providers.transport import HttpClient, Response
from llmeu.providers.upstream_http import Headers, HttpUpstream
from llmeu.routing.catalog import Capability, Endpoint

_INCLUDE_USAGE = StreamOptions(include_usage=True)


class _UpstreamChoice(Struct):
    delta: Delta = msgspec.field(default_factory=Delta)
    finish_reason: str | None = None
    index: int = 0


class _UpstreamErrorDetail(Struct):
    message: str = "upstream error"


class _PromptDetails(Struct):
    cached_tokens: int | None = None


class _UpstreamUsage(Struct):
    """OpenAI's usage; `prompt_tokens` counts the tokens read from the prompt cache too."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: _PromptDetails | None = None

    def usage(self) -> Usage:
        usage = Usage(self.prompt_tokens, self.completion_tokens, self.total_tokens)
        details = self.prompt_tokens_details
        if details is not None and details.cached_tokens:
            usage.cache_read_input_tokens = details.cached_tokens
        return usage


class _UpstreamChunk(Struct):
    choices: list[_UpstreamChoice] = []
    usage: _UpstreamUsage | None = None
    error: _UpstreamErrorDetail | str | None = None


class _UpstreamMessageChoice(Struct):
    message: AssistantOutput
    finish_reason: str | None = None


class _UpstreamCompletion(Struct):
    choices: list[_UpstreamMessageChoice]
    usage: _UpstreamUsage | None = None


class _UpstreamEmbedding(Struct):
    embedding: list[float]
    index: int = 0


class _UpstreamEmbeddings(Struct):
    data: list[_UpstreamEmbedding]
    usage: dict[str, int] | None = None


_chunk_decoder = msgspec.json.Decoder(_UpstreamChunk)
_completion_decoder = msgspec.json.Decoder(_UpstreamCompletion)
_embeddings_decoder = msgspec.json.Decoder(_UpstreamEmbeddings)


class OpenAIProvider(Provider):
    """Paths and the key's header are class attributes so that a kind speaking the same wire
    at other URLs (Azure OpenAI) changes only those."""

    chat_path = "/chat/completions"
    embeddings_path = "/embeddings"
    responses_path = "/responses"  # for `llmeu.providers.responses_native`
    key_header = (b"authorization", b"Bearer ")

    def __init__(self, endpoint: Endpoint, client: HttpClient, api_key: str | None):
        super().__init__(endpoint)
        self._http = HttpUpstream(endpoint, client)
        headers = [(b"content-type", b"application/json"), (b"user-agent", b"llmeu")]
        if api_key:
            name, prefix = self.key_header
            headers.append((name, prefix + api_key.encode()))
        self._headers = headers
        self._stream_headers = [*headers, (b"accept", b"text/event-stream")]
        self.responses_model = endpoint.model
        self._takes_cache_key = Capability.PROMPT_CACHE_KEY in endpoint.capabilities

    @property
    def upstream_http(self) -> HttpUpstream:
        return self._http

    async def post_responses(self, body: bytes, hangup: Hangup, *, stream: bool) -> Response:
        """A request to the endpoint's own Responses API (`responses` capability)."""
        headers = self._stream_headers if stream else self._headers
        return await self._post(self.responses_path, body, headers, hangup)

    async def _post(self, path: str, body: bytes, headers: Headers, hangup: Hangup) -> Response:
        return await self._http.post(path, body, headers, hangup)

    async def stream_chat(self, request: ChatRequest, hangup: Hangup) -> ChatStream:
        request = _openai_request(request, self._takes_cache_key)
        body = encoder.encode(
            msgspec.structs.replace(
                request,
                model=self.endpoint.model,
                llmeu=UNSET,
                stream=True,
                stream_options=_INCLUDE_USAGE,
            )
        )
        started = time.monotonic()
        response = await self._post(self.chat_path, body, self._stream_headers, hangup)
        return _OpenAIChatStream(self.endpoint, response, started, hangup)

    async def complete_chat(self, request: ChatRequest, hangup: Hangup) -> Completion:
        request = _openai_request(request, self._takes_cache_key)
        body = encoder.encode(
            msgspec.structs.replace(
                request, model=self.endpoint.model, llmeu=UNSET, stream=UNSET, stream_options=UNSET
            )
        )
        started = time.monotonic()
        response = await self._post(self.chat_path, body, self._headers, hangup)
        raw = await self._http.read_all(response, started, hangup)
        try:
            parsed = _completion_decoder.decode(raw)
        except (msgspec.DecodeError, RecursionError) as error:
            raise UpstreamError(f"upstream sent an invalid completion: {error}") from None
        if not parsed.choices:
            raise UpstreamError("upstream completion has no choices")
        choice = parsed.choices[0]
        usage = parsed.usage.usage() if parsed.usage is not None else None
        return Completion(choice.message, choice.finish_reason, usage)

    async def embed(
        self, inputs: EmbeddingInputs, dimensions: int | None, hangup: Hangup
    ) -> Embeddings:
        payload: dict[str, object] = {"model": self.endpoint.model, "input": list(inputs)}
        if dimensions is not None:
            payload["dimensions"] = dimensions
        started = time.monotonic()
        body = encoder.encode(payload)
        response = await self._post(self.embeddings_path, body, self._headers, hangup)
        raw = await self._http.read_all(response, started, hangup)
        try:
            parsed = _embeddings_decoder.decode(raw)
        except (msgspec.DecodeError, RecursionError) as error:
            raise UpstreamError(f"upstream sent invalid embeddings: {error}") from None
        vectors = [d.embedding for d in sorted(parsed.data, key=lambda d: d.index)]
        tokens = (parsed.usage or {}).get("prompt_tokens")
        return Embeddings(vectors, tokens)


def _openai_request(request: ChatRequest, takes_cache_key: bool) -> ChatRequest:
    """The request as an OpenAI-compatible upstream takes it: the canonical fields it has no
    use for (reasoning blocks to hand back, a tool result's error flag, prompt-cache
    breakpoints, the fields only the gateway reads — `prompt_cache_key` among them unless
    the endpoint declares it takes it) left out; asking for `thinking` it cannot do is the
    request's error, not the endpoint's (`adaptive` or `disabled` thinking it serves by not
    thinking)."""
    cache_key = request.prompt_cache_key if takes_cache_key else UNSET
    request = upstream_fields(request)
    changes: dict[str, object] = {}
    if cache_key not in (UNSET, None):
        changes["prompt_cache_key"] = cache_key
    if isinstance(request.thinking, Thinking):
        if request.thinking.type == "enabled":
            raise UpstreamRejected(
                "this endpoint does not support `thinking` (extended reasoning)", param="thinking"
            )
        changes["thinking"] = UNSET
    tools = request.tools
    if tools and any(tool.cache_control is not UNSET for tool in tools):
        changes["tools"] = [msgspec.structs.replace(t, cache_control=UNSET) for t in tools]
    if any(_has_extensions(m) for m in request.messages):
        changes["messages"] = [_without_extensions(m) for m in request.messages]
    return msgspec.structs.replace(request, **changes) if changes else request


def _has_extensions(message: Message) -> bool:
    if isinstance(message, AssistantMessage) and message.thinking_blocks not in (UNSET, None):
        return True
    if isinstance(message, ToolMessage) and message.is_error is not UNSET:
        return True
    content = message.content
    return isinstance(content, list) and any(
        isinstance(part, TextPart) and part.cache_control is not UNSET for part in content
    )


def _without_extensions(message: Message) -> Message:
    changes: dict[str, object] = {}
    if isinstance(message, AssistantMessage) and message.thinking_blocks is not UNSET:
        changes["thinking_blocks"] = UNSET
    if isinstance(message, ToolMessage) and message.is_error is not UNSET:
        changes["is_error"] = UNSET
    content = message.content
    if isinstance(content, list):
        changes["content"] = [
            msgspec.structs.replace(part, cache_control=UNSET)
            if isinstance(part, TextPart) and part.cache_control is not UNSET
            else part
            for part in content
        ]
    return msgspec.structs.replace(message, **changes) if changes else message


class _OpenAIChatStream(SseStream):
    __slots__ = ()

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
            await self._read_events("upstream stream ended without [DONE]")

    def buffered_delta(self) -> Delta | None:
        events = self._events
        while True:
            while events:
                if events[0].data == DONE_DATA:
                    return None  # the end is handled by next_delta
                delta = self._take(events.popleft())
                if delta is not None:
                    return delta
            if self._done or not self._read_buffered_events():
                return None

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
            self.usage = chunk.usage.usage()
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            if choice.finish_reason is not None:
                self.finish_reason = choice.finish_reason
            delta = choice.delta
            if delta.reasoning is not UNSET:
                if delta.reasoning and not delta.reasoning_content:
                    delta.reasoning_content = delta.reasoning
                delta.reasoning = UNSET
            if delta.carries_output():
                delta.role = UNSET
                return delta
        return None

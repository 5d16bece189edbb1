"""Google Vertex AI, Gemini models: `generateContent` and `streamGenerateContent?alt=sse`.

`{base_url}/v1/projects/{project}/locations/{region}/publishers/google/models/{model}`,
the base URL defaulting to `https://{region}-aiplatform.googleapis.com`.
Authentication is an OAuth2 access token for a service account, fetched
through google-auth from the key file in `credentials_file` (default:
GOOGLE_APPLICATION_CREDENTIALS), shared by every call and refreshed five
minutes before it expires; a 401 refreshes it and retries once. The stream
is SSE without `[DONE]`: complete only when a candidate's `finishReason`
arrived before the body ended. Safety stops map to `content_filter`, a
prompt blocked outright (`promptFeedback.blockReason`) too; `usageMetadata`
becomes the usage.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping
from datetime import UTC
from urllib.parse import quote

import msgspec
import urllib3
from google.auth.exceptions import GoogleAuthError
from google.auth.transport.urllib3 import Request
from google.oauth2 import service_account

from llmeu.calls.hangup import Hangup
from llmeu.calls.output import (
    AssistantOutput,
    Completion,
    Delta,
    ToolCallDelta,
    ToolCallFunctionDelta,
)
from llmeu.calls.request import ChatRequest
from llmeu.calls.tools import AnyToolCall, FunctionCall, ToolCall
from llmeu.errors import ConfigError, UpstreamError, UpstreamUnavailable
from llmeu.protocol.json_codec import encoder
from llmeu.protocol.sse import SSEDecoder
from llmeu.providers.base import ChatStream, Provider
from llmeu.providers.bearer_tokens import Fetch, TokenSource, post_with_token
from llmeu.providers.decoded_stream import DecodedStream
from llmeu.providers.native_credentials import google_key_file
from llmeu.providers.sdk_logging import quiet_sdk_loggers
from llmeu.providers.transport import HttpClient, Response
from llmeu.providers.upstream_http import Headers, HttpUpstream
from llmeu.providers.vertex_request import (
    Candidate,
    GenerateResponse,
    finish_reason,
    gemini_body,
    new_call_id,
)
from llmeu.routing.catalog import Endpoint

SCOPE = "https://www.googleapis.com/auth/cloud-platform"
_decoder = msgspec.json.Decoder(GenerateResponse)
_HEADERS = [(b"content-type", b"application/json"), (b"user-agent", b"llmeu")]


class GoogleAuthorized:
    """The OAuth2 side every Vertex publisher shares: the service account's token source,
    the project (the endpoint's, else the key's) and `POST` with a bearer that a 401
    refreshes once. The key file is read on `start`, before the first call."""

    def __init__(self, endpoint: Endpoint, client: HttpClient, environ: Mapping[str, str]):
        self.endpoint = endpoint
        self.http = HttpUpstream(endpoint, client)
        self.project = endpoint.upstream.project
        self._key_file = google_key_file(endpoint, environ) or ""
        self._tokens: TokenSource | None = None
        quiet_sdk_loggers()

    async def start(self) -> None:
        fetch, project = await asyncio.to_thread(service_account_fetch, self._key_file)
        if not self.project:
            if not project:
                raise ConfigError("the service-account key names no project: set `project`")
            self.project = project
        self._tokens = TokenSource(fetch)

    def model_path(self, publisher: str) -> str:
        """`/v1/projects/{project}/locations/{region}/publishers/{publisher}/models/{model}`."""
        endpoint = self.endpoint
        return (
            f"/v1/projects/{quote(self.project, safe='')}/locations/"
            f"{quote(endpoint.upstream.region, safe='')}/publishers/{publisher}/models/"
            f"{quote(endpoint.model, safe='')}"
        )

    async def post(
        self, method: str, publisher: str, body: bytes, headers: Headers, hangup: Hangup
    ) -> Response:
        """POST `body` to the model's `:{method}` with a bearer token."""
        if self._tokens is None:
            await self.start()
        assert self._tokens is not None
        path = f"{self.model_path(publisher)}:{method}"
        return await post_with_token(self.http, self._tokens, path, body, headers, hangup)


class VertexProvider(Provider):
    def __init__(self, endpoint: Endpoint, client: HttpClient, environ: Mapping[str, str]):
        super().__init__(endpoint)
        self._google = GoogleAuthorized(endpoint, client, environ)

    async def start(self) -> None:
        await self._google.start()

    async def stream_chat(self, request: ChatRequest, hangup: Hangup) -> ChatStream:
        started = time.monotonic()
        headers = [*_HEADERS, (b"accept", b"text/event-stream")]
        response = await self._google.post("streamGenerateContent?alt=sse", "google",
                                           gemini_body(request), headers, hangup)  # fmt: skip
        return _GeminiStream(self.endpoint, response, started, hangup)

    async def complete_chat(self, request: ChatRequest, hangup: Hangup) -> Completion:
        started = time.monotonic()
        response = await self._google.post("generateContent", "google", gemini_body(request),
                                           _HEADERS, hangup)  # fmt: skip
        raw = await self._google.http.read_all(response, started, hangup)
        try:
            parsed = _decoder.decode(raw)
        except (msgspec.DecodeError, RecursionError) as error:
            raise UpstreamError(f"vertex sent an invalid response: {error}") from None
        return _completion(parsed)


def service_account_fetch(path: str) -> tuple[Fetch, str]:
    """Tokens for the service account of the key file at `path`, and its project (blocking:
    reads the file). A missing or invalid file is a `ConfigError`; the key itself never
    reaches a message."""
    try:
        credentials = service_account.Credentials.from_service_account_file(  # type: ignore[no-untyped-call]
            path, scopes=[SCOPE]
        )
    except (OSError, ValueError, KeyError, GoogleAuthError) as error:
        raise ConfigError(
            f"credentials_file {path!r} is not a readable service-account key "
            f"({type(error).__name__})"
        ) from None
    transport = Request(urllib3.PoolManager(num_pools=1))  # type: ignore[no-untyped-call]

    def fetch() -> tuple[str, float]:
        try:
            credentials.refresh(transport)
        except (GoogleAuthError, OSError) as error:
            raise UpstreamError(
                f"could not obtain a Google access token: {type(error).__name__}",
                retryable=True,
            ) from None
        expiry = credentials.expiry
        expires = expiry.replace(tzinfo=UTC).timestamp() if expiry else time.time() + 300
        return str(credentials.token), expires

    return fetch, str(credentials.project_id or "")


def _completion(parsed: GenerateResponse) -> Completion:
    _raise_error(parsed)
    usage = parsed.usageMetadata.usage() if parsed.usageMetadata else None
    if not parsed.candidates:
        blocked = parsed.promptFeedback is not None and parsed.promptFeedback.blockReason
        if blocked:
            return Completion(AssistantOutput("assistant", None), "content_filter", usage)
        raise UpstreamError("vertex answered without a candidate")
    candidate = parsed.candidates[0]
    texts: list[str] = []
    calls: list[AnyToolCall] = []
    for part in candidate.content.parts if candidate.content else ():
        if part.text and not part.thought:
            texts.append(part.text)
        if part.functionCall is not None:
            arguments = encoder.encode(part.functionCall.args or {}).decode()
            function = FunctionCall(name=part.functionCall.name, arguments=arguments)
            calls.append(ToolCall(id=new_call_id(), function=function))
    message = AssistantOutput("assistant", "".join(texts) or None)
    if calls:
        message.tool_calls = calls
    reason = finish_reason(candidate.finishReason or "STOP", bool(calls))
    return Completion(message, reason, usage)


def _raise_error(parsed: GenerateResponse) -> None:
    error = parsed.error
    if error is None:
        return
    text = f"vertex failed: {error.code}: {error.message[:300]}"
    if error.code == 429 or error.code >= 500:
        raise UpstreamUnavailable(text, upstream_status=error.code)
    raise UpstreamError(text, upstream_status=error.code)


def _delta(candidate: Candidate, first_tool: int = 0) -> Delta:
    """One delta for the parts of one candidate (a stream chunk or a whole answer)."""
    texts: list[str] = []
    thoughts: list[str] = []
    calls: list[ToolCallDelta] = []
    for part in candidate.content.parts if candidate.content else ():
        if part.text and part.thought:
            thoughts.append(part.text)
        elif part.text:
            texts.append(part.text)
        if part.functionCall is not None:
            arguments = encoder.encode(part.functionCall.args or {}).decode()
            function = ToolCallFunctionDelta(name=part.functionCall.name, arguments=arguments)
            calls.append(ToolCallDelta(first_tool + len(calls), new_call_id(), "function",
                                       function))  # fmt: skip
    delta = Delta()
    if texts:
        delta.content = "".join(texts)
    if thoughts:
        delta.reasoning_content = "".join(thoughts)
    if calls:
        delta.tool_calls = calls
    return delta


class _GeminiStream(DecodedStream):
    def __init__(self, endpoint: Endpoint, response: Response, started: float, hangup: Hangup):
        super().__init__(endpoint, response, started, hangup)
        self._sse = SSEDecoder()
        self._tools = 0

    def feed(self, chunk: bytes) -> Iterable[Delta]:
        return self._events(self._sse.feed(chunk))

    def at_end(self) -> Iterable[Delta]:
        deltas = self._events(self._sse.close())
        if self.finish_reason is None:
            raise UpstreamError("vertex stream ended without a finishReason")
        return deltas

    def _events(self, events: Iterable[object]) -> list[Delta]:
        deltas: list[Delta] = []
        for event in events:
            try:
                parsed = _decoder.decode(getattr(event, "data", ""))
            except (msgspec.DecodeError, RecursionError) as error:
                raise UpstreamError(f"vertex sent an invalid chunk: {error}") from None
            _raise_error(parsed)
            if parsed.usageMetadata is not None:
                self.usage = parsed.usageMetadata.usage() or self.usage
            if not parsed.candidates:
                if parsed.promptFeedback is not None and parsed.promptFeedback.blockReason:
                    self.finish_reason = "content_filter"
                continue
            candidate = parsed.candidates[0]
            delta = _delta(candidate, self._tools)
            if isinstance(delta.tool_calls, list):
                self._tools += len(delta.tool_calls)
            if delta.carries_output():
                deltas.append(delta)
            if candidate.finishReason:
                self.finish_reason = finish_reason(candidate.finishReason, self._tools > 0)
        return deltas

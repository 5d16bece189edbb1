"""AWS Bedrock through its Converse and ConverseStream APIs.

`POST {base_url}/model/{modelId}/converse[-stream]`, where `modelId` is the
endpoint's `model`: a model id or a cross-region inference profile such as
`eu.anthropic.claude-sonnet-4-5-20250929-v1:0` (the `eu.` profiles keep
inference inside EU regions). Requests are signed with SigV4
(`providers/aws_signing.py`), or carry a Bedrock API key as a bearer token
when the endpoint names one in `api_key_env`.

A stream is `application/vnd.amazon.eventstream`: binary frames decoded by
botocore's event-stream parser (CRCs checked there), each one event —
`messageStart`, `contentBlockStart/Delta/Stop`, `messageStop`, `metadata`
(usage) — or an exception. Throttling, unavailability and model-stream
errors are retryable: before the first delta another endpoint takes over.
Tool use and reasoning go both ways: OpenAI tool calls ⇄ `toolUse` blocks,
tool messages → `toolResult`, `thinking` → the model's own `thinking` field,
reasoning deltas and signatures → `reasoning_content` / signatures, earlier
turns' `thinking_blocks` → `reasoningContent`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote

import msgspec
from botocore.credentials import RefreshableCredentials
from botocore.eventstream import EventStreamBuffer, ParserError
from botocore.exceptions import BotoCoreError
from msgspec import UNSET, Struct

from llmeu.calls.hangup import Hangup
from llmeu.calls.output import (
    AssistantOutput,
    Completion,
    Delta,
    ToolCallDelta,
    ToolCallFunctionDelta,
    Usage,
)
from llmeu.calls.request import ChatRequest
from llmeu.calls.tools import AnyToolCall, FunctionCall, ToolCall
from llmeu.errors import ConfigError, UpstreamError, UpstreamRejected, UpstreamUnavailable
from llmeu.protocol.json_codec import encoder
from llmeu.providers import chat_mapping as mapping
from llmeu.providers.aws_signing import credentials_from, sign
from llmeu.providers.base import ChatStream, Provider
from llmeu.providers.bedrock_request import converse_body
from llmeu.providers.decoded_stream import DecodedStream
from llmeu.providers.sdk_logging import quiet_sdk_loggers
from llmeu.providers.transport import HttpClient, Response
from llmeu.providers.upstream_http import HttpUpstream
from llmeu.routing.catalog import Endpoint

EVENT_STREAM = "application/vnd.amazon.eventstream"
STOP_REASONS = {
    "end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length",
    "model_context_window_exceeded": "length", "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
}  # fmt: skip
RETRYABLE_EXCEPTIONS = {
    "throttlingException", "serviceUnavailableException", "modelStreamErrorException",
    "internalServerException", "modelNotReadyException", "modelTimeoutException",
}  # fmt: skip


class BedrockProvider(Provider):
    def __init__(
        self,
        endpoint: Endpoint,
        client: HttpClient,
        environ: Mapping[str, str],
        api_key: str | None,
    ):
        super().__init__(endpoint)
        self._http = HttpUpstream(endpoint, client)
        self._environ = environ
        self._api_key = api_key
        self._credentials: Any = None
        model = quote(endpoint.model, safe="")
        self._paths = (f"/model/{model}/converse", f"/model/{model}/converse-stream")
        quiet_sdk_loggers()

    async def start(self) -> None:
        if self._api_key:
            return
        self._credentials = await asyncio.to_thread(credentials_from, self._environ)
        if self._credentials is None:
            raise ConfigError("no AWS credentials found by botocore's credential chain")

    async def stream_chat(self, request: ChatRequest, hangup: Hangup) -> ChatStream:
        started = time.monotonic()
        response = await self._post(self._paths[1], converse_body(request), EVENT_STREAM, hangup)
        return _ConverseStream(self.endpoint, response, started, hangup)

    async def complete_chat(self, request: ChatRequest, hangup: Hangup) -> Completion:
        started = time.monotonic()
        path = self._paths[0]
        response = await self._post(path, converse_body(request), "application/json", hangup)
        raw = await self._http.read_all(response, started, hangup)
        try:
            parsed = _response_decoder.decode(raw)
        except (msgspec.DecodeError, RecursionError) as error:
            raise UpstreamError(f"bedrock sent an invalid Converse response: {error}") from None
        return _completion(parsed)

    async def _post(self, path: str, body: bytes, accept: str, hangup: Hangup) -> Response:
        headers = [("content-type", "application/json"), ("accept", accept)]
        if self._api_key:
            signed = [(k.encode(), v.encode()) for k, v in headers]
            signed.append((b"authorization", b"Bearer " + self._api_key.encode()))
        else:
            if self._credentials is None:
                await self.start()
            origin = self._http.origin
            url = f"{origin.scheme}://{origin.host_header.decode()}{origin.path}{path}"
            signed = sign(
                await self._frozen(), service="bedrock", region=self.endpoint.upstream.region,
                method="POST", url=url, headers=headers, body=body,
            )  # fmt: skip
        return await self._http.post(path, body, signed, hangup)

    async def _frozen(self) -> Any:
        """One consistent key, secret and token for this signature. Credentials from a role
        renew themselves; the renewal (a network call) runs off the event loop."""
        credentials = self._credentials
        if isinstance(credentials, RefreshableCredentials) and credentials.refresh_needed():
            try:
                return await asyncio.to_thread(credentials.get_frozen_credentials)
            except BotoCoreError as error:
                raise UpstreamError(
                    f"could not renew AWS credentials: {type(error).__name__}", retryable=True
                ) from None
        return credentials.get_frozen_credentials()


class _ToolUse(Struct):
    toolUseId: str = ""
    name: str = ""
    input: Any = None


class _ReasoningText(Struct):
    text: str = ""
    signature: str | None = None


class _Reasoning(Struct):
    reasoningText: _ReasoningText | None = None


class _Block(Struct):
    text: str | None = None
    toolUse: _ToolUse | None = None
    reasoningContent: _Reasoning | None = None


class _Message(Struct):
    content: list[_Block] = []


class _Output(Struct):
    message: _Message


class _Usage(Struct):
    inputTokens: int | None = None
    outputTokens: int | None = None
    totalTokens: int | None = None
    cacheReadInputTokens: int | None = None
    cacheWriteInputTokens: int | None = None

    def usage(self) -> Usage | None:
        """Canonical counts: the prompt's count holds what the prompt cache read and wrote
        (Converse's `inputTokens` leaves them out), their share apart."""
        read, written = self.cacheReadInputTokens, self.cacheWriteInputTokens
        if read is None and written is None:
            return mapping.usage(self.inputTokens, self.outputTokens, self.totalTokens)
        uncached = self.inputTokens
        prompt = None if uncached is None else uncached + (read or 0) + (written or 0)
        usage = mapping.usage(prompt, self.outputTokens)
        if usage is not None:
            usage.cache_read_input_tokens = read if read is not None else UNSET
            usage.cache_creation_input_tokens = written if written is not None else UNSET
        return usage


class _ConverseResponse(Struct):
    output: _Output
    stopReason: str = "end_turn"
    usage: _Usage | None = None


_response_decoder = msgspec.json.Decoder(_ConverseResponse)


def _completion(parsed: _ConverseResponse) -> Completion:
    texts: list[str] = []
    calls: list[AnyToolCall] = []
    for block in parsed.output.message.content:
        if block.text:
            texts.append(block.text)
        if block.toolUse is not None:
            use = block.toolUse
            arguments = encoder.encode(use.input or {}).decode()
            function = FunctionCall(name=use.name, arguments=arguments)
            calls.append(ToolCall(id=use.toolUseId, function=function))
    message = AssistantOutput(role="assistant", content="".join(texts) or None)
    if calls:
        message.tool_calls = calls
    reason = STOP_REASONS.get(parsed.stopReason, "stop")
    return Completion(message, reason, parsed.usage.usage() if parsed.usage else None)


class _Start(Struct):
    toolUse: _ToolUse | None = None


class _ToolInput(Struct):
    input: str = ""


class _ReasoningDelta(Struct):
    text: str | None = None
    signature: str | None = None


class _DeltaBody(Struct):
    text: str | None = None
    toolUse: _ToolInput | None = None
    reasoningContent: _ReasoningDelta | None = None


class _Event(Struct):
    """The fields of every ConverseStream event this adapter reads, by event type."""

    contentBlockIndex: int = 0
    start: _Start | None = None
    delta: _DeltaBody | None = None
    stopReason: str | None = None
    usage: _Usage | None = None
    message: str | None = None  # of an exception


_event_decoder = msgspec.json.Decoder(_Event)


class _ConverseStream(DecodedStream):
    def __init__(self, endpoint: Endpoint, response: Response, started: float, hangup: Hangup):
        super().__init__(endpoint, response, started, hangup)
        self._frames = EventStreamBuffer()
        self._tools: dict[int, int] = {}  # content block index → tool call index
        self._stopped = False

    def feed(self, chunk: bytes) -> Iterable[Delta]:
        self._frames.add_data(chunk)
        deltas: list[Delta] = []
        try:
            for frame in self._frames:
                delta = self._event(frame.headers, frame.payload)
                if delta is not None:
                    deltas.append(delta)
        except ParserError as error:
            raise UpstreamError(f"bedrock sent a malformed event-stream frame: {error}") from None
        return deltas

    def at_end(self) -> Iterable[Delta]:
        if not self._stopped:
            raise UpstreamError("bedrock stream ended before messageStop")
        return ()

    def _event(self, headers: dict[str, Any], payload: bytes) -> Delta | None:
        kind = headers.get(":message-type")
        if kind == "exception":
            raise _exception(str(headers.get(":exception-type")), payload)
        if kind != "event":
            raise UpstreamError(f"bedrock stream error: {headers.get(':error-code', kind)}")
        try:
            event = _event_decoder.decode(payload)
        except (msgspec.DecodeError, RecursionError) as error:
            raise UpstreamError(f"bedrock sent an invalid event: {error}") from None
        name = headers.get(":event-type")
        if name == "contentBlockDelta" and event.delta is not None:
            return self._delta(event.contentBlockIndex, event.delta)
        if name == "contentBlockStart" and event.start is not None and event.start.toolUse:
            tool = self._tools[event.contentBlockIndex] = len(self._tools)
            use = event.start.toolUse
            function = ToolCallFunctionDelta(name=use.name, arguments="")
            return Delta(tool_calls=[ToolCallDelta(tool, use.toolUseId, "function", function)])
        if name == "messageStop":
            self._stopped = True
            self.finish_reason = STOP_REASONS.get(event.stopReason or "", "stop")
        elif name == "metadata" and event.usage is not None:
            self.usage = event.usage.usage()
        return None

    def _delta(self, block: int, body: _DeltaBody) -> Delta | None:
        if body.text:
            return Delta(content=body.text)
        if body.toolUse is not None and block in self._tools:
            function = ToolCallFunctionDelta(arguments=body.toolUse.input)
            return Delta(tool_calls=[ToolCallDelta(self._tools[block], function=function)])
        reasoning = body.reasoningContent
        if reasoning is not None and reasoning.text:
            return Delta(reasoning_content=reasoning.text)
        if reasoning is not None and reasoning.signature:
            return Delta(reasoning_signature=reasoning.signature)
        return None


def _exception(name: str, payload: bytes) -> UpstreamError:
    try:
        message = _event_decoder.decode(payload).message or ""
    except (msgspec.DecodeError, RecursionError):
        message = ""
    text = f"bedrock stream failed: {name}: {message[:300]}"
    if name in RETRYABLE_EXCEPTIONS:
        return UpstreamUnavailable(text)
    if name == "validationException":
        return UpstreamRejected(text)
    return UpstreamError(text, retryable=True)

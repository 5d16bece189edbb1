"""`Client` and `AsyncClient`: chat completions from llmeu or any OpenAI-compatible server.

Decisions:

- `chat()` streams under the hood and returns the assembled result, so TTFT
  and TPOT are real measurements and a cut connection is detected, exactly as
  with `stream_chat()`. A server that answers a streaming request with a plain
  `application/json` completion is read as that completion.
- `stream_chat()` yields the output deltas as they arrive and the final
  `ChatResult` last. It asks for usage (`stream_options.include_usage`);
  a server that does not send it leaves `usage` at `None`.
- Reading stops at `[DONE]` or at an error frame and the connection is
  closed then, so a server that keeps it open afterwards cannot hang us.
  Leaving the iteration early, or Ctrl-C, closes the connection at once: that
  is how the gateway learns that the caller hung up and cancels the call.
- Configuration is explicit: nothing is read from the environment here.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any, Self

import httpx
import msgspec

from llmeu import __version__
from llmeu.client._assembler import ChatStreamAssembler, parse_completion
from llmeu.client._errors import (
    APIConnectionError,
    APITimeoutError,
    IncompleteStreamError,
    MalformedStreamError,
    status_error,
)
from llmeu.client._timings import TimingRecorder
from llmeu.client._types import ChatDelta, ChatResult, ContentDelta, ErrorInfo
from llmeu.protocol.sse import ServerSentEvent, SSEDecoder

DEFAULT_TIMEOUT = httpx.Timeout(120.0, connect=10.0)
"""Reads wait up to two minutes: a large model's first token can be slow in coming."""

Messages = str | Sequence[Mapping[str, Any]]
"""A prompt (sent as one user message) or OpenAI-shaped messages."""

StreamItem = ChatDelta | ChatResult
Clock = Callable[[], float]


def _request_body(
    messages: Messages,
    model: str,
    policy: str | None,
    include_usage: bool,
    params: Mapping[str, Any],
) -> bytes:
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    body: dict[str, Any] = {"model": model, "messages": list(messages), **params, "stream": True}
    if include_usage:
        body["stream_options"] = {**body.get("stream_options", {}), "include_usage": True}
    if policy is not None:
        body["llmeu"] = {**body.get("llmeu", {}), "policy_id": policy}
    return msgspec.json.encode(body)


def _headers(api_key: str | None, extra: Mapping[str, str] | None) -> dict[str, str]:
    headers = {"user-agent": f"llmeu-client/{__version__}", "accept": "text/event-stream"}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    headers.update(extra or {})
    return headers


def _raise_for_status(response: httpx.Response, body: bytes) -> None:
    if response.is_success:
        return
    try:
        payload = msgspec.json.decode(body)
    except msgspec.DecodeError:
        payload = None
    error = payload.get("error") if isinstance(payload, dict) else None
    if error is None:
        text = body.decode("utf-8", "replace").strip()
        error = text or response.reason_phrase or f"HTTP {response.status_code}"
    raise status_error(response.status_code, ErrorInfo.from_payload(error), body, response.headers)


def _is_json(response: httpx.Response) -> bool:
    content_type: str = response.headers.get("content-type", "")
    return content_type.startswith("application/json")


def _connection_error(exc: httpx.TransportError) -> APIConnectionError:
    if isinstance(exc, httpx.TimeoutException):
        return APITimeoutError(f"timed out waiting for the server: {exc!r}")
    return APIConnectionError(f"could not reach the server: {exc!r}")


class _StreamReader:
    """Bytes of one response in, deltas out; the part both clients share."""

    def __init__(self, recorder: TimingRecorder) -> None:
        self._recorder = recorder
        self._decoder = SSEDecoder()
        self._assembler = ChatStreamAssembler()

    @property
    def ended(self) -> bool:
        return self._assembler.ended

    def feed(self, data: bytes) -> list[ChatDelta]:
        return self._fold(self._decoder.feed(data))

    def finish(self, cut: httpx.TransportError | None = None) -> ChatResult:
        """End of input; raises the `IncompleteStreamError` family, with timings attached."""
        if not self.ended:
            self._fold(self._decoder.close())
        try:
            result = self._assembler.finish()
        except IncompleteStreamError as exc:
            exc.result = self._timed(exc.result)
            if cut is None or type(exc) is not IncompleteStreamError:
                raise
            message = f"the connection broke before [DONE] ({cut!r})"
            raise IncompleteStreamError(message, exc.result) from cut
        return self._timed(result)

    def completion(self, body: bytes) -> ChatResult:
        """A plain JSON completion in answer to a streaming request."""
        try:
            result = parse_completion(body)
        except msgspec.MsgspecError as exc:
            text = body.decode("utf-8", "replace")
            raise MalformedStreamError(
                f"the response is not a chat completion ({exc})", ChatResult(), text
            ) from exc
        if result.content or result.tool_calls:
            self._recorder.content()
        return self._timed(result)

    def _fold(self, events: list[ServerSentEvent]) -> list[ChatDelta]:
        deltas: list[ChatDelta] = []
        for event in events:
            deltas.extend(self._assembler.fold(event))
        for _ in deltas:
            self._recorder.content()
        return deltas

    def _timed(self, result: ChatResult) -> ChatResult:
        tokens = result.usage.completion_tokens if result.usage is not None else None
        timings = self._recorder.finish(tokens)
        return dataclasses.replace(result, timings=timings)


class ChatStream:
    """One streaming call: iterate for deltas then the `ChatResult`; close to hang up.

    `headers` holds the response headers once the status line arrived, and
    `result` the final result once the iteration is over.
    """

    def __init__(self, http: httpx.Client, request: httpx.Request, clock: Clock) -> None:
        self._http = http
        self._request = request
        self._clock = clock
        self._response: httpx.Response | None = None
        self.headers: httpx.Headers | None = None
        self.result: ChatResult | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if self._response is not None:
            self._response.close()

    def __iter__(self) -> Iterator[StreamItem]:
        recorder = TimingRecorder(self._clock)
        try:
            response = self._http.send(self._request, stream=True)
        except httpx.TransportError as exc:
            raise _connection_error(exc) from exc
        self._response = response
        self.headers = response.headers
        reader = _StreamReader(recorder)
        try:
            if not response.is_success or _is_json(response):
                body = self._read_all(response)
                _raise_for_status(response, body)
                self.result = reader.completion(body)
                if self.result.content:
                    yield ContentDelta(self.result.content)
                yield self.result
                return
            cut: httpx.TransportError | None = None
            try:
                for data in response.iter_bytes():
                    yield from reader.feed(data)
                    if reader.ended:
                        break
            except httpx.TransportError as exc:
                cut = exc
            self.result = reader.finish(cut)
            yield self.result
        finally:
            response.close()

    @staticmethod
    def _read_all(response: httpx.Response) -> bytes:
        try:
            return response.read()
        except httpx.TransportError as exc:
            raise _connection_error(exc) from exc


class AsyncChatStream:
    """The asynchronous `ChatStream`: `async for` over it, `async with` to hang up."""

    def __init__(self, http: httpx.AsyncClient, request: httpx.Request, clock: Clock) -> None:
        self._http = http
        self._request = request
        self._clock = clock
        self._response: httpx.Response | None = None
        self.headers: httpx.Headers | None = None
        self.result: ChatResult | None = None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._response is not None:
            await self._response.aclose()

    async def __aiter__(self) -> AsyncIterator[StreamItem]:
        recorder = TimingRecorder(self._clock)
        try:
            response = await self._http.send(self._request, stream=True)
        except httpx.TransportError as exc:
            raise _connection_error(exc) from exc
        self._response = response
        self.headers = response.headers
        reader = _StreamReader(recorder)
        try:
            if not response.is_success or _is_json(response):
                body = await self._read_all(response)
                _raise_for_status(response, body)
                self.result = reader.completion(body)
                if self.result.content:
                    yield ContentDelta(self.result.content)
                yield self.result
                return
            cut: httpx.TransportError | None = None
            try:
                async for data in response.aiter_bytes():
                    for delta in reader.feed(data):
                        yield delta
                    if reader.ended:
                        break
            except httpx.TransportError as exc:
                cut = exc
            self.result = reader.finish(cut)
            yield self.result
        finally:
            await response.aclose()

    @staticmethod
    async def _read_all(response: httpx.Response) -> bytes:
        try:
            return await response.aread()
        except httpx.TransportError as exc:
            raise _connection_error(exc) from exc


class _ClientBase:
    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        headers: Mapping[str, str] | None,
        clock: Clock,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = _headers(api_key, headers)
        self._clock = clock

    def _chat_request(
        self,
        messages: Messages,
        model: str,
        policy: str | None,
        include_usage: bool,
        params: Mapping[str, Any],
    ) -> httpx.Request:
        body = _request_body(messages, model, policy, include_usage, params)
        headers = {**self._headers, "content-type": "application/json"}
        return httpx.Request(
            "POST", f"{self.base_url}/chat/completions", headers=headers, content=body
        )


class Client(_ClientBase):
    """A synchronous client. `base_url` ends at the API root, e.g. `http://host:8080/v1`."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.Client | None = None,
        clock: Clock = time.perf_counter,
    ) -> None:
        super().__init__(base_url, api_key, headers, clock)
        self._owns_http = http_client is None
        self._http = http_client if http_client is not None else httpx.Client(timeout=timeout)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def stream_chat(
        self,
        messages: Messages,
        *,
        model: str,
        policy: str | None = None,
        include_usage: bool = True,
        **params: Any,
    ) -> ChatStream:
        """Start a streaming chat completion; `params` are further body fields."""
        request = self._chat_request(messages, model, policy, include_usage, params)
        return ChatStream(self._http, request, self._clock)

    def chat(
        self,
        messages: Messages,
        *,
        model: str,
        policy: str | None = None,
        include_usage: bool = True,
        **params: Any,
    ) -> ChatResult:
        """The complete answer; raises the `IncompleteStreamError` family otherwise."""
        with self.stream_chat(
            messages, model=model, policy=policy, include_usage=include_usage, **params
        ) as stream:
            for _ in stream:
                pass
        assert stream.result is not None
        return stream.result


class AsyncClient(_ClientBase):
    """The asynchronous `Client`, on `httpx.AsyncClient`."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        clock: Clock = time.perf_counter,
    ) -> None:
        super().__init__(base_url, api_key, headers, clock)
        self._owns_http = http_client is None
        self._http = http_client if http_client is not None else httpx.AsyncClient(timeout=timeout)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    def stream_chat(
        self,
        messages: Messages,
        *,
        model: str,
        policy: str | None = None,
        include_usage: bool = True,
        **params: Any,
    ) -> AsyncChatStream:
        request = self._chat_request(messages, model, policy, include_usage, params)
        return AsyncChatStream(self._http, request, self._clock)

    async def chat(
        self,
        messages: Messages,
        *,
        model: str,
        policy: str | None = None,
        include_usage: bool = True,
        **params: Any,
    ) -> ChatResult:
        async with self.stream_chat(
            messages, model=model, policy=policy, include_usage=include_usage, **params
        ) as stream:
            async for _ in stream:
                pass
        assert stream.result is not None
        return stream.result

"""Reading one streaming response: `ChatStream` and `AsyncChatStream`.

Both share `_StreamReader` (bytes in, deltas out, timings kept) and differ
only in how they wait for the bytes. Reading stops at `[DONE]` or at an
error frame and the connection is closed then, so a server that keeps it open
afterwards cannot hang us. Leaving the iteration early, or Ctrl-C, closes the
connection at once: that is how the gateway learns that the caller hung up.

A failure before the status line is an `APIConnectionError`; a non-2xx status
an `APIStatusError`; anything after a 2xx status line, including a broken
connection or a read timeout, ends the stream and raises the
`IncompleteStreamError` family with the text received.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Literal, Self

import httpx
import msgspec

from llmeu.client._assembler import ChatStreamAssembler, parse_completion
from llmeu.client._errors import (
    APIConnectionError,
    APITimeoutError,
    IncompleteStreamError,
    MalformedStreamError,
    status_error,
)
from llmeu.client._fold import StreamFold
from llmeu.client._responses_assembler import ResponsesStreamAssembler, parse_response
from llmeu.client._timings import TimingRecorder
from llmeu.client._types import ChatDelta, ChatResult, ContentDelta, ErrorInfo
from llmeu.protocol.sse import ServerSentEvent, SSEDecoder

StreamItem = ChatDelta | ChatResult
Clock = Callable[[], float]
Api = Literal["chat", "responses"]
"""The wire a stream speaks: chat completions, or the Responses API's typed events."""


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


def _connection_error(exc: httpx.RequestError) -> APIConnectionError:
    if isinstance(exc, httpx.TimeoutException):
        return APITimeoutError(f"timed out waiting for the server: {exc!r}")
    return APIConnectionError(f"could not reach the server: {exc!r}")


class _StreamReader:
    """One response in, deltas out, timings kept: the part both streams share.

    Created just before the request is sent, because that starts the clock.
    """

    def __init__(self, clock: Clock, api: Api) -> None:
        self._recorder = TimingRecorder(clock)
        self._decoder = SSEDecoder()
        self._api = api
        self._assembler: StreamFold = (
            ResponsesStreamAssembler() if api == "responses" else ChatStreamAssembler()
        )
        self.result: ChatResult | None = None

    @property
    def ended(self) -> bool:
        return self._assembler.ended

    def feed(self, data: bytes) -> list[ChatDelta]:
        deltas: list[ChatDelta] = []
        for event in self._decoder.feed(data):
            deltas.extend(self._fold(event))
        return deltas

    def finish(self, cut: httpx.RequestError | None = None) -> ChatResult:
        """End of input; raises the `IncompleteStreamError` family, with timings attached."""
        if not self.ended:
            for event in self._decoder.close():
                self._fold(event)
        try:
            self.result = self._timed(self._assembler.finish())
        except IncompleteStreamError as exc:
            exc.result = self._timed(exc.result)
            if cut is None or type(exc) is not IncompleteStreamError:
                raise
            end = "its terminal event" if self._api == "responses" else "[DONE]"
            message = f"reading the stream failed before {end}: {cut!r}"
            raise IncompleteStreamError(message, exc.result) from cut
        return self.result

    def whole_body(self, response: httpx.Response, body: bytes) -> list[StreamItem]:
        """An error status, or a plain JSON completion in answer to a streaming request."""
        _raise_for_status(response, body)
        try:
            result = parse_response(body) if self._api == "responses" else parse_completion(body)
        except msgspec.MsgspecError as exc:
            text = body.decode("utf-8", "replace")
            what = "a response object" if self._api == "responses" else "a chat completion"
            message = f"the response is not {what} ({exc})"
            raise MalformedStreamError(message, ChatResult(), text) from exc
        if result.content or result.tool_calls:
            self._recorder.content()
        self.result = self._timed(result)
        return [ContentDelta(result.content), self.result] if result.content else [self.result]

    def _fold(self, event: ServerSentEvent) -> list[ChatDelta]:
        deltas = self._assembler.fold(event)
        for _ in deltas:
            self._recorder.content()
        return deltas

    def _timed(self, result: ChatResult) -> ChatResult:
        tokens = result.usage.completion_tokens if result.usage is not None else None
        return dataclasses.replace(result, timings=self._recorder.finish(tokens))


def _is_event_stream(response: httpx.Response) -> bool:
    # Anything but JSON on a 2xx is read as an event stream: some servers label it text/plain.
    content_type: str = response.headers.get("content-type", "")
    return response.is_success and not content_type.startswith("application/json")


class ChatStream:
    """One streaming call: iterate for deltas then the `ChatResult`; close to hang up.

    `headers` holds the response headers once the status line arrived, and
    `result` the final result once the iteration is over.
    """

    def __init__(
        self, http: httpx.Client, request: httpx.Request, clock: Clock, api: Api = "chat"
    ) -> None:
        self._http = http
        self._api = api
        self._request = request
        self._clock = clock
        self._response: httpx.Response | None = None
        self._reader: _StreamReader | None = None
        self.headers: httpx.Headers | None = None

    @property
    def result(self) -> ChatResult | None:
        return self._reader.result if self._reader is not None else None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if self._response is not None:
            self._response.close()

    def __iter__(self) -> Iterator[StreamItem]:
        reader = self._reader = _StreamReader(self._clock, self._api)
        try:
            response = self._response = self._http.send(self._request, stream=True)
        except httpx.RequestError as exc:
            raise _connection_error(exc) from exc
        self.headers = response.headers
        cut: httpx.RequestError | None = None
        try:
            if not _is_event_stream(response):
                try:
                    body = response.read()
                except httpx.RequestError as exc:
                    raise _connection_error(exc) from exc
                yield from reader.whole_body(response, body)
                return
            try:
                for data in response.iter_bytes():
                    yield from reader.feed(data)
                    if reader.ended:
                        break
            except httpx.RequestError as exc:
                cut = exc
        finally:
            response.close()
        yield reader.finish(cut)


class AsyncChatStream:
    """The asynchronous `ChatStream`: `async for` over it, `async with` to hang up."""

    def __init__(
        self, http: httpx.AsyncClient, request: httpx.Request, clock: Clock, api: Api = "chat"
    ) -> None:
        self._http = http
        self._api = api
        self._request = request
        self._clock = clock
        self._response: httpx.Response | None = None
        self._reader: _StreamReader | None = None
        self.headers: httpx.Headers | None = None

    @property
    def result(self) -> ChatResult | None:
        return self._reader.result if self._reader is not None else None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._response is not None:
            await self._response.aclose()

    async def __aiter__(self) -> AsyncIterator[StreamItem]:
        reader = self._reader = _StreamReader(self._clock, self._api)
        try:
            response = self._response = await self._http.send(self._request, stream=True)
        except httpx.RequestError as exc:
            raise _connection_error(exc) from exc
        self.headers = response.headers
        cut: httpx.RequestError | None = None
        try:
            if not _is_event_stream(response):
                try:
                    body = await response.aread()
                except httpx.RequestError as exc:
                    raise _connection_error(exc) from exc
                for item in reader.whole_body(response, body):
                    yield item
                return
            try:
                async for data in response.aiter_bytes():
                    for delta in reader.feed(data):
                        yield delta
                    if reader.ended:
                        break
            except httpx.RequestError as exc:
                cut = exc
        finally:
            await response.aclose()
        yield reader.finish(cut)

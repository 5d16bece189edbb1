"""`Client` and `AsyncClient`: chat completions from llmeu or any OpenAI-compatible server.

Decisions:

- `chat()` streams under the hood and returns the assembled result, so TTFT
  and TPOT are real measurements and a cut connection is detected, exactly as
  with `stream_chat()`. A server that answers a streaming request with a plain
  `application/json` completion is read as that completion.
- `stream_chat()` yields the output deltas as they arrive and the final
  `ChatResult` last. It asks for usage (`stream_options.include_usage`,
  unless `stream_options` says otherwise); a server that does not send it
  leaves `usage` at `None`.
- Further keyword arguments are body fields (`temperature`, `tools`, ...),
  sent as given; `policy` becomes `llmeu.policy_id`.
- Configuration is explicit: nothing is read from the environment here.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Self

import httpx
import msgspec

from llmeu import __version__
from llmeu.client._stream import AsyncChatStream, ChatStream, Clock
from llmeu.client._types import ChatResult
from llmeu.protocol.base_url import api_root

DEFAULT_TIMEOUT = httpx.Timeout(120.0, connect=10.0)
"""Reads wait up to two minutes: a large model's first token can be slow in coming."""

Messages = str | Sequence[Mapping[str, Any]]
"""A prompt (sent as one user message) or OpenAI-shaped messages."""


def _request_body(
    messages: Messages, model: str, policy: str | None, params: Mapping[str, Any]
) -> bytes:
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    body: dict[str, Any] = {"model": model, "messages": list(messages), **params, "stream": True}
    # Usage is asked for unless the caller said otherwise in `stream_options`.
    body["stream_options"] = {"include_usage": True, **body.get("stream_options", {})}
    if policy is not None:
        body["llmeu"] = {**body.get("llmeu", {}), "policy_id": policy}
    return msgspec.json.encode(body)


def _headers(api_key: str | None, extra: Mapping[str, str] | None) -> dict[str, str]:
    headers = {"user-agent": f"llmeu-client/{__version__}", "accept": "text/event-stream"}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    headers.update(extra or {})
    return headers


class _ClientBase:
    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        headers: Mapping[str, str] | None,
        clock: Clock,
    ) -> None:
        self.base_url = api_root(base_url)
        self._headers = _headers(api_key, headers)
        self._clock = clock

    def _chat_request(
        self,
        messages: Messages,
        model: str,
        policy: str | None,
        params: Mapping[str, Any],
    ) -> httpx.Request:
        body = _request_body(messages, model, policy, params)
        headers = {**self._headers, "content-type": "application/json"}
        return httpx.Request(
            "POST", f"{self.base_url}/chat/completions", headers=headers, content=body
        )

    def _responses_request(
        self, input: Messages, model: str, policy: str | None, params: Mapping[str, Any]
    ) -> httpx.Request:
        items = input if isinstance(input, str) else list(input)
        body: dict[str, Any] = {"model": model, "input": items, **params, "stream": True}
        if policy is not None:
            body["llmeu"] = {**body.get("llmeu", {}), "policy_id": policy}
        headers = {**self._headers, "content-type": "application/json"}
        return httpx.Request(
            "POST", f"{self.base_url}/responses", headers=headers, content=msgspec.json.encode(body)
        )


class Client(_ClientBase):
    """A synchronous client. `base_url` is the API root (`http://host:8080/v1`) or, for
    llmeu, the gateway's root (`http://host:8080`): a URL without a path gets `/v1`."""

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
        **params: Any,
    ) -> ChatStream:
        """Start a streaming chat completion; `params` are further body fields."""
        request = self._chat_request(messages, model, policy, params)
        return ChatStream(self._http, request, self._clock)

    def chat(
        self,
        messages: Messages,
        *,
        model: str,
        policy: str | None = None,
        **params: Any,
    ) -> ChatResult:
        """The complete answer; raises the `IncompleteStreamError` family otherwise."""
        with self.stream_chat(messages, model=model, policy=policy, **params) as stream:
            for _ in stream:
                pass
        assert stream.result is not None
        return stream.result

    def stream_response(
        self, input: Messages, *, model: str, policy: str | None = None, **params: Any
    ) -> ChatStream:
        """Start a streamed Responses-API call (`POST /responses`); `input` is a string or
        input items, `params` further body fields. Complete only with its terminal event."""
        request = self._responses_request(input, model, policy, params)
        return ChatStream(self._http, request, self._clock, api="responses")


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
        **params: Any,
    ) -> AsyncChatStream:
        request = self._chat_request(messages, model, policy, params)
        return AsyncChatStream(self._http, request, self._clock)

    async def chat(
        self,
        messages: Messages,
        *,
        model: str,
        policy: str | None = None,
        **params: Any,
    ) -> ChatResult:
        async with self.stream_chat(messages, model=model, policy=policy, **params) as stream:
            async for _ in stream:
                pass
        assert stream.result is not None
        return stream.result

    def stream_response(
        self, input: Messages, *, model: str, policy: str | None = None, **params: Any
    ) -> AsyncChatStream:
        request = self._responses_request(input, model, policy, params)
        return AsyncChatStream(self._http, request, self._clock, api="responses")

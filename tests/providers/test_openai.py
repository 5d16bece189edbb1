"""The OpenAI-compatible provider against a real socket: what it sends, how it reads streams,
and how each upstream failure becomes an error of the tree."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest

from llmeu.calls.hangup import Hangup
from llmeu.calls.request import ChatRequest
from llmeu.errors import (
    ClientDisconnected,
    UpstreamError,
    UpstreamRejected,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from llmeu.providers.openai import OpenAIProvider
from llmeu.providers.transport import HttpClient
from llmeu.routing.catalog import Endpoint, EndpointKind, Prices, SovereigntyClass, Timeouts
from llmeu.routing.durations import ZERO
from tests.support.scripted_http import (
    LAST_CHUNK,
    Script,
    ScriptedServer,
    chunk,
    json_response,
    sse_response,
)


def request(**fields: Any) -> ChatRequest:
    body = {"model": "alias", "messages": [{"role": "user", "content": "hi"}], **fields}
    return msgspec.json.decode(json.dumps(body), type=ChatRequest)


def frame(delta: dict[str, Any] | None = None, finish: str | None = None, **top: Any) -> bytes:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return b"data: " + json.dumps({"id": "c", "choices": choices, **top}).encode() + b"\n\n"


DONE = b"data: [DONE]\n\n"
USAGE = {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}


@pytest.fixture
async def server() -> AsyncIterator[ScriptedServer]:
    async with ScriptedServer() as running:
        yield running


@pytest.fixture
async def provider(server: ScriptedServer) -> AsyncIterator[OpenAIProvider]:
    endpoint = Endpoint(
        endpoint_id="e", provider="p", kind=EndpointKind.OPENAI, model="upstream-model",
        model_version="1", aliases=("alias",), inference_region="r", country="FR",
        sovereignty_class=SovereigntyClass.EU_SOVEREIGN, retention=ZERO,
        prices=Prices(0.0, 0.0), base_url=server.base_url,
        timeouts=Timeouts(connect=2, first_token=0.5, idle=0.5, total=5),
    )  # fmt: skip
    client = HttpClient()
    yield OpenAIProvider(endpoint, client, "sk-upstream")
    await client.aclose()


async def collect(provider: OpenAIProvider, req: ChatRequest) -> tuple[list[Any], Any]:
    stream = await provider.stream_chat(req, Hangup())
    deltas = []
    while (delta := await stream.next_delta()) is not None:
        deltas.append(msgspec.to_builtins(delta))
    return deltas, stream


async def test_the_request_goes_out_under_the_endpoints_model_asking_for_usage(
    server: ScriptedServer, provider: OpenAIProvider
) -> None:
    server.scripts.append(Script([sse_response(frame({"content": "a"}), DONE) + LAST_CHUNK]))
    await collect(provider, request(temperature=0.5, llmeu={"allow_classes": ["on_premise"]}))
    sent = server.received[0]
    assert (sent.method, sent.path) == ("POST", "/v1/chat/completions")
    assert sent.headers["authorization"] == "Bearer sk-upstream"
    body = sent.json()
    assert body["model"] == "upstream-model" and body["temperature"] == 0.5
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert "llmeu" not in body


async def test_reasoning_handed_back_and_tool_error_flags_stay_with_llmeu(
    server: ScriptedServer, provider: OpenAIProvider
) -> None:
    server.scripts.append(Script([json_response(200, {"choices": [{"message": {
        "role": "assistant", "content": "ok"}}]})]))  # fmt: skip
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "x", "tool_calls": [
            {"id": "t", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
         "thinking_blocks": [{"type": "thinking", "thinking": "hm", "signature": "s"}]},
        {"role": "tool", "tool_call_id": "t", "content": "boom", "is_error": True},
    ]  # fmt: skip
    await provider.complete_chat(request(messages=messages), Hangup())
    sent = server.received[0].json()["messages"]
    assert "thinking_blocks" not in sent[1] and "is_error" not in sent[2]
    assert sent[1]["tool_calls"][0]["id"] == "t"


async def test_thinking_is_the_requests_error_here(provider: OpenAIProvider) -> None:
    with pytest.raises(UpstreamRejected) as refused:
        await provider.complete_chat(request(thinking={"type": "enabled"}), Hangup())
    assert refused.value.param == "thinking"


async def test_deltas_usage_and_finish_whatever_the_reads(
    server: ScriptedServer, provider: OpenAIProvider
) -> None:
    events = [
        frame({"role": "assistant", "content": ""}),
        frame({"content": "Hel"}),
        frame({"tool_calls": [{"index": 0, "id": "t1", "type": "function",
                               "function": {"name": "f", "arguments": ""}}]}),
        frame({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}),
        frame({}, "tool_calls"),
        frame(None, usage=USAGE),
        DONE,
    ]  # fmt: skip
    body = sse_response(*events)
    # the head and two events in one write, then the rest split in the middle of a line
    cut = body.index(events[2][:10])
    server.scripts.append(Script([body[:cut], body[cut : cut + 7], body[cut + 7 :] + LAST_CHUNK]))
    deltas, stream = await collect(provider, request())
    assert deltas == [
        {"content": "Hel"},
        {"tool_calls": [{"index": 0, "id": "t1", "type": "function",
                         "function": {"name": "f", "arguments": ""}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]},
    ]  # fmt: skip
    assert stream.finish_reason == "tool_calls"
    assert msgspec.to_builtins(stream.usage) == USAGE


async def test_no_usage_stays_none(server: ScriptedServer, provider: OpenAIProvider) -> None:
    server.scripts.append(Script([sse_response(frame({"content": "a"}, "stop"), DONE), LAST_CHUNK]))
    _, stream = await collect(provider, request())
    assert stream.usage is None and stream.finish_reason == "stop"


@pytest.mark.parametrize(
    ("events", "message"),
    [
        ([frame({"content": "a"}), b"data: {not json\n\n"], "invalid chunk"),
        ([frame({"content": "a"}), b'data: {"error": {"message": "overloaded"}}\n\n'],
         "failed mid-stream: overloaded"),
        ([frame({"content": "a"}), b"event: error\ndata: boom\n\n"], "error event"),
        ([frame({"content": "a"})], "ended without [DONE]"),
    ],
    ids=["invalid-json", "error-payload", "error-event", "missing-done"],
)  # fmt: skip
async def test_a_malformed_or_broken_stream_fails(
    server: ScriptedServer, provider: OpenAIProvider, events: list[bytes], message: str
) -> None:
    server.scripts.append(Script([sse_response(*events) + LAST_CHUNK]))
    stream = await provider.stream_chat(request(), Hangup())
    assert await stream.next_delta() is not None

    async def drain() -> None:
        while await stream.next_delta() is not None:
            pass

    with pytest.raises(UpstreamError) as failed:
        await drain()
    assert message in failed.value.message


@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [
        (400, UpstreamRejected, False),
        (401, UpstreamError, True),
        (404, UpstreamError, True),
        (408, UpstreamTimeout, True),
        (413, UpstreamRejected, False),
        (422, UpstreamRejected, False),
        (429, UpstreamUnavailable, True),
        (500, UpstreamUnavailable, True),
        (503, UpstreamUnavailable, True),
    ],
)
async def test_each_status_is_its_error(
    server: ScriptedServer,
    provider: OpenAIProvider,
    status: int,
    kind: type[UpstreamError],
    retryable: bool,
) -> None:
    server.scripts.append(Script([json_response(status, {"error": {"message": "said so"}})]))
    with pytest.raises(UpstreamError) as failed:
        await provider.complete_chat(request(), Hangup())
    error = failed.value
    assert type(error) is kind and error.retryable is retryable
    assert error.upstream_status == status
    assert error.message == f"upstream answered {status}: said so"


async def test_a_silent_upstream_is_a_timeout(
    server: ScriptedServer, provider: OpenAIProvider
) -> None:
    server.scripts.append(Script([sse_response(frame({"content": "a"})), b""], hold=True))
    stream = await provider.stream_chat(request(), Hangup())
    assert await stream.next_delta() is not None
    with pytest.raises(UpstreamTimeout):
        await stream.next_delta()


async def test_a_hang_up_closes_the_upstream_before_its_next_chunk(
    server: ScriptedServer, provider: OpenAIProvider
) -> None:
    parts = [sse_response(frame({"content": "a"}))] + [chunk(frame({"content": "b"}))] * 5
    server.scripts.append(Script(parts, pause=0.3))
    hangup = Hangup()
    stream = await provider.stream_chat(request(), hangup)
    assert await stream.next_delta() is not None
    hangup.fire()
    with pytest.raises(ClientDisconnected):
        await stream.next_delta()
    await server.closed_by_client.wait()
    assert server.parts_written == [1]


async def test_a_whole_completion(server: ScriptedServer, provider: OpenAIProvider) -> None:
    server.scripts.append(Script([json_response(200, {
        "choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
        "usage": USAGE})]))  # fmt: skip
    completion = await provider.complete_chat(request(stream=True), Hangup())
    assert completion.message.content == "hi" and completion.finish_reason == "stop"
    assert msgspec.to_builtins(completion.usage) == USAGE
    assert "stream" not in server.received[0].json()


@pytest.mark.parametrize("body", [b"not json", b'{"choices": []}'], ids=["invalid", "no-choices"])
async def test_an_unreadable_completion_fails(
    server: ScriptedServer, provider: OpenAIProvider, body: bytes
) -> None:
    head = f"HTTP/1.1 200 OK\r\ncontent-length: {len(body)}\r\n\r\n".encode()
    server.scripts.append(Script([head + body]))
    with pytest.raises(UpstreamError):
        await provider.complete_chat(request(), Hangup())


@pytest.mark.parametrize("name", ["reasoning_content", "reasoning"])
async def test_reasoning_deltas_under_either_name_are_reasoning_content(
    server: ScriptedServer, provider: OpenAIProvider, name: str
) -> None:
    frames = frame({name: "hm"}) + frame({"content": "a"}, "stop")
    server.scripts.append(Script([sse_response(frames, DONE) + LAST_CHUNK]))
    deltas, _ = await collect(provider, request())
    assert deltas == [{"reasoning_content": "hm"}, {"content": "a"}]

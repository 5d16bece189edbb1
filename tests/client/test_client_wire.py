"""`Client` and `AsyncClient` against a server that sends exactly the bytes under test.

Every test runs twice, once per client, through `run` (the synchronous client
runs in a worker thread so that both share one async test body).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx
import pytest

from llmeu.client import (
    APIConnectionError,
    AsyncClient,
    AuthenticationError,
    ChatResult,
    Client,
    ContentDelta,
    IncompleteStreamError,
    MalformedStreamError,
    NoCompliantRouteError,
    RateLimitError,
    RoutingBlock,
    ServerError,
    StreamError,
    StreamItem,
    Usage,
)
from tests.support.client_wire_server import Reply, WireServer, sse

E = TypeVar("E", bound=Exception)
Run = Callable[..., Awaitable[tuple[list[StreamItem], ChatResult]]]


def chunk(content: str | None = None, finish: str | None = None, **top: Any) -> str:
    delta = {} if content is None else {"content": content}
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return json.dumps({"id": "chatcmpl-7", "choices": [choice], **top}, ensure_ascii=False)


ROLE = json.dumps({"id": "chatcmpl-7", "choices": [{"index": 0, "delta": {"role": "assistant"}}]})
USAGE = json.dumps(
    {"choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 3, "total_tokens": 7}}
)
# A server holds a body open for HOLD seconds, well under the clients' 30 s read
# timeout: a client that did not stop by itself would see the body end normally.
HOLD = 10
ROUTING: dict[str, Any] = {"trace_id": "trc_42", "provider": "local", "inference_region": "fr-par"}


def hello(*, done: bool = True) -> list[bytes]:
    frames = [ROLE, chunk("Hel"), chunk("lo"), chunk(finish="stop", llmeu=ROUTING), USAGE]
    return sse(*frames, *(["[DONE]"] if done else []))


def counting_clock() -> Callable[[], float]:
    """A clock that ticks once per reading: timings become exact and independent of speed."""
    ticks = itertools.count()
    return lambda: float(next(ticks))


def run_sync(url: str, clock: Callable[[], float], **kwargs: Any) -> Any:
    items: list[StreamItem] = []
    with (
        Client(url, api_key="sk-test", timeout=30, clock=clock) as client,
        client.stream_chat("Hi", model="m", **kwargs) as stream,
    ):
        items.extend(stream)
    assert stream.result is not None
    return items, stream.result


async def run_async(url: str, clock: Callable[[], float], **kwargs: Any) -> Any:
    items: list[StreamItem] = []
    async with (
        AsyncClient(url, api_key="sk-test", timeout=30, clock=clock) as client,
        client.stream_chat("Hi", model="m", **kwargs) as stream,
    ):
        async for item in stream:
            items.append(item)
    assert stream.result is not None
    return items, stream.result


async def failure(run: Run, reply: Reply, expected: type[E]) -> E:
    """Run against `reply` and return the error, which must be an `expected`."""
    with WireServer(reply) as server, pytest.raises(expected) as caught:
        await run(server.url)
    return caught.value


@pytest.fixture(params=["sync", "async"])
def run(request: pytest.FixtureRequest) -> Run:
    async def runner(
        url: str, clock: Callable[[], float] = time.perf_counter, **kwargs: Any
    ) -> tuple[list[StreamItem], ChatResult]:
        if request.param == "sync":
            result: Any = await asyncio.to_thread(run_sync, url, clock, **kwargs)
            return result  # type: ignore[no-any-return]
        return await run_async(url, clock, **kwargs)  # type: ignore[no-any-return]

    return runner


async def test_complete_stream(run: Run) -> None:
    with WireServer(Reply(hello())) as server:
        items, result = await run(server.url)
    assert items == [ContentDelta("Hel"), ContentDelta("lo"), result]
    assert result.complete
    assert result.content == "Hello"
    assert result.usage == Usage(prompt_tokens=4, completion_tokens=3, total_tokens=7)
    assert result.llmeu == RoutingBlock(**ROUTING)


async def test_request_shape(run: Run) -> None:
    with WireServer(Reply(hello())) as server:
        await run(server.url, policy="eu-strict", temperature=0)
    [seen] = server.requests
    assert (seen.method, seen.path) == ("POST", "/v1/chat/completions")
    assert seen.headers["authorization"] == "Bearer sk-test"
    assert seen.headers["accept"] == "text/event-stream"
    assert json.loads(seen.body) == {
        "model": "m",
        "messages": [{"role": "user", "content": "Hi"}],
        "temperature": 0,
        "stream": True,
        "stream_options": {"include_usage": True},
        "llmeu": {"policy_id": "eu-strict"},
    }


async def test_usage_request_can_be_turned_off(run: Run) -> None:
    with WireServer(Reply(hello())) as server:
        await run(server.url, stream_options={"include_usage": False})
    assert json.loads(server.requests[0].body)["stream_options"] == {"include_usage": False}


WIRE_VARIANTS = [
    pytest.param(Reply(hello(), framing="close"), id="close-delimited"),
    pytest.param(Reply(hello(), framing="length"), id="content-length"),
    pytest.param(Reply(sse(ROLE, chunk("Hello"), "[DONE]", newline=b"\r")), id="cr-endings"),
    pytest.param(Reply(sse(ROLE, chunk("Hello"), "[DONE]", newline=b"\r\n")), id="crlf-endings"),
    pytest.param(Reply([b"\xef\xbb\xbf" + sse(ROLE)[0], *sse(chunk("Hello"), "[DONE]")]), id="bom"),
    pytest.param(
        Reply(
            [
                b": keep-alive\n\n",
                *sse(ROLE, chunk("Hello")),
                b"event: ping\ndata: {}\n\n",
                *sse("[DONE]"),
            ]
        ),
        id="comments-and-pings",
    ),
    pytest.param(
        Reply(
            [piece for frame in sse(chunk("Hello"), "[DONE]") for piece in (frame[:9], frame[9:])]
        ),
        id="frames-split-across-writes",
    ),
]


@pytest.mark.parametrize("reply", WIRE_VARIANTS)
async def test_wire_variants(run: Run, reply: Reply) -> None:
    with WireServer(reply) as server:
        _, result = await run(server.url)
    assert (result.content, result.complete) == ("Hello", True)


async def test_utf8_character_split_across_writes(run: Run) -> None:
    frame = sse(chunk("Grüße €"))[0]
    cut_at = frame.index("€".encode()) + 1
    with WireServer(Reply([frame[:cut_at], frame[cut_at:], *sse("[DONE]")])) as server:
        items, result = await run(server.url)
    assert result.content == "Grüße €"
    assert items[0] == ContentDelta("Grüße €")


async def test_missing_done_is_incomplete_and_keeps_the_text(run: Run) -> None:
    error = await failure(run, Reply(hello(done=False)), IncompleteStreamError)
    assert type(error) is IncompleteStreamError
    assert error.result.content == "Hello"
    assert not error.result.complete
    assert error.result.timings is not None


async def test_connection_cut_mid_body_is_incomplete(run: Run) -> None:
    error = await failure(run, Reply(sse(ROLE, chunk("Hel")), cut=True), IncompleteStreamError)
    assert error.result.content == "Hel"
    assert "failed before [DONE]" in str(error)
    assert isinstance(error.__cause__, httpx.RemoteProtocolError)


async def test_error_frame_raises_stream_error_with_text_and_routing(run: Run) -> None:
    payload = {"message": "upstream reset", "type": "api_error", "param": None, "code": "upstream"}
    frames = sse(ROLE, chunk("Par"), json.dumps({"error": payload, "llmeu": ROUTING}))
    error = await failure(run, Reply(frames), StreamError)
    assert error.error.message == "upstream reset"
    assert error.result.content == "Par"
    assert error.result.llmeu == RoutingBlock(**ROUTING)


async def test_error_event(run: Run) -> None:
    body = [*sse(ROLE, chunk("a")), b"event: error\ndata: overloaded\n\n"]
    with WireServer(Reply(body, hold=HOLD)) as server:
        with pytest.raises(StreamError) as caught:
            await run(server.url)
        [seen] = server.requests
        seen.reply_over.wait(30)
    assert caught.value.error.message == "overloaded"
    assert seen.client_left.is_set()


async def test_malformed_frame(run: Run) -> None:
    await failure(run, Reply(sse(ROLE, "{oops", "[DONE]")), MalformedStreamError)


async def test_stops_reading_at_done_even_if_the_server_keeps_the_body_open(run: Run) -> None:
    with WireServer(Reply(hello(), hold=HOLD)) as server:
        _, result = await run(server.url)
        [seen] = server.requests
        seen.reply_over.wait(30)
    assert result.complete
    assert seen.client_left.is_set()


async def test_missing_usage_stays_none(run: Run) -> None:
    with WireServer(Reply(sse(ROLE, chunk("a"), chunk(finish="stop"), "[DONE]"))) as server:
        _, result = await run(server.url)
    assert result.usage is None
    assert result.llmeu is None
    assert result.timings is not None
    assert result.timings.output_tokens == 1
    assert result.timings.tokens_estimated


async def test_timings_count_from_the_first_content_frame(run: Run) -> None:
    # Clock readings: request start 0, "Hel" 1, "lo" 2, end 3; the role frame,
    # the finish frame and the usage frame are not content and do not read it.
    with WireServer(Reply(hello())) as server:
        _, result = await run(server.url, clock=counting_clock())
    timings = result.timings
    assert timings is not None
    assert (timings.request_start, timings.first_content, timings.end) == (0.0, 1.0, 3.0)
    assert (timings.ttft, timings.total) == (1.0, 3.0)
    assert timings.output_tokens == 3
    assert not timings.tokens_estimated
    assert timings.tpot == 0.5


async def test_no_content_means_no_ttft(run: Run) -> None:
    with WireServer(Reply(sse(ROLE, chunk(finish="stop"), USAGE, "[DONE]"))) as server:
        _, result = await run(server.url, clock=counting_clock())
    assert result.timings is not None
    assert (result.timings.ttft, result.timings.tpot) == (None, None)


async def test_json_answer_to_a_streaming_request(run: Run) -> None:
    completion = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}}],
        "usage": {"prompt_tokens": 2, "completion_tokens": 1, "total_tokens": 3},
    }
    reply = Reply([json.dumps(completion).encode()], content_type="application/json")
    with WireServer(reply) as server:
        items, result = await run(server.url)
    assert items == [ContentDelta("Hi"), result]
    assert result.complete


def error_reply(status: int, body: Any, headers: tuple[tuple[str, str], ...] = ()) -> Reply:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return Reply([data], status=status, content_type="application/json", headers=headers)


async def test_401(run: Run) -> None:
    body = {
        "error": {"message": "bad key", "type": "authentication_error", "code": "invalid_api_key"}
    }
    error = await failure(run, error_reply(401, body), AuthenticationError)
    assert error.status == 401
    assert error.code == "invalid_api_key"
    assert error.error.message == "bad key"


async def test_403_no_compliant_route(run: Run) -> None:
    details = [{"endpoint_id": "us-east", "reason": "sovereignty_class global not allowed"}]
    body = {
        "error": {
            "message": "no route",
            "type": "permission_error",
            "code": "no_compliant_route",
            "details": details,
        }
    }
    error = await failure(run, error_reply(403, body), NoCompliantRouteError)
    assert error.error.raw["details"] == details


async def test_429_retry_after(run: Run) -> None:
    body = {"error": {"message": "slow down", "type": "rate_limit_error"}}
    error = await failure(run, error_reply(429, body, (("retry-after", "2"),)), RateLimitError)
    assert error.retry_after == 2.0


async def test_5xx_with_a_plain_text_body(run: Run) -> None:
    error = await failure(run, error_reply(502, b"Bad Gateway from the proxy"), ServerError)
    assert error.error.message == "Bad Gateway from the proxy"


async def test_nothing_listening(run: Run) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(APIConnectionError):
        await run(f"http://127.0.0.1:{port}/v1")


def test_leaving_the_iteration_hangs_up() -> None:
    with (
        WireServer(Reply(sse(ROLE, chunk("Hel")), hold=HOLD)) as server,
        Client(server.url) as client,
    ):
        with client.stream_chat("Hi", model="m") as stream:
            for item in stream:
                assert item == ContentDelta("Hel")
                break
        [seen] = server.requests
        seen.reply_over.wait(30)
    assert seen.client_left.is_set()


async def test_leaving_the_async_iteration_hangs_up() -> None:
    with WireServer(Reply(sse(ROLE, chunk("Hel")), hold=HOLD)) as server:
        async with AsyncClient(server.url) as client, client.stream_chat("Hi", model="m") as stream:
            async for item in stream:
                assert item == ContentDelta("Hel")
                break
        [seen] = server.requests
        await asyncio.to_thread(seen.reply_over.wait, 30)
    assert seen.client_left.is_set()


async def test_chat_returns_the_result() -> None:
    with WireServer(Reply(hello())) as server:
        with Client(server.url) as client:
            assert client.chat([{"role": "user", "content": "Hi"}], model="m").content == "Hello"
        async with AsyncClient(server.url) as client:
            assert (await client.chat("Hi", model="m")).content == "Hello"
    assert "authorization" not in server.requests[0].headers


def test_read_timeout_after_the_status_is_an_incomplete_stream() -> None:
    reply = Reply(sse(ROLE, chunk("Hel")), hold=HOLD)
    with WireServer(reply) as server:
        client = Client(server.url, timeout=0.5)
        with client, pytest.raises(IncompleteStreamError) as caught:
            client.chat("Hi", model="m")
    assert caught.value.result.content == "Hel"
    assert isinstance(caught.value.__cause__, httpx.ReadTimeout)

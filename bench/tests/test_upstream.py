"""The fake upstream end to end, in process, through httpx and through the bench client."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import msgspec
import pytest

from httpclient import Connection, build_request
from loadgen import chat_body
from upstream import Recorder, UpstreamConfig, serve


@pytest.fixture
async def upstream() -> AsyncIterator[tuple[str, int, Recorder]]:
    recorder = Recorder()
    server = await serve(UpstreamConfig(port=0, chunks=4), recorder)
    port = server.sockets[0].getsockname()[1]
    try:
        yield "127.0.0.1", port, recorder
    finally:
        server.close()


def _lines(text: str) -> list[str]:
    return [line[6:] for line in text.splitlines() if line.startswith("data: ")]


async def test_non_stream_uses_the_default_chunk_count(upstream: tuple[str, int, Recorder]) -> None:
    host, port, _ = upstream
    async with httpx.AsyncClient(base_url=f"http://{host}:{port}/v1") as client:
        response = await client.post("/chat/completions", json={"model": "m", "messages": []})
    assert response.status_code == 200
    assert response.json()["usage"]["completion_tokens"] == 4


@pytest.mark.parametrize(
    ("directive", "headers", "expected_chunks"),
    [
        ("chunks=2", {}, 2),
        ("", {"x-bench-chunks": "3"}, 3),
        ("chunks=5", {"x-bench-chunks": "3"}, 5),
    ],
    ids=["directive", "header", "directive-wins"],
)
async def test_stream_shape_is_set_per_request(
    upstream: tuple[str, int, Recorder],
    directive: str,
    headers: dict[str, str],
    expected_chunks: int,
) -> None:
    host, port, _ = upstream
    body = chat_body("m", True, directive)
    async with httpx.AsyncClient(base_url=f"http://{host}:{port}/v1") as client:
        response = await client.post("/chat/completions", content=body, headers=headers)
    data = _lines(response.text)
    assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert data[-1] == "[DONE]"
    usage = msgspec.json.decode(data[-2])["usage"]
    assert usage["completion_tokens"] == expected_chunks
    assert len(data) == expected_chunks + 4  # role, contents, finish, usage, [DONE]


async def test_a_closed_stream_is_recorded_by_tag(upstream: tuple[str, int, Recorder]) -> None:
    host, port, recorder = upstream
    body = chat_body("m", True, "chunks=500 delay_ms=5 tag=gone")
    connection = await Connection.open(host, port)
    exchange = connection.start(build_request(host, port, "/v1/chat/completions", body, None), True)
    await exchange.first_content
    connection.close()
    for _ in range(200):
        if recorder.close_times:
            break
        await asyncio.sleep(0.01)
    assert recorder.close_times is not None
    assert set(recorder.close_times) == {"gone"}
    assert recorder.closed_in_flight == 1


async def test_bench_client_sees_content_and_done(upstream: tuple[str, int, Recorder]) -> None:
    host, port, _ = upstream
    connection = await Connection.open(host, port)
    request = build_request(
        host, port, "/v1/chat/completions", chat_body("m", True, "chunks=3"), "k"
    )
    for _ in range(3):  # one keep-alive connection carries them all
        exchange = connection.start(request, True)
        await exchange.done
        assert exchange.ok
        assert exchange.first_content.result() >= exchange.started
    assert connection.requests == 3
    connection.close()


async def test_embeddings(upstream: tuple[str, int, Recorder]) -> None:
    host, port, _ = upstream
    async with httpx.AsyncClient(base_url=f"http://{host}:{port}/v1") as client:
        response = await client.post("/embeddings", json={"model": "e", "input": ["a", "b"]})
    assert len(response.json()["data"]) == 2

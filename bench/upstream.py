"""A fast fake OpenAI-compatible upstream: raw asyncio, httptools, uvloop when present.

Routes:

- `POST /v1/chat/completions`: non-streamed, or with `"stream": true` an SSE
  stream shaped exactly like OpenAI's (see `fake_openai`).
- `POST /v1/embeddings`, `GET /v1/models`, `GET /healthz`.
- `GET /stats`: counters, and for every response whose connection closed
  before it was complete, the `time.monotonic()` of that close, keyed by the
  request's tag. `CLOCK_MONOTONIC` is shared by all processes of the machine,
  so a client can subtract its own timestamp of a disconnect from it.

The stream shape defaults to the CLI flags and can be set per request, either
by headers (`x-bench-chunks`, `x-bench-delay-ms`, `x-bench-tag`, for direct
calls) or by a directive in the last message, which survives any gateway that
forwards the prompt: `bench: chunks=64 delay_ms=5 tag=abc`.

With a delay of 0 the upstream still yields to its event loop between frames,
so tokens leave as separate writes, as they do from a real model server.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import time
from collections import deque
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, cast

import httptools
import msgspec

import aio
import fake_openai
from fake_openai import ID_PLACEHOLDER, Usage

_DIRECTIVE = re.compile(r"bench:((?:\s+\w+=[\w.-]+)+)")


@dataclass(frozen=True)
class UpstreamConfig:
    host: str = "127.0.0.1"
    port: int = 8900
    chunks: int = 64
    delay_ms: float = 0.0
    embedding_dims: int = 1536


@dataclass(frozen=True)
class StreamShape:
    chunks: int
    delay_s: float
    tag: str | None


class _Message(msgspec.Struct):
    role: str = "user"
    content: Any = None


class _ChatBody(msgspec.Struct):
    model: str = "bench-model"
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    messages: list[_Message] = msgspec.field(default_factory=list)


class _EmbeddingsBody(msgspec.Struct):
    model: str = "bench-embedding"
    input: Any = ""


@dataclass
class Recorder:
    """What the upstream saw; `closed_in_flight` is what cancellation latency is read from."""

    requests: int = 0
    streams: int = 0
    connections: int = 0
    open_connections: int = 0
    closed_in_flight: int = 0
    close_times: dict[str, float] | None = None

    def snapshot(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "streams": self.streams,
            "connections": self.connections,
            "open_connections": self.open_connections,
            "closed_in_flight": self.closed_in_flight,
            "close_times": self.close_times or {},
        }

    def record_close(self, tag: str | None, at: float) -> None:
        self.closed_in_flight += 1
        if tag is not None:
            if self.close_times is None:
                self.close_times = {}
            self.close_times[tag] = at


@dataclass
class _Request:
    method: bytes
    url: bytes
    headers: dict[bytes, bytes]
    body: bytes
    keep_alive: bool


def _head(status: int, content_type: bytes, length: int, keep_alive: bool) -> bytes:
    reason = b"OK" if status == 200 else b"Error"
    connection = b"keep-alive" if keep_alive else b"close"
    return b"HTTP/1.1 %d %s\r\ncontent-type: %s\r\ncontent-length: %d\r\nconnection: %s\r\n\r\n" % (
        status,
        reason,
        content_type,
        length,
        connection,
    )


def _json_response(status: int, body: bytes, keep_alive: bool) -> bytes:
    return _head(status, b"application/json", len(body), keep_alive) + body


_STREAM_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
    b"transfer-encoding: chunked\r\ncache-control: no-cache\r\nconnection: keep-alive\r\n\r\n"
)


@lru_cache(maxsize=256)
def _chunked_frames(
    model: str, chunks: int, usage: Usage, include_usage: bool
) -> tuple[bytes, ...]:
    frames = fake_openai.stream_frames(model, chunks, usage, include_usage)
    encoded = [b"%x\r\n%s\r\n" % (len(frame), frame) for frame in frames]
    encoded[-1] += b"0\r\n\r\n"
    return tuple(encoded)


def _prompt_tokens(messages: list[_Message]) -> int:
    text = sum(len(m.content) for m in messages if isinstance(m.content, str))
    return max(1, text // 4)


def _shape(config: UpstreamConfig, request: _Request, messages: list[_Message]) -> StreamShape:
    values: dict[str, str] = {}
    for header, key in ((b"x-bench-chunks", "chunks"), (b"x-bench-delay-ms", "delay_ms")):
        if header in request.headers:
            values[key] = request.headers[header].decode()
    if b"x-bench-tag" in request.headers:
        values["tag"] = request.headers[b"x-bench-tag"].decode()
    last = messages[-1].content if messages else None
    if isinstance(last, str) and (match := _DIRECTIVE.search(last)):
        for pair in match.group(1).split():
            key, value = pair.split("=", 1)
            values[key] = value
    return StreamShape(
        chunks=int(values.get("chunks", config.chunks)),
        delay_s=float(values.get("delay_ms", config.delay_ms)) / 1000,
        tag=values.get("tag"),
    )


class _Connection(asyncio.Protocol):
    def __init__(self, config: UpstreamConfig, recorder: Recorder) -> None:
        self._config = config
        self._recorder = recorder
        self._parser = httptools.HttpRequestParser(self)
        self._transport: asyncio.Transport | None = None
        self._pending: deque[_Request] = deque()
        self._stream_task: asyncio.Task[None] | None = None
        self._stream_tag: str | None = None
        self._writable = asyncio.Event()
        self._writable.set()
        self._url = b""
        self._headers: dict[bytes, bytes] = {}
        self._body: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)
        self._recorder.connections += 1
        self._recorder.open_connections += 1

    def connection_lost(self, exc: Exception | None) -> None:
        self._recorder.open_connections -= 1
        if self._stream_task is not None and not self._stream_task.done():
            self._recorder.record_close(self._stream_tag, time.monotonic())
            self._stream_task.cancel()
        self._writable.set()

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError:
            if self._transport is not None:
                body = fake_openai.error_body(400, "malformed HTTP request")
                self._transport.write(_json_response(400, body, False))
                self._transport.close()

    def on_message_begin(self) -> None:
        self._url = b""
        self._headers = {}
        self._body = []

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers[name.lower()] = value

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        request = _Request(
            method=self._parser.get_method(),
            url=self._url,
            headers=self._headers,
            body=b"".join(self._body),
            keep_alive=self._parser.should_keep_alive(),
        )
        self._pending.append(request)
        if self._stream_task is None:
            self._drain()

    def _drain(self) -> None:
        while self._pending and self._stream_task is None:
            self._handle(self._pending.popleft())

    def _handle(self, request: _Request) -> None:
        self._recorder.requests += 1
        path = request.url.split(b"?", 1)[0]
        try:
            if request.method == b"POST" and path == b"/v1/chat/completions":
                self._chat(request)
            elif request.method == b"POST" and path == b"/v1/embeddings":
                self._embeddings(request)
            elif path == b"/stats":
                body = msgspec.json.encode(self._recorder.snapshot())
                self._respond(_json_response(200, body, request.keep_alive), request)
            elif path == b"/v1/models":
                body = fake_openai.models_body("bench-model")
                self._respond(_json_response(200, body, request.keep_alive), request)
            elif path == b"/healthz":
                self._respond(_json_response(200, b'{"ok":true}', request.keep_alive), request)
            else:
                body = fake_openai.error_body(404, f"no route {path.decode()}")
                self._respond(_json_response(404, body, request.keep_alive), request)
        except (msgspec.DecodeError, msgspec.ValidationError, ValueError) as exc:
            body = fake_openai.error_body(400, str(exc))
            self._respond(_json_response(400, body, request.keep_alive), request)

    def _respond(self, data: bytes, request: _Request) -> None:
        if self._transport is None or self._transport.is_closing():
            return
        self._transport.write(data)
        if not request.keep_alive:
            self._transport.close()

    def _chat(self, request: _Request) -> None:
        body = msgspec.json.decode(request.body, type=_ChatBody)
        shape = _shape(self._config, request, body.messages)
        usage = Usage(_prompt_tokens(body.messages), shape.chunks)
        completion_id = fake_openai.next_completion_id()
        if not body.stream:
            payload = fake_openai.completion_body(body.model, shape.chunks, usage)
            payload = payload.replace(ID_PLACEHOLDER, completion_id, 1)
            self._respond(_json_response(200, payload, request.keep_alive), request)
            return
        self._recorder.streams += 1
        include_usage = bool((body.stream_options or {}).get("include_usage"))
        frames = _chunked_frames(body.model, shape.chunks, usage, include_usage)
        self._stream_tag = shape.tag
        self._stream_task = asyncio.get_running_loop().create_task(
            self._stream(frames, completion_id, shape.delay_s, request)
        )

    async def _stream(
        self, frames: tuple[bytes, ...], completion_id: bytes, delay_s: float, request: _Request
    ) -> None:
        transport = self._transport
        assert transport is not None
        transport.write(_STREAM_HEAD)
        for index, frame in enumerate(frames):
            if index:
                await asyncio.sleep(delay_s)
            await self._writable.wait()
            if transport.is_closing():
                return
            transport.write(frame.replace(ID_PLACEHOLDER, completion_id, 1))
        if not request.keep_alive:
            transport.close()
        self._stream_task = None
        self._stream_tag = None
        self._drain()

    def _embeddings(self, request: _Request) -> None:
        body = msgspec.json.decode(request.body, type=_EmbeddingsBody)
        inputs = body.input if isinstance(body.input, list) else [body.input]
        tokens = max(1, sum(len(str(item)) for item in inputs) // 4)
        payload = fake_openai.embeddings_body(
            body.model, len(inputs), self._config.embedding_dims, tokens
        )
        self._respond(_json_response(200, payload, request.keep_alive), request)


async def serve(config: UpstreamConfig, recorder: Recorder | None = None) -> asyncio.Server:
    """Start listening; the caller owns the returned server."""
    recorder = recorder if recorder is not None else Recorder()
    loop = asyncio.get_running_loop()
    return await loop.create_server(
        lambda: _Connection(config, recorder), config.host, config.port, backlog=4096
    )


def run_forever(config: UpstreamConfig) -> None:
    async def main() -> None:
        server = await serve(config)
        print(f"upstream listening on http://{config.host}:{config.port}", flush=True)
        async with server:
            await server.serve_forever()

    with contextlib.suppress(aio.Interrupted):
        aio.run(main())


def parse_args(argv: list[str] | None = None) -> UpstreamConfig:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8900)
    parser.add_argument("--chunks", type=int, default=64, help="content chunks per stream")
    parser.add_argument("--delay-ms", type=float, default=0.0, help="delay between frames")
    parser.add_argument("--embedding-dims", type=int, default=1536)
    args = parser.parse_args(argv)
    return UpstreamConfig(args.host, args.port, args.chunks, args.delay_ms, args.embedding_dims)


if __name__ == "__main__":
    run_forever(parse_args())

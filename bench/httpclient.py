"""A minimal HTTP/1.1 keep-alive client for load generation: asyncio protocol + httptools.

It does the least work a correct client can do per response, so that the load
generator is not what limits a benchmark: it never decodes JSON; for streams it
only looks for the first non-empty `"content"` (a Responses stream: `"delta"`; a
Messages stream: `"text"`) for the time to first content, and for `data: [DONE]`
(a Responses stream: `event: response.completed`; a Messages stream:
`event: message_stop`) for a complete stream, with a byte-level search
that also catches a pattern split across two reads.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass, field
from typing import cast

import httptools

_FIRST_CONTENT = re.compile(rb'"(?:content|delta|text)":\s*"(?:[^"\\]|\\.)')
_DONE = re.compile(rb"data: \[DONE\]|event: response\.completed\n|event: message_stop\n")
_TAIL = 64


class ConnectionClosed(Exception):
    """The server closed the connection before the response was complete."""


@dataclass
class Exchange:
    """One request in flight; its futures resolve as the response arrives."""

    started: float
    stream: bool
    keep_body: bool
    first_content: asyncio.Future[float]
    done: asyncio.Future[float]
    status: int = 0
    received_bytes: int = 0
    saw_done: bool = False
    body: list[bytes] = field(default_factory=list)
    _tail: bytes = b""

    def feed(self, data: bytes, now: float) -> None:
        self.received_bytes += len(data)
        if self.keep_body:
            self.body.append(data)
        if not self.stream:
            return
        window = self._tail + data
        if not self.first_content.done() and _FIRST_CONTENT.search(window):
            self.first_content.set_result(now)
        if not self.saw_done and _DONE.search(window):
            self.saw_done = True
        self._tail = window[-_TAIL:]

    @property
    def ok(self) -> bool:
        return self.status == 200 and (self.saw_done or not self.stream)


def build_request(
    host: str, port: int, path: str, body: bytes, api_key: str | None, method: str = "POST"
) -> bytes:
    lines = [
        f"{method} {path} HTTP/1.1",
        f"host: {host}:{port}",
        "content-type: application/json",
        "accept: application/json, text/event-stream",
        f"content-length: {len(body)}",
    ]
    if api_key:
        lines.append(f"authorization: Bearer {api_key}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


class Connection(asyncio.Protocol):
    """One keep-alive connection carrying one request at a time."""

    def __init__(self) -> None:
        self._parser = httptools.HttpResponseParser(self)
        self._transport: asyncio.Transport | None = None
        self._exchange: Exchange | None = None
        self._loop = asyncio.get_running_loop()
        self.closed = False
        self.requests = 0

    @classmethod
    async def open(cls, host: str, port: int) -> Connection:
        loop = asyncio.get_running_loop()
        _, protocol = await loop.create_connection(cls, host, port)
        return protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        exchange = self._exchange
        if exchange is not None:
            self._exchange = None
            error = ConnectionClosed(str(exc) if exc else "connection closed by server")
            for future in (exchange.first_content, exchange.done):
                if not future.done():
                    future.set_exception(error)
                    future.exception()  # a caller may await only one of the two

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            pass
        except httptools.HttpParserError:
            self.abort()

    def on_headers_complete(self) -> None:
        if self._exchange is not None:
            self._exchange.status = self._parser.get_status_code()

    def on_body(self, body: bytes) -> None:
        if self._exchange is not None:
            self._exchange.feed(body, time.perf_counter())

    def on_message_complete(self) -> None:
        exchange, self._exchange = self._exchange, None
        if exchange is None:
            return
        now = time.perf_counter()
        if not self._parser.should_keep_alive():
            self.close()
        if not exchange.first_content.done():
            exchange.first_content.set_result(now if not exchange.stream else float("nan"))
        exchange.done.set_result(now)

    def start(self, request: bytes, stream: bool, keep_body: bool = False) -> Exchange:
        if self.closed or self._transport is None:
            raise ConnectionClosed("connection is closed")
        exchange = Exchange(
            started=time.perf_counter(),
            stream=stream,
            keep_body=keep_body,
            first_content=self._loop.create_future(),
            done=self._loop.create_future(),
        )
        self._exchange = exchange
        self.requests += 1
        self._transport.write(request)
        return exchange

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    def abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()

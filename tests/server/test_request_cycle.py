"""A response's head goes out with its body's first part, in one write."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from uvicorn.protocols.http.flow_control import FlowControl

from llmeu.server.request_cycle import Http10Cycle, OneWriteCycle

HEADERS = [(b"content-type", b"application/json")]


class Transport:
    """Records each write, as the socket would see it."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...


def cycle(transport: Transport, *, method: str = "POST", kind: type = OneWriteCycle) -> Any:
    scope: Any = {"method": method, "http_version": "1.1", "headers": []}
    flow = FlowControl(transport)  # type: ignore[arg-type]
    log = logging.getLogger("test")
    return kind(
        scope, transport, flow, log, log, False, [], asyncio.Event(), False, True, lambda: None
    )


async def whole(c: Any, body: bytes) -> None:
    headers = [*HEADERS, (b"content-length", str(len(body)).encode())]
    await c.send({"type": "http.response.start", "status": 200, "headers": headers})
    await c.send({"type": "http.response.body", "body": body, "more_body": False})


async def test_a_whole_response_is_one_write() -> None:
    transport = Transport()
    await whole(cycle(transport), b'{"ok":true}')
    [written] = transport.writes
    assert written.startswith(b"HTTP/1.1 200 OK\r\n")
    assert written.endswith(b"content-length: 11\r\n\r\n" + b'{"ok":true}')
    await asyncio.sleep(0)  # the release scheduled for the head finds nothing left to write
    assert len(transport.writes) == 1


async def test_a_stream_sends_its_head_with_the_first_chunk_then_each_chunk_alone() -> None:
    transport = Transport()
    c = cycle(transport)
    await c.send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    for part in (b"data: 1\n\n", b"data: 2\n\n"):
        await c.send({"type": "http.response.body", "body": part, "more_body": True})
    await c.send({"type": "http.response.body", "body": b"", "more_body": False})
    first, second, last = transport.writes
    assert first.startswith(b"HTTP/1.1 200 OK\r\n") and first.endswith(
        b"\r\n\r\n9\r\ndata: 1\n\n\r\n"
    )
    assert second == b"9\r\ndata: 2\n\n\r\n"
    assert last == b"0\r\n\r\n"


async def test_a_head_whose_body_waits_goes_out_at_the_next_turn() -> None:
    transport = Transport()
    c = cycle(transport)
    await c.send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    assert transport.writes == []
    await asyncio.sleep(0)
    [head] = transport.writes
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and head.endswith(b"\r\n\r\n")
    await c.send({"type": "http.response.body", "body": b"x", "more_body": False})
    assert transport.writes[1:] == [b"1\r\nx\r\n0\r\n\r\n"]


async def test_a_head_request_still_gets_its_head() -> None:
    transport = Transport()
    await whole(cycle(transport, method="HEAD"), b"")
    [head] = transport.writes
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and head.endswith(b"\r\n\r\n")


async def test_no_head_is_written_to_a_client_that_left() -> None:
    transport = Transport()
    c = cycle(transport)
    await c.send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    c.disconnected = True
    await asyncio.sleep(0)
    assert transport.writes == []


@pytest.mark.parametrize("closes", [True, False])
async def test_an_http10_stream_writes_the_head_before_its_close_delimited_body(
    closes: bool,
) -> None:
    transport = Transport()
    c = cycle(transport, kind=Http10Cycle)
    c.scope["http_version"] = "1.0"
    await c.send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await c.send({"type": "http.response.body", "body": b"data: 1\n\n", "more_body": not closes})
    head, body = transport.writes
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and b"transfer-encoding" not in head
    assert body == b"data: 1\n\n"
    assert transport.closed is closes

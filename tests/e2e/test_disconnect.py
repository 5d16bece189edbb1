"""A client that hangs up stops the upstream at once."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable

from tests.support.processes import FakeUpstream, Gateway, config_yaml, fake_endpoint


def open_stream(gateway: Gateway, content: str) -> socket.socket:
    payload = json.dumps(
        {"model": "fake-model", "stream": True, "messages": [{"role": "user", "content": content}]}
    ).encode()
    sock = socket.create_connection(("127.0.0.1", gateway.port), timeout=10)
    sock.sendall(
        f"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {gateway.admin_key}\r\n"
        f"content-type: application/json\r\ncontent-length: {len(payload)}\r\n\r\n".encode()
        + payload
    )
    return sock


def read_until(sock: socket.socket, marker: bytes, count: int) -> bytes:
    data = b""
    while data.count(marker) < count:
        chunk = sock.recv(65536)
        assert chunk, "the gateway closed the stream early"
        data += chunk
    return data


def wait_closed(upstream: FakeUpstream, timeout: float = 5) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen = upstream.stats()
        if seen and seen[-1]["closed_at"] is not None:
            return seen[-1]
        time.sleep(0.01)
    raise AssertionError("the upstream connection was never closed")


def test_upstream_sees_the_close_within_100_ms(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream
) -> None:
    gateway = gateway_factory(config=config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream)))
    sock = open_stream(gateway, "long [[chunks=2000;delay=10]]")
    read_until(sock, b'"content"', 3)
    closed_by_client = time.time()
    sock.close()
    seen = wait_closed(fake_upstream)
    assert seen["completed"] is False
    delay = float(seen["closed_at"]) - closed_by_client  # type: ignore[arg-type]
    assert delay < 0.1, f"upstream saw the close {delay * 1000:.1f} ms after the client left"
    sent = int(seen["chunks_sent"])  # type: ignore[call-overload]
    time.sleep(0.2)
    assert int(fake_upstream.stats()[-1]["chunks_sent"]) == sent  # nothing more was produced

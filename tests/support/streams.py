"""Raw HTTP/1.1 streams on a socket, for tests that hang up, stall or read byte by byte."""

from __future__ import annotations

import json
import socket

from tests.support.processes import Gateway


def open_stream(
    gateway: Gateway,
    content: str,
    key: str | None = None,
    *,
    path: str = "/v1/chat/completions",
    body: dict[str, object] | None = None,
) -> socket.socket:
    """Start a streamed call on a raw socket (to hang up or keep it open at will). The body is
    a streamed chat call with one user message `content`, unless `body` is given."""
    payload = json.dumps(
        body
        or {
            "model": "fake-model",
            "stream": True,
            "messages": [{"role": "user", "content": content}],
        }
    ).encode()
    sock = socket.create_connection(("127.0.0.1", gateway.port), timeout=30)
    sock.sendall(
        f"POST {path} HTTP/1.1\r\nhost: x\r\n"
        f"authorization: Bearer {key or gateway.admin_key}\r\n"
        f"content-type: application/json\r\ncontent-length: {len(payload)}\r\n\r\n".encode()
        + payload
    )
    return sock


def read_until(sock: socket.socket, marker: bytes, count: int = 1) -> bytes:
    data = b""
    while data.count(marker) < count:
        chunk = sock.recv(65536)
        assert chunk, "the gateway closed the stream early"
        data += chunk
    return data


def read_to_end(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def dechunk(body: bytes) -> bytes:
    """The payload of a chunked HTTP body (as far as it arrived)."""
    out = b""
    while body:
        size_line, sep, rest = body.partition(b"\r\n")
        if not sep:
            break
        size = int(size_line, 16)
        if size == 0:
            break
        out += rest[:size]
        body = rest[size + 2 :]
    return out

"""HTTP/1.1 spoken by hand on a raw socket to a gateway process: for what a client library
would never send (a head a byte at a time, a PROXY header, a body that never ends) and for
reading exactly what the gateway sends back, duplicated headers included."""

from __future__ import annotations

import json
import re
import select
import socket
from dataclasses import dataclass
from typing import Any

from tests.support.processes import ADMIN_KEY, Gateway


@dataclass
class RawResponse:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


def connect(gateway: Gateway, source: str | None = None) -> socket.socket:
    """A connection to the gateway, from the local address `source` when given."""
    address = None if source is None else (source, 0)
    return socket.create_connection(("127.0.0.1", gateway.port), 30, address)


def read_until_closed(sock: socket.socket, timeout: float = 30) -> bytes:
    """Everything the gateway sends until it closes the connection."""
    sock.settimeout(timeout)
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk


def parse(raw: bytes) -> RawResponse:
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        assert name.lower() not in headers, f"header {name} sent twice"
        headers[name.lower()] = value.strip()
    return RawResponse(int(status_line.split()[1]), headers, body)


def read_response(sock: socket.socket) -> tuple[bytes, bytes]:
    """A whole response of known length on a kept-alive connection: its head and body."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, "closed without an answer"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = re.search(rb"content-length: (\d+)", head.lower())
    assert length is not None, head
    while len(body) < int(length[1]):
        body += sock.recv(65536)
    return head, body


def read_response_text(sock: socket.socket) -> str:
    """A whole response of known length on a kept-alive connection, its body as text."""
    return read_response(sock)[1].decode()


def readable(sock: socket.socket) -> bool:
    return bool(select.select([sock], [], [], 0)[0])


def assert_refused(response: RawResponse, status: int, code: str) -> dict[str, Any]:
    assert response.status == status, response
    assert response.headers["content-type"] == "application/json"
    assert response.headers["connection"] == "close"
    assert int(response.headers["content-length"]) == len(response.body)
    error: dict[str, Any] = response.json["error"]
    assert set(error) >= {"message", "type", "param", "code"}
    assert error["code"] == code
    return error


def chat_head(length: int, *, key: str = ADMIN_KEY) -> bytes:
    return (
        "POST /v1/chat/completions HTTP/1.1\r\nhost: gateway\r\n"
        f"authorization: Bearer {key}\r\ncontent-type: application/json\r\n"
        f"content-length: {length}\r\n\r\n"
    ).encode()


def metric_sample(metrics: str, sample: str) -> float:
    """One sample of a /metrics text, by its name and labels as Prometheus writes them."""
    for line in metrics.splitlines():
        name, _, value = line.rpartition(" ")
        if name == sample:
            return float(value)
    raise AssertionError(f"{sample} is not in /metrics")

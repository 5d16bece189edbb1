"""HTTP/1.0 clients and malformed requests, on a real gateway process over raw sockets."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tests.faults.helpers import parse_sse
from tests.support.processes import ADMIN_KEY, FakeUpstream, Gateway, config_yaml, fake_endpoint
from tests.support.raw_http import connect, parse, read_until_closed


@pytest.fixture
def gateway(gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream) -> Gateway:
    return gateway_factory(config=config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream)))


def exchange(gateway: Gateway, request: bytes) -> bytes:
    with connect(gateway) as sock:
        sock.sendall(request)
        return read_until_closed(sock)


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/v1/models", "/nowhere"])
def test_http_10_gets_a_length_never_chunks(gateway: Gateway, path: str) -> None:
    raw = exchange(
        gateway, f"GET {path} HTTP/1.0\r\nauthorization: Bearer {ADMIN_KEY}\r\n\r\n".encode()
    )
    response = parse(raw)
    assert "transfer-encoding" not in response.headers
    assert int(response.headers["content-length"]) == len(response.body)
    json.loads(response.body)


def test_an_http_10_stream_is_close_delimited(gateway: Gateway) -> None:
    body = json.dumps(
        {"model": "fake-model", "stream": True,
         "messages": [{"role": "user", "content": "hi [[chunks=5]]"}]}
    ).encode()  # fmt: skip
    raw = exchange(
        gateway,
        b"POST /v1/chat/completions HTTP/1.0\r\n"
        + f"authorization: Bearer {ADMIN_KEY}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n".encode()
        + body,
    )
    response = parse(raw)
    assert response.status == 200
    assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert "transfer-encoding" not in response.headers
    assert "content-length" not in response.headers
    assert response.headers["connection"] == "close"
    frames, done = parse_sse(response.body)  # the raw body is the event stream itself
    assert done
    assert frames[-1]["llmeu"]["trace_id"] == response.headers["x-llmeu-trace-id"]


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GET /healthz HTTP/1.1\r\nhost: gateway\r\nx-bad: a\x00b\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nhost: gateway\r\nx-bad: a\rb\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nhost: gateway\r\nx-folded: a\r\n b\r\n\r\n",
        b"GET /he\x00althz HTTP/1.1\r\nhost: gateway\r\n\r\n",
        b"NOT HTTP AT ALL\r\n\r\n",
    ],
    ids=["nul-in-header", "cr-in-header", "obs-fold", "nul-in-target", "garbage"],
)
def test_a_malformed_request_gets_the_openai_error_shape(
    gateway: Gateway, request_bytes: bytes
) -> None:
    response = parse(exchange(gateway, request_bytes))
    assert response.status == 400
    assert response.headers["content-type"] == "application/json"
    assert response.headers["connection"] == "close"
    error = response.json["error"]
    assert error["type"] == "invalid_request_error"
    assert error["code"] == "invalid_http_request"
    assert set(error) == {"message", "type", "param", "code"}

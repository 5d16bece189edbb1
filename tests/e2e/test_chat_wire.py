"""The streaming wire format of docs/design.md §2, checked byte by byte on a raw socket."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from typing import Any

import pytest

from tests.support.processes import Gateway, config_yaml, fake_endpoint

EXPECTED_HEADERS = [
    "content-type: text/event-stream; charset=utf-8",
    "cache-control: no-cache, no-transform",
    "connection: keep-alive",
    "x-accel-buffering: no",
]
ROUTING_FIELDS = {
    "trace_id", "model_used", "model_version", "provider", "endpoint_id", "inference_region",
    "sovereignty_class", "policy_id", "retention", "cost_estimate",
}  # fmt: skip


def raw_post(gateway: Gateway, body: dict[str, object]) -> tuple[str, list[str], bytes]:
    payload = json.dumps(body).encode()
    request = (
        f"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\n"
        f"authorization: Bearer {gateway.admin_key}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(payload)}\r\nconnection: close\r\n\r\n"
    ).encode() + payload
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=30) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body_bytes = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    return lines[0], [line.lower() for line in lines[1:]], dechunk(body_bytes)


def dechunk(body: bytes) -> bytes:
    out = b""
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        out += rest[:size]
        body = rest[size + 2 :]
    return out


@pytest.fixture
def gateway(gateway_factory: Callable[..., Gateway], fake_upstream) -> Gateway:  # type: ignore[no-untyped-def]
    return gateway_factory(config=config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream)))


@pytest.mark.parametrize("include_usage", [True, False], ids=["with-usage", "without-usage"])
def test_stream_frames_byte_by_byte(gateway: Gateway, include_usage: bool) -> None:
    check_stream_frames(gateway, include_usage)


def check_stream_frames(
    gateway: Gateway, include_usage: bool, *, cached: bool = False
) -> dict[str, Any]:
    """The stream of docs/design.md §2, byte by byte; returns its routing block. `cached`: the
    answer comes from the answer cache (the block says so, and the call cost nothing)."""
    body: dict[str, object] = {
        "model": "fake-model",
        "messages": [{"role": "user", "content": "hi [[chunks=5]]"}],
        "stream": True,
    }
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    status, headers, raw = raw_post(gateway, body)
    assert status == "HTTP/1.1 200 OK"
    for header in EXPECTED_HEADERS:
        assert header in headers
    assert raw.endswith(b"data: [DONE]\n\n")
    assert raw.count(b"data: [DONE]") == 1
    blocks = raw.split(b"\n\n")
    assert blocks[-1] == b""
    frames = [b.decode() for b in blocks[:-1]]
    assert all(f.startswith("data: ") and "\n" not in f for f in frames)
    payloads = [json.loads(f[len("data: ") :]) for f in frames[:-1]]
    ids = {p["id"] for p in payloads}
    assert len(ids) == 1 and ids.pop().startswith("chatcmpl-")
    assert {p["model"] for p in payloads} == {"fake"}
    assert {p["object"] for p in payloads} == {"chat.completion.chunk"}
    assert len({p["created"] for p in payloads}) == 1
    first = payloads[0]["choices"][0]
    assert first["delta"] == {"role": "assistant"} and first["finish_reason"] is None
    contents = [p["choices"][0]["delta"]["content"] for p in payloads[1:6]]
    assert contents == [f"tok{i} " for i in range(5)]
    finish = payloads[6]
    assert finish["choices"][0]["delta"] == {} and finish["choices"][0]["finish_reason"] == "stop"
    assert set(finish["llmeu"]) == (ROUTING_FIELDS | {"cache"} if cached else ROUTING_FIELDS)
    assert finish["llmeu"]["endpoint_id"] == "fakeprov-fr-a"
    assert finish["llmeu"]["sovereignty_class"] == "eu_sovereign"
    assert finish["llmeu"]["cost_estimate"] == {
        "currency": "EUR", "input_tokens": 11, "output_tokens": 5,
        "amount": 0.0 if cached else pytest.approx((11 * 1.0 + 5 * 2.0) / 1e6),
        "estimated": False,
    }  # fmt: skip
    if include_usage:
        assert len(payloads) == 8
        usage = payloads[7]
        assert usage["choices"] == []
        assert usage["usage"] == {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}
    else:
        assert len(payloads) == 7
    return dict(finish["llmeu"])


def test_stream_forwards_tool_call_deltas_with_their_index(gateway: Gateway) -> None:
    body = {
        "model": "fake-model",
        "messages": [{"role": "user", "content": "weather? [[tools=1;chunks=3]]"}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}],
        "stream": True,
    }
    _, _, raw = raw_post(gateway, body)
    payloads = [json.loads(f[6:]) for f in raw.decode().split("\n\n") if f and f != "data: [DONE]"]
    deltas = [p["choices"][0]["delta"] for p in payloads[1:-1]]
    assert deltas[0]["tool_calls"][0]["index"] == 0
    assert deltas[0]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert all("tool_calls" in d for d in deltas)
    assert payloads[-1]["choices"][0]["finish_reason"] == "tool_calls"

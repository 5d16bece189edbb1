"""`/v1/messages` streams byte by byte: headers, event order, the error ending, the hang-up."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from anthropic.types import ErrorResponse, RawMessageStreamEvent
from pydantic import TypeAdapter

from tests.support.client_traces import settled_trace
from tests.support.processes import FakeUpstream, Gateway, config_yaml, fake_endpoint, start_gateway
from tests.support.streams import dechunk, open_stream, read_until
from tests.support.waiting import wait_for

EVENT = TypeAdapter(RawMessageStreamEvent)
SSE_HEADERS = {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache, no-transform",
    "connection": "keep-alive",
    "x-accel-buffering": "no",
}


@pytest.fixture(scope="module")
def gateway(
    upstream_process: FakeUpstream, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gateway]:
    tmp: Path = tmp_path_factory.mktemp("messages-wire")
    config = config_yaml(
        fake_endpoint("fakeprov-fr-a", upstream_process), default_policy="eu-store"
    )
    gateway = start_gateway(tmp, config=config)
    yield gateway
    gateway.kill()


def body(content: str, **extra: Any) -> dict[str, Any]:
    return {"model": "fake-model", "max_tokens": 100, "stream": True,
            "messages": [{"role": "user", "content": content}], **extra}  # fmt: skip


def exchange(gateway: Gateway, content: str) -> tuple[int, dict[str, str], bytes]:
    """One streamed call on a raw socket: every byte of the answer, read to its end (the last
    chunk of a chunked body, or `content-length` bytes)."""
    payload = json.dumps(body(content)).encode()
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=30) as sock:
        sock.sendall(
            f"POST /v1/messages HTTP/1.1\r\nhost: x\r\nx-api-key: {gateway.admin_key}\r\n"
            f"anthropic-version: 2023-06-01\r\n"
            f"content-type: application/json\r\ncontent-length: {len(payload)}\r\n\r\n".encode()
            + payload
        )
        raw = read_response(sock)
    head, _, rest = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(": ")
        headers[name.lower()] = value
    chunked = headers.get("transfer-encoding") == "chunked"
    return int(lines[0].split()[1]), headers, dechunk(rest) if chunked else rest


def read_response(sock: socket.socket) -> bytes:
    data = b""
    while True:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if sep and b"transfer-encoding: chunked" in head.lower():
            if rest.endswith(b"0\r\n\r\n"):
                return data
        elif sep and b"content-length:" in head.lower():
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            if len(rest) >= length:
                return data
        chunk = sock.recv(65536)
        assert chunk, "the gateway closed the connection before the answer ended"
        data += chunk


def parse_events(payload: bytes) -> list[tuple[str, dict[str, Any]]]:
    """Each event exactly `event: NAME\\ndata: JSON\\n\\n`: nothing else on the wire."""
    assert payload.endswith(b"\n\n")
    out = []
    for block in payload[:-2].split(b"\n\n"):
        name_line, data_line = block.split(b"\n")
        assert name_line.startswith(b"event: ") and data_line.startswith(b"data: ")
        name, data = name_line[7:].decode(), json.loads(data_line[6:])
        assert data["type"] == name
        if name == "error":
            ErrorResponse.model_validate(data)
        else:
            EVENT.validate_python(data)
        out.append((name, data))
    return out


def test_a_stream_is_anthropics_events_in_order_one_delta_per_upstream_delta(
    gateway: Gateway,
) -> None:
    status, headers, payload = exchange(gateway, "hi [[chunks=5]]")
    assert status == 200
    assert {k: headers[k] for k in SSE_HEADERS} == SSE_HEADERS
    events = parse_events(payload)
    assert [name for name, _ in events] == [
        "message_start", "content_block_start", *["content_block_delta"] * 5,
        "content_block_stop", "message_delta", "message_stop",
    ]  # fmt: skip
    start = events[0][1]["message"]
    assert start["content"] == [] and start["usage"]["output_tokens"] == 0
    assert start["id"] == "msg_" + headers["x-llmeu-trace-id"][4:]
    texts = [d["delta"]["text"] for n, d in events if n == "content_block_delta"]
    assert texts == ["tok0 ", "tok1 ", "tok2 ", "tok3 ", "tok4 "]
    delta = events[-2][1]
    assert delta["delta"]["stop_reason"] == "end_turn"
    assert delta["usage"] == {"input_tokens": 11, "output_tokens": 5}
    assert delta["llmeu"]["trace_id"] == headers["x-llmeu-trace-id"]


def test_a_failure_after_message_start_ends_with_an_error_event_and_nothing_after(
    gateway: Gateway,
) -> None:
    status, headers, payload = exchange(gateway, "hi [[chunks=6;fault=error_event]]")
    assert status == 200
    events = parse_events(payload)
    names = [name for name, _ in events]
    assert names[0] == "message_start" and names[-1] == "error"
    assert "message_stop" not in names and "message_delta" not in names
    error = events[-1][1]
    assert error["error"]["type"] == "api_error"
    assert error["llmeu"]["endpoint_id"] == "fakeprov-fr-a"
    trace = settled_trace(gateway, headers["x-llmeu-trace-id"])
    assert trace["status"] == "failed" and trace["route"] == "/v1/messages"


def test_an_error_before_the_stream_is_anthropic_shaped(gateway: Gateway) -> None:
    status, headers, payload = exchange(gateway, "hi [[fault=status_503]]")
    assert status == 503
    error = json.loads(payload)
    assert ErrorResponse.model_validate(error).error.type == "api_error"
    assert error["llmeu"]["trace_id"] == headers["x-llmeu-trace-id"]


def test_a_hang_up_stops_the_upstream_and_is_cancelled_with_the_text_produced(
    gateway: Gateway, upstream_process: FakeUpstream
) -> None:
    upstream_process.reset()
    content = "long [[chunks=2000;delay=200]]"
    sock = open_stream(gateway, content, path="/v1/messages", body=body(content))
    received = read_until(sock, b"text_delta", 3)
    sock.close()
    head = received.partition(b"\r\n\r\n")[0].decode("latin-1").lower()
    trace_id = head.split("x-llmeu-trace-id: ")[1].split("\r\n")[0]

    def closed() -> dict[str, Any] | None:
        seen = upstream_process.stats()
        return seen[-1] if seen and seen[-1]["closed_at"] is not None else None

    seen = wait_for(closed, what="the upstream connection to close")
    assert seen["completed"] is False and seen["chunks_sent"] < 2000
    trace = settled_trace(gateway, trace_id)
    assert trace["status"] == "cancelled" and trace["route"] == "/v1/messages"
    completion = trace["content"]["completion"]
    assert completion.startswith("tok0 tok1 tok2 ")
    assert completion == "".join(f"tok{i} " for i in range(len(completion.split())))


def test_x_api_key_authenticates_and_a_missing_key_is_a_401(gateway: Gateway) -> None:
    payload = {"model": "fake-model", "max_tokens": 10,
               "messages": [{"role": "user", "content": "x [[chunks=1]]"}]}  # fmt: skip
    ok = httpx.post(f"{gateway.base_url}/messages", json=payload,
                    headers={"x-api-key": gateway.admin_key, "anthropic-version": "2023-06-01",
                             "anthropic-beta": "some-future-feature-2099"})  # fmt: skip
    assert ok.status_code == 200 and ok.json()["content"][0]["text"] == "tok0 "
    trace = settled_trace(gateway, ok.json()["llmeu"]["trace_id"])
    assert trace["ignored_features"] == "anthropic-beta: some-future-feature-2099"
    missing = httpx.post(f"{gateway.base_url}/messages", json=payload)
    assert missing.status_code == 401
    assert missing.json()["error"]["type"] == "authentication_error"
    no_max = httpx.post(f"{gateway.base_url}/messages", headers={"x-api-key": gateway.admin_key},
                        json={k: v for k, v in payload.items() if k != "max_tokens"})  # fmt: skip
    assert no_max.status_code == 400
    assert no_max.json()["error"]["type"] == "invalid_request_error"
    assert no_max.json()["error"]["param"] == "max_tokens"

"""The Responses stream on a raw socket: headers, `event:`/`data:` framing, sequence numbers,
no `[DONE]`, the `response.failed` ending, fallback before the first event, and a hang-up that
stops the upstream and is recorded as `cancelled` with the text sent."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from tests.support.openai_schema import check_response, check_stream_event
from tests.support.processes import FakeUpstream, Gateway, config_yaml, fake_endpoint
from tests.support.waiting import wait_for

EVENTS: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
EXPECTED_HEADERS = [
    "content-type: text/event-stream; charset=utf-8",
    "cache-control: no-cache, no-transform",
    "connection: keep-alive",
    "x-accel-buffering: no",
]


@pytest.fixture
def gateway(gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream) -> Gateway:
    return gateway_factory(
        config=config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream), default_policy="eu-store")
    )


def request_bytes(gateway: Gateway, body: dict[str, Any]) -> bytes:
    payload = json.dumps(body).encode()
    return (
        f"POST /v1/responses HTTP/1.1\r\nhost: 127.0.0.1\r\n"
        f"authorization: Bearer {gateway.admin_key}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(payload)}\r\nconnection: close\r\n\r\n"
    ).encode() + payload


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


def post(gateway: Gateway, body: dict[str, Any]) -> tuple[str, list[str], bytes]:
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=30) as sock:
        sock.sendall(request_bytes(gateway, body))
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    return lines[0], [line.lower() for line in lines[1:]], dechunk(rest)


def events_of(raw: bytes) -> list[dict[str, Any]]:
    blocks = raw.split(b"\n\n")
    assert blocks[-1] == b"", "the stream ends with a complete event"
    events = []
    for block in blocks[:-1]:
        event_line, data_line = block.decode().split("\n")
        name = event_line.removeprefix("event: ")
        payload = json.loads(data_line.removeprefix("data: "))
        assert payload["type"] == name
        EVENTS.validate_python(payload)
        check_stream_event(payload)
        if "response" in payload:
            check_response(payload["response"])
        events.append(payload)
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    return events


def test_stream_bytes_headers_and_order(gateway: Gateway) -> None:
    status, headers, raw = post(
        gateway, {"model": "fake-model", "input": "hi [[chunks=3]]", "stream": True}
    )
    assert status == "HTTP/1.1 200 OK"
    for header in EXPECTED_HEADERS:
        assert header in headers
    assert b"[DONE]" not in raw
    events = events_of(raw)
    assert [e["type"] for e in events] == [
        "response.created", "response.in_progress", "response.output_item.added",
        "response.content_part.added", "response.output_text.delta",
        "response.output_text.delta", "response.output_text.delta",
        "response.output_text.done", "response.content_part.done", "response.output_item.done",
        "response.completed",
    ]  # fmt: skip
    response = events[-1]["response"]
    assert response["store"] is True and response["status"] == "completed"
    assert response["llmeu"]["endpoint_id"] == "fakeprov-fr-a"
    assert response["usage"]["output_tokens"] > 0
    trace_id = next(h for h in headers if h.startswith("x-llmeu-trace-id")).split(": ")[1]
    assert response["id"] == "resp_" + trace_id[4:]


def test_max_output_tokens_ends_with_response_incomplete(gateway: Gateway) -> None:
    _, _, raw = post(
        gateway,
        {"model": "fake-model", "input": "hi [[chunks=2;finish=length]]", "stream": True,
         "max_output_tokens": 2},
    )  # fmt: skip
    events = events_of(raw)
    assert events[-1]["type"] == "response.incomplete"
    response = events[-1]["response"]
    assert response["incomplete_details"] == {"reason": "max_output_tokens"}
    assert response["output"][0]["status"] == "incomplete"
    assert "llmeu" in response


@pytest.mark.parametrize("fault", ["error_event", "reset_mid_stream"])
def test_a_failure_after_the_first_event_ends_with_response_failed(
    gateway: Gateway, fault: str
) -> None:
    _, _, raw = post(
        gateway, {"model": "fake-model", "input": f"hi [[chunks=6;fault={fault}]]", "stream": True}
    )
    events = events_of(raw)
    assert events[-1]["type"] == "response.failed"
    assert [e["type"] for e in events].count("response.failed") == 1
    assert not any(e["type"] == "response.completed" for e in events)
    response = events[-1]["response"]
    assert response["status"] == "failed" and response["error"]["message"]
    assert response["llmeu"]["trace_id"].startswith("trc_")
    trace = get(gateway, f"/v1/platform/traces/{response['llmeu']['trace_id']}")
    assert trace["status"] == "failed" and trace["route"] == "responses"


def test_fallback_before_the_first_event(
    gateway_factory: Callable[..., Gateway],
    fake_upstream: FakeUpstream,
    second_upstream: FakeUpstream,
) -> None:
    broken = fake_endpoint("fakeprov-fr-a", fake_upstream, model="fake;fault=status_503")
    working = fake_endpoint("otherprov-fr-b", second_upstream, priority=20)
    gateway = gateway_factory(config=config_yaml(broken, working))
    _, _, raw = post(gateway, {"model": "fake-model", "input": "hi", "stream": True})
    events = events_of(raw)
    assert events[-1]["type"] == "response.completed"
    assert events[-1]["response"]["llmeu"]["endpoint_id"] == "otherprov-fr-b"
    assert len(fake_upstream.stats()) == 1 and len(second_upstream.stats()) == 1


def get(gateway: Gateway, path: str) -> Any:
    response = httpx.get(
        f"{gateway.url}{path}", headers={"authorization": f"Bearer {gateway.admin_key}"}
    )
    assert response.status_code == 200, response.text
    return response.json()


def test_a_hang_up_stops_the_upstream_and_is_cancelled_with_the_text_sent(
    gateway: Gateway, fake_upstream: FakeUpstream
) -> None:
    body = {"model": "fake-model", "input": "story [[chunks=50;delay=200]]", "stream": True}
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=30) as sock:
        sock.sendall(request_bytes(gateway, body))
        data = b""
        while data.count(b"event: response.output_text.delta") < 2:
            chunk = sock.recv(65536)
            assert chunk, "the gateway closed the stream early"
            data += chunk
        sock.shutdown(socket.SHUT_WR)
        while chunk := sock.recv(65536):
            data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    trace_id = next(
        line.split(": ", 1)[1]
        for line in head.decode("latin-1").lower().split("\r\n")
        if line.startswith("x-llmeu-trace-id")
    )
    sent = [
        json.loads(line[len(b"data: ") :])["delta"]
        for line in rest.split(b"\n")
        if line.startswith(b'data: {"type":"response.output_text.delta"')
    ]
    trace = wait_for(
        lambda: (
            (t := get(gateway, f"/v1/platform/traces/{trace_id}"))["status"] != "in_progress" and t
        ),
        what="the cancelled trace",
    )
    assert trace["status"] == "cancelled"
    assert trace["content"]["completion"] == "".join(sent)
    assert trace["usage"]["estimated"] is True
    assert fake_upstream.stats()[-1]["completed"] is False
    assert wait_for(lambda: fake_upstream.stats()[-1]["closed_at"], what="the upstream closed")

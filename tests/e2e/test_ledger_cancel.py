"""A client hangs up mid-stream: the trace is `cancelled` with exactly the text it was
sent, and usage counts the call (with estimated tokens) but never as completed."""

from __future__ import annotations

import json
import math
import socket
from collections.abc import Callable
from typing import Any

import httpx

from tests.support.processes import FakeUpstream, Gateway, config_yaml, fake_endpoint
from tests.support.waiting import wait_for


def stream_and_hang_up(gateway: Gateway, content: str, frames: int) -> tuple[str, list[str]]:
    """Read `frames` content frames, then half-close and read whatever the gateway still
    sent until it closes: the client then holds every byte the gateway wrote."""
    body = json.dumps({"model": "fake-model", "stream": True,
                       "messages": [{"role": "user", "content": content}]}).encode()  # fmt: skip
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=30) as sock:
        sock.sendall(
            f"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n"
            f"authorization: Bearer {gateway.admin_key}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\n\r\n".encode()
            + body
        )
        data = b""
        while data.count(b'"content"') < frames:
            chunk = sock.recv(65536)
            assert chunk, "the gateway closed the stream early"
            data += chunk
        sock.shutdown(socket.SHUT_WR)
        while chunk := sock.recv(65536):
            data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    headers = dict(line.split(": ", 1) for line in head.decode("latin-1").lower().split("\r\n")[1:])
    return headers["x-llmeu-trace-id"], content_deltas(rest)


def content_deltas(chunked_body: bytes) -> list[str]:
    deltas = []
    for line in chunked_body.split(b"\n"):
        if line.startswith(b"data: {"):
            frame = json.loads(line[len(b"data: ") :])
            for choice in frame.get("choices", []):
                if "content" in choice["delta"]:
                    deltas.append(choice["delta"]["content"])
    return deltas


def get(gateway: Gateway, path: str) -> Any:
    response = httpx.get(
        f"{gateway.url}{path}", headers={"authorization": f"Bearer {gateway.admin_key}"}
    )
    assert response.status_code == 200, response.text
    return response.json()


def by_status(usage: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["status"]: row for row in usage["data"]}


def test_a_hang_up_is_cancelled_with_the_text_sent_and_counted_but_not_completed(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream
) -> None:
    gateway = gateway_factory(
        config=config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream), default_policy="eu-store")
    )
    completed = httpx.post(
        f"{gateway.base_url}/chat/completions",
        headers={"authorization": f"Bearer {gateway.admin_key}"},
        json={"model": "fake-model", "messages": [{"role": "user", "content": "hello"}]},
    )
    assert completed.status_code == 200
    before = by_status(get(gateway, "/v1/platform/usage?group_by=status"))
    assert before["completed"]["completed"] == 1 and "cancelled" not in before

    trace_id, received = stream_and_hang_up(gateway, "story [[chunks=50;delay=200]]", frames=2)
    trace = wait_for(
        lambda: (
            (t := get(gateway, f"/v1/platform/traces/{trace_id}"))["status"] != "in_progress" and t
        ),
        what="the cancelled trace",
    )
    text = "".join(received)
    assert len(received) >= 2 and text.startswith("tok0 tok1 ")
    assert trace["status"] == "cancelled"
    assert trace["content"]["completion"] == text
    assert trace["content"]["prompt"] == [
        {"role": "user", "content": "story [[chunks=50;delay=200]]"}
    ]
    assert trace["usage"]["estimated"] is True
    assert trace["usage"]["output_tokens"] == max(len(received), math.ceil(len(text) / 4)) > 0
    assert trace["finish_reason"] is None
    assert [a["outcome"] for a in trace["attempts"]] == ["cancelled"]
    assert fake_upstream.stats()[-1]["completed"] is False

    after = by_status(get(gateway, "/v1/platform/usage?group_by=status"))
    cancelled = after["cancelled"]
    assert (cancelled["requests"], cancelled["cancelled"], cancelled["completed"]) == (1, 1, 0)
    assert cancelled["output_tokens"] == trace["usage"]["output_tokens"]
    assert cancelled["estimated_requests"] == 1
    assert cancelled["cost_eur"] == trace["usage"]["cost_eur"] > 0
    assert after["completed"] == before["completed"]
    totals = get(gateway, "/v1/platform/usage")["totals"]
    assert (totals["requests"], totals["completed"], totals["cancelled"]) == (2, 1, 1)

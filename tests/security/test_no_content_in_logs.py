"""No prompt or output text in logs, error messages or stored errors unless the policy
stores content — against a real gateway logging at debug level, as text and as JSON.

Each call carries a marker in its prompt (and, where the upstream streams, a
second marker as its output) and fails in one of the ways a client or an
upstream can make it fail: the upstream refuses it quoting the messages
(`echo`, before the first byte and mid-stream), answers 5xx, breaks the
stream with invalid JSON, a reset or a stall, times out; the body is invalid,
malformed, too large; no endpoint is allowed; the client hangs up. Under the
default policy (`eu-strict`, stores nothing) the markers must appear neither
in the gateway's output, nor in what the client is sent as an error, nor in
the trace (its error and every attempt's). Under `eu-store` the trace may keep
the content, but the log still must not.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.faults.helpers import Outcome, parse_sse
from tests.support.processes import (
    ADMIN_KEY,
    FakeUpstream,
    Gateway,
    config_yaml,
    fake_endpoint,
    start_gateway,
)
from tests.support.waiting import wait_for

PROMPT_MARKER = "SECRET-PROMPT-7f3a"
OUTPUT_MARKER = "SECRET-OUTPUT-2b9c"
PROMPT = f"Summarise the case file {PROMPT_MARKER} for the board"
TIMEOUTS = {"connect": 2, "first_token": 1, "idle": 1, "total": 30}
MAX_BODY = 64 * 1024


@dataclass
class Logged:
    gateway: Gateway
    keys: dict[str, tuple[str, str]]  # policy id → the id and token of a key governed by it


@pytest.fixture(scope="module", params=["text", "json"], ids=["text-log", "json-log"])
def logged(
    request: pytest.FixtureRequest,
    upstream_process: FakeUpstream,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Logged]:
    config = config_yaml(
        fake_endpoint("fakeprov-fr-main", upstream_process, timeouts=TIMEOUTS),
        fake_endpoint("echo-fr-first", upstream_process, model="fake;fault=echo;status=503",
                      aliases=["fallback-model"]),
        fake_endpoint("backup-fr-second", upstream_process, aliases=["fallback-model"],
                      priority=20),
    )  # fmt: skip
    gateway = start_gateway(
        tmp_path_factory.mktemp("logs"),
        config=config,
        args=["--log-level", "debug", "--log-format", request.param,
              "--max-body-bytes", str(MAX_BODY), "--breaker-threshold", "1000000"],
    )  # fmt: skip
    created = httpx.post(
        f"{gateway.url}/v1/platform/keys",
        json={"name": "archive", "policy_id": "eu-store"},
        headers={"authorization": f"Bearer {ADMIN_KEY}"},
    )
    assert created.status_code == 201, created.text
    tenant = (created.json()["id"], created.json()["key"])
    yield Logged(gateway, {"eu-strict": ("admin", ADMIN_KEY), "eu-store": tenant})
    gateway.kill()


def send(
    gateway: Gateway,
    key: str,
    body: bytes | Iterable[bytes],
    path: str = "/v1/chat/completions",
) -> Outcome:
    headers = {"authorization": f"Bearer {key}", "content-type": "application/json"}
    with (
        httpx.Client(timeout=60) as client,
        client.stream("POST", gateway.url + path, content=body, headers=headers) as response,
    ):
        raw = b""
        try:
            for chunk in response.iter_raw():
                raw += chunk
        except httpx.RemoteProtocolError:
            pass
    outcome = Outcome(response.status_code, response.headers, raw)
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        outcome.frames, outcome.done = parse_sse(raw)
    return outcome


def chat_body(content: str = PROMPT, **extra: Any) -> bytes:
    messages = [{"role": "user", "content": content}]
    return json.dumps({"model": "fake-model", "messages": messages, **extra}).encode()


def faulty(fault: str, stream: bool = False) -> Callable[[Gateway, str], Outcome]:
    return lambda gw, key: send(gw, key, chat_body(f"{PROMPT} [[{fault}]]", stream=stream))


def oversize_in_chunks(gateway: Gateway, key: str) -> Outcome:
    def chunks() -> Iterator[bytes]:
        yield chat_body(PROMPT)[:-3] + b" "
        for _ in range(20):
            yield b"x" * 8192

    return send(gateway, key, chunks())


def hang_up(gateway: Gateway, key: str) -> Outcome:
    """Read the first content frame of a slow stream, then close the connection."""
    body = chat_body(f"{PROMPT} [[chunks=40;delay=50]]", stream=True)
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=30) as sock:
        sock.sendall(
            f"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {key}\r\n"
            f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n".encode()
            + body
        )
        data = b""
        while b'"content":"tok' not in data:
            chunk = sock.recv(65536)
            assert chunk, "the gateway closed the stream early"
            data += chunk
    head = data.partition(b"\r\n\r\n")[0].decode("latin-1").lower()
    headers = dict(line.split(": ", 1) for line in head.split("\r\n")[1:])
    return Outcome(200, httpx.Headers(headers), data)


# id → (make the call, HTTP status, trace status, whether the stream ends in an error frame)
SCENARIOS: dict[str, tuple[Callable[[Gateway, str], Outcome], int, str, bool]] = {
    "upstream-400-quoting-the-prompt": (faulty("fault=echo"), 400, "failed", False),
    "upstream-400-quoting-before-the-first-frame": (
        faulty("fault=echo", stream=True), 400, "failed", False),
    "upstream-500-quoting-the-prompt": (faulty("fault=echo;status=500"), 503, "failed", False),
    "upstream-500": (faulty("fault=status_500"), 503, "failed", False),
    "upstream-error-event-quoting-prompt-and-output": (
        faulty(f"fault=echo_mid_stream;text={OUTPUT_MARKER}", stream=True), 200, "failed", True),
    "invalid-json-chunk-mid-stream": (
        faulty(f"fault=invalid_json;text={OUTPUT_MARKER}", stream=True), 200, "failed", True),
    "reset-mid-stream": (
        faulty(f"fault=reset_mid_stream;text={OUTPUT_MARKER}", stream=True), 200, "failed", True),
    "malformed-sse-mid-stream": (
        faulty(f"fault=malformed_sse;text={OUTPUT_MARKER}", stream=True), 200, "failed", True),
    "idle-timeout-mid-stream": (
        faulty(f"fault=stall_between;stall=30;text={OUTPUT_MARKER}", stream=True),
        200, "failed", True),
    "first-token-timeout": (faulty("fault=stall_first;stall=30"), 504, "failed", False),
    "fallback-after-an-upstream-quoting-the-prompt": (
        lambda gw, key: send(gw, key, chat_body(model="fallback-model")), 200, "completed", False),
    "value-out-of-range": (lambda gw, key: send(gw, key, chat_body(top_p=5)), 400, "rejected", False),
    "unknown-field": (lambda gw, key: send(gw, key, chat_body(colour="red")), 400, "rejected", False),
    "invalid-part": (
        lambda gw, key: send(gw, key, chat_body([{"type": "text", "text": PROMPT},
                                                  {"type": "video"}])), 400, "rejected", False),
    "malformed-json": (lambda gw, key: send(gw, key, chat_body()[:-5]), 400, "rejected", False),
    "oversize-declared": (
        lambda gw, key: send(gw, key, chat_body(PROMPT + "x" * MAX_BODY)), 413, "rejected", False),
    "oversize-chunked": (oversize_in_chunks, 413, "rejected", False),
    "no-compliant-route": (
        lambda gw, key: send(gw, key, chat_body(llmeu={"allow_classes": ["on_premise"]})),
        403, "rejected", False),
    "embeddings-refused": (
        lambda gw, key: send(gw, key, json.dumps({"model": "fake-model", "input": PROMPT,
                                                  "stream": True}).encode(), "/v1/embeddings"),
        400, "rejected", False),
    "client-hang-up": (hang_up, 200, "cancelled", False),
}  # fmt: skip


def admin_trace(gateway: Gateway, trace_id: str, status: str) -> dict[str, Any]:
    def final() -> dict[str, Any] | None:
        response = httpx.get(
            f"{gateway.url}/v1/platform/traces/{trace_id}",
            headers={"authorization": f"Bearer {ADMIN_KEY}"},
        )
        found: dict[str, Any] = response.json()
        return found if response.status_code == 200 and found["status"] != "in_progress" else None

    trace: dict[str, Any] = wait_for(final, what=f"trace {trace_id}")
    assert trace["status"] == status
    return trace


def call(logged: Logged, scenario: str, policy: str) -> tuple[Outcome, dict[str, Any]]:
    make, status, trace_status, error_frame = SCENARIOS[scenario]
    key_id, token = logged.keys[policy]
    outcome = make(logged.gateway, token)
    assert outcome.status == status, outcome.body[:500]
    if error_frame:
        assert outcome.error_frame is not None and not outcome.done
    trace = admin_trace(logged.gateway, outcome.trace_id, trace_status)
    assert trace["key_id"] == key_id
    return outcome, trace


def assert_not_logged(gateway: Gateway, trace_id: str) -> None:
    output = gateway.output()
    assert trace_id in output, "the call's log line was not written"
    assert PROMPT_MARKER not in output
    assert OUTPUT_MARKER not in output


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_no_content_anywhere_when_the_policy_stores_none(logged: Logged, scenario: str) -> None:
    outcome, trace = call(logged, scenario, "eu-strict")
    sent_as_error = json.dumps(outcome.error_frame) if outcome.frames else outcome.body.decode()
    for marker in (PROMPT_MARKER, OUTPUT_MARKER):
        assert marker not in sent_as_error
        assert marker not in json.dumps(trace)
    assert trace["content"]["stored"] is False
    assert_not_logged(logged.gateway, outcome.trace_id)


def test_quoted_content_is_replaced_not_dropped(logged: Logged) -> None:
    """The redacted messages still say what went wrong (the canary for the test above)."""
    _, failed = call(logged, "upstream-400-quoting-the-prompt", "eu-strict")
    assert failed["error"]["message"].startswith("upstream answered 400: invalid request")
    assert "[redacted]" in failed["error"]["message"]
    _, recovered = call(logged, "fallback-after-an-upstream-quoting-the-prompt", "eu-strict")
    first, second = recovered["attempts"]
    assert (first["outcome"], first["upstream_status"], second["outcome"]) == (
        "failed",
        503,
        "served",
    )
    assert "[redacted]" in first["error"]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_policy_that_stores_content_keeps_it_out_of_the_log(
    logged: Logged, scenario: str
) -> None:
    outcome, _ = call(logged, scenario, "eu-store")
    assert_not_logged(logged.gateway, outcome.trace_id)


def test_a_policy_that_stores_content_keeps_it_in_the_trace(logged: Logged) -> None:
    _, completed = call(logged, "fallback-after-an-upstream-quoting-the-prompt", "eu-store")
    assert completed["content"]["stored"] is True
    assert PROMPT_MARKER in json.dumps(completed["content"]["prompt"])
    assert PROMPT_MARKER in completed["attempts"][0]["error"]
    _, failed = call(logged, "upstream-error-event-quoting-prompt-and-output", "eu-store")
    assert OUTPUT_MARKER in failed["content"]["completion"]
    assert_not_logged(logged.gateway, failed["id"])

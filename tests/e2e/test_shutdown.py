"""SIGTERM drains, SIGKILL interrupts: real processes, a real client socket, the ledger after.

On SIGTERM the gateway stops listening at once, lets calls in flight finish
within `--shutdown-grace`, ends the others itself (a stream with an error
frame and no `[DONE]`, a pending answer with a 503), records them
`interrupted` (code `gateway_shutdown`), flushes the ledger and exits 0. On
SIGKILL the client's stream is cut and the next start records the call
`interrupted` (code `gateway_interrupted`).
"""

from __future__ import annotations

import signal
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.faults.helpers import create_key, parse_sse, post, trace
from tests.support.processes import FakeUpstream, Gateway, config_yaml, fake_endpoint
from tests.support.streams import dechunk, read_to_end, read_until
from tests.support.streams import open_stream as open_raw_stream
from tests.support.waiting import wait_for


@pytest.fixture
def start(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream, tmp_path: Path
) -> Callable[..., Gateway]:
    """Start a gateway on the fake upstream; the same data dir each time (one ledger)."""
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))

    def start_one(*args: str) -> Gateway:
        return gateway_factory(config=config, args=list(args), data_dir=tmp_path / "ledger")

    return start_one


def refuses_connections(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return True
    return False


def split_response(raw: bytes) -> tuple[str, dict[str, str], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return lines[0], headers, body


def test_sigterm_lets_a_stream_in_flight_finish_and_exits_0(
    start: Callable[..., Gateway],
) -> None:
    gateway = start("--shutdown-grace", "30")
    with open_raw_stream(gateway, "go [[fault=slow_drip;chunks=15;delay=100]]") as sock:
        first = read_until(sock, b'"content"')
        gateway.proc.send_signal(signal.SIGTERM)
        wait_for(lambda: refuses_connections(gateway.port), what="the listener to close")
        status, headers, body = split_response(first + read_to_end(sock))
        assert status == "HTTP/1.1 200 OK"
        frames, done = parse_sse(dechunk(body))
        assert done, "a stream that finishes within the grace ends normally"
        assert (
            len([f for f in frames if f["choices"] and f["choices"][0]["delta"].get("content")])
            == 15
        )
        assert gateway.proc.wait(30) == 0
        after = start()
        assert trace(after, headers["x-llmeu-trace-id"])["status"] == "completed"


def test_sigterm_ends_a_stream_past_the_grace_with_an_error_frame(
    start: Callable[..., Gateway],
) -> None:
    gateway = start("--shutdown-grace", "1")
    key = create_key(gateway, policy_id="eu-store")["key"]
    with open_raw_stream(gateway, "go [[fault=slow_drip;chunks=3000;delay=20]]", key=key) as sock:
        first = read_until(sock, b'"content"', 3)
        gateway.proc.send_signal(signal.SIGTERM)
        status, headers, body = split_response(first + read_to_end(sock))
        assert status == "HTTP/1.1 200 OK"
        raw = dechunk(body)
        assert raw.endswith(b"\n\n"), "the stream ends with a whole frame, not a cut"
        frames, done = parse_sse(raw)
        assert not done
        error_frame = frames[-1]
        assert error_frame["error"]["code"] == "gateway_shutdown"
        assert error_frame["error"]["type"] == "api_error"
        assert error_frame["llmeu"]["trace_id"] == headers["x-llmeu-trace-id"]
        assert error_frame["llmeu"]["endpoint_id"] == "fakeprov-fr-a"
        produced = "".join(f["choices"][0]["delta"].get("content", "") for f in frames[1:-1])
        assert produced
        assert gateway.proc.wait(30) == 0
        found = trace(start(), headers["x-llmeu-trace-id"])
        assert found["status"] == "interrupted"
        assert found["error"]["code"] == "gateway_shutdown"
        assert found["content"]["completion"] == produced  # written before exit, with the output
        assert found["usage"]["output_tokens"] >= len(frames) - 2


def test_sigterm_answers_a_pending_call_past_the_grace_with_a_503(
    start: Callable[..., Gateway], fake_upstream: FakeUpstream
) -> None:
    gateway = start("--shutdown-grace", "0.5")
    outcome: dict[str, Any] = {}

    def call() -> None:
        outcome["value"] = post(
            gateway,
            "/v1/chat/completions",
            {
                "model": "fake-model",
                "messages": [{"role": "user", "content": "go [[fault=stall_first;stall=30]]"}],
            },
        )

    caller = threading.Thread(target=call)
    caller.start()
    wait_for(lambda: fake_upstream.stats(), what="the call to reach the upstream")
    gateway.proc.send_signal(signal.SIGTERM)
    caller.join(30)
    answer = outcome["value"]
    assert answer.status == 503
    assert answer.json["error"]["code"] == "gateway_shutdown"
    assert gateway.proc.wait(30) == 0
    found = trace(start(), answer.trace_id)
    assert found["status"] == "interrupted"
    assert found["error"]["code"] == "gateway_shutdown"


def test_a_new_connection_during_the_drain_is_refused(start: Callable[..., Gateway]) -> None:
    gateway = start("--shutdown-grace", "30")
    with open_raw_stream(gateway, "go [[fault=slow_drip;chunks=50;delay=100]]") as sock:
        read_until(sock, b'"content"')
        gateway.proc.send_signal(signal.SIGTERM)
        wait_for(lambda: refuses_connections(gateway.port), what="the listener to close")
        assert gateway.proc.poll() is None, "the stream in flight keeps the process up"
        sock.shutdown(socket.SHUT_RDWR)
        assert gateway.proc.wait(30) == 0


def test_sigkill_mid_stream_cuts_the_stream_and_the_next_start_records_it_interrupted(
    start: Callable[..., Gateway],
) -> None:
    gateway = start()
    with open_raw_stream(gateway, "go [[fault=slow_drip;chunks=3000;delay=20]]") as sock:
        first = read_until(sock, b'"content"', 2)
        gateway.kill()
        _, headers, body = split_response(first + read_to_end(sock))
        raw = dechunk(body)
        assert b"[DONE]" not in raw and b'"error"' not in raw
        found = trace(start(), headers["x-llmeu-trace-id"])
        assert found["status"] == "interrupted"
        assert found["error"]["code"] == "gateway_interrupted"

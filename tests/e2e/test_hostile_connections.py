"""Hostile connections against a real gateway process: slow heads and bodies, silent and
surplus connections, a lowered descriptor limit, bodies that would hold the memory."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
import pytest

from tests.faults.helpers import chat, trace
from tests.support.processes import FakeUpstream, Gateway, config_yaml, fake_endpoint
from tests.support.raw_http import (
    assert_refused,
    chat_head,
    connect,
    metric_sample,
    parse,
    read_response_text,
    read_until_closed,
    readable,
)

GatewayFactory = Callable[..., Gateway]


def metric(gateway: Gateway, sample: str) -> float:
    """One sample of the gateway's /metrics, by its name and labels as Prometheus writes them."""
    return metric_sample(httpx.get(f"{gateway.url}/metrics").text, sample)


@pytest.fixture
def config(fake_upstream: FakeUpstream) -> str:
    return config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))


def test_a_head_sent_a_byte_at_a_time_gets_408_and_the_connection_closes(
    gateway_factory: GatewayFactory, config: str
) -> None:
    gateway = gateway_factory(config=config, args=["--head-timeout", "1"])
    with connect(gateway) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: gateway\r\nx-slow: ")
        for _ in range(100):  # 20 s at most; the gateway gives the head 1 s
            if readable(sock):
                break
            sock.sendall(b"a")
            time.sleep(0.2)
        response = parse(read_until_closed(sock))
    error = assert_refused(response, 408, "request_timeout")
    assert error["type"] == "invalid_request_error"
    assert httpx.get(f"{gateway.url}/healthz").status_code == 200
    assert metric(gateway, "llmeu_connections_head_timeouts_total") == 1


def test_a_connection_that_never_speaks_is_closed(
    gateway_factory: GatewayFactory, config: str
) -> None:
    gateway = gateway_factory(config=config, args=["--head-timeout", "1"])
    with connect(gateway) as sock:
        assert read_until_closed(sock) == b""  # closed, with nothing to answer
    assert metric(gateway, "llmeu_connections_head_timeouts_total") == 1


def test_a_stalled_body_is_408_and_its_call_is_rejected(
    gateway_factory: GatewayFactory, config: str
) -> None:
    gateway = gateway_factory(config=config, args=["--body-timeout", "1"])
    with connect(gateway) as sock:
        sock.sendall(chat_head(4000) + b'{"model": "fake-model", "messages": [')
        response = parse(read_until_closed(sock))
    error = assert_refused(response, 408, "request_timeout")
    assert "paused" in error["message"] or "pause" in error["message"]
    recorded = trace(gateway, response.headers["x-llmeu-trace-id"])
    assert recorded["status"] == "rejected"
    assert recorded["error"]["code"] == "request_timeout"
    assert recorded["attempts"] == []


def test_a_body_trickled_below_the_minimum_rate_is_408(
    gateway_factory: GatewayFactory, config: str
) -> None:
    gateway = gateway_factory(config=config, args=["--body-timeout", "1", "--min-body-rate", "100"])
    sent = 0
    with connect(gateway) as sock:
        sock.sendall(chat_head(5000))
        # 10 bytes every 0.2 s: no pause reaches the 1 s bound, but 50 bytes/s is under 100.
        while not readable(sock) and sent < 5000:
            sock.sendall(b" " * 10)
            sent += 10
            time.sleep(0.2)
        response = parse(read_until_closed(sock))
    assert_refused(response, 408, "request_timeout")
    assert 0 < sent < 5000
    recorded = trace(gateway, response.headers["x-llmeu-trace-id"])
    assert recorded["status"] == "rejected"


def test_one_address_may_hold_only_so_many_connections(
    gateway_factory: GatewayFactory, config: str
) -> None:
    gateway = gateway_factory(config=config, args=["--max-connections-per-client", "4"])
    held = [connect(gateway) for _ in range(4)]
    try:
        for sock in held:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: gateway\r\n\r\n")
            sock.recv(65536)  # each answered, each kept alive
        with connect(gateway) as fifth:
            response = parse(read_until_closed(fifth))
        error = assert_refused(response, 429, "too_many_connections")
        assert error["type"] == "rate_limit_error"
        assert response.headers["retry-after"] == "1"
        for sock in held[:1]:  # a connection held open asks, so /metrics is not refused
            sock.sendall(b"GET /metrics HTTP/1.1\r\nhost: gateway\r\n\r\n")
            text = read_response_text(sock)
        assert 'llmeu_connections_refused_total{reason="per_client"} 1.0' in text
        assert "llmeu_connections_open 4.0" in text
    finally:
        for sock in held:
            sock.close()
    deadline = time.monotonic() + 10
    while httpx.get(f"{gateway.url}/healthz").status_code != 200:  # the slots come back
        assert time.monotonic() < deadline
        time.sleep(0.1)


def test_silent_connections_past_the_descriptor_limit_do_not_lock_clients_out(
    gateway_factory: GatewayFactory, config: str
) -> None:
    # 160 descriptors: the gateway holds at most 96 connections; 200 silent ones are opened.
    gateway = gateway_factory(
        config=config,
        nofile=160,
        args=["--max-connections-per-client", "0", "--head-timeout", "60"],
    )
    silent = []
    try:
        for _ in range(200):
            silent.append(connect(gateway))
        time.sleep(0.5)
        for _ in range(5):
            assert httpx.get(f"{gateway.url}/healthz", timeout=10).status_code == 200
            assert chat(gateway, "hello").status == 200
        closed = sum(1 for sock in silent if readable(sock) and sock.recv(1) == b"")
        assert closed >= 200 - 96  # the oldest silent ones made room
    finally:
        for sock in silent:
            sock.close()
    assert gateway.proc.poll() is None
    assert "Too many open files" not in gateway.output()


def test_when_every_connection_is_busy_a_newcomer_gets_503(
    gateway_factory: GatewayFactory, config: str
) -> None:
    gateway = gateway_factory(config=config, args=["--max-connections", "3"])
    busy = [connect(gateway) for _ in range(3)]
    try:
        for sock in busy:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: gateway\r\n")  # a head under way
        time.sleep(0.3)
        with connect(gateway) as fourth:
            response = parse(read_until_closed(fourth))
        assert_refused(response, 503, "server_busy")
        assert response.headers["retry-after"] == "1"
    finally:
        for sock in busy:
            sock.close()
    deadline = time.monotonic() + 10
    while True:  # the busy ones are gone once /metrics gets a connection
        try:
            assert metric(gateway, 'llmeu_connections_refused_total{reason="busy"}') >= 1
            break
        except httpx.TransportError:
            assert time.monotonic() < deadline
            time.sleep(0.1)


def test_bodies_in_flight_are_bounded_in_memory(
    gateway_factory: GatewayFactory, config: str
) -> None:
    gateway = gateway_factory(
        config=config,
        args=["--max-body-bytes", "60000", "--max-body-memory", "100000",
              "--body-timeout", "30"],
    )  # fmt: skip
    halves = [connect(gateway) for _ in range(2)]
    try:
        for sock in halves:
            sock.sendall(chat_head(50_000) + b"{" * 10)
        time.sleep(0.3)
        with connect(gateway) as third:
            third.sendall(chat_head(50_000) + b" " * 100)
            response = parse(read_until_closed(third))
        assert_refused(response, 503, "server_busy")
        assert response.headers["retry-after"] == "1"
        assert trace(gateway, response.headers["x-llmeu-trace-id"])["status"] == "rejected"
    finally:
        for sock in halves:
            sock.close()
    assert chat(gateway, "hello").status == 200  # what the halves held is given back

"""The client's address behind a balancer, against real gateway processes over real sockets:
X-Forwarded-For from a trusted 127.0.0.1, a forged one from an untrusted peer, and PROXY
protocol v1 and v2 headers written on a raw socket."""

from __future__ import annotations

import ipaddress
import secrets
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from llmeu.protocol.proxy_header import V2_SIGNATURE
from tests.support.processes import (
    REPO,
    FakeUpstream,
    Gateway,
    config_yaml,
    fake_endpoint,
    free_port,
)
from tests.support.raw_http import (
    assert_refused,
    chat_head,
    connect,
    metric_sample,
    parse,
    read_response,
    read_response_text,
    read_until_closed,
)

GatewayFactory = Callable[..., Gateway]

HELD_BODY = 100
"""A request body announced and never sent whole: the request stays in flight."""


@pytest.fixture
def config(fake_upstream: FakeUpstream) -> str:
    return config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))


def made_up_key() -> str:
    return f"sk-llmeu-k{secrets.token_hex(8)}-{secrets.token_hex(16)}"


def models_with_made_up_key(client: httpx.Client, headers: dict[str, str]) -> int:
    """The status of `GET /v1/models` with a key nobody issued."""
    authorization = {"authorization": f"Bearer {made_up_key()}"}
    response = client.get("/v1/models", headers={**authorization, **headers})
    if response.status_code == 429:
        assert response.json()["error"]["code"] == "too_many_failed_authentications"
    return response.status_code


def spend_failures(client: httpx.Client, headers: dict[str, str]) -> None:
    """Made-up keys until the address they count for is refused without a lookup."""
    for _ in range(300):
        status = models_with_made_up_key(client, headers)
        if status == 429:
            return
        assert status == 401
    raise AssertionError("300 failed authentications and no 429")


def test_behind_a_trusted_proxy_failed_authentications_count_per_forwarded_client(
    gateway_factory: GatewayFactory, config: str
) -> None:
    gateway = gateway_factory(config=config, args=["--trusted-proxy", "127.0.0.1/32"])
    with httpx.Client(base_url=gateway.url, timeout=30) as client:
        # The balancer appends the client's address to what the client sent.
        spend_failures(client, xff("198.51.100.1, 203.0.113.7"))
        assert models_with_made_up_key(client, xff("203.0.113.7")) == 429
        # Other clients behind the same balancer are counted apart, IPv4 and IPv6 alike.
        for other in ("203.0.113.8", "2001:db8::8", "203.0.113.7, 203.0.113.9"):
            assert models_with_made_up_key(client, xff(other)) == 401
        # One address however it is written: the spent one stays spent.
        spend_failures(client, xff("2001:db8:0:0::7"))
        assert models_with_made_up_key(client, xff("[2001:DB8::7]:4711")) == 429
        # The balancer's own requests name no client: they count for the balancer.
        assert models_with_made_up_key(client, {}) == 401
        # A malformed header is no error: the request counts for the balancer.
        assert models_with_made_up_key(client, xff("203.0.113.7, garbage")) == 401
        # Forwarded is not the header this balancer writes: not read.
        assert models_with_made_up_key(client, {"forwarded": "for=203.0.113.7"}) == 401


def test_a_balancer_that_writes_forwarded_names_the_client_there(
    gateway_factory: GatewayFactory, config: str
) -> None:
    gateway = gateway_factory(
        config=config, args=["--trusted-proxy", "127.0.0.1", "--forwarded-header", "forwarded"]
    )
    spent = {"forwarded": 'for=198.51.100.1, for="[2001:db8::7]:4711";proto=http'}
    with httpx.Client(base_url=gateway.url, timeout=30) as client:
        spend_failures(client, spent)
        assert models_with_made_up_key(client, {"forwarded": 'for="[2001:db8::7]"'}) == 429
        assert models_with_made_up_key(client, {"forwarded": "for=203.0.113.8"}) == 401
        # X-Forwarded-For is not the header this balancer writes: the balancer's request.
        assert models_with_made_up_key(client, xff("2001:db8::7")) == 401


def xff(value: str) -> dict[str, str]:
    return {"x-forwarded-for": value}


def test_an_untrusted_peers_forged_headers_are_ignored(
    gateway_factory: GatewayFactory, config: str
) -> None:
    gateway = gateway_factory(
        config=config,
        args=["--trusted-proxy", "192.0.2.0/24", "--max-connections-per-client", "2",
              "--body-timeout", "60"],
    )  # fmt: skip
    with httpx.Client(base_url=gateway.url, timeout=30) as client:
        for _ in range(300):  # every request forges another client: all count for 127.0.0.1
            forged = str(ipaddress.IPv4Address(secrets.randbits(32)))
            status = models_with_made_up_key(client, {**xff(forged), "forwarded": f"for={forged}"})
            if status == 429:
                break
        assert status == 429
    held = [hold_request(gateway, {"x-forwarded-for": f"203.0.113.{n}"}) for n in (1, 2)]
    try:
        with connect(gateway) as third:  # refused on arrival: the header is never read
            third.sendall(request_head({"x-forwarded-for": "203.0.113.3"}))
            assert_refused(parse(read_until_closed(third)), 429, "too_many_connections")
    finally:
        for sock in held:
            sock.close()


def test_behind_a_trusted_proxy_the_connection_cap_is_per_forwarded_client(
    gateway_factory: GatewayFactory, config: str
) -> None:
    gateway = gateway_factory(
        config=config,
        args=["--trusted-proxy", "127.0.0.1", "--max-connections-per-client", "2",
              "--body-timeout", "60"],
    )  # fmt: skip
    client_a = xff("203.0.113.7")
    held = [hold_request(gateway, client_a) for _ in range(2)]
    try:
        time.sleep(0.3)  # both heads read: two connections count for 203.0.113.7
        with connect(gateway) as third:
            third.sendall(request_head(client_a))
            error = assert_refused(parse(read_until_closed(third)), 429, "too_many_connections")
            assert error["type"] == "rate_limit_error"
        with connect(gateway) as pooled:  # one kept-alive connection, as a balancer pools them
            for client in (xff("203.0.113.8"), xff("2001:db8::8"), {}, xff("203.0.113.8")):
                assert ask(pooled, client) == 200
            # The same connection, now carrying 203.0.113.7's request: over its cap.
            pooled.sendall(request_head(client_a))
            assert_refused(parse(read_until_closed(pooled)), 429, "too_many_connections")
        held[0].close()
        deadline = time.monotonic() + 10
        while True:  # the closed connection gives 203.0.113.7 room again
            with connect(gateway) as again:
                status = ask(again, client_a)
            if status == 200:
                break
            assert status == 429 and time.monotonic() < deadline, status
            time.sleep(0.1)
    finally:
        for sock in held:
            sock.close()


def request_head(headers: dict[str, str], path: str = "/healthz") -> bytes:
    lines = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    return f"GET {path} HTTP/1.1\r\nhost: gateway\r\n{lines}\r\n".encode()


def hold_request(gateway: Gateway, headers: dict[str, str], prefix: bytes = b"") -> socket.socket:
    """A connection whose request is in flight: its head sent, its body never finished."""
    sock = connect(gateway)
    head = chat_head(HELD_BODY).replace(
        b"\r\n\r\n", b"".join(f"\r\n{n}: {v}".encode() for n, v in headers.items()) + b"\r\n\r\n"
    )
    sock.sendall(prefix + head + b"{")
    return sock


def v1(address: str, port: int = 4711) -> bytes:
    family = "TCP4" if ipaddress.ip_address(address).version == 4 else "TCP6"
    destination = "127.0.0.1" if family == "TCP4" else "::1"
    return f"PROXY {family} {address} {destination} {port} 8080\r\n".encode()


def v2(address: str | None, port: int = 4711) -> bytes:
    """A version 2 header; None: a LOCAL one (the balancer's own connection)."""
    if address is None:
        return V2_SIGNATURE + b"\x20\x00\x00\x00"
    ip = ipaddress.ip_address(address)
    destination = ipaddress.ip_address("127.0.0.1" if ip.version == 4 else "::1")
    family = 0x11 if ip.version == 4 else 0x21
    body = ip.packed + destination.packed + struct.pack("!HH", port, 8080)
    return V2_SIGNATURE + bytes([0x21, family]) + struct.pack("!H", len(body)) + body


def proxy_protocol_ready(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
        sock.sendall(b"PROXY UNKNOWN\r\n" + request_head({}))
        return sock.recv(65536).startswith(b"HTTP/1.1 200")


@contextmanager
def raw(gateway: Gateway, header: bytes, source: str = "127.0.0.1") -> Iterator[socket.socket]:
    sock = connect(gateway, source)
    try:
        sock.sendall(header)
        yield sock
    finally:
        sock.close()


def ask(sock: socket.socket, headers: dict[str, str], path: str = "/healthz") -> int:
    """One request on `sock`, its whole answer read; its status."""
    sock.sendall(request_head(headers, path))
    head, _ = read_response(sock)
    return int(head.split(b" ", 2)[1])


def test_proxy_protocol_v1_and_v2_name_the_client(
    gateway_factory: GatewayFactory, config: str
) -> None:
    gateway = gateway_factory(
        config=config,
        args=["--trusted-proxy", "127.0.0.1", "--proxy-protocol",
              "--max-connections-per-client", "1", "--body-timeout", "60"],
        ready=proxy_protocol_ready,
    )  # fmt: skip
    held = hold_request(gateway, {}, prefix=v1("203.0.113.7"))
    try:
        time.sleep(0.3)  # 203.0.113.7 holds its one connection
        for header in (v2("203.0.113.7", 5000), v1("203.0.113.7", 6000)):
            with raw(gateway, header) as sock:  # the same client, whatever its port
                assert_refused(parse(read_until_closed(sock)), 429, "too_many_connections")
        for header in (v2("203.0.113.8"), v1("2001:db8::8"), v2("2001:db8::9"), v2(None)):
            with raw(gateway, header) as sock:
                assert ask(sock, {}) == 200
                assert ask(sock, {}) == 200  # kept alive: the header came once
        # A LOCAL connection is the balancer's own, trusted: its requests name their client.
        with raw(gateway, v2(None)) as sock:
            assert ask(sock, {"x-forwarded-for": "203.0.113.8"}) == 200
            sock.sendall(request_head({"x-forwarded-for": "203.0.113.7"}))
            assert_refused(parse(read_until_closed(sock)), 429, "too_many_connections")
    finally:
        held.close()
    # What the app sees is the announced address: failed authentications count for it.
    with raw(gateway, v2("198.51.100.7")) as sock:
        for _ in range(300):
            if ask(sock, {"authorization": f"Bearer {made_up_key()}"}, "/v1/models") == 429:
                break
        else:
            raise AssertionError("300 failed authentications and no 429")
    with raw(gateway, v1("198.51.100.8")) as sock:
        assert ask(sock, {"authorization": f"Bearer {made_up_key()}"}, "/v1/models") == 401


REFUSED = 'llmeu_connections_refused_total{reason="proxy_protocol"}'
HEAD_TIMEOUTS = "llmeu_connections_head_timeouts_total"


@pytest.mark.parametrize(
    ("first_bytes", "counted"),
    [(b"", HEAD_TIMEOUTS), (b"GET /healthz HTTP/1.1\r\nhost: gateway\r\n\r\n", REFUSED),
     (b"PROXY TCP4 203.0.113.7\r\n", REFUSED),
     (V2_SIGNATURE + b"\x21\x12\x00\x0c" + bytes(12), REFUSED)],
    ids=["nothing", "no-header", "malformed-v1", "v2-datagram"],
)  # fmt: skip
def test_proxy_protocol_closes_a_connection_without_a_valid_header(
    gateway_factory: GatewayFactory, config: str, first_bytes: bytes, counted: str
) -> None:
    gateway = gateway_factory(
        config=config,
        args=["--trusted-proxy", "127.0.0.1", "--proxy-protocol", "--head-timeout", "2"],
        ready=proxy_protocol_ready,
    )
    with raw(gateway, first_bytes) as sock:
        assert read_until_closed(sock) == b""
    with raw(gateway, v1("203.0.113.7") + request_head({})) as sock:  # still serving
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
    assert metric_through_proxy(gateway, counted) == 1


def metric_through_proxy(gateway: Gateway, sample: str) -> float:
    with raw(gateway, v2(None) + request_head({}, "/metrics")) as sock:
        return metric_sample(read_response_text(sock), sample)


def test_proxy_protocol_is_refused_from_an_untrusted_peer(
    gateway_factory: GatewayFactory, config: str
) -> None:
    gateway = gateway_factory(
        config=config,
        args=["--trusted-proxy", "127.0.0.1/32", "--proxy-protocol"],
        ready=proxy_protocol_ready,
    )
    # 127.0.0.2 is this machine too, but not the trusted balancer.
    with raw(gateway, v1("203.0.113.7") + request_head({}), source="127.0.0.2") as sock:
        assert read_until_closed(sock) == b""
    assert metric_through_proxy(gateway, REFUSED) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--proxy-protocol"], "--proxy-protocol needs --trusted-proxy"),
     (["--trusted-proxy", "10.0.0.0/33"], "is not an IPv4 or IPv6 network"),
     (["--trusted-proxy", "balancer.internal"], "is not an IPv4 or IPv6 network")],
    ids=["proxy-protocol-alone", "prefix-too-long", "a-name"],
)  # fmt: skip
def test_serve_refuses_proxies_it_cannot_trust(
    tmp_path: Path, args: list[str], message: str
) -> None:
    command = [sys.executable, "-m", "llmeu.cli.main", "serve", "--no-local",
               "--port", str(free_port()), "--data-dir", str(tmp_path), *args]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 2
    assert message in done.stderr + done.stdout

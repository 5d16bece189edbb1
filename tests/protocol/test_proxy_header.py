"""PROXY protocol headers, versions 1 and 2: whole, cut short, and what is not one."""

from __future__ import annotations

import ipaddress
import struct

import pytest

from llmeu.protocol.proxy_header import (
    V2_MAX_BYTES,
    V2_SIGNATURE,
    ProxyHeader,
    read_proxy_header,
)

REQUEST = b"GET /healthz HTTP/1.1\r\nhost: gateway\r\n\r\n"


def v2(
    command: int = 0x1, family: int = 0x1, transport: int = 0x1, *,
    source: str = "203.0.113.7", destination: str = "10.0.0.1", ports: tuple[int, int] = (4711, 8080),
    tlvs: bytes = b"", version: int = 2, size: int | None = None,
) -> bytes:  # fmt: skip
    """A version 2 header, as a balancer writes it (the addresses packed for `family`)."""
    if family in (0x1, 0x2):
        addresses = (
            ipaddress.ip_address(source).packed
            + ipaddress.ip_address(destination).packed
            + struct.pack("!HH", *ports)
        )
    elif family == 0x3:
        addresses = b"/run/a.sock".ljust(108, b"\0") + b"/run/b.sock".ljust(108, b"\0")
    else:
        addresses = b""
    body = addresses + tlvs
    length = len(body) if size is None else size
    head = V2_SIGNATURE + bytes([(version << 4) | command, (family << 4) | transport])
    return head + struct.pack("!H", length) + body


VALID = [
    ("v1-tcp4", b"PROXY TCP4 203.0.113.7 10.0.0.1 4711 8080\r\n", ("203.0.113.7", 4711)),
    ("v1-tcp6", b"PROXY TCP6 2001:db8:2::7 2001:db8::1 4711 443\r\n", ("2001:db8:2::7", 4711)),
    ("v1-port-0-and-max", b"PROXY TCP4 203.0.113.7 10.0.0.1 0 65535\r\n", ("203.0.113.7", 0)),
    ("v1-unknown", b"PROXY UNKNOWN\r\n", None),
    ("v1-unknown-with-addresses", b"PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n", None),
    ("v1-longest", b"PROXY UNKNOWN " + b"f" * 91 + b"\r\n", None),
    ("v2-inet", v2(), ("203.0.113.7", 4711)),
    ("v2-inet6", v2(family=0x2, source="2001:db8:2::7", destination="2001:db8::1"),
     ("2001:db8:2::7", 4711)),
    ("v2-tlvs-skipped", v2(tlvs=b"\x04\x00\x05vpc-1" + b"\x03\x00\x04abcd"), ("203.0.113.7", 4711)),
    ("v2-local", v2(command=0x0), None),
    ("v2-local-no-addresses", v2(command=0x0, family=0x0, transport=0x0), None),
    ("v2-unspec", v2(family=0x0, transport=0x0), None),
    ("v2-unix", v2(family=0x3), None),
]  # fmt: skip


@pytest.mark.parametrize(("name", "header", "source"), VALID, ids=[v[0] for v in VALID])
def test_a_whole_header_names_the_client_and_ends_where_the_request_starts(
    name: str, header: bytes, source: tuple[str, int] | None
) -> None:
    assert read_proxy_header(header + REQUEST) == ProxyHeader(len(header), source)
    assert read_proxy_header(header) == ProxyHeader(len(header), source)


@pytest.mark.parametrize(("name", "header", "source"), VALID, ids=[v[0] for v in VALID])
def test_a_header_cut_short_waits_for_more(
    name: str, header: bytes, source: tuple[str, int] | None
) -> None:
    for end in range(len(header)):
        assert read_proxy_header(header[:end]) is None, end


INVALID = [
    ("http-request", REQUEST),
    ("tls-hello", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"),
    ("lowercase-proxy", b"proxy TCP4 203.0.113.7 10.0.0.1 4711 8080\r\n"),
    ("v1-field-missing", b"PROXY TCP4 203.0.113.7 10.0.0.1 4711\r\n"),
    ("v1-field-extra", b"PROXY TCP4 203.0.113.7 10.0.0.1 4711 8080 9\r\n"),
    ("v1-double-space", b"PROXY TCP4  203.0.113.7 10.0.0.1 4711 8080\r\n"),
    ("v1-unknown-family", b"PROXY TCP5 203.0.113.7 10.0.0.1 4711 8080\r\n"),
    ("v1-tcp4-with-v6", b"PROXY TCP4 2001:db8::7 2001:db8::1 4711 8080\r\n"),
    ("v1-tcp6-with-v4", b"PROXY TCP6 203.0.113.7 10.0.0.1 4711 8080\r\n"),
    ("v1-not-an-address", b"PROXY TCP4 example.com 10.0.0.1 4711 8080\r\n"),
    ("v1-port-too-large", b"PROXY TCP4 203.0.113.7 10.0.0.1 65536 8080\r\n"),
    ("v1-port-leading-zero", b"PROXY TCP4 203.0.113.7 10.0.0.1 04711 8080\r\n"),
    ("v1-port-sign", b"PROXY TCP4 203.0.113.7 10.0.0.1 +4711 8080\r\n"),
    ("v1-lf-only", b"PROXY TCP4 203.0.113.7 10.0.0.1 4711 8080\n"),
    ("v1-too-long", b"PROXY UNKNOWN " + b"f" * 92 + b"\r\n"),
    ("v1-never-ends", b"PROXY UNKNOWN " + b"f" * 200),
    ("v2-wrong-signature", b"\r\n\r\n\x00\r\nQUIX\n" + v2()[12:]),
    ("v2-version-1", v2(version=1)),
    ("v2-unknown-command", v2(command=0x2)),
    ("v2-datagram", v2(transport=0x2)),
    ("v2-unknown-transport", v2(transport=0x0)),
    ("v2-too-short-for-inet", v2(size=11)[:16 + 11]),
    ("v2-too-short-for-inet6", v2(family=0x2, source="::1", destination="::2", size=35)[:16 + 35]),
    ("v2-over-the-bound", v2(size=V2_MAX_BYTES - 15)),
]  # fmt: skip


@pytest.mark.parametrize(("name", "data"), INVALID, ids=[v[0] for v in INVALID])
def test_what_is_not_a_header_is_refused(name: str, data: bytes) -> None:
    with pytest.raises(ValueError, match="PROXY"):
        read_proxy_header(data)

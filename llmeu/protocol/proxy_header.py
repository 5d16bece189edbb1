"""The PROXY protocol header (HAProxy's, versions 1 and 2): pure, bytes in, an address out.

A balancer that does not speak HTTP (a TCP load balancer: AWS NLB, HAProxy in
TCP mode, a Kubernetes Service with `proxy-protocol`) cannot add an
`X-Forwarded-For`; it writes one header before the first byte of the
connection instead, naming the client's address and port. With
`--proxy-protocol`, every connection must begin with one, version 1 (a text
line) or version 2 (binary), from a trusted peer; the gateway reads it, and
the connection then is the client's.

`read_proxy_header` is given the bytes received so far: None while the header
is incomplete, a `ProxyHeader` once it is whole (its length tells where the
HTTP request starts), ValueError when the bytes cannot be a header — the
connection is then closed, as the specification asks, without guessing.
The header's `source` is None where it names nobody: version 1 `UNKNOWN`,
version 2 `LOCAL` (the balancer's own health check) or an address family
other than IPv4 and IPv6 (`AF_UNSPEC`, `AF_UNIX`); the connection's own peer
is the client then. Version 2's TLVs (TLS details, AWS's VPC endpoint id) are
skipped. A datagram (`DGRAM`) header is refused: HTTP here runs over TCP.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass

V1_PREFIX = b"PROXY "
V1_MAX_BYTES = 107
"""The longest version 1 line, CRLF included (the specification's bound)."""
V2_SIGNATURE = b"\r\n\r\n\x00\r\nQUIT\n"
V2_MAX_BYTES = 16 + 4096
"""Version 2 allows 64 KiB of addresses and TLVs; no balancer sends more than a few
hundred bytes, and the gateway holds no more than this for a connection that is
still to say who it is."""

_V2_LOCAL, _V2_PROXY = 0x0, 0x1
_AF_UNSPEC, _AF_INET, _AF_INET6 = 0x0, 0x1, 0x2
_STREAM, _DGRAM = 0x1, 0x2


@dataclass(frozen=True, slots=True)
class ProxyHeader:
    length: int
    """Bytes the header took: the HTTP request starts after them."""
    source: tuple[str, int] | None
    """The client's address and port; None: the header names nobody (the peer is the client)."""


def read_proxy_header(data: bytes) -> ProxyHeader | None:
    """The header at the start of `data`; None while incomplete; ValueError if not one."""
    if data[: len(V2_SIGNATURE)] == V2_SIGNATURE[: len(data)]:
        return _read_v2(data) if len(data) >= 16 else None
    if data[: len(V1_PREFIX)] == V1_PREFIX[: len(data)]:
        return _read_v1(data)
    raise ValueError("the connection does not begin with a PROXY protocol header")


def _read_v1(data: bytes) -> ProxyHeader | None:
    end = data.find(b"\r\n", 0, V1_MAX_BYTES)
    if end < 0:
        if len(data) >= V1_MAX_BYTES or b"\n" in data:
            raise ValueError("a PROXY v1 line longer than 107 bytes, or not ended by CRLF")
        return None
    length = end + 2
    fields = data[:end].decode("ascii", "replace").split(" ")
    if len(fields) >= 2 and fields[1] == "UNKNOWN":
        return ProxyHeader(length, None)
    if len(fields) != 6 or fields[1] not in ("TCP4", "TCP6"):
        raise ValueError("a PROXY v1 line is `PROXY TCP4|TCP6 SRC DST SPORT DPORT`")
    _, family, source, destination, source_port, destination_port = fields
    version = 4 if family == "TCP4" else 6
    address = _v1_address(source, version)
    _v1_address(destination, version)
    port = _v1_port(source_port)
    _v1_port(destination_port)
    return ProxyHeader(length, (address, port))


def _v1_address(text: str, version: int) -> str:
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        raise ValueError(f"not an IPv{version} address in a PROXY v1 line") from None
    if address.version != version:
        raise ValueError(f"not an IPv{version} address in a PROXY v1 line")
    return str(address)


def _v1_port(text: str) -> int:
    if not text.isdigit() or not text.isascii() or (len(text) > 1 and text[0] == "0"):
        raise ValueError("not a port in a PROXY v1 line")
    port = int(text)
    if port > 65535:
        raise ValueError("not a port in a PROXY v1 line")
    return port


def _read_v2(data: bytes) -> ProxyHeader | None:
    version_command, family_transport, size = struct.unpack_from("!BBH", data, 12)
    if version_command >> 4 != 2:
        raise ValueError("a PROXY v2 header of another version")
    command = version_command & 0x0F
    if command not in (_V2_LOCAL, _V2_PROXY):
        raise ValueError("a PROXY v2 header with an unknown command")
    length = 16 + size
    if length > V2_MAX_BYTES:
        raise ValueError(f"a PROXY v2 header over {V2_MAX_BYTES} bytes")
    if len(data) < length:
        return None
    if command == _V2_LOCAL:
        return ProxyHeader(length, None)
    family, transport = family_transport >> 4, family_transport & 0x0F
    if family == _AF_UNSPEC or family > _AF_INET6:  # AF_UNSPEC, AF_UNIX: nobody to name
        return ProxyHeader(length, None)
    if transport != _STREAM:
        raise ValueError("a PROXY v2 header for a datagram or unknown transport")
    width = 4 if family == _AF_INET else 16
    if size < 2 * width + 4:
        raise ValueError("a PROXY v2 header too short for its addresses")
    raw = data[16 : 16 + width]
    address = ipaddress.IPv4Address(raw) if width == 4 else ipaddress.IPv6Address(raw)
    (port,) = struct.unpack_from("!H", data, 16 + 2 * width)
    return ProxyHeader(length, (str(address), port))

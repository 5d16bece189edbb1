"""The client's address behind trusted proxies: pure, headers in, one address out.

A connection's peer is the client, unless the peer is a trusted proxy
(`--trusted-proxy CIDR`): then the client is named by the forwarding header
that proxy writes. Each proxy on the way appends the address it received the
request from, so the list is read from the right: addresses of trusted
proxies are skipped, and the first one that is not trusted is the client.
Everything left of it was written by someone no proxy vouches for, and is
never read — a client that sends its own `X-Forwarded-For: 1.2.3.4` only adds
a hop left of the one its proxy appends.

Only one header is read, the one the balancer writes (`--forwarded-header`,
`X-Forwarded-For` by default, or RFC 7239 `Forwarded`): a balancer passes the
other through untouched, so reading it too would take a client's forgery for
the truth.

A hop that is not an address — `unknown`, an obfuscated identifier such as
`_hidden` (RFC 7239 §6.3), or anything malformed — ends the walk: the client
is the last trusted hop, the proxy that could not say who sent it the
request (the peer itself when the nearest hop is already unreadable). That
keeps a misbehaving header from ever naming an address of the sender's
choice, and never fails the request.

Addresses come out canonical (`ipaddress`): `2001:DB8:0::1` and
`2001:db8::1` are one client, and an IPv4 address mapped into IPv6 (as a
dual-stack socket reports it) is the IPv4 address.

`ipaddress` takes microseconds to read an address (8 µs for an IPv4 one on the
bench machine, where a whole call costs 600 µs of CPU), and the same few
balancer addresses and returning clients come back on every request: what each
peer and each hop's text was found to be is remembered, up to `CACHE_SIZE`
texts, and forgotten all at once when full, so that made-up values cannot grow it.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

FORWARDED_HEADERS = ("x-forwarded-for", "forwarded")
CACHE_SIZE = 4096

Known = tuple[str, bool] | None
"""What a text was found to be: an address (canonical) and whether it is trusted, or none."""


def parse_network(text: str) -> IPNetwork:
    """A CIDR (`10.0.0.0/8`, `2001:db8::/32`) or one address; host bits are dropped
    (`192.168.1.10/24` is `192.168.1.0/24`). ValueError when it is neither."""
    network = ipaddress.ip_network(text.strip(), strict=False)
    if isinstance(network, ipaddress.IPv6Network) and network.prefixlen >= 96:
        mapped = network.network_address.ipv4_mapped
        if mapped is not None:  # ::ffff:10.0.0.0/104 is 10.0.0.0/8
            return ipaddress.IPv4Network((mapped, network.prefixlen - 96))
    return network


def parse_address(text: str) -> IPAddress | None:
    """An IPv4 or IPv6 address, an IPv4-mapped IPv6 one as IPv4; None when it is not one."""
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


class TrustedProxies:
    """The networks whose connections may say who the client is, and the header they use."""

    __slots__ = ("_addresses", "_hops", "_read_hop", "header", "networks")

    def __init__(self, networks: Iterable[str], header: str = "x-forwarded-for"):
        if header not in FORWARDED_HEADERS:
            raise ValueError(f"the forwarded header is one of {', '.join(FORWARDED_HEADERS)}")
        self.networks = tuple(parse_network(n) for n in networks)
        self.header = header.encode("ascii")
        self._read_hop = _forwarded_for if header == "forwarded" else _x_forwarded_for
        self._addresses: dict[str, Known] = {}
        self._hops: dict[str, Known] = {}

    def trusts(self, address: str) -> bool:
        """Whether `address` is a trusted proxy's (never for something not an address)."""
        known = self._address(address)
        return known is not None and known[1]

    def client(self, peer: str, headers: Sequence[tuple[bytes, bytes]]) -> str:
        """The client's address for a request from `peer` with `headers` (names lowercase,
        as the server gives them): `peer` itself unless `peer` is trusted."""
        return self.resolve(peer, headers)[0]

    def resolve(self, peer: str, headers: Sequence[tuple[bytes, bytes]]) -> tuple[str, bool]:
        """`client(peer, headers)`, and whether that address is itself a trusted proxy's
        (every hop was trusted, or the walk stopped at one)."""
        known = self._address(peer)
        if known is None or not known[1]:
            return peer, False
        values = [value for name, value in headers if name == self.header]
        if not values:
            return known
        # Several header lines are one list, in order (RFC 9110 §5.3).
        hops = b",".join(values).decode("latin-1").split(",")
        for hop in reversed(hops):
            found = self._hop(hop)
            if found is None:
                break
            known = found
            if not found[1]:
                break
        return known

    def _address(self, text: str) -> Known:
        try:
            return self._addresses[text]
        except KeyError:
            parsed = parse_address(text)
            return _remember(self._addresses, text, self._known(parsed))

    def _hop(self, text: str) -> Known:
        try:
            return self._hops[text]
        except KeyError:
            return _remember(self._hops, text, self._known(self._read_hop(text)))

    def _known(self, address: IPAddress | None) -> Known:
        if address is None:
            return None
        return str(address), any(address in network for network in self.networks)


def _remember(cache: dict[str, Known], text: str, known: Known) -> Known:
    if len(cache) >= CACHE_SIZE:
        cache.clear()
    cache[text] = known
    return known


def _x_forwarded_for(hop: str) -> IPAddress | None:
    """One entry of X-Forwarded-For: `192.0.2.1`, `2001:db8::1`, and the forms with a
    port some proxies write (`192.0.2.1:4711`, `[2001:db8::1]:4711`)."""
    return _node(hop.strip().strip('"'), bare_ipv6=True)


def _forwarded_for(element: str) -> IPAddress | None:
    """The `for=` of one element of Forwarded (`for=192.0.2.1;proto=https`,
    `for="[2001:db8::1]:4711"`). Elements never hold a comma in a valid header, so
    splitting on commas first keeps a sender's broken quoting inside its own element."""
    node = None
    for pair in element.split(";"):
        name, equals, value = pair.partition("=")
        if not equals:
            if pair.strip():
                return None  # not name=value
            continue
        if name.strip().lower() == "for":
            if node is not None:
                return None  # `for` twice in one element
            node = _unquote(value.strip())
            if node is None:
                return None
    return None if node is None else _node(node.strip(), bare_ipv6=False)


def _unquote(value: str) -> str | None:
    if not value.startswith('"'):
        return value
    if len(value) < 2 or not value.endswith('"'):
        return None
    inner = value[1:-1]
    return inner.replace("\\", "") if "\\" in inner else inner


def _node(text: str, *, bare_ipv6: bool) -> IPAddress | None:
    """An address, with or without a port; IPv6 bracketed (it must be to have a port, and
    in Forwarded always: `for="2001:db8::1:4711"` would be another address)."""
    if text.startswith("["):
        host, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not _is_port(rest)):
            return None
        return parse_address(host)
    if text.count(":") == 1:  # IPv4 with a port
        host, _, port = text.partition(":")
        return parse_address(host) if _is_port(":" + port) and "." in host else None
    address = parse_address(text)
    if address is not None and address.version == 6 and not bare_ipv6:
        return None
    return address


def _is_port(text: str) -> bool:
    """`:4711`, or an obfuscated port (`:_a1`, RFC 7239 §6.3): the port is not used."""
    port = text[1:]
    return text.startswith(":") and bool(port) and (port.isdigit() or port.startswith("_"))

"""The client's address behind trusted proxies: by peer, header form and address family, as a table."""

from __future__ import annotations

import pytest

from llmeu.protocol.forwarded import CACHE_SIZE, TrustedProxies, parse_network

TRUSTED = ("10.0.0.0/8", "2001:db8:ffff::/48", "127.0.0.1")
PROXY_V4, PROXY_V6 = "10.0.0.2", "2001:db8:ffff::2"
STRANGER_V4, STRANGER_V6 = "198.51.100.9", "2001:db8:1::9"

Headers = list[tuple[bytes, bytes]]


def xff(*values: str) -> Headers:
    return [(b"x-forwarded-for", v.encode("latin-1")) for v in values]


def fwd(*values: str) -> Headers:
    return [(b"forwarded", v.encode("latin-1")) for v in values]


X_FORWARDED_FOR = [
    # The peer is not trusted: whatever it says, the peer is the client.
    ("untrusted-v4-forged", STRANGER_V4, xff("203.0.113.7"), STRANGER_V4),
    ("untrusted-v6-forged", STRANGER_V6, xff("2001:db8:2::7"), STRANGER_V6),
    ("untrusted-forged-forwarded", STRANGER_V4, fwd("for=203.0.113.7"), STRANGER_V4),
    ("not-an-address-peer", "", xff("203.0.113.7"), ""),
    # A trusted peer names the client.
    ("trusted-no-header", PROXY_V4, [(b"host", b"gateway")], PROXY_V4),
    ("single-v4", PROXY_V4, xff("203.0.113.7"), "203.0.113.7"),
    ("single-v6", PROXY_V6, xff("2001:db8:2::7"), "2001:db8:2::7"),
    ("v6-client-via-v4-proxy", PROXY_V4, xff("2001:db8:2::7"), "2001:db8:2::7"),
    ("v4-client-via-v6-proxy", PROXY_V6, xff("203.0.113.7"), "203.0.113.7"),
    ("trusted-hops-skipped", PROXY_V4, xff("203.0.113.7, 10.0.0.5, 127.0.0.1"), "203.0.113.7"),
    ("v6-hops-skipped", PROXY_V6, xff("2001:db8:2::7, 2001:db8:ffff::9"), "2001:db8:2::7"),
    ("client-forgery-left-unread", PROXY_V4, xff("1.2.3.4, 203.0.113.7"), "203.0.113.7"),
    ("forgery-then-trusted", PROXY_V4, xff("1.2.3.4, 203.0.113.7, 10.0.0.5"), "203.0.113.7"),
    ("spaces", PROXY_V4, xff("  1.2.3.4 ,203.0.113.7  ,  10.0.0.5 "), "203.0.113.7"),
    ("two-header-lines", PROXY_V4, xff("1.2.3.4", "203.0.113.7"), "203.0.113.7"),
    ("all-trusted", PROXY_V4, xff("10.0.0.7, 10.0.0.5"), "10.0.0.7"),
    ("v4-with-port", PROXY_V4, xff("203.0.113.7:4711"), "203.0.113.7"),
    ("v6-bracketed", PROXY_V4, xff("[2001:db8:2::7]"), "2001:db8:2::7"),
    ("v6-bracketed-port", PROXY_V6, xff("[2001:db8:2::7]:4711"), "2001:db8:2::7"),
    ("v6-canonical", PROXY_V6, xff("2001:DB8:2:0:0::7"), "2001:db8:2::7"),
    ("v4-mapped-v6", PROXY_V6, xff("::ffff:203.0.113.7"), "203.0.113.7"),
    ("quoted", PROXY_V4, xff('"203.0.113.7"'), "203.0.113.7"),
    ("mapped-trusted-peer", "::ffff:10.0.0.2", xff("203.0.113.7"), "203.0.113.7"),
    # A hop that is no address ends the walk at the last trusted hop.
    ("unknown-then-trusted", PROXY_V4, xff("203.0.113.7, unknown, 10.0.0.5"), "10.0.0.5"),
    ("unknown-nearest", PROXY_V4, xff("203.0.113.7, unknown"), PROXY_V4),
    ("garbage", PROXY_V4, xff("not-an-address"), PROXY_V4),
    ("empty-value", PROXY_V4, xff(""), PROXY_V4),
    ("trailing-comma", PROXY_V4, xff("203.0.113.7,"), PROXY_V4),
    ("leading-garbage-unread", PROXY_V4, xff(",,%%, 203.0.113.7"), "203.0.113.7"),
    ("not-latin-text", PROXY_V4, [(b"x-forwarded-for", b"\xff\xfe")], PROXY_V4),
    ("port-out-of-form", PROXY_V4, xff("203.0.113.7:http"), PROXY_V4),
    ("v6-unclosed-bracket", PROXY_V6, xff("[2001:db8:2::7"), PROXY_V6),
    ("leading-zeros", PROXY_V4, xff("203.000.113.007"), PROXY_V4),
    ("forwarded-not-read", PROXY_V4, fwd("for=203.0.113.7"), PROXY_V4),
]

FORWARDED = [
    ("untrusted-forged", STRANGER_V6, fwd('for="[2001:db8:2::7]"'), STRANGER_V6),
    ("bare-v4", PROXY_V4, fwd("for=203.0.113.7"), "203.0.113.7"),
    ("quoted-v4", PROXY_V4, fwd('for="203.0.113.7"'), "203.0.113.7"),
    ("quoted-v4-port", PROXY_V4, fwd('for="203.0.113.7:4711"'), "203.0.113.7"),
    ("quoted-v6-port", PROXY_V6, fwd('for="[2001:db8:2::7]:4711"'), "2001:db8:2::7"),
    ("quoted-v6", PROXY_V4, fwd('for="[2001:db8:2::7]"'), "2001:db8:2::7"),
    ("obfuscated-port", PROXY_V4, fwd('for="[2001:db8:2::7]:_p1"'), "2001:db8:2::7"),
    ("with-other-params", PROXY_V4, fwd("proto=https;for=203.0.113.7;by=10.0.0.2"), "203.0.113.7"),
    ("case-of-names", PROXY_V4, fwd("For=203.0.113.7;Proto=https"), "203.0.113.7"),
    ("spaces", PROXY_V4, fwd(" for=1.2.3.4 ,  for=203.0.113.7 ; proto=https"), "203.0.113.7"),
    (
        "elements-skipped",
        PROXY_V6,
        fwd('for=1.2.3.4, for=203.0.113.7;proto=https, for="[2001:db8:ffff::9]"'),
        "203.0.113.7",
    ),
    ("two-header-lines", PROXY_V4, fwd("for=1.2.3.4", "for=203.0.113.7"), "203.0.113.7"),
    ("all-trusted", PROXY_V4, fwd("for=10.0.0.7, for=10.0.0.5"), "10.0.0.7"),
    ("forged-broken-quote-unread", PROXY_V4, fwd('for="[1::1', "for=203.0.113.7"), "203.0.113.7"),
    # Obfuscated and unknown nodes end the walk at the last trusted hop.
    ("obfuscated-then-trusted", PROXY_V4, fwd("for=_hidden, for=10.0.0.5"), "10.0.0.5"),
    ("obfuscated-nearest", PROXY_V4, fwd("for=203.0.113.7, for=_hidden"), PROXY_V4),
    ("unknown", PROXY_V6, fwd("for=unknown"), PROXY_V6),
    # Malformed: never an error, the last trusted hop.
    ("no-for", PROXY_V4, fwd("by=203.0.113.7;proto=https"), PROXY_V4),
    ("for-twice", PROXY_V4, fwd("for=203.0.113.7;for=1.2.3.4"), PROXY_V4),
    ("unterminated-quote", PROXY_V6, fwd('for="[2001:db8:2::7]:4711'), PROXY_V6),
    ("v6-unbracketed", PROXY_V6, fwd('for="2001:db8:2::7"'), PROXY_V6),
    ("v6-unbracketed-port-ambiguous", PROXY_V6, fwd('for="2001:db8:2::7:4711"'), PROXY_V6),
    ("not-name-value", PROXY_V4, fwd("203.0.113.7"), PROXY_V4),
    ("empty", PROXY_V4, fwd(""), PROXY_V4),
    ("x-forwarded-for-not-read", PROXY_V4, xff("203.0.113.7"), PROXY_V4),
]


def ids(cases: list[tuple[str, str, Headers, str]]) -> list[str]:
    return [case[0] for case in cases]


@pytest.mark.parametrize(("name", "peer", "headers", "client"), X_FORWARDED_FOR,
                         ids=ids(X_FORWARDED_FOR))  # fmt: skip
def test_x_forwarded_for(name: str, peer: str, headers: Headers, client: str) -> None:
    assert TrustedProxies(TRUSTED).client(peer, headers) == client


@pytest.mark.parametrize(("name", "peer", "headers", "client"), FORWARDED, ids=ids(FORWARDED))
def test_forwarded(name: str, peer: str, headers: Headers, client: str) -> None:
    assert TrustedProxies(TRUSTED, "forwarded").client(peer, headers) == client


@pytest.mark.parametrize(
    ("text", "network"),
    [
        ("10.0.0.0/8", "10.0.0.0/8"),
        ("192.168.1.10/24", "192.168.1.0/24"),
        ("127.0.0.1", "127.0.0.1/32"),
        (" 2001:db8::/32 ", "2001:db8::/32"),
        ("::1", "::1/128"),
        ("::ffff:10.0.0.0/104", "10.0.0.0/8"),
    ],
)
def test_networks_are_read_as_cidr(text: str, network: str) -> None:
    assert str(parse_network(text)) == network


@pytest.mark.parametrize("text", ["10.0.0.0/33", "example.com", "", "10.0.0.0/8/8"])
def test_what_is_no_network_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="network"):
        parse_network(text)


@pytest.mark.parametrize(
    ("address", "trusted"),
    [("10.1.2.3", True), ("11.0.0.1", False), ("::ffff:10.1.2.3", True),
     ("2001:db8:ffff:1::1", True), ("2001:db8:fffe::1", False), ("unix:/tmp/s", False),
     ("", False)],
)  # fmt: skip
def test_trust_is_by_network(address: str, trusted: bool) -> None:
    assert TrustedProxies(TRUSTED).trusts(address) is trusted


def test_an_unknown_header_is_refused() -> None:
    with pytest.raises(ValueError, match="forwarded header"):
        TrustedProxies(TRUSTED, "x-real-ip")


def test_one_instance_answers_the_same_every_time() -> None:
    """Every answer is remembered per text: asked again, and after made-up values filled
    the memory and emptied it, the answers are the same."""
    proxies = TrustedProxies(TRUSTED)
    for _ in range(2):
        for _, peer, headers, client in X_FORWARDED_FOR:
            assert proxies.client(peer, headers) == client
        for n in range(CACHE_SIZE + 10):
            made_up = f"198.18.{n >> 8}.{n & 255}"
            assert proxies.client(PROXY_V4, xff(f"{made_up}, 10.0.0.5")) == made_up
    assert proxies.resolve(PROXY_V4, xff("10.0.0.7, 10.0.0.5")) == ("10.0.0.7", True)
    assert proxies.resolve(PROXY_V4, xff("203.0.113.7")) == ("203.0.113.7", False)
    assert proxies.resolve(STRANGER_V4, xff("10.0.0.7")) == (STRANGER_V4, False)

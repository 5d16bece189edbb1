"""The issuer's keys as the gateway follows them: fetched once, fetched again for a rotated
key, and not again for every made-up `kid` (a real HTTP server in the test, the gateway's
own HTTP client)."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from llmeu.api.services.sso import Sso
from llmeu.config import Settings
from llmeu.errors import AuthenticationFailed, PermissionDenied, ServiceUnavailable
from llmeu.ledger.opening import open_database
from llmeu.providers.transport import HttpClient


class IssuerServer:
    """Serves a discovery document and the key set `keys` holds now; counts key-set reads."""

    def __init__(self) -> None:
        self.keys: list[dict[str, Any]] = []
        self.jwks_reads = 0
        self.issuer = ""
        self.claimed_issuer: str | None = None

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One request after another on a kept-alive connection, until the client closes it."""
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                data = json.dumps(self.answer(head.split(b" ", 2)[1].decode())).encode()
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                             b"content-length: %d\r\n\r\n%s" % (len(data), data))  # fmt: skip
                await writer.drain()
        except asyncio.IncompleteReadError:
            writer.close()

    def answer(self, path: str) -> dict[str, Any]:
        if path == "/.well-known/openid-configuration":
            return {
                "issuer": self.claimed_issuer or self.issuer,
                "authorization_endpoint": f"{self.issuer}/auth",
                "token_endpoint": f"{self.issuer}/token",
                "jwks_uri": f"{self.issuer}/jwks",
            }
        self.jwks_reads += 1
        return {"keys": self.keys}


def es256(kid: str) -> tuple[ec.EllipticCurvePrivateKey, dict[str, Any]]:
    key = ec.generate_private_key(ec.SECP256R1())
    public = json.loads(jwt.get_algorithm_by_name("ES256").to_jwk(key.public_key()))
    return key, {**public, "kid": kid, "alg": "ES256", "use": "sig"}


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[IssuerServer, Sso]]:
    server = IssuerServer()
    listening = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    server.issuer = f"http://127.0.0.1:{port}"
    db = open_database(f"sqlite:///{tmp_path / 'ledger.db'}")
    await db.open()
    http = HttpClient()
    settings = Settings(
        oidc_issuer=server.issuer,
        oidc_client_id="console",
        oidc_role_map=(("auditors", "auditor"), ("ops", "operator")),
    )
    yield server, Sso(settings, http, db)
    await http.aclose()
    await db.close()
    listening.close()


def id_token(server: IssuerServer, key: Any, kid: str) -> str:
    claims = {"iss": server.issuer, "aud": "console", "sub": "alice", "nonce": "n",
              "iat": int(time.time()), "exp": int(time.time()) + 60}  # fmt: skip
    return jwt.encode(claims, key, algorithm="ES256", headers={"kid": kid})


async def test_a_rotated_key_is_fetched_once_and_made_up_kids_are_not(
    served: tuple[IssuerServer, Sso],
) -> None:
    server, sso = served
    first, first_jwk = es256("k1")
    server.keys = [first_jwk]
    assert (await sso.validate(id_token(server, first, "k1"), "n"))["sub"] == "alice"
    assert (await sso.validate(id_token(server, first, "k1"), "n"))["sub"] == "alice"
    assert server.jwks_reads == 1

    second, second_jwk = es256("k2")
    server.keys = [first_jwk, second_jwk]
    sso.issuer.last_keys_fetch = float("-inf")  # as if the interval since the last fetch had passed
    assert (await sso.validate(id_token(server, second, "k2"), "n"))["sub"] == "alice"
    assert server.jwks_reads == 2

    made_up, _ = es256("k3")
    with pytest.raises(AuthenticationFailed, match="publishes no key 'k3'"):
        await sso.validate(id_token(server, made_up, "k3"), "n")
    assert server.jwks_reads == 2  # within the refetch interval: the cached set answers


async def test_an_issuer_whose_document_names_another_issuer_is_refused(
    served: tuple[IssuerServer, Sso],
) -> None:
    server, sso = served
    server.claimed_issuer = "https://evil.example.org"
    with pytest.raises(ServiceUnavailable, match="names issuer"):
        await sso.issuer.metadata()


@pytest.mark.parametrize(
    ("groups", "roles"),
    [
        (["auditors", "ops"], ("auditor", "operator")),
        ("ops", ("operator",)),
        ([{"name": "ops"}, "auditors", 7], ("auditor",)),
    ],
    ids=["a-list", "one-string", "odd-values-ignored"],
)
def test_groups_map_to_roles(served: tuple[IssuerServer, Sso], groups: Any, roles: Any) -> None:
    _, sso = served
    assert sso.roles_of({"groups": groups}) == roles


@pytest.mark.parametrize("groups", [None, [], ["strangers"], {"ops": True}])
def test_no_mapped_group_is_no_role(served: tuple[IssuerServer, Sso], groups: Any) -> None:
    _, sso = served
    with pytest.raises(PermissionDenied) as refused:
        sso.roles_of({"groups": groups})
    assert refused.value.code == "no_role"


async def test_an_issuer_that_does_not_answer_is_unavailable(tmp_path: Path) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    db = open_database(f"sqlite:///{tmp_path / 'ledger.db'}")
    await db.open()
    http = HttpClient()
    settings = Settings(oidc_issuer=f"http://127.0.0.1:{port}", oidc_client_id="console")
    try:
        with pytest.raises(ServiceUnavailable) as down:
            await Sso(settings, http, db).begin("http://gw/auth/callback")
        assert down.value.code == "issuer_unavailable"
    finally:
        await http.aclose()
        await db.close()

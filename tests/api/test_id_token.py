"""ID-token validation, with keys made here: what is accepted, and every way to be refused."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from llmeu.api.services.id_token import UnknownKey, validate_id_token
from llmeu.errors import AuthenticationFailed

ISSUER = "https://id.example.org"
CLIENT = "llmeu-console"
NONCE = "n-0S6_WzA2Mj"

RSA = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC = ec.generate_private_key(ec.SECP256R1())
ED = ed25519.Ed25519PrivateKey.generate()
OTHER_RSA = rsa.generate_private_key(public_exponent=65537, key_size=2048)
KEYS = {"RS256": ("rsa-1", RSA), "ES256": ("ec-1", EC), "EdDSA": ("ed-1", ED)}


def jwk(kid: str, private: Any, alg: str) -> dict[str, Any]:
    algorithm = jwt.get_algorithm_by_name(alg)
    public = json.loads(algorithm.to_jwk(private.public_key()))
    return {**public, "kid": kid, "use": "sig", "alg": alg}


JWKS = {"keys": [jwk(kid, key, alg) for alg, (kid, key) in KEYS.items()]}


def ago(seconds: float) -> float:
    """A time relative to now (PyJWT reads the clock itself)."""
    return time.time() - seconds


def claims(**changes: Any) -> dict[str, Any]:
    base = {"iss": ISSUER, "sub": "alice", "aud": CLIENT, "exp": ago(-300), "iat": ago(0),
            "nonce": NONCE, "groups": ["auditors"]}  # fmt: skip
    base.update(changes)
    return {k: v for k, v in base.items() if v is not None}


def token(alg: str = "RS256", key: Any = None, kid: str | None = None, **changes: Any) -> str:
    own_kid, own_key = KEYS[alg]
    return jwt.encode(
        claims(**changes), key or own_key, algorithm=alg, headers={"kid": kid or own_kid}
    )


def check(value: str, **overrides: Any) -> dict[str, Any]:
    options: dict[str, Any] = {"issuer": ISSUER, "client_id": CLIENT, "nonce": NONCE}
    options.update(overrides)
    return validate_id_token(value, JWKS, **options)


@pytest.mark.parametrize("alg", ["RS256", "ES256", "EdDSA"])
def test_a_token_signed_as_the_jwks_says_is_accepted(alg: str) -> None:
    assert check(token(alg))["sub"] == "alice"


def _b64(value: bytes) -> str:
    return base64.urlsafe_b64encode(value).rstrip(b"=").decode()


def _unsigned(header: dict[str, Any]) -> str:
    return f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims()).encode())}."


def _hmac_with_public_key() -> str:
    """The classic confusion: HS256 with the issuer's public key (PEM) as the secret."""
    pem = RSA.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    signing_input = _unsigned({"alg": "HS256", "kid": "rsa-1"})[:-1]
    mac = hmac.new(pem, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{_b64(mac)}"


REFUSED = {
    "forged signature": lambda: token(key=OTHER_RSA),
    "expired": lambda: token(exp=ago(120), iat=ago(600)),
    "issued in the future": lambda: token(iat=ago(-600)),
    "wrong audience": lambda: token(aud="someone-else"),
    "several audiences, no azp": lambda: token(aud=[CLIENT, "someone-else"]),
    "azp of another client": lambda: token(azp="someone-else"),
    "wrong issuer": lambda: token(iss="https://evil.example.org"),
    "wrong nonce": lambda: token(nonce="replayed"),
    "no nonce": lambda: token(nonce=None),
    "no sub": lambda: token(sub=None),
    "no exp": lambda: token(exp=None),
    "alg none": lambda: _unsigned({"alg": "none", "kid": "rsa-1"}),
    "HS256 with the public key": _hmac_with_public_key,
    "an RSA kid claimed as ES256": lambda: token("ES256", kid="rsa-1"),
    "not a JWT": lambda: "not.a.token",
}


@pytest.mark.parametrize("make", REFUSED.values(), ids=REFUSED.keys())
def test_refused(make: Any) -> None:
    with pytest.raises(AuthenticationFailed) as refused:
        check(make())
    assert refused.value.code == "invalid_id_token"


def test_several_audiences_with_this_client_as_azp_are_accepted() -> None:
    assert check(token(aud=[CLIENT, "api"], azp=CLIENT))["sub"] == "alice"


def test_an_unknown_kid_asks_for_the_keys_again() -> None:
    with pytest.raises(UnknownKey):
        check(token(kid="rotated-2"))

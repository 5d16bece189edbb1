"""ID-token validation (OpenID Connect Core §3.1.3.7), through PyJWT.

A token is accepted only if its header names an asymmetric algorithm this
module allows *and* the issuer's key with its `kid` is of that algorithm's
kind: `alg: none` and every HMAC algorithm are refused before any key is
looked at, so a token "signed" with the issuer's public key as an HMAC
secret can never verify. Then: the signature, `iss` equal to the issuer,
`aud` naming this client (and `azp`, when present or when several audiences
are named, equal to it), `exp` and `iat` within `LEEWAY_SECONDS` of the clock,
`sub` present, and `nonce` equal to the one stored with the login.

A `kid` the key set does not hold raises `UnknownKey`: the caller fetches the
issuer's key set again (a rotated key) and retries once.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import Any

import jwt
from jwt.exceptions import InvalidTokenError, PyJWKError

from llmeu.errors import AuthenticationFailed

ALGORITHMS = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512",
                        "ES256", "ES384", "ES512", "EdDSA"})  # fmt: skip
LEEWAY_SECONDS = 60


class UnknownKey(Exception):
    """The token names a `kid` missing from the key set given."""


def refused(reason: str) -> AuthenticationFailed:
    return AuthenticationFailed(f"ID token refused: {reason}", code="invalid_id_token")


def validate_id_token(
    token: str,
    jwks: Mapping[str, Any],
    *,
    issuer: str,
    client_id: str,
    nonce: str,
) -> dict[str, Any]:
    """The token's claims, if it passes every check above; else `AuthenticationFailed`
    (401 `invalid_id_token`) naming the first check it failed."""
    try:
        header = jwt.get_unverified_header(token)
    except InvalidTokenError as error:
        raise refused(f"unreadable ({error})") from None
    alg = header.get("alg")
    if alg not in ALGORITHMS:
        raise refused(f"algorithm {alg!r} is not accepted (asymmetric signatures only)")
    key = _key(jwks, header.get("kid"), alg)
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            key,
            algorithms=[alg],
            audience=client_id,
            issuer=issuer,
            leeway=LEEWAY_SECONDS,
            options={"require": ["iss", "sub", "aud", "exp", "iat"]},
        )
    except jwt.InvalidSignatureError:
        raise refused("the signature does not verify with the issuer's key") from None
    except jwt.ExpiredSignatureError:
        raise refused("it has expired") from None
    except jwt.InvalidAudienceError:
        raise refused(f"its audience is not this client ({client_id})") from None
    except jwt.InvalidIssuerError:
        raise refused(f"its issuer is not {issuer}") from None
    except InvalidTokenError as error:
        raise refused(str(error)) from None
    audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
    azp = claims.get("azp")
    if (azp is not None or len(audiences) > 1) and azp != client_id:
        raise refused(f"its authorized party (azp) is not this client ({client_id})")
    if not hmac.compare_digest(str(claims.get("nonce", "")).encode(), nonce.encode()):
        raise refused("its nonce is not the one this sign-in sent")
    return claims


def _key(jwks: Mapping[str, Any], kid: object, alg: str) -> Any:
    keys = [k for k in jwks.get("keys", []) if isinstance(k, dict) and k.get("use", "sig") == "sig"]
    matching = [k for k in keys if k.get("kid") == kid] if kid is not None else keys
    if not matching:
        raise UnknownKey(str(kid))
    for candidate in matching:
        if candidate.get("alg", alg) != alg:
            continue
        try:
            return jwt.PyJWK(candidate, algorithm=alg).key
        except (PyJWKError, jwt.InvalidKeyError):
            continue
    raise refused(f"the issuer's key {kid!r} is not a {alg} key")

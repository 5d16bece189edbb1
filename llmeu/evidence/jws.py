"""Compact JWS (RFC 7515) with EdDSA over Ed25519 (RFC 8037), through PyJWT.

Receipts and checkpoints are both `header.payload.signature` with the header
`{"alg": "EdDSA", "kid": <thumbprint>, "typ": <kind>}`: `typ` keeps a
checkpoint from being passed off as a receipt and the reverse. The payload is
JCS bytes (RFC 8785), so whoever verifies can also re-canonicalise it and
check that nothing was reformatted.

`alg` is `EdDSA`, the name RFC 8037 gives and every JOSE library knows; RFC
9864 adds `Ed25519` as a fully specified name for the same signatures, which
older verifiers do not accept yet.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from jwt.api_jws import PyJWS
from jwt.exceptions import InvalidSignatureError, InvalidTokenError

from llmeu.evidence.jcs import canonical_json
from llmeu.evidence.signing_keys import JWS_ALGORITHM, SigningKey

RECEIPT_TYPE = "llmeu-receipt+jws"
CHECKPOINT_TYPE = "llmeu-checkpoint+jws"
_JWS = PyJWS(algorithms=[JWS_ALGORITHM])


def sign_compact(payload: bytes, key: SigningKey, *, typ: str) -> str:
    return _JWS.encode(
        payload,
        key.private_key,
        algorithm=JWS_ALGORITHM,
        headers={"kid": key.kid, "typ": typ},
    )


@dataclass(frozen=True, slots=True)
class JwsCheck:
    """The outcome of one verification: `reason` is one line, fit for a terminal."""

    valid: bool
    reason: str
    kid: str | None = None
    payload: dict[str, Any] | None = None

    @classmethod
    def failed(cls, reason: str, kid: str | None = None) -> JwsCheck:
        return cls(False, reason, kid)


def verify_compact(token: str, keys: Mapping[str, Ed25519PublicKey], *, typ: str) -> JwsCheck:
    """Checks form, `alg`, `typ`, `kid` against `keys`, then the signature.

    A valid check carries the payload parsed as a JSON object.
    """
    token = token.strip()
    if token.count(".") != 2:
        return JwsCheck.failed("not a compact JWS (expected three dot-separated parts)")
    try:
        header = _JWS.get_unverified_header(token)
    except InvalidTokenError as error:
        return JwsCheck.failed(f"unreadable JWS header ({error})")
    kid = header.get("kid")
    kid = kid if isinstance(kid, str) else None
    if header.get("alg") != JWS_ALGORITHM:
        return JwsCheck.failed(f"alg is {header.get('alg')!r}, expected {JWS_ALGORITHM!r}", kid)
    if header.get("typ") != typ:
        return JwsCheck.failed(f"typ is {header.get('typ')!r}, expected {typ!r}", kid)
    if kid is None:
        return JwsCheck.failed("the JWS header names no kid")
    key = keys.get(kid)
    if key is None:
        return JwsCheck.failed(f"no key with kid {kid} in the JWKS", kid)
    try:
        verified = _JWS.decode_complete(token, key, algorithms=[JWS_ALGORITHM])
    except InvalidSignatureError:
        return JwsCheck.failed(f"the signature does not verify with key {kid}", kid)
    except InvalidTokenError as error:
        return JwsCheck.failed(f"malformed JWS ({error})", kid)
    try:
        payload = json.loads(verified["payload"])
    except ValueError:
        return JwsCheck.failed("the signed payload is not JSON", kid)
    if not isinstance(payload, dict):
        return JwsCheck.failed("the signed payload is not a JSON object", kid)
    if not _is_canonical(verified["payload"], payload):
        return JwsCheck.failed("the signed payload is not in JCS (RFC 8785) form", kid)
    return JwsCheck(True, f"signed by key {kid}", kid, payload)


def _is_canonical(signed: bytes, payload: dict[str, Any]) -> bool:
    try:
        return canonical_json(payload) == signed
    except (ValueError, TypeError):
        return False

"""Receipts: the payload schema, the JWS, and verification by other JOSE implementations."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import warnings
from typing import Any

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from joserfc import jws as joserfc_jws
from joserfc.errors import BadSignatureError, SecurityWarning
from joserfc.jwk import KeySet

from llmeu.evidence import (
    KeyRing,
    SigningKey,
    build_receipt,
    canonical_json,
    policy_sha256,
    receipt_payload,
    sha256_hex,
    verify_receipt,
)
from llmeu.evidence.jws import CHECKPOINT_TYPE, sign_compact
from llmeu.evidence.signing_keys import key_id, public_jwk
from tests.evidence.factories import trace_view

REQUEST = (
    b'{"model":"mistral-small","stream":true,"messages":[{"role":"user","content":"Bonjour"}]}'
)
CONTENT = "Bonjour ! Ça va ? Je peux vous aider.".encode()
POLICY = {
    "policy_id": "eu-strict",
    "allow_classes": ["on_premise", "eu_sovereign"],
    "fallback": True,
}


def b64url_decode(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def b64url_encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@pytest.fixture(scope="module")
def ring() -> KeyRing:
    return KeyRing(SigningKey.generate())


@pytest.fixture(scope="module")
def receipt(ring: KeyRing) -> str:
    return build_receipt(
        trace_view(),
        ring.active,
        policy_sha256=policy_sha256(POLICY),
        request_sha256=sha256_hex(REQUEST),
        content_sha256=sha256_hex(CONTENT),
    )


def test_payload_follows_the_schema_and_holds_no_content() -> None:
    payload = receipt_payload(
        trace_view(), policy_sha256="p" * 64, request_sha256="r" * 64, content_sha256="c" * 64
    )
    assert payload == {
        "receipt_version": 1,
        "trace_id": "trc_0192f3a4b5c6d7e8f9a0b1c2d3e4",
        "status": "completed",
        "route": "/v1/chat/completions",
        "request_model": "mistral-small",
        "stream": True,
        "key_id": "key_7f3a9c",
        "timings": {
            "received_at": 1761998400.123456,
            "first_token_at": 1761998400.345678,
            "finished_at": 1761998401.5,
        },
        "policy": {"policy_id": "eu-strict", "sha256": "p" * 64},
        "routing": {
            "endpoint_id": "scaleway-fr-par-mistral-small",
            "provider": "scaleway",
            "model_used": "mistral-small-3.2-24b-instruct-2506",
            "model_version": "2506",
            "inference_region": "fr-par",
            "sovereignty_class": "eu_sovereign",
            "retention": "P0D",
        },
        "attempts": [
            {
                "endpoint_id": "ovh-gra-mistral-small",
                "provider": "ovhcloud",
                "started_at": 1761998400.13,
                "finished_at": 1761998400.2,
                "outcome": "failed",
                "upstream_status": 503,
            },
            {
                "endpoint_id": "scaleway-fr-par-mistral-small",
                "provider": "scaleway",
                "started_at": 1761998400.2,
                "finished_at": 1761998401.5,
                "outcome": "served",
                "upstream_status": None,
            },
        ],
        "excluded": [
            {
                "endpoint_id": "openai-us-gpt-4o-mini",
                "rule": "allow_classes",
                "reason": "sovereignty class global is not in [on_premise, eu_sovereign]",
            }
        ],
        "usage": {
            "input_tokens": 12,
            "output_tokens": 40,
            "estimated": False,
            "cost": {"currency": "EUR", "amount": 0.0000158},
        },
        "finish_reason": "stop",
        "error": None,
        "digests": {"request_sha256": "r" * 64, "content_sha256": "c" * 64},
    }
    assert b"secret" not in canonical_json(payload)
    assert b"Bonjour" not in canonical_json(payload)


def test_error_keeps_type_code_and_status_but_not_the_message() -> None:
    error = {
        "type": "api_error",
        "code": "upstream_timeout",
        "message": "echo: Bonjour",
        "http_status": 504,
    }
    payload = receipt_payload(
        trace_view(status="failed", error=error),
        policy_sha256=None,
        request_sha256=None,
        content_sha256=None,
    )
    assert payload["error"] == {"type": "api_error", "code": "upstream_timeout", "http_status": 504}


def test_a_trace_in_progress_has_no_receipt(ring: KeyRing) -> None:
    with pytest.raises(ValueError, match="in_progress"):
        build_receipt(
            trace_view(status="in_progress"),
            ring.active,
            policy_sha256=None,
            request_sha256=None,
            content_sha256=None,
        )


def test_receipt_is_a_compact_eddsa_jws_with_kid_over_jcs(receipt: str, ring: KeyRing) -> None:
    header_part, payload_part, signature_part = receipt.split(".")
    header = json.loads(b64url_decode(header_part))
    assert header == {"alg": "EdDSA", "kid": ring.active.kid, "typ": "llmeu-receipt+jws"}
    payload = b64url_decode(payload_part)
    assert canonical_json(json.loads(payload)) == payload
    assert len(b64url_decode(signature_part)) == 64


def test_receipts_are_deterministic(receipt: str, ring: KeyRing) -> None:
    again = build_receipt(
        trace_view(),
        ring.active,
        policy_sha256=policy_sha256(POLICY),
        request_sha256=sha256_hex(REQUEST),
        content_sha256=sha256_hex(CONTENT),
    )
    assert again == receipt


def test_verifies_with_its_digests(receipt: str, ring: KeyRing) -> None:
    check = verify_receipt(receipt, ring.jwks(), request_body=REQUEST, content=CONTENT)
    assert check.valid, check.line
    assert check.line.startswith("valid: receipt of trace trc_0192f3a4b5c6d7e8f9a0b1c2d3e4")
    assert check.payload is not None and check.payload["digests"]["request_sha256"] == sha256_hex(
        REQUEST
    )


@pytest.mark.parametrize(
    ("request_body", "content", "reason"),
    [
        (REQUEST + b" ", None, "invalid: request body digest differs"),
        (None, CONTENT[:-1], "invalid: content digest differs"),
    ],
    ids=["request", "content"],
)
def test_another_request_or_content_is_refused(
    receipt: str, ring: KeyRing, request_body: bytes | None, content: bytes | None, reason: str
) -> None:
    check = verify_receipt(receipt, ring.jwks(), request_body=request_body, content=content)
    assert not check.valid
    assert check.line.startswith(reason)


def test_a_receipt_without_a_digest_cannot_vouch_for_a_file(ring: KeyRing) -> None:
    receipt = build_receipt(
        trace_view(), ring.active, policy_sha256=None, request_sha256=None, content_sha256=None
    )
    check = verify_receipt(receipt, ring.jwks(), content=CONTENT)
    assert check.line == "invalid: the receipt carries no content digest to compare with"


def tamper_payload(receipt: str, position: int) -> str:
    header, payload, signature = receipt.split(".")
    raw = bytearray(b64url_decode(payload))
    raw[position] ^= 0x01
    return f"{header}.{b64url_encode(bytes(raw))}.{signature}"


def test_any_one_byte_change_of_the_payload_fails(receipt: str, ring: KeyRing) -> None:
    """Every position with the raw Ed25519 check (fast); every 16th through the verifier."""
    jwks = ring.jwks()
    public_key = ring.active.public_key
    length = len(b64url_decode(receipt.split(".")[1]))

    def raw_verifies(token: str) -> bool:
        header, payload, signature = token.split(".")
        try:
            public_key.verify(b64url_decode(signature), f"{header}.{payload}".encode())
        except InvalidSignature:
            return False
        return True

    assert raw_verifies(receipt)
    assert [p for p in range(length) if raw_verifies(tamper_payload(receipt, p))] == []
    sampled = [*range(0, length, 16), length - 1]
    assert [p for p in sampled if verify_receipt(tamper_payload(receipt, p), jwks).valid] == []
    line = verify_receipt(tamper_payload(receipt, 10), jwks).line
    assert line == f"invalid: the signature does not verify with key {ring.active.kid}"


def _joserfc_verify(token: str, jwks: dict[str, Any]) -> bytes:
    with warnings.catch_warnings():
        # joserfc flags the `EdDSA` name as superseded by RFC 9864's `Ed25519`.
        warnings.simplefilter("ignore", SecurityWarning)
        return joserfc_jws.deserialize_compact(
            token, KeySet.import_key_set(jwks), algorithms=["EdDSA"]
        ).payload  # type: ignore[arg-type]


def test_joserfc_verifies_receipts_against_the_jwks(receipt: str, ring: KeyRing) -> None:
    payload = _joserfc_verify(receipt, ring.jwks())
    assert payload == b64url_decode(receipt.split(".")[1])
    for position in (0, 100, len(payload) - 1):
        with pytest.raises(BadSignatureError):
            _joserfc_verify(tamper_payload(receipt, position), ring.jwks())


NODE_VERIFY = """
const crypto = require('crypto');
const {receipts, jwks} = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const keys = new Map(jwks.keys.map(k => [k.kid, crypto.createPublicKey({key: k, format: 'jwk'})]));
process.stdout.write(JSON.stringify(receipts.map(token => {
  const [header, payload, signature] = token.split('.');
  const {alg, kid} = JSON.parse(Buffer.from(header, 'base64url'));
  const key = keys.get(kid);
  return alg === 'EdDSA' && key !== undefined && crypto.verify(null,
    Buffer.from(header + '.' + payload), key, Buffer.from(signature, 'base64url'));
})));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")
def test_nodes_own_ed25519_verifies_receipts(receipt: str, ring: KeyRing) -> None:
    """Node's crypto (its own JWK import and Ed25519), with the JWS split by hand."""
    tokens = [receipt, tamper_payload(receipt, 0), tamper_payload(receipt, 57)]
    result = subprocess.run(
        ["node", "-e", NODE_VERIFY],
        input=json.dumps({"receipts": tokens, "jwks": ring.jwks()}),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert json.loads(result.stdout) == [True, False, False]


@pytest.mark.parametrize(
    ("mangle", "reason"),
    [
        (lambda r: r.replace(".", "", 1), "invalid: not a compact JWS"),
        (
            lambda r: "eyJhbGciOiJub25lIn0." + r.split(".", 1)[1],
            "invalid: alg is 'none', expected 'EdDSA'",
        ),
        (lambda r: r + "x", "invalid: "),
    ],
    ids=["two-parts", "alg-none", "trailing-garbage"],
)
def test_malformed_receipts_say_why(receipt: str, ring: KeyRing, mangle: Any, reason: str) -> None:
    check = verify_receipt(mangle(receipt), ring.jwks())
    assert not check.valid
    assert check.line.startswith(reason)


def test_unknown_key_and_wrong_type_are_refused(receipt: str, ring: KeyRing) -> None:
    other = KeyRing(SigningKey.generate())
    assert verify_receipt(receipt, other.jwks()).line == (
        f"invalid: no key with kid {ring.active.kid} in the JWKS"
    )
    checkpoint = sign_compact(b'{"checkpoint_version":1}', ring.active, typ=CHECKPOINT_TYPE)
    assert verify_receipt(checkpoint, ring.jwks()).line == (
        "invalid: typ is 'llmeu-checkpoint+jws', expected 'llmeu-receipt+jws'"
    )
    assert (
        verify_receipt(receipt, {"no": "keys"}).line
        == 'invalid: not a JWKS document (no "keys" array)'
    )


def test_a_key_substituted_under_the_same_kid_fails(receipt: str, ring: KeyRing) -> None:
    forged = public_jwk(SigningKey.generate().public_key) | {"kid": ring.active.kid}
    check = verify_receipt(receipt, {"keys": [forged]})
    assert check.line == f"invalid: the signature does not verify with key {ring.active.kid}"


def test_non_canonical_payloads_are_refused(ring: KeyRing) -> None:
    token = sign_compact(b'{"receipt_version": 1}', ring.active, typ="llmeu-receipt+jws")
    assert verify_receipt(token, ring.jwks()).line == (
        "invalid: the signed payload is not in JCS (RFC 8785) form"
    )


def test_rfc8037_test_vectors() -> None:
    """RFC 8037 A.3 (thumbprint) and A.4 (signature): the kid and the JWS layer are standard."""
    d = b64url_decode("nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A")
    key = SigningKey.from_private_key(Ed25519PrivateKey.from_private_bytes(d))
    assert public_jwk(key.public_key)["x"] == "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
    assert key_id(key.public_key) == key.kid == "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"
    signature = key.private_key.sign(b"eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc")
    assert b64url_encode(signature) == (
        "hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg"
    )

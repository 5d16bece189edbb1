"""Evidence anyone can verify: signed receipts per call and a tamper-evident ledger.

Pure functions and small value objects over plain mappings: the ledger, the
API and the CLI hand in trace views, keys and tokens, and store or serve
what comes back. Nothing here reads the environment, the database or the
network; only `keys` touches files (the key directory).

    jcs       RFC 8785 canonical JSON: the bytes that are hashed and signed
    keys      Ed25519 signing keys: directory, PEM, rotation, JWKS
    jws       compact JWS, EdDSA, through PyJWT
    receipts  the receipt of one trace: payload schema, build, verify
"""

from llmeu.evidence.jcs import canonical_json
from llmeu.evidence.keys import (
    KeyRing,
    SigningKey,
    load_directory_keys,
    public_keys_from_jwks,
    rotate_directory_keys,
)
from llmeu.evidence.receipts import (
    ReceiptCheck,
    build_receipt,
    policy_sha256,
    receipt_payload,
    sha256_hex,
    verify_receipt,
)

__all__ = [
    "KeyRing",
    "ReceiptCheck",
    "SigningKey",
    "build_receipt",
    "canonical_json",
    "load_directory_keys",
    "policy_sha256",
    "public_keys_from_jwks",
    "receipt_payload",
    "rotate_directory_keys",
    "sha256_hex",
    "verify_receipt",
]

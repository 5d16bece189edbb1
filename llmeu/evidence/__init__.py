"""Evidence anyone can verify: signed receipts per call and a tamper-evident ledger.

Pure functions and small value objects over plain mappings: the ledger, the
API and the CLI hand in rows, trace views, keys and tokens, and store or
serve what comes back. Nothing here reads the environment, the database or
the network; only `signing_keys` and `key_directory` touch files (key directories).

    jcs            RFC 8785 canonical JSON: the bytes that are hashed and signed
    signing_keys   Ed25519 signing keys: the data dir's directory, PEM, rotation, JWKS
    key_directory  a fleet's directory of PEM keys (a Kubernetes Secret): newest signs
    jws            compact JWS, EdDSA, through PyJWT
    receipts       the receipt of one trace: payload schema, build, verify
    chain          links of the hash chain, signed checkpoints of its head
    audit          the chain verifier that names each broken place
"""

from llmeu.evidence.audit import ChainReport, Damage, Finding, verify_chain
from llmeu.evidence.chain import (
    GENESIS,
    ChainLink,
    Checkpoint,
    chain_metadata,
    read_checkpoint,
    sign_checkpoint,
)
from llmeu.evidence.jcs import canonical_json
from llmeu.evidence.receipts import (
    ReceiptCheck,
    build_receipt,
    policy_sha256,
    receipt_payload,
    sha256_hex,
    verify_receipt,
)
from llmeu.evidence.signing_keys import (
    KeyRing,
    SigningKey,
    load_directory_keys,
    public_keys_from_jwks,
    rotate_directory_keys,
)

__all__ = [
    "GENESIS",
    "ChainLink",
    "ChainReport",
    "Checkpoint",
    "Damage",
    "Finding",
    "KeyRing",
    "ReceiptCheck",
    "SigningKey",
    "build_receipt",
    "canonical_json",
    "chain_metadata",
    "load_directory_keys",
    "policy_sha256",
    "public_keys_from_jwks",
    "read_checkpoint",
    "receipt_payload",
    "rotate_directory_keys",
    "sha256_hex",
    "sign_checkpoint",
    "verify_chain",
    "verify_receipt",
]

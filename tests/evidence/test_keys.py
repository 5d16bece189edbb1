"""Signing keys: first start, rotation, PEM sources, and the published JWKS."""

from __future__ import annotations

import json
import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from llmeu.errors import ConfigError
from llmeu.evidence import (
    KeyRing,
    SigningKey,
    build_receipt,
    load_directory_keys,
    public_keys_from_jwks,
    rotate_directory_keys,
    verify_receipt,
)
from tests.evidence.factories import trace_view


def receipt_with(key: SigningKey, trace_id: str) -> str:
    return build_receipt(
        trace_view(id=trace_id), key, policy_sha256=None, request_sha256=None, content_sha256=None
    )


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_first_start_generates_a_private_key_only_its_owner_reads(tmp_path: Path) -> None:
    directory = tmp_path / "signing-keys"
    ring = load_directory_keys(directory)
    private = list(directory.glob("*.key"))
    assert [p.name.endswith(f"-{ring.active.kid}.key") for p in private] == [True]
    assert mode(private[0]) == 0o600
    assert mode(directory) == 0o700
    assert load_directory_keys(directory).active.kid == ring.active.kid  # the next start


def test_processes_starting_together_agree_on_one_key(tmp_path: Path) -> None:
    directory = tmp_path / "signing-keys"
    with ThreadPoolExecutor(max_workers=4) as pool:
        kids = set(pool.map(lambda _: load_directory_keys(directory).active.kid, range(8)))
    assert len(kids) == 1
    assert len(list(directory.glob("*.key"))) == 1


def test_receipts_signed_before_and_after_rotation_verify_with_the_published_jwks(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "signing-keys"
    before = load_directory_keys(directory)
    old_receipt = receipt_with(before.active, "trc_before")
    after = rotate_directory_keys(directory)
    new_receipt = receipt_with(after.active, "trc_after")

    published = load_directory_keys(directory).jwks()  # what a restarted gateway serves
    assert [k["kid"] for k in published["keys"]] == [after.active.kid, before.active.kid]
    assert verify_receipt(old_receipt, published).valid
    assert verify_receipt(new_receipt, published).valid
    assert not verify_receipt(old_receipt, KeyRing(after.active).jwks()).valid


def test_rotation_destroys_old_private_keys_and_keeps_their_public_keys(tmp_path: Path) -> None:
    directory = tmp_path / "signing-keys"
    kids = [load_directory_keys(directory).active.kid]
    for _ in range(2):
        kids.append(rotate_directory_keys(directory).active.kid)
    assert [p.name.split("-", 1)[1] for p in sorted(directory.glob("*.key"))] == [f"{kids[-1]}.key"]
    assert len(list(directory.glob("*.pub"))) == 3
    ring = load_directory_keys(directory)
    assert ring.active.kid == kids[-1]
    assert [k["kid"] for k in ring.jwks()["keys"]] == kids[::-1]


def test_a_private_key_others_can_read_is_refused(tmp_path: Path) -> None:
    directory = tmp_path / "signing-keys"
    load_directory_keys(directory)
    next(directory.glob("*.key")).chmod(0o640)
    with pytest.raises(ConfigError, match="chmod 600"):
        load_directory_keys(directory)


def test_jwks_holds_public_okp_keys_only() -> None:
    ring = KeyRing(SigningKey.generate())
    (jwk,) = ring.jwks()["keys"]
    assert set(jwk) == {"kty", "crv", "x", "kid", "alg", "use"}
    assert (jwk["kty"], jwk["crv"], jwk["alg"], jwk["use"]) == ("OKP", "Ed25519", "EdDSA", "sig")
    assert "PRIVATE" not in repr(ring) and ring.active.kid in repr(ring.active)


def test_a_private_jwk_is_never_taken_as_a_verification_key() -> None:
    jwk = KeyRing(SigningKey.generate()).jwks()["keys"][0] | {"d": "AAAA"}
    assert public_keys_from_jwks({"keys": [jwk]}) == {}


def test_a_key_from_a_pem_value_with_its_predecessors() -> None:
    old = SigningKey.generate()
    older = SigningKey.generate()
    current = SigningKey.generate()
    old_public_pem = old.public_key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    older_jwks = json.dumps(KeyRing(older).jwks())
    ring = KeyRing.from_pem(current.private_pem().decode(), retired=[old_public_pem, older_jwks])
    assert ring.active.kid == current.kid
    assert [k["kid"] for k in ring.jwks()["keys"]] == [current.kid, old.kid, older.kid]
    assert verify_receipt(receipt_with(old, "trc_old"), ring.jwks()).valid


@pytest.mark.parametrize(
    ("pem", "message"),
    [
        ("not a key", "LLMEU_SIGNING_KEY: not an unencrypted PEM private key"),
        (
            rsa.generate_private_key(public_exponent=65537, key_size=1024)
            .private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
            .decode(),
            "LLMEU_SIGNING_KEY: the signing key must be Ed25519",
        ),
    ],
    ids=["garbage", "rsa"],
)
def test_a_wrong_pem_names_its_source(pem: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        KeyRing.from_pem(pem, source="LLMEU_SIGNING_KEY")

"""Ed25519 signing keys: where they come from, how they rotate, the JWKS that publishes them.

A gateway signs with one *active* key and publishes the public half of every
key it ever signed with, so a receipt from years ago still verifies after any
number of rotations. Three sources, chosen by the caller (the settings):

- a directory (the data dir's `signing-keys/`): a key is generated there at
  first start; `rotate_directory_keys` adds a new one and destroys the old
  private halves, keeping their public halves. One directory serves every
  gateway process on one machine (`--workers N`); creation and rotation take
  a file lock so that processes starting together agree on one key.
- a PEM text (PKCS#8 `PRIVATE KEY`), read from a file or from an environment
  variable by the settings and handed in here. Gateways on several machines
  must share their key this way: each generating its own would publish
  JWKS documents that lack the others' keys. Rotation is then the operator's:
  the new PEM, plus the public keys of the old ones (`retired`).

File layout of a key directory, names sorting by creation time:

    20261101T120000.000000000Z-<kid>.key   PKCS#8 PEM, mode 0600: the newest is active
    20261101T120000.000000000Z-<kid>.pub   SubjectPublicKeyInfo PEM, kept forever

A private key file that others may read is refused, as OpenSSH does.

The `kid` is the key's JWK thumbprint (RFC 7638, SHA-256, base64url): anyone
holding the public key can recompute it, and it never repeats across keys.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from jwt import PyJWK
from jwt.exceptions import PyJWKError

from llmeu.errors import ConfigError
from llmeu.evidence.jcs import canonical_json

if sys.platform != "win32":
    import fcntl

JWS_ALGORITHM = "EdDSA"
_PRIVATE_SUFFIX = ".key"
_PUBLIC_SUFFIX = ".pub"
_LOCK_NAME = ".lock"


def raw_public_bytes(public_key: Ed25519PublicKey) -> bytes:
    return public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def key_id(public_key: Ed25519PublicKey) -> str:
    """RFC 7638 thumbprint: SHA-256 over the required members in JCS form."""
    members = {"crv": "Ed25519", "kty": "OKP", "x": _b64url(raw_public_bytes(public_key))}
    return _b64url(hashlib.sha256(canonical_json(members)).digest())


def public_jwk(public_key: Ed25519PublicKey) -> dict[str, str]:
    """The public key as an RFC 8037 OKP JWK, with `kid`, `alg` and `use` for JOSE libraries."""
    return {
        "kty": "OKP",
        "crv": "Ed25519",
        "x": _b64url(raw_public_bytes(public_key)),
        "kid": key_id(public_key),
        "alg": JWS_ALGORITHM,
        "use": "sig",
    }


@dataclass(frozen=True, slots=True)
class SigningKey:
    """An Ed25519 private key and its `kid`; `repr` never shows the key."""

    kid: str
    private_key: Ed25519PrivateKey

    @classmethod
    def generate(cls) -> SigningKey:
        return cls.from_private_key(Ed25519PrivateKey.generate())

    @classmethod
    def from_private_key(cls, private_key: Ed25519PrivateKey) -> SigningKey:
        return cls(key_id(private_key.public_key()), private_key)

    @classmethod
    def from_pem(cls, pem: str | bytes, *, source: str = "signing key") -> SigningKey:
        """Raises ConfigError naming `source` for anything but an unencrypted Ed25519 key."""
        data = pem.encode() if isinstance(pem, str) else pem
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError, UnsupportedAlgorithm) as error:
            raise ConfigError(f"{source}: not an unencrypted PEM private key ({error})") from None
        if not isinstance(key, Ed25519PrivateKey):
            raise ConfigError(
                f"{source}: the signing key must be Ed25519, not {type(key).__name__}"
            )
        return cls.from_private_key(key)

    @property
    def public_key(self) -> Ed25519PublicKey:
        return self.private_key.public_key()

    def private_pem(self) -> bytes:
        return self.private_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    def __repr__(self) -> str:
        return f"SigningKey(kid={self.kid!r})"


@dataclass(frozen=True, slots=True)
class KeyRing:
    """The active signing key and the public keys of retired ones (newest first)."""

    active: SigningKey
    retired: tuple[Ed25519PublicKey, ...] = ()

    @classmethod
    def from_pem(
        cls, pem: str | bytes, *, retired: Sequence[str | bytes] = (), source: str = "signing key"
    ) -> KeyRing:
        """The key given by the settings (a file's or a variable's value) and its predecessors'
        public keys, each a PEM public key or a whole JWKS document's text."""
        active = SigningKey.from_pem(pem, source=source)
        old = [key for text in retired for key in _public_keys_from_text(text, source=source)]
        return cls(active, tuple(k for k in old if key_id(k) != active.kid))

    def jwks(self) -> dict[str, list[dict[str, str]]]:
        """The JWKS document (RFC 7517) to publish: the active key first."""
        seen: set[str] = set()
        keys = []
        for public_key in (self.active.public_key, *self.retired):
            jwk = public_jwk(public_key)
            if jwk["kid"] not in seen:
                seen.add(jwk["kid"])
                keys.append(jwk)
        return {"keys": keys}


def public_keys_from_jwks(document: Mapping[str, Any]) -> dict[str, Ed25519PublicKey]:
    """kid → key for every Ed25519 key of a JWKS; keys of other types are skipped.

    Raises ValueError with a one-line reason when the document is not a JWKS.
    """
    entries = document.get("keys") if isinstance(document, Mapping) else None
    if not isinstance(entries, list):
        raise ValueError('not a JWKS document (no "keys" array)')
    found: dict[str, Ed25519PublicKey] = {}
    for entry in entries:
        if not isinstance(entry, Mapping) or entry.get("kty") != "OKP":
            continue
        if entry.get("crv") != "Ed25519" or "d" in entry:
            continue  # never accept a private key as a verification key
        try:
            key = PyJWK(dict(entry), algorithm=JWS_ALGORITHM).key
        except (PyJWKError, ValueError) as error:
            raise ValueError(f"JWKS key {entry.get('kid')!r} is malformed: {error}") from None
        if isinstance(key, Ed25519PublicKey):
            found[str(entry.get("kid") or key_id(key))] = key
    return found


def _public_keys_from_text(text: str | bytes, *, source: str) -> list[Ed25519PublicKey]:
    data = text.encode() if isinstance(text, str) else text
    if data.lstrip().startswith(b"{"):
        try:
            return list(public_keys_from_jwks(json.loads(data)).values())
        except ValueError as error:
            raise ConfigError(f"{source}: retired keys: {error}") from None
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, UnsupportedAlgorithm) as error:
        raise ConfigError(f"{source}: retired key is not a PEM public key ({error})") from None
    if not isinstance(key, Ed25519PublicKey):
        raise ConfigError(f"{source}: retired key must be Ed25519, not {type(key).__name__}")
    return [key]


# Key directory ---------------------------------------------------------------


def load_directory_keys(directory: Path) -> KeyRing:
    """The key ring kept in `directory`, generating the first key when there is none."""
    with _locked(directory):
        return _read_ring(directory) or _add_key(directory)


def rotate_directory_keys(directory: Path) -> KeyRing:
    """A new active key; older private keys are destroyed, their public keys stay published.

    A gateway process reads its keys at start: it signs with the old key until it
    restarts, and the old key's receipts verify either way.
    """
    with _locked(directory):
        ring = _add_key(directory)
        for path in _private_key_files(directory)[:-1]:
            path.unlink()
        return ring


def _add_key(directory: Path) -> KeyRing:
    key = SigningKey.generate()
    stamp = time.time_ns()
    seconds, nanos = divmod(stamp, 1_000_000_000)
    name = time.strftime("%Y%m%dT%H%M%S", time.gmtime(seconds)) + f".{nanos:09d}Z-{key.kid}"
    public_pem = key.public_key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    # Public half first: a crash in between never leaves a private key whose
    # receipts nobody could verify.
    _write_new(directory / (name + _PUBLIC_SUFFIX), public_pem, mode=0o644)
    _write_new(directory / (name + _PRIVATE_SUFFIX), key.private_pem(), mode=0o600)
    ring = _read_ring(directory)
    assert ring is not None and ring.active.kid == key.kid
    return ring


def _read_ring(directory: Path) -> KeyRing | None:
    private_files = _private_key_files(directory)
    if not private_files:
        return None
    active_path = private_files[-1]
    if active_path.stat().st_mode & 0o077:
        raise ConfigError(
            f"signing key {active_path} is readable by other users; `chmod 600` it first"
        )
    active = SigningKey.from_pem(active_path.read_bytes(), source=str(active_path))
    retired = []
    for path in sorted(directory.glob("*" + _PUBLIC_SUFFIX), reverse=True):
        retired.extend(_public_keys_from_text(path.read_bytes(), source=str(path)))
    return KeyRing(active, tuple(k for k in retired if key_id(k) != active.kid))


def _private_key_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*" + _PRIVATE_SUFFIX))


def _write_new(path: Path, data: bytes, *, mode: int) -> None:
    """Create `path` with `mode` from the start (never a moment with wider rights), durably."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def _locked(directory: Path) -> Iterator[None]:
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    if sys.platform == "win32":
        yield
        return
    fd = os.open(directory / _LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)

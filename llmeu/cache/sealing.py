"""Entries encrypted at rest in Redis, under names that say nothing of what they hold.

The operator's secret (`LLMEU_CACHE_KEY`, the same in every gateway process
that shares the cache) is stretched with HKDF-SHA256 into an AES-256-GCM key
and a key for names. Each entry is sealed with a fresh nonce and its own
Redis name as associated data, so an entry copied under another name does not
open. Names are HMACs of the cache's keys: whoever reads Redis cannot test
whether a prompt was cached. An entry sealed under another secret does not
open either: changing the secret empties the cache, it never serves garbage.
"""

from __future__ import annotations

import hashlib
import hmac
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from llmeu.errors import ConfigError

KEY_ENV = "LLMEU_CACHE_KEY"
MIN_SECRET_CHARACTERS = 32
_NONCE = 12
_VERSION = b"\x01"


class Sealer:
    __slots__ = ("_aead", "_names")

    def __init__(self, secret: str):
        if len(secret) < MIN_SECRET_CHARACTERS:
            raise ConfigError(
                f"{KEY_ENV} must hold at least {MIN_SECRET_CHARACTERS} characters "
                "(e.g. `openssl rand -base64 32`)",
                field=KEY_ENV,
            )
        material = HKDF(
            algorithm=hashes.SHA256(), length=64, salt=None, info=b"llmeu answer cache v1"
        ).derive(secret.encode())
        self._aead = AESGCM(material[:32])
        self._names = material[32:]

    def name(self, key: str) -> str:
        return hmac.new(self._names, key.encode(), hashlib.sha256).hexdigest()[:40]

    def seal(self, data: bytes, name: str) -> bytes:
        nonce = os.urandom(_NONCE)
        return _VERSION + nonce + self._aead.encrypt(nonce, data, name.encode())

    def open(self, sealed: bytes, name: str) -> bytes | None:
        """The data, or None when it was not sealed by this secret under this name."""
        if len(sealed) < 1 + _NONCE or sealed[:1] != _VERSION:
            return None
        nonce = sealed[1 : 1 + _NONCE]
        try:
            return self._aead.decrypt(nonce, sealed[1 + _NONCE :], name.encode())
        except InvalidTag:
            return None

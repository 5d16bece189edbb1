"""API key tokens: `sk-llmeu-<key_id>-<secret>`, stored only as a SHA-256 hash.

Tokens carry 256 random bits, so a fast hash is enough (a password hash
would add latency to every call without adding safety). The key id is looked
up first and the hashes then compared in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

PREFIX = "sk-llmeu-"
ADMIN_KEY_ID = "admin"


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_key_id() -> str:
    return "k" + secrets.token_hex(6)


def new_token(key_id: str) -> str:
    return f"{PREFIX}{key_id}-{secrets.token_urlsafe(32)}"


def key_id_of(token: str) -> str:
    """The key id a token names; tokens of another shape can only be the admin key
    (an operator may set any string as LLMEU_ADMIN_KEY)."""
    if token.startswith(PREFIX):
        key_id, dash, _ = token[len(PREFIX) :].partition("-")
        if dash and key_id:
            return key_id
    return ADMIN_KEY_ID


def matches(token: str, secret_hash: str) -> bool:
    return hmac.compare_digest(hash_token(token), secret_hash)

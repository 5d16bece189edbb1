"""API keys at the door: lookup by key id, constant-time hash comparison, a cache.

Keys are cached in memory; a revocation in this process applies to the very
next call. With several processes (PostgreSQL), a revocation is broadcast
(`llmeu.ledger.notify`) and confirmed by every live process before the
platform API answers; every process also reloads keys every few seconds, so a
missed notice delays a revocation by at most that long. Loads and reloads
take turns, so a full reload that read the table before a revocation was
committed can never overwrite the revoked key read after it.
"""

from __future__ import annotations

import asyncio
import logging
import time

from llmeu.api.services.auth_failures import AuthFailures
from llmeu.errors import AuthenticationFailed, ConfigError, InvalidRequest
from llmeu.ledger.api_keys import ApiKey
from llmeu.ledger.secrets import (
    ADMIN_KEY_ID,
    PREFIX,
    hash_token,
    key_id_of,
    matches,
    new_key_id,
    new_token,
)
from llmeu.ledger.store import Store

log = logging.getLogger("llmeu.auth")

_NEGATIVE_TTL = 2.0


class KeyRing:
    def __init__(self, store: Store, failures: AuthFailures | None = None):
        self._store = store
        self.failures = failures or AuthFailures()
        self._keys: dict[str, ApiKey] = {}
        self._unknown: dict[str, float] = {}
        self._turn = asyncio.Lock()

    async def load(self) -> None:
        async with self._turn:
            self._keys = {k.key_id: k for k in await self._store.list_keys()}
            self._unknown.clear()

    async def ensure_admin(self, configured: str | None, default_policy: str) -> str | None:
        """Install the admin key; returns a newly generated token to print once, else None."""
        if configured is not None and key_id_of(configured) != ADMIN_KEY_ID:
            # A token of the issued shape names its key: `sk-llmeu-x-…` would be looked up
            # as key `x` and never match, and every call with it would fail as invalid.
            raise ConfigError(
                f"LLMEU_ADMIN_KEY names key `{key_id_of(configured)}`: an admin key in llmeu's "
                f"own format starts with `{PREFIX}{ADMIN_KEY_ID}-`; any string without the "
                f"`{PREFIX}` prefix works too",
                field="LLMEU_ADMIN_KEY",
            )
        existing = await self._store.get_key(ADMIN_KEY_ID)
        token = configured
        if token is None and existing is not None and existing.revoked_at is None:
            return None
        generated = token is None
        if token is None:
            token = new_token(ADMIN_KEY_ID)
        key = ApiKey(
            key_id=ADMIN_KEY_ID,
            name="admin",
            secret_hash=hash_token(token),
            policy_id=existing.policy_id if existing else default_policy,
            is_admin=True,
            created_at=existing.created_at if existing else time.time(),
        )
        await self._store.upsert_key(key)
        self._keys[ADMIN_KEY_ID] = key
        return token if generated else None

    async def authenticate(self, authorization: str | None, client: str | None = None) -> ApiKey:
        """The key `authorization` names; 401 if none, and — for a `client` address whose
        failures ran out (`llmeu.api.services.auth_failures`) — 429 before the database is asked."""
        if not authorization:
            raise AuthenticationFailed(
                "Missing API key: send it as `Authorization: Bearer <key>`", code="missing_api_key"
            )
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token or len(token) > 512:
            raise AuthenticationFailed("Malformed Authorization header: expected `Bearer <key>`")
        key_id = key_id_of(token)
        key = self._keys.get(key_id)
        if key is None:
            if client is not None:
                self.failures.check(client)
            key = await self._fetch(key_id)
        if key is None or not matches(token, key.secret_hash) or key.revoked_at is not None:
            if client is not None:
                self.failures.failed(client)
            raise AuthenticationFailed("Invalid API key")
        return key

    async def _fetch(self, key_id: str) -> ApiKey | None:
        """A key created by another gateway process; unknown ids are remembered briefly."""
        now = time.monotonic()
        if self._unknown.get(key_id, 0.0) > now:
            return None
        key = await self._store.get_key(key_id)  # DatabaseUnavailable: a 503, mapped by the api
        if key is None:
            if len(self._unknown) > 10_000:
                self._unknown.clear()
            self._unknown[key_id] = now + _NEGATIVE_TTL
            return None
        self._keys[key_id] = key
        return key

    async def create(
        self,
        *,
        name: str,
        policy_id: str,
        budget_eur: float | None = None,
        rpm_limit: int | None = None,
        tpm_limit: int | None = None,
        purpose: str | None = None,
        allow_mcp_servers: tuple[str, ...] = (),
        allow_tools: tuple[str, ...] = (),
        role: str | None = None,
        team_id: str | None = None,
        owner_subject: str | None = None,
    ) -> tuple[ApiKey, str]:
        """A new key and its secret. A key of role `admin` is also stored `is_admin`, so that
        an older release sharing the ledger gives it the admin's rights, not a member's."""
        key_id = new_key_id()
        token = new_token(key_id)
        key = ApiKey(
            key_id=key_id,
            name=name,
            secret_hash=hash_token(token),
            policy_id=policy_id,
            is_admin=role == "admin",
            created_at=time.time(),
            budget_eur=budget_eur,
            rpm_limit=rpm_limit,
            tpm_limit=tpm_limit,
            purpose=purpose,
            allow_mcp_servers=allow_mcp_servers,
            allow_tools=allow_tools,
            role=role,
            team_id=team_id,
            owner_subject=owner_subject,
        )
        await self._store.insert_key(key)
        self._keys[key_id] = key
        self._unknown.pop(key_id, None)
        return key, token

    async def revoke(self, key_id: str) -> bool:
        if key_id == ADMIN_KEY_ID:
            raise InvalidRequest("the admin key cannot be revoked through the API", param="key_id")
        revoked = await self._store.revoke_key(key_id, time.time())
        await self.reload(key_id)
        return revoked

    async def reload(self, key_id: str) -> None:
        async with self._turn:
            key = await self._store.get_key(key_id)
            if key is None:
                self._keys.pop(key_id, None)
            else:
                self._keys[key_id] = key

    def all(self) -> list[ApiKey]:
        return sorted(self._keys.values(), key=lambda k: k.created_at)

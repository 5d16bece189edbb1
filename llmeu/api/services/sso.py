"""Single sign-on for the console: the authorization-code flow with PKCE, and sessions.

`begin` stores a login under way — a random `state`, `nonce` and PKCE verifier
(S256 challenge), in the ledger database (`llmeu.ledger.console_sessions`), so
any gateway process can finish it — and answers the issuer's authorization URL.
`finish` takes that login once (a replayed or forged `state` finds nothing; one
older than `LOGIN_TTL_SECONDS` has expired), exchanges the code with the
verifier, validates the ID token (`llmeu.api.services.id_token`) and opens a
session: an opaque random id for the cookie, its SHA-256 stored with the user's
subject, name, roles and a CSRF token.

Roles come from one claim (`oidc_roles_claim`, `groups` by default): every group
listed in `oidc_role_map` gives its role; the organisation's directory
(`llmeu.api.services.directory`: SCIM groups, a role granted by an admin) adds
its own, and may refuse the user (deactivated, or not provisioned). A user who
holds no role is refused (403 `no_role`). The token's roles are read at sign-in
(a change at the issuer applies at the next one); the directory's at every
request.

Starting a sign-in stores a row, so it is bounded: per client address by a
bucket of `LOGIN_STARTS` in each process (`llmeu.api.services.auth_failures`),
and in all (every process of the ledger) by
`MAX_PENDING_LOGINS` logins under way (each expires after `LOGIN_TTL_SECONDS`);
past either, a 429 `too_many_sign_ins` with `Retry-After`.

A session ends after `session_idle_seconds` without a request or
`session_max_seconds` after sign-in, whichever comes first, or at sign-out,
which also answers the issuer's `end_session_endpoint` (RP-initiated logout)
when its discovery document names one.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import math
import secrets
import time
from dataclasses import dataclass, replace
from urllib.parse import urlencode

from llmeu.api.services.auth_failures import AddressBuckets, FailureLimits
from llmeu.api.services.directory import Directory
from llmeu.api.services.id_token import UnknownKey, refused, validate_id_token
from llmeu.api.services.oidc_issuer import Issuer
from llmeu.config import Settings
from llmeu.errors import ConfigError, InvalidRequest, PermissionDenied, RateLimited
from llmeu.ledger.console_sessions import (
    ConsoleSession,
    PendingLogin,
    delete_session,
    get_session,
    insert_login,
    insert_session,
    pending_logins,
    purge_expired,
    session_hash,
    take_login,
    touch_session,
)
from llmeu.ledger.database import Database
from llmeu.providers.transport import HttpClient

LOGIN_TTL_SECONDS = 600.0
LOGIN_STARTS = FailureLimits(burst=20, per_second=0.5)
"""Sign-ins one address may start: 20 at once, then one every 2 s (people behind one
proxy share an address; an address alone then holds at most ~320 logins under way)."""
MAX_PENDING_LOGINS = 10_000


@dataclass(frozen=True, slots=True)
class Opened:
    """A session just opened: the id for the cookie (never stored) and the session."""

    session_id: str
    session: ConsoleSession


class Sso:
    def __init__(
        self, settings: Settings, http: HttpClient, db: Database, directory: Directory | None = None
    ):
        if not settings.oidc_issuer or not settings.oidc_client_id:
            raise ConfigError("single sign-on needs an issuer and a client id", field="oidc_issuer")
        self.issuer = Issuer(settings.oidc_issuer, http)
        self.client_id = settings.oidc_client_id
        self._secret = settings.oidc_client_secret
        self._claim = settings.oidc_roles_claim
        self._role_map = settings.oidc_role_map
        self.redirect_url = settings.oidc_redirect_url
        self.idle_seconds = settings.session_idle_seconds
        self.max_seconds = settings.session_max_seconds
        self._db = db
        self._directory = directory
        self.starts = AddressBuckets(LOGIN_STARTS)
        self.max_pending = MAX_PENDING_LOGINS

    async def begin(self, redirect_url: str, client: str | None = None) -> str:
        """The issuer's authorization URL for a new login, stored until its callback; 429
        past the sign-ins `client` (its address) may start, or past those under way."""
        if client is not None:
            if wait := self.starts.retry_after(client):
                raise _too_many("too many sign-ins started from this address", wait)
            self.starts.spend(client)
        metadata = await self.issuer.metadata()
        now = time.time()
        await purge_expired(
            self._db,
            logins_before=now - LOGIN_TTL_SECONDS,
            idle_before=now - self.idle_seconds,
            created_before=now - self.max_seconds,
        )
        pending, oldest = await pending_logins(self._db)
        if pending >= self.max_pending:
            expires = (oldest or now) + LOGIN_TTL_SECONDS - now
            raise _too_many("too many sign-ins under way", max(1, math.ceil(expires)))
        login = PendingLogin(_token(), _token(), _token(), redirect_url, now)
        await insert_login(self._db, login)
        query = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": redirect_url,
            "scope": "openid profile email",
            "state": login.state,
            "nonce": login.nonce,
            "code_challenge": _challenge(login.verifier),
            "code_challenge_method": "S256",
        }
        endpoint: str = metadata["authorization_endpoint"]
        return endpoint + ("&" if "?" in endpoint else "?") + urlencode(query)

    async def finish(self, state: str, code: str) -> Opened:
        login = await take_login(self._db, state)
        if login is None:
            raise InvalidRequest(
                "unknown or already used sign-in `state`: start the sign-in again",
                param="state",
                code="invalid_state",
            )
        now = time.time()
        if now - login.created_at > LOGIN_TTL_SECONDS:
            raise InvalidRequest(
                "this sign-in took too long: start it again", param="state", code="invalid_state"
            )
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": login.redirect_url,
            "code_verifier": login.verifier,
            "client_id": self.client_id,
        }
        headers: list[tuple[bytes, bytes]] = []
        if self._secret is not None:
            basic = base64.b64encode(f"{self.client_id}:{self._secret}".encode())
            headers.append((b"authorization", b"Basic " + basic))
        answer = await self.issuer.token(form, headers)
        id_token = answer.get("id_token")
        if not isinstance(id_token, str):
            raise refused("the issuer's token answer holds no id_token")
        claims = await self.validate(id_token, login.nonce)
        issued = self._group_roles(claims)
        held = issued
        if self._directory is not None:
            held = tuple(dict.fromkeys((*issued, *await self._directory.signing_in(claims))))
        if not held:
            raise self._no_role()
        session_id = _token()
        name = claims.get("email") or claims.get("name") or claims.get("preferred_username")
        session = ConsoleSession(
            session_hash(session_id), str(claims["sub"]), name if isinstance(name, str) else None,
            issued, _token(), id_token, now, now,
        )  # fmt: skip
        await insert_session(self._db, session)
        return Opened(session_id, replace(session, roles=held))

    async def validate(self, id_token: str, nonce: str) -> dict[str, object]:
        """The token's claims; a `kid` the cached key set lacks fetches it again, once."""
        for refresh in (False, True):
            jwks = await self.issuer.jwks(refresh=refresh)
            try:
                return validate_id_token(
                    id_token, jwks, issuer=self.issuer.url, client_id=self.client_id,
                    nonce=nonce,
                )  # fmt: skip
            except UnknownKey as unknown:
                missing = str(unknown)
        raise refused(f"the issuer publishes no key {missing!r}")

    def roles_of(self, claims: dict[str, object]) -> tuple[str, ...]:
        roles = self._group_roles(claims)
        if not roles:
            raise self._no_role()
        return roles

    def _group_roles(self, claims: dict[str, object]) -> tuple[str, ...]:
        value = claims.get(self._claim)
        listed = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        groups = {group for group in listed if isinstance(group, str)}
        return tuple(dict.fromkeys(role for group, role in self._role_map if group in groups))

    def _no_role(self) -> PermissionDenied:
        return PermissionDenied(
            f"none of your groups (claim `{self._claim}`) is given a role on this gateway",
            code="no_role",
        )

    async def session(self, session_id: str) -> ConsoleSession | None:
        """The live session the cookie's id names, its idle time reset; None if none or
        past a timeout (then forgotten)."""
        hashed = session_hash(session_id)
        session = await get_session(self._db, hashed)
        if session is None:
            return None
        now = time.time()
        if (
            now - session.last_seen_at > self.idle_seconds
            or now - session.created_at > self.max_seconds
        ):
            await delete_session(self._db, hashed)
            return None
        # One write a while, not one per request: the idle time is kept to this precision.
        if now - session.last_seen_at > min(60.0, self.idle_seconds / 10):
            await touch_session(self._db, hashed, now)
            session = replace(session, last_seen_at=now)
        return session

    def check_csrf(self, session: ConsoleSession, sent: str | None) -> None:
        if sent is None or not hmac.compare_digest(sent.encode(), session.csrf_token.encode()):
            raise PermissionDenied(
                "a change made with the console's session needs its CSRF token in the "
                "`X-CSRF-Token` header (GET /auth/session gives it)",
                code="csrf_failed",
            )

    async def sign_out(self, session: ConsoleSession, return_to: str) -> str | None:
        """End the session; the issuer's logout URL to visit next, if it offers one."""
        await delete_session(self._db, session.session_hash)
        endpoint = (await self.issuer.metadata()).get("end_session_endpoint")
        if not isinstance(endpoint, str):
            return None
        query = {
            "id_token_hint": session.id_token,
            "client_id": self.client_id,
            "post_logout_redirect_uri": return_to,
        }
        return endpoint + ("&" if "?" in endpoint else "?") + urlencode(query)


def _token() -> str:
    return secrets.token_urlsafe(32)


def _challenge(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _too_many(what: str, retry_after: int) -> RateLimited:
    return RateLimited(f"{what}; retry later", retry_after=retry_after, code="too_many_sign_ins")


__all__ = ["ConsoleSession", "Opened", "Sso"]

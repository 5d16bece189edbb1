"""The platform's records and settings as the platform API offers them (design §6).

Keys, policies, the endpoint catalog with its health (its rows:
`llmeu.api.services.endpoint_rows`), a reload of the configuration, usage and
traces. Every read of records is scoped by its `Viewer`
(`llmeu.api.services.record_scope`): a role that reads every key's records sees
everything (or the key it asks for), any other only its own key's — another
key's trace id is as unknown as one that does not exist. Who may call which
route, and whose records each role reads, is `llmeu.api.routes.access`'s table;
the HTTP side (query parameters, bodies) is `llmeu.api.routes.platform`'s. Every
change made here is recorded as an admin event on the evidence chain
(`llmeu.api.services.admin_log`), by the `Actor` the route names.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from llmeu.api.services.admin_log import Actor, AdminLog
from llmeu.api.services.answer_cache import CacheService
from llmeu.api.services.auth import KeyRing
from llmeu.api.services.directory import Directory
from llmeu.api.services.endpoint_rows import endpoint_config, endpoint_rows
from llmeu.api.services.mcp_upstreams import ToolServers
from llmeu.api.services.policies import PolicyBook, key_narrowing
from llmeu.api.services.record_scope import STATUSES, Viewer, check_page, reaches, scope
from llmeu.api.services.signing import signing_change, signing_state
from llmeu.api.services.sso import Sso
from llmeu.api.services.team_quotas import TeamBook
from llmeu.api.services.team_rules import replaced_within_teams, within_team
from llmeu.api.services.upstreams import Upstreams
from llmeu.errors import (
    AuthenticationFailed,
    ConfigError,
    DatabaseError,
    InvalidRequest,
    NotFound,
)
from llmeu.evidence.signing_keys import KeyRing as SigningKeys
from llmeu.ledger.api_keys import ApiKey
from llmeu.ledger.notify import Propagation
from llmeu.ledger.secrets import PREFIX, key_id_of
from llmeu.ledger.store import TRACE_FILTERS, USAGE_GROUPS, Store
from llmeu.ledger.teams import get_team, list_teams
from llmeu.routing.config_file import parse_policy
from llmeu.routing.policy import policy_document

__all__ = ["TRACE_FILTERS", "USAGE_GROUPS", "Actor", "Broadcast", "KeySpec", "Platform", "Viewer"]

log = logging.getLogger("llmeu.platform")

UNAUTHENTICATED = "unauthenticated"
"""The actor of a failed authentication: nobody the gateway knows."""
_TOTALS = ("requests", "completed", "cancelled", "failed", "rejected", "interrupted",
           "input_tokens", "output_tokens", "estimated_requests", "cost_eur", "cached",
           "saved_eur")  # fmt: skip

Broadcast = Callable[[str, str], Awaitable[Propagation | None]]
"""Makes a change this process applied hold in every other gateway process."""


@dataclass(frozen=True, slots=True)
class KeySpec:
    """A key to create: its name, policy (None: the default), limits, purpose, and the MCP
    tool servers and tools it may use within its policy's."""

    name: str
    policy_id: str | None
    budget_eur: float | None
    rpm_limit: int | None
    tpm_limit: int | None
    purpose: str | None
    allow_mcp_servers: tuple[str, ...] = ()
    allow_tools: tuple[str, ...] = ()
    role: str | None = None
    team_id: str | None = None
    owner_subject: str | None = None
    """The console user whose session creates the key (their personal key); None: a key."""


@dataclass(slots=True)
class Platform:
    """What the platform routes work on (`upstreams` is replaced when the configuration is
    reloaded)."""

    keys: KeyRing
    policies: PolicyBook
    store: Store
    upstreams: Upstreams
    broadcast: Broadcast
    reload_configuration: Callable[[], Awaitable[None]]
    answers: CacheService
    tool_servers: ToolServers
    """The MCP tool servers (replaced on a reload, as `upstreams` is)."""
    admin_log: AdminLog
    teams: TeamBook
    """The teams as calls see them, told of every change made here."""
    sso: Sso | None = None
    """Sign-in with the organisation's issuer (`llmeu.api.services.sso`); None: not set up."""
    console_auth: tuple[str, ...] = ("key",)
    """How the console offers to sign in: `key`, `oidc`, or both (`--console-auth`)."""
    signing_keys: Callable[[], SigningKeys] | None = None
    """The keys receipts and checkpoints are signed with now (the gateway's)."""
    reload_signing_keys: Callable[[], Awaitable[str | None]] | None = None
    """Read the signing keys again (`KeyReloader.reload`): why they could not be, or None."""
    directory: Directory | None = None
    """The organisation's directory of users and groups (`llmeu.api.services.directory`)."""
    scim_token: str | None = field(default=None, repr=False)
    """The bearer token of `/scim/v2` (`--scim-token-env`); None: SCIM is not set up."""

    async def authenticate(self, authorization: str | None, client: str | None) -> ApiKey:
        """The calling key. A key sent that does not authenticate is an admin event
        (`auth.failed`: no actor, the key id it claims as target, the client address),
        while the address has failures left (`AuthFailures.allows`): a flood from one
        address writes a bounded number of rows; a request without a key, or from no
        known address, writes none. An event that cannot be written is logged: the
        answer stays the 401."""
        try:
            return await self.keys.authenticate(authorization, client)
        except AuthenticationFailed:
            token = (authorization or "").partition(" ")[2].strip()
            if token and client is not None and self.keys.failures.allows(client):
                await self._failed_authentication(token, client)
            raise

    async def _failed_authentication(self, token: str, client: str) -> None:
        claimed = key_id_of(token) if token.startswith(PREFIX) else None
        try:
            await self.admin_log.record(Actor(UNAUTHENTICATED, None, client), "auth.failed",
                                        claimed)  # fmt: skip
        except DatabaseError as error:
            log.error("a failed authentication could not be recorded: %s", error)

    async def create_key(self, spec: KeySpec, by: Actor) -> dict[str, Any]:
        """The new key's public view, with its secret (shown this once; its
        event digests the public view only). A key in a team
        takes the team's policy unless it names one, which must be at least as strict."""
        team = None
        if spec.team_id is not None:
            team = await get_team(self.store.db, spec.team_id)
            if team is None:
                raise InvalidRequest(f"no team `{spec.team_id}`", param="team_id")
        policy_id = spec.policy_id or (team.policy_id if team else self.policies.default_policy)
        policy = self.policies.get(policy_id)
        if policy is None:
            raise InvalidRequest(
                f"unknown policy `{policy_id}`", param="policy_id", code="unknown_policy"
            )
        if team is not None:
            within_team(self.policies.get, team, policy)
        key_narrowing(policy, spec.allow_mcp_servers, spec.allow_tools)
        key, token = await self.keys.create(
            name=spec.name,
            policy_id=policy_id,
            budget_eur=spec.budget_eur,
            rpm_limit=spec.rpm_limit,
            tpm_limit=spec.tpm_limit,
            purpose=spec.purpose,
            allow_mcp_servers=spec.allow_mcp_servers,
            allow_tools=spec.allow_tools,
            role=spec.role,
            team_id=spec.team_id,
            owner_subject=spec.owner_subject,
        )
        await self.admin_log.record(by, "key.create", key.key_id, after=key.public())
        return {**key.public(), "key": token}

    async def list_keys(self, caller: Viewer) -> list[dict[str, Any]]:
        """Every key, its team's keys, or the caller's own, as its reach says."""
        await self.keys.load()
        return [k.public() for k in self.keys.all() if reaches(caller, k)]

    async def key(self, key_id: str) -> ApiKey | None:
        """The key `key_id` as the ledger has it now, revoked or not."""
        return await self.store.get_key(key_id)

    async def revoke_key(self, key_id: str, by: Actor) -> dict[str, Any]:
        before = await self.store.get_key(key_id)
        if not await self.keys.revoke(key_id):
            raise NotFound(f"no active key `{key_id}`", param="key_id")
        after = await self.store.get_key(key_id)
        await self.admin_log.record(
            by, "key.revoke", key_id, before=_public(before), after=_public(after)
        )
        propagation = await self.broadcast("key", key_id)
        return {
            "id": key_id,
            "object": "api_key",
            "revoked": True,
            "propagation": propagation.as_dict() if propagation is not None else None,
        }

    def list_policies(self) -> dict[str, Any]:
        data = [policy_document(p) for p in self.policies.policies.values()]
        return {"object": "list", "default_policy": self.policies.default_policy, "data": data}

    def policy(self, policy_id: str) -> dict[str, Any]:
        policy = self.policies.get(policy_id)
        if policy is None:
            raise NotFound(f"no policy `{policy_id}`", param="policy_id")
        return policy_document(policy)

    async def put_policy(self, policy_id: str, document: str, by: Actor) -> dict[str, Any]:
        """Store a policy (YAML or JSON of the configuration file's shape); every process
        applies it. One that would leave a team's key wider than its team is refused
        (`llmeu.api.services.team_rules`). Its event digests the policy in force before
        (None: a new id) and after, as `policy_document` writes them."""
        try:
            policy = parse_policy(document)
        except ConfigError as error:
            raise InvalidRequest(f"invalid policy: {error}", param=error.field) from None
        previous = self.policies.get(policy.policy_id)
        replaced_within_teams(self.policies.get, policy, await list_teams(self.store.db),
                              await self.store.list_keys())  # fmt: skip
        await self.policies.put(policy, time.time())
        await self.answers.policies_changed([policy.policy_id])
        await self.broadcast("policy", policy_id)
        after = policy_document(policy)
        before = None if previous is None else policy_document(previous)
        await self.admin_log.record(by, "policy.put", policy_id, before=before, after=after)
        return after

    async def reload(self, by: Actor) -> dict[str, Any]:
        """Read the configuration file and the signing keys again, here and in every other
        gateway process. An invalid file changes nothing: a 400 `invalid_configuration` says
        why (and no event is recorded). Key files that cannot be read leave the keys in use,
        and the answer says why. The event digests `configuration_state` before and after."""
        before = self.configuration_state()
        try:
            await self.reload_configuration()
        except ConfigError as error:
            raise InvalidRequest(
                f"the configuration file is invalid; the gateway keeps the one it has: {error}",
                param=error.field,
                code="invalid_configuration",
            ) from None
        keys_error = await self.reload_signing_keys() if self.reload_signing_keys else None
        after = self.configuration_state()
        await self.admin_log.record(by, "config.reload", "configuration", before=before,
                                    after=after)  # fmt: skip
        answer: dict[str, Any] = {
            "object": "reload",
            "reloaded": True,
            "endpoints": len(self.upstreams.catalog.endpoints),
            "policies": len(self.policies.policies),
        }
        if "signing_keys" in after:
            answer["signing_keys"] = signing_change(before["signing_keys"],
                                                    after["signing_keys"], keys_error)  # fmt: skip
        return answer

    def configuration_state(self) -> dict[str, Any]:
        """What a reload can change, as a reload's event digests it: the default policy,
        every policy in force, the catalog's endpoints and the signing keys (the key that
        signs, the keys published)."""
        state = {
            "default_policy": self.policies.default_policy,
            "policies": {pid: policy_document(p) for pid, p in self.policies.policies.items()},
            "endpoints": {e.endpoint_id: endpoint_config(e, self.upstreams, self.policies)
                          for e in self.upstreams.catalog.endpoints},
        }  # fmt: skip
        if self.signing_keys is not None:
            state["signing_keys"] = signing_state(self.signing_keys())
        return state

    async def clear_cache(self, by: Actor) -> dict[str, Any]:
        """Empty the answer cache in every process; the event digests what was cleared."""
        cleared = await self.answers.clear()
        await self.admin_log.record(by, "cache.clear", "answer-cache",
                                    after={"entries": cleared["entries"]})  # fmt: skip
        return cleared

    async def admin_events(
        self,
        *,
        filters: dict[str, str],
        since: float | None,
        until: float | None,
        limit: int,
        cursor: str | None,
    ) -> dict[str, Any]:
        """A page of admin events, newest first, filtered by `action` and `actor`."""
        check_page(limit, cursor)
        page = await self.store.list_admin_events(
            filters=filters, since=since, until=until, limit=limit, cursor=cursor
        )
        return {"object": "list", "data": page.events, "next_cursor": page.next_cursor,
                "has_more": page.next_cursor is not None}  # fmt: skip

    def endpoints(self, caller: Viewer) -> list[dict[str, Any]]:
        """The catalog with each endpoint's health; a caller reading every key's records also
        sees which keys' calls make up a failing streak or opened a circuit (`circuit_keys`:
        key ids are tenant data)."""
        return endpoint_rows(self.upstreams, self.policies, circuit_keys=caller.every_key)

    async def usage(
        self,
        caller: Viewer,
        *,
        group_by: str,
        since: float | None,
        until: float | None,
        key_id: str | None,
    ) -> dict[str, Any]:
        if group_by not in USAGE_GROUPS:
            raise InvalidRequest(
                f"group_by must be one of {', '.join(USAGE_GROUPS)}", param="group_by"
            )
        key_filter, team_filter = scope(caller, key_id)
        rows = await self.store.usage(
            group_by=group_by, since=since, until=until, key_id=key_filter, team_id=team_filter
        )
        totals = {name: sum(r[name] for r in rows) for name in _TOTALS}
        totals["cost_eur"] = round(totals["cost_eur"], 10)
        totals["saved_eur"] = round(totals["saved_eur"], 10)
        return {"object": "usage", "group_by": group_by, "from": since, "to": until,
                "data": rows, "totals": totals}  # fmt: skip

    async def traces(
        self,
        caller: Viewer,
        *,
        filters: dict[str, str],
        since: float | None,
        until: float | None,
        limit: int,
        cursor: str | None,
        key_id: str | None,
    ) -> dict[str, Any]:
        """A page of traces, newest first; `filters` by any of `TRACE_FILTERS` but `key_id`."""
        check_page(limit, cursor)
        if filters.get("status", "completed") not in STATUSES:
            raise InvalidRequest(
                f"status must be one of {', '.join(sorted(STATUSES))}", param="status"
            )
        key_filter, team_filter = scope(caller, key_id)
        page = await self.store.list_traces(
            filters=filters, since=since, until=until, limit=limit, cursor=cursor,
            key_id=key_filter, team_id=team_filter,
        )  # fmt: skip
        return {"object": "list", "data": page.traces, "next_cursor": page.next_cursor,
                "has_more": page.next_cursor is not None}  # fmt: skip

    async def trace(self, caller: Viewer, trace_id: str) -> dict[str, Any]:
        """The trace the caller may see: any if it reads every key's, else only its own
        key's (another's is a 404)."""
        key_filter, team_filter = scope(caller, None)
        trace = await self.store.get_trace(trace_id, key_id=key_filter, team_id=team_filter)
        if trace is None:
            raise NotFound(f"no trace `{trace_id}`", param="trace_id", code="trace_not_found")
        return trace


def _public(key: ApiKey | None) -> dict[str, Any] | None:
    return None if key is None else key.public()

"""The platform API's routes (design §6): keys, policies, endpoints, usage, traces, the answer
cache, admin events. JSON only.

Which roles may call each route, and whose records each reads, is the table in
`llmeu.api.routes.access`: the admin key manages keys and policies and sees
every trace and all usage; a key without a role sees only its own traces and
usage — another key's trace id answers 404 exactly like one that does not
exist. No platform route streams:
`stream` set to true in the query or the body is a 400. While the ledger
database is unavailable, routes that need it answer 503 (`ledger_unavailable`).
What each route does is `llmeu.api.services.platform_service`'s; here is the HTTP.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from msgspec import Meta, Struct

from llmeu.api.http.asgi import Request
from llmeu.api.http.route import OBJECT, Doc, Param
from llmeu.api.routes.access import Reach, Role, refuse_grant, role_of
from llmeu.api.routes.caller import authorize, decode_json, moment, reply
from llmeu.api.routes.console_sections import grantable, routes_of, sections_of
from llmeu.api.services.platform_service import TRACE_FILTERS, USAGE_GROUPS, KeySpec, Platform
from llmeu.api.services.record_scope import MAX_PAGE, reaches
from llmeu.calls.record import CallStatus
from llmeu.errors import InvalidRequest, NotFound, PermissionDenied
from llmeu.protocol.json_codec import encoder


class KeyCreate(Struct, forbid_unknown_fields=True):
    name: Annotated[str, Meta(max_length=200, pattern="^[^\\x00-\\x1f\\x7f]*$")] = ""
    policy_id: str | None = None
    budget_eur: Annotated[float, Meta(ge=0)] | None = None
    rpm_limit: Annotated[int, Meta(ge=1, le=1_000_000_000)] | None = None
    tpm_limit: Annotated[int, Meta(ge=1, le=1_000_000_000)] | None = None
    purpose: Annotated[str, Meta(max_length=500, pattern="^[^\\x00-\\x1f\\x7f]*$")] | None = None
    allow_mcp_servers: Annotated[list[str], Meta(max_length=64)] = []
    allow_tools: Annotated[list[str], Meta(max_length=256)] = []
    role: Role | None = None
    team_id: Annotated[str, Meta(max_length=200)] | None = None
    stream: bool | None = None


async def create_key(p: Platform, request: Request) -> None:
    """A key of the role asked for (none: it acts as `member`), if the caller's role may
    grant it (`llmeu.api.routes.access.may_grant`); a team admin's keys are in its team."""
    caller = await authorize(p, request)
    spec: KeyCreate = decode_json(caller.body, KeyCreate)
    refuse_grant(caller.role, spec.role or Role.MEMBER, "create")
    team_id = spec.team_id
    if caller.reach is Reach.TEAM:
        if caller.key.team_id is None or team_id not in (None, caller.key.team_id):
            raise PermissionDenied(
                f"the `{caller.role}` role creates keys in its own team only",
                param="team_id",
                code="role_forbidden",
            )
        team_id = caller.key.team_id
    created = await p.create_key(
        KeySpec(spec.name, spec.policy_id, spec.budget_eur, spec.rpm_limit, spec.tpm_limit,
                spec.purpose, tuple(spec.allow_mcp_servers), tuple(spec.allow_tools),
                None if spec.role is None else spec.role.value, team_id, caller.subject),
        caller.actor,
    )  # fmt: skip
    await reply(request, created, status=201)


async def list_keys(p: Platform, request: Request) -> None:
    caller = await authorize(p, request)
    await reply(request, {"object": "list", "data": await p.list_keys(caller.viewer)})


async def revoke_key(p: Platform, request: Request, key_id: str) -> None:
    """Revoke a key the caller reaches (a team admin: its team's), of a role the caller's
    role may grant (an operator cannot revoke an auditor's key)."""
    caller = await authorize(p, request)
    target = await p.key(key_id)
    if target is not None and not reaches(caller.viewer, target):
        raise NotFound(f"no active key `{key_id}`", param="key_id")
    if target is not None:
        refuse_grant(caller.role, role_of(target.acting_role), "revoke")
    await reply(request, await p.revoke_key(key_id, caller.actor))


async def current_key(p: Platform, request: Request) -> None:
    """The calling key itself (any key), or the signed-in user as a key: how the console
    learns its policy, its roles, and the sections and routes those roles may use
    (`llmeu.api.routes.console_sections`, from the access table)."""
    caller = await authorize(p, request)
    roles = caller.roles or (caller.role,)
    await reply(request, {
        **caller.key.public(),
        "roles": [str(r) for r in roles],
        "subject": caller.subject,
        "signed_in_with": "key" if caller.subject is None else "organisation",
        "sections": sections_of(roles, with_key=caller.subject is None),
        "routes": routes_of(roles),
        "grants": grantable(roles),
    })  # fmt: skip


async def list_policies(p: Platform, request: Request) -> None:
    await authorize(p, request)
    await reply(request, p.list_policies())


async def get_policy(p: Platform, request: Request, policy_id: str) -> None:
    await authorize(p, request)
    await reply(request, p.policy(policy_id))


async def put_policy(p: Platform, request: Request, policy_id: str) -> None:
    caller = await authorize(p, request)
    body = decode_json(caller.body, dict[str, Any])
    if body.setdefault("policy_id", policy_id) != policy_id:
        raise InvalidRequest("policy_id in the body differs from the path", param="policy_id")
    document = encoder.encode(body).decode()
    await reply(request, await p.put_policy(policy_id, document, caller.actor))


async def reload_configuration(p: Platform, request: Request) -> None:
    """Read the configuration file and the signing keys again, here and in every other
    gateway process."""
    caller = await authorize(p, request)
    await reply(request, await p.reload(caller.actor))


async def list_endpoints(p: Platform, request: Request) -> None:
    caller = await authorize(p, request)
    await reply(request, {"object": "list", "data": p.endpoints(caller.viewer)})


async def usage(p: Platform, request: Request) -> None:
    caller = await authorize(p, request)
    query = request.query
    body = await p.usage(
        caller.viewer,
        group_by=query.get("group_by", "day"),
        since=moment(query, "from"),
        until=moment(query, "to"),
        key_id=query.get("key_id"),
    )
    await reply(request, body)


async def list_traces(p: Platform, request: Request) -> None:
    caller = await authorize(p, request)
    query = request.query
    page = await p.traces(
        caller.viewer,
        filters={f: query[f] for f in TRACE_FILTERS if query.get(f) and f != "key_id"},
        since=moment(query, "from"),
        until=moment(query, "to"),
        limit=_limit(query),
        cursor=query.get("cursor") or None,
        key_id=query.get("key_id"),
    )
    await reply(request, page)


async def get_trace(p: Platform, request: Request, trace_id: str) -> None:
    caller = await authorize(p, request)
    await reply(request, await p.trace(caller.viewer, trace_id))


async def cache_stats(p: Platform, request: Request) -> None:
    await authorize(p, request)
    await reply(request, await p.answers.stats())


async def clear_cache(p: Platform, request: Request) -> None:
    caller = await authorize(p, request)
    await reply(request, await p.clear_cache(caller.actor))


async def list_admin_events(p: Platform, request: Request) -> None:
    """Administrative changes, newest first (`llmeu.evidence.admin_events`)."""
    await authorize(p, request)
    query = request.query
    page = await p.admin_events(
        filters={f: query[f] for f in ADMIN_EVENT_FILTERS if query.get(f)},
        since=moment(query, "from"),
        until=moment(query, "to"),
        limit=_limit(query),
        cursor=query.get("cursor") or None,
    )
    await reply(request, page)


def _limit(query: dict[str, str]) -> int:
    try:
        return int(query.get("limit", "50"))
    except ValueError:
        raise InvalidRequest("limit must be an integer", param="limit") from None


_WINDOW = (Param("from"), Param("to"))
ADMIN_EVENT_FILTERS = ("action", "actor")
_STATUSES = sorted(s.value for s in CallStatus)

PLATFORM_ROUTES: list[tuple[str, str, Callable[..., Awaitable[None]], Doc]] = [
    ("POST", "/v1/platform/keys", create_key,
     Doc("Create a key, of a role the caller may grant", body=KeyCreate, status=201)),
    ("GET", "/v1/platform/keys", list_keys, Doc("List keys")),
    ("DELETE", "/v1/platform/keys/{key_id}", revoke_key, Doc("Revoke a key")),
    ("GET", "/v1/platform/me", current_key,
     Doc("The caller: its key (id, name, policy, role, team), its roles, and the console "
         "sections, routes and key roles those roles may use")),
    ("GET", "/v1/platform/policies", list_policies, Doc("List policies")),
    ("GET", "/v1/platform/policies/{policy_id}", get_policy, Doc("One policy")),
    ("PUT", "/v1/platform/policies/{policy_id}", put_policy,
     Doc("Create or replace a policy", body=OBJECT)),
    ("GET", "/v1/platform/endpoints", list_endpoints, Doc("The catalog and its health")),
    ("POST", "/v1/platform/reload", reload_configuration,
     Doc("Read the configuration file and the signing keys again, in every gateway "
         "process")),
    ("GET", "/v1/platform/usage", usage, Doc("Usage, grouped", query=(
        Param("group_by", {"type": "string", "enum": list(USAGE_GROUPS)}), *_WINDOW))),
    ("GET", "/v1/platform/traces", list_traces, Doc("Traces, newest first", query=(
        Param("status", {"type": "string", "enum": _STATUSES}),
        Param("limit", {"type": "integer", "minimum": 1, "maximum": MAX_PAGE}),
        Param("cursor"), Param("model"), *_WINDOW))),
    ("GET", "/v1/platform/traces/{trace_id}", get_trace, Doc("One trace")),
    ("GET", "/v1/platform/cache", cache_stats,
     Doc("The answer cache: where it lives, its size, this process's hits and misses")),
    ("DELETE", "/v1/platform/cache", clear_cache,
     Doc("Empty the answer cache, in every gateway process")),
    ("GET", "/v1/platform/admin-events", list_admin_events, Doc(
        "Administrative changes, newest first, each with its place in the evidence chain",
        query=(Param("action"), Param("actor"),
               Param("limit", {"type": "integer", "minimum": 1, "maximum": MAX_PAGE}),
               Param("cursor"), *_WINDOW))),
]  # fmt: skip
"""(method, path, handler, doc): each handler takes the `Platform`, the request, and the
path's `{…}` segment where it has one."""

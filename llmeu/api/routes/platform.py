"""The platform API (DESIGN §6): keys, policies, endpoints, usage, traces. JSON only.

The admin key manages keys and policies and sees every trace and all usage;
any other key sees only its own traces and usage — another key's trace id
answers 404 exactly like one that does not exist. No platform route streams:
`stream` set to true in the query or the body is a 400. While the ledger
database is unavailable, routes that need it answer 503 (`ledger_unavailable`).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any

import msgspec
from msgspec import Meta, Struct

from llmeu.api.http.asgi import Request
from llmeu.api.http.bodies import decode_body
from llmeu.api.http.identifiers import check_finite
from llmeu.api.services.auth import KeyRing
from llmeu.api.services.policies import PolicyBook
from llmeu.api.services.upstreams import Upstreams
from llmeu.calls.record import CallStatus
from llmeu.errors import ConfigError, InvalidRequest, NotFound, PermissionDenied
from llmeu.ledger.api_keys import ApiKey
from llmeu.ledger.notify import Propagation
from llmeu.ledger.store import TRACE_FILTERS, USAGE_GROUPS, Store
from llmeu.ledger.views import decode_cursor
from llmeu.protocol.json_codec import MAX_NESTING, encoder, nesting_depth
from llmeu.routing.config_file import parse_policy
from llmeu.routing.policy import policy_document

_BODY_LIMIT = 64 << 10
_MAX_PAGE = 500
_STATUSES = frozenset(s.value for s in CallStatus)

Broadcast = Callable[[str, str], Awaitable[Propagation | None]]
"""Makes a change this process applied hold in every other gateway process."""


@dataclass(slots=True)
class Platform:
    """What the platform routes work on (`upstreams` is replaced when the configuration is
    reloaded)."""

    keys: KeyRing
    policies: PolicyBook
    store: Store
    upstreams: Upstreams
    broadcast: Broadcast
    reload: Callable[[], Awaitable[None]]


class KeyCreate(Struct, forbid_unknown_fields=True):
    name: Annotated[str, Meta(max_length=200, pattern="^[^\\x00-\\x1f\\x7f]*$")] = ""
    policy_id: str | None = None
    budget_eur: Annotated[float, Meta(ge=0)] | None = None
    rpm_limit: Annotated[int, Meta(ge=1, le=1_000_000_000)] | None = None
    tpm_limit: Annotated[int, Meta(ge=1, le=1_000_000_000)] | None = None
    purpose: Annotated[str, Meta(max_length=500, pattern="^[^\\x00-\\x1f\\x7f]*$")] | None = None
    stream: bool | None = None


@dataclass(frozen=True, slots=True)
class Caller:
    key: ApiKey
    body: bytes


async def _authorize(p: Platform, request: Request, *, admin: bool = False) -> Caller:
    """The calling key, and the request body (read here, for every route, so that
    `stream: true` is refused in the body of any platform call, as in its query)."""
    key = await p.keys.authenticate(request.header(b"authorization"), request.client)
    body = await request.body(_BODY_LIMIT)
    if request.query.get("stream", "").lower() in ("true", "1", "yes") or _streams(body):
        raise InvalidRequest(
            "platform routes never stream; `stream` must not be true", param="stream"
        )
    if admin and not key.is_admin:
        raise PermissionDenied("this route needs the admin key", code="admin_only")
    return Caller(key, body)


def _streams(body: bytes) -> bool:
    if not body.strip():
        return False
    try:
        value = msgspec.json.decode(body)
    except (msgspec.DecodeError, RecursionError):
        return False  # a route that takes a body reports it; others ignore it
    return isinstance(value, dict) and value.get("stream") is True


def _decode(body: bytes, kind: type[Any]) -> Any:
    value = decode_body(lambda raw: msgspec.json.decode(raw or b"{}", type=kind), body)
    if nesting_depth(value) > MAX_NESTING:
        raise InvalidRequest("Invalid JSON body: nested too deeply", code="invalid_json")
    return value


async def _reply(request: Request, body: object, status: int = 200) -> None:
    await request.respond(status, encoder.encode(body))


async def create_key(p: Platform, request: Request) -> None:
    caller = await _authorize(p, request, admin=True)
    spec: KeyCreate = _decode(caller.body, KeyCreate)
    policy_id = spec.policy_id or p.policies.default_policy
    if p.policies.get(policy_id) is None:
        raise InvalidRequest(
            f"unknown policy `{policy_id}`", param="policy_id", code="unknown_policy"
        )
    key, token = await p.keys.create(
        name=spec.name,
        policy_id=policy_id,
        budget_eur=spec.budget_eur,
        rpm_limit=spec.rpm_limit,
        tpm_limit=spec.tpm_limit,
        purpose=spec.purpose,
    )
    await _reply(request, {**key.public(), "key": token}, status=201)


async def list_keys(p: Platform, request: Request) -> None:
    await _authorize(p, request, admin=True)
    await p.keys.load()
    await _reply(request, {"object": "list", "data": [k.public() for k in p.keys.all()]})


async def revoke_key(p: Platform, request: Request, key_id: str) -> None:
    await _authorize(p, request, admin=True)
    if not await p.keys.revoke(key_id):
        raise NotFound(f"no active key `{key_id}`", param="key_id")
    propagation = await p.broadcast("key", key_id)
    await _reply(
        request,
        {"id": key_id, "object": "api_key", "revoked": True,
         "propagation": propagation.as_dict() if propagation is not None else None},
    )  # fmt: skip


async def current_key(p: Platform, request: Request) -> None:
    """The calling key itself (any key): how a console learns its policy and whether it is admin."""
    caller = await _authorize(p, request)
    await _reply(request, caller.key.public())


async def list_policies(p: Platform, request: Request) -> None:
    await _authorize(p, request)
    data = [policy_document(p) for p in p.policies.policies.values()]
    await _reply(
        request, {"object": "list", "default_policy": p.policies.default_policy, "data": data}
    )


async def get_policy(p: Platform, request: Request, policy_id: str) -> None:
    await _authorize(p, request)
    policy = p.policies.get(policy_id)
    if policy is None:
        raise NotFound(f"no policy `{policy_id}`", param="policy_id")
    await _reply(request, policy_document(policy))


async def put_policy(p: Platform, request: Request, policy_id: str) -> None:
    caller = await _authorize(p, request, admin=True)
    body = _decode(caller.body, dict[str, Any])
    if body.setdefault("policy_id", policy_id) != policy_id:
        raise InvalidRequest("policy_id in the body differs from the path", param="policy_id")
    try:
        policy = parse_policy(encoder.encode(body).decode())
    except ConfigError as error:
        raise InvalidRequest(f"invalid policy: {error}", param=error.field) from None
    await p.policies.put(policy, time.time())
    await p.broadcast("policy", policy_id)
    await _reply(request, policy_document(policy))


async def reload_configuration(p: Platform, request: Request) -> None:
    """Read the configuration file again, here and in every other gateway process (admin).
    An invalid file changes nothing: a 400 `invalid_configuration` says why."""
    await _authorize(p, request, admin=True)
    try:
        await p.reload()
    except ConfigError as error:
        raise InvalidRequest(
            f"the configuration file is invalid; the gateway keeps the one it has: {error}",
            param=error.field,
            code="invalid_configuration",
        ) from None
    await _reply(
        request,
        {"object": "reload", "reloaded": True,
         "endpoints": len(p.upstreams.catalog.endpoints), "policies": len(p.policies.policies)},
    )  # fmt: skip


async def list_endpoints(p: Platform, request: Request) -> None:
    """The catalog with each endpoint's health; the admin also sees which keys' calls make up
    a failing streak or opened a circuit (`circuit_keys`: key ids are tenant data)."""
    key = (await _authorize(p, request)).key
    upstreams = p.upstreams
    data = []
    for e in upstreams.catalog.endpoints:
        row: dict[str, Any] = {
            "endpoint_id": e.endpoint_id,
            "provider": e.provider,
            "kind": e.kind.value,
            "model": e.model,
            "model_version": e.model_version,
            "aliases": list(e.aliases),
            "inference_region": e.inference_region,
            "country": e.country,
            "jurisdiction": e.jurisdiction or None,
            "certifications": sorted(c.value for c in e.certifications),
            "seal": e.seal,
            "sovereignty_class": e.sovereignty_class.value,
            "retention": e.retention.text,
            "price_eur_per_mtok": {"input": e.prices.input, "output": e.prices.output},
            "priority": e.priority,
            "capabilities": sorted(c.value for c in e.capabilities),
            "configured": e.endpoint_id not in upstreams.unavailable,
            "unavailable_reason": upstreams.unavailable.get(e.endpoint_id),
            "health": upstreams.health(e),
            "admitted_by": sorted(
                policy_id for policy_id, policy in p.policies.policies.items() if policy.admits(e)
            ),
        }
        if key.is_admin:
            keys = upstreams.health(e, keys=True)
            row["circuit_keys"] = {
                "failing": keys.get("failing_keys", []),
                "opened_by": keys.get("opened_by", []),
            }
        data.append(row)
    await _reply(request, {"object": "list", "data": data})


async def usage(p: Platform, request: Request) -> None:
    key = (await _authorize(p, request)).key
    query = request.query
    group_by = query.get("group_by", "day")
    if group_by not in USAGE_GROUPS:
        raise InvalidRequest(f"group_by must be one of {', '.join(USAGE_GROUPS)}", param="group_by")
    since, until = _time(query, "from"), _time(query, "to")
    scope = _scope(key, query.get("key_id"))
    rows = await p.store.usage(group_by=group_by, since=since, until=until, key_id=scope)
    totals = {
        name: sum(r[name] for r in rows)
        for name in ("requests", "completed", "cancelled", "failed", "rejected", "interrupted",
                     "input_tokens", "output_tokens", "estimated_requests", "cost_eur")
    }  # fmt: skip
    totals["cost_eur"] = round(totals["cost_eur"], 10)
    await _reply(
        request, {"object": "usage", "group_by": group_by, "from": since, "to": until,
                  "data": rows, "totals": totals},
    )  # fmt: skip


async def list_traces(p: Platform, request: Request) -> None:
    key = (await _authorize(p, request)).key
    query = request.query
    try:
        limit = int(query.get("limit", "50"))
    except ValueError:
        raise InvalidRequest("limit must be an integer", param="limit") from None
    if not 1 <= limit <= _MAX_PAGE:
        raise InvalidRequest(f"limit must be between 1 and {_MAX_PAGE}", param="limit")
    cursor = query.get("cursor") or None
    if cursor is not None:
        try:
            decode_cursor(cursor)
        except ValueError:
            raise InvalidRequest("invalid cursor", param="cursor") from None
    filters = {f: query[f] for f in TRACE_FILTERS if query.get(f) and f != "key_id"}
    if filters.get("status", "completed") not in _STATUSES:
        raise InvalidRequest(f"status must be one of {', '.join(sorted(_STATUSES))}",
                             param="status")  # fmt: skip
    page = await p.store.list_traces(
        filters=filters,
        since=_time(query, "from"),
        until=_time(query, "to"),
        limit=limit,
        cursor=cursor,
        key_id=_scope(key, query.get("key_id")),
    )
    await _reply(
        request,
        {"object": "list", "data": page.traces, "next_cursor": page.next_cursor,
         "has_more": page.next_cursor is not None},
    )  # fmt: skip


async def get_trace(p: Platform, request: Request, trace_id: str) -> None:
    await _reply(request, await get_trace_view(p, request, trace_id))


async def get_trace_view(p: Platform, request: Request, trace_id: str) -> dict[str, Any]:
    """The trace the calling key may see: any for the admin, else only its own (404)."""
    key = (await _authorize(p, request)).key
    trace = await p.store.get_trace(trace_id, key_id=None if key.is_admin else key.key_id)
    if trace is None:
        raise NotFound(f"no trace `{trace_id}`", param="trace_id", code="trace_not_found")
    return trace


def _scope(key: ApiKey, requested: str | None) -> str | None:
    """Whose records a key may read: the admin any (or the one asked for), others their own."""
    if key.is_admin:
        return requested or None
    return key.key_id


def _time(query: dict[str, str], name: str) -> float | None:
    value = query.get(name)
    if not value:
        return None
    try:
        return check_finite(float(value), name)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidRequest(
            f"`{name}` must be an ISO-8601 date or time, or seconds since the epoch", param=name
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


PLATFORM_ROUTES: list[tuple[str, str, Callable[..., Awaitable[None]]]] = [
    ("POST", "/v1/platform/keys", create_key),
    ("GET", "/v1/platform/keys", list_keys),
    ("DELETE", "/v1/platform/keys/{key_id}", revoke_key),
    ("GET", "/v1/platform/me", current_key),
    ("GET", "/v1/platform/policies", list_policies),
    ("GET", "/v1/platform/policies/{policy_id}", get_policy),
    ("PUT", "/v1/platform/policies/{policy_id}", put_policy),
    ("GET", "/v1/platform/endpoints", list_endpoints),
    ("POST", "/v1/platform/reload", reload_configuration),
    ("GET", "/v1/platform/usage", usage),
    ("GET", "/v1/platform/traces", list_traces),
    ("GET", "/v1/platform/traces/{trace_id}", get_trace),
]
"""(method, path, handler): each handler takes the `Platform`, the request, and the path's
`{…}` segment where it has one."""

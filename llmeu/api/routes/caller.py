"""Who calls a platform route, and the little HTTP every platform route shares.

The calling key's role is checked against the route in `llmeu.api.routes.access`'s
table, for every platform route, before its handler does anything.

A request with no `Authorization` header and the console's session cookie acts as
the signed-in user (`llmeu.api.routes.session_cookie`), in the widest of their
roles on the route; a Bearer key is checked as before, cookie or not.

The calling key is authenticated and the body read once, for every route, so
that `stream: true` is refused in the body of any platform call as in its
query: no platform route streams. Bodies are JSON, bounded in size and depth;
times in a query are ISO-8601 or seconds since the epoch.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import msgspec

from llmeu.api.http.asgi import Request
from llmeu.api.http.bodies import decode_body
from llmeu.api.http.identifiers import check_finite
from llmeu.api.routes.access import Reach, Role, reach, role_of, widest
from llmeu.api.routes.session_cookie import console_session, session_key
from llmeu.api.services.platform_service import Actor, Platform, Viewer
from llmeu.errors import InvalidRequest
from llmeu.ledger.api_keys import ApiKey
from llmeu.protocol.json_codec import MAX_NESTING, encoder, nesting_depth

_BODY_LIMIT = 64 << 10


@dataclass(frozen=True, slots=True)
class Caller:
    """The calling key, the role it acts in, how far it reaches on this route and whose
    records it reads there (`viewer`), and the request body."""

    key: ApiKey
    role: Role
    reach: Reach
    viewer: Viewer
    body: bytes
    source: str | None = None
    """The client's address, as the server knows it."""
    roles: tuple[Role, ...] = ()
    """Every role the caller holds: a key's one, or a signed-in user's (`role` is the one
    of them acting on this route)."""
    subject: str | None = None
    """The signed-in user's subject at the issuer; None for a key."""

    @property
    def actor(self) -> Actor:
        """Who makes a change with this call (its admin event's actor)."""
        return Actor.of_key(self.key, self.source)


async def authorize(p: Platform, request: Request) -> Caller:
    """The calling key, if its role may call this route (`llmeu.api.routes.access`), and the
    request body (read here, for every route, so that `stream: true` is refused in the body
    of any platform call, as in its query)."""
    signed_in = await console_session(p, request)
    roles: tuple[Role, ...]
    if signed_in is None:
        key = await p.authenticate(request.header(b"authorization"), request.client)
        role = role_of(key.acting_role)
        granted = reach(role, request.method, request.route)
        roles, subject = (role,), None
    else:
        roles = tuple(role_of(r) for r in signed_in.roles)
        role, granted = widest(roles, request.method, request.route)
        team_id = None if p.directory is None else await p.directory.team_of(signed_in)
        key = session_key(signed_in, role, p.policies.default_policy, team_id)
        subject = signed_in.subject
    body = await request.body(_BODY_LIMIT)
    if request.query.get("stream", "").lower() in ("true", "1", "yes") or _streams(body):
        raise InvalidRequest(
            "platform routes never stream; `stream` must not be true", param="stream"
        )
    team_id = key.team_id if granted is Reach.TEAM else None
    viewer = Viewer(key.key_id, every_key=granted is Reach.EVERY, team_id=team_id)
    return Caller(key, role, granted, viewer, body, request.client, roles, subject)


def _streams(body: bytes) -> bool:
    if not body.strip():
        return False
    try:
        value = msgspec.json.decode(body)
    except (msgspec.DecodeError, RecursionError):
        return False  # a route that takes a body reports it; others ignore it
    return isinstance(value, dict) and value.get("stream") is True


def decode_json(body: bytes, kind: type[Any]) -> Any:
    value = decode_body(lambda raw: msgspec.json.decode(raw or b"{}", type=kind), body)
    if nesting_depth(value) > MAX_NESTING:
        raise InvalidRequest("Invalid JSON body: nested too deeply", code="invalid_json")
    return value


async def reply(request: Request, body: object, status: int = 200) -> None:
    await request.respond(status, encoder.encode(body))


def moment(query: dict[str, str], name: str) -> float | None:
    """A time in the query: ISO-8601 (UTC unless it says otherwise) or epoch seconds."""
    value = query.get(name)
    if not value:
        return None
    try:
        return check_finite(float(value), name)
    except ValueError:
        pass
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidRequest(
            f"`{name}` must be an ISO-8601 date or time, or seconds since the epoch", param=name
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()

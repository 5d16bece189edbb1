"""Legal holds and erasure by data subject: the platform routes a DPO works with (admin only).

    POST   /v1/platform/holds              {"key_id": "k…" | null, "reason": "…"}
    GET    /v1/platform/holds              every hold, released ones included
    DELETE /v1/platform/holds/{hold_id}    release it (the record stays)
    DELETE /v1/platform/subjects/{user_id} erase that end user's stored content
    GET    /v1/platform/erasures           every erasure done, by subject digest
    GET    /v1/platform/exports/{name}?from=&to=   an export of `llmeu.api.services.exports`

What they do to the ledger is `llmeu.ledger.retention`'s. Each answer names the
admin key that acted, and the ledger keeps it: a hold or an erasure is itself
on record.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Annotated

from msgspec import Meta, Struct

from llmeu.api.http.asgi import Request
from llmeu.api.routes.platform import Platform
from llmeu.api.routes.platform import _authorize as authorize
from llmeu.api.routes.platform import _decode as decode_json
from llmeu.api.routes.platform import _reply as reply
from llmeu.api.routes.platform import _time as moment
from llmeu.api.services.exports import EXPORTS, Period, render
from llmeu.errors import InvalidRequest, NotFound
from llmeu.ledger.retention import Retention, calls_between

_Text = Annotated[str, Meta(min_length=1, max_length=2000, pattern="^[^\\x00-\\x1f\\x7f]*$")]


class HoldCreate(Struct, forbid_unknown_fields=True):
    reason: _Text
    key_id: Annotated[str, Meta(max_length=200, pattern="^[^\\x00-\\x1f\\x7f]*$")] | None = None
    stream: bool | None = None


async def place_hold(p: Platform, request: Request) -> None:
    caller = await authorize(p, request, admin=True)
    spec: HoldCreate = decode_json(caller.body, HoldCreate)
    if spec.key_id is not None and await p.store.get_key(spec.key_id) is None:
        raise NotFound(f"no key `{spec.key_id}`", param="key_id")
    hold = await Retention(p.store.db).place_hold(
        spec.key_id, spec.reason, caller.key.key_id, time.time()
    )
    await reply(request, hold.public(), status=201)


async def list_holds(p: Platform, request: Request) -> None:
    await authorize(p, request, admin=True)
    holds = await Retention(p.store.db).holds()
    await reply(request, {"object": "list", "data": [h.public() for h in holds]})


async def release_hold(p: Platform, request: Request, hold_id: str) -> None:
    caller = await authorize(p, request, admin=True)
    hold = await Retention(p.store.db).release_hold(hold_id, caller.key.key_id, time.time())
    if hold is None:
        raise NotFound(f"no active legal hold `{hold_id}`", param="hold_id")
    await reply(request, hold.public())


async def erase_subject(p: Platform, request: Request, user_id: str) -> None:
    """Erase the stored content of every call made for this end user; metadata stays."""
    caller = await authorize(p, request, admin=True)
    subject = user_id
    if len(subject) > 256:
        raise InvalidRequest("a user id has at most 256 characters", param="user_id")
    erasure = await Retention(p.store.db).erase_subject(subject, caller.key.key_id, time.time())
    await reply(request, erasure.public())


async def list_erasures(p: Platform, request: Request) -> None:
    await authorize(p, request, admin=True)
    erasures = await Retention(p.store.db).erasures()
    await reply(request, {"object": "list", "data": [e.public() for e in erasures]})


async def export(p: Platform, request: Request, name: str) -> None:
    """One export for [`from`, `to`) (default: the last 30 days up to now)."""
    await authorize(p, request, admin=True)
    if name not in EXPORTS:
        raise NotFound(f"no export `{name}` (exports: {', '.join(EXPORTS)})", param="name")
    now = time.time()
    until = moment(request.query, "to") or now
    since = moment(request.query, "from")
    period = Period(until - 30 * 86400 if since is None else since, until)
    if period.since >= period.until:
        raise InvalidRequest("`from` must be before `to`", param="from")
    calls = await calls_between(p.store.db, period.since, period.until)
    keys = await p.store.list_keys()
    content_type, text = render(name, calls, keys, p.upstreams.catalog, period)
    await request.respond(200, text.encode(), [(b"content-type", content_type.encode())])


COMPLIANCE_ROUTES: list[tuple[str, str, Callable[..., Awaitable[None]]]] = [
    ("POST", "/v1/platform/holds", place_hold),
    ("GET", "/v1/platform/holds", list_holds),
    ("DELETE", "/v1/platform/holds/{hold_id}", release_hold),
    ("DELETE", "/v1/platform/subjects/{user_id}", erase_subject),
    ("GET", "/v1/platform/erasures", list_erasures),
    ("GET", "/v1/platform/exports/{name}", export),
]

"""Legal holds and erasure by data subject: the platform routes a DPO works with (`dpo` and
`admin`; an `auditor` reads them, `llmeu.api.routes.access`).

    POST   /v1/platform/holds              {"key_id": "k…" | null, "reason": "…"}
    GET    /v1/platform/holds              every hold, released ones included
    DELETE /v1/platform/holds/{hold_id}    release it (the record stays)
    DELETE /v1/platform/subjects/{user_id} erase that end user's stored content
    GET    /v1/platform/erasures           every erasure done, by subject digest
    GET    /v1/platform/exports/{name}?from=&to=   an export of `llmeu.api.services.exports`

What each does is `llmeu.api.services.compliance_service`'s; here is the HTTP.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

from msgspec import Meta, Struct

from llmeu.api.http.asgi import Request
from llmeu.api.http.route import TEXT, Doc, Param
from llmeu.api.routes.caller import authorize, decode_json, moment, reply
from llmeu.api.services.compliance_service import Compliance

_Text = Annotated[str, Meta(min_length=1, max_length=2000, pattern="^[^\\x00-\\x1f\\x7f]*$")]


class HoldCreate(Struct, forbid_unknown_fields=True):
    reason: _Text
    key_id: Annotated[str, Meta(max_length=200, pattern="^[^\\x00-\\x1f\\x7f]*$")] | None = None
    stream: bool | None = None


async def place_hold(c: Compliance, request: Request) -> None:
    caller = await authorize(c.platform, request)
    spec: HoldCreate = decode_json(caller.body, HoldCreate)
    await reply(request, await c.place_hold(spec.key_id, spec.reason, caller.actor), 201)


async def list_holds(c: Compliance, request: Request) -> None:
    await authorize(c.platform, request)
    await reply(request, {"object": "list", "data": await c.holds()})


async def release_hold(c: Compliance, request: Request, hold_id: str) -> None:
    caller = await authorize(c.platform, request)
    await reply(request, await c.release_hold(hold_id, caller.actor))


async def erase_subject(c: Compliance, request: Request, user_id: str) -> None:
    """Erase the stored content of every call made for this end user; metadata stays."""
    caller = await authorize(c.platform, request)
    await reply(request, await c.erase_subject(user_id, caller.actor))


async def list_erasures(c: Compliance, request: Request) -> None:
    await authorize(c.platform, request)
    await reply(request, {"object": "list", "data": await c.erasures()})


async def export(c: Compliance, request: Request, name: str) -> None:
    """One export for [`from`, `to`) (default: the last 30 days up to now)."""
    await authorize(c.platform, request)
    made = await c.export(name, moment(request.query, "from"), moment(request.query, "to"))
    await request.respond(200, made.text.encode(), [(b"content-type", made.content_type.encode())])


_EXPORT_TYPES = (("text/markdown", TEXT), ("text/csv", TEXT), ("application/x-ndjson", TEXT))

COMPLIANCE_ROUTES: list[tuple[str, str, Callable[..., Awaitable[None]], Doc]] = [
    ("POST", "/v1/platform/holds", place_hold, Doc(
        "Place a legal hold on one key's traces or on all", body=HoldCreate, status=201)),
    ("GET", "/v1/platform/holds", list_holds, Doc("Legal holds, released ones included")),
    ("DELETE", "/v1/platform/holds/{hold_id}", release_hold, Doc("Release a legal hold")),
    ("DELETE", "/v1/platform/subjects/{user_id}", erase_subject, Doc(
        "Erase the stored content of one end user's calls; metadata stays")),
    ("GET", "/v1/platform/erasures", list_erasures,
     Doc("Erasures by data subject, as recorded")),
    ("GET", "/v1/platform/exports/{name}", export, Doc(
        "Records of processing, subprocessors, call metadata or admin events for a period",
        query=(Param("from"), Param("to")), media=_EXPORT_TYPES)),
]  # fmt: skip

"""The Responses API's stored responses: `GET`/`DELETE /v1/responses/{id}` and
`GET /v1/responses/{id}/input_items`.

A stored response is its key's alone: another key's id is as unknown (404) as a
missing or expired one. What is kept, and for how long, is decided when the
response is created (`llmeu.api.routes.responses`).
"""

from __future__ import annotations

from typing import Any

from llmeu.api.call.door import Calls
from llmeu.api.http.asgi import Request
from llmeu.api.services.response_store import Kept, ResponseStore, keeps_nothing
from llmeu.errors import InvalidRequest, NotFound
from llmeu.protocol.json_codec import encoder


async def _stored_response(
    calls: Calls, stored: ResponseStore, request: Request, ident: str
) -> tuple[Kept, str]:
    key = await calls.context.keys.authenticate(request.header(b"authorization"))
    found = await stored.get(ident, key.key_id)
    if found is None:
        why = keeps_nothing(calls.context.policies.get(key.policy_id))
        raise NotFound(
            f"no stored response {ident!r}" + (f"; {why}" if why else ""),
            param="response_id",
            code="response_not_found",
        )
    return found, key.key_id


async def handle_get_response(
    calls: Calls, stored: ResponseStore, request: Request, ident: str
) -> None:
    if request.query.get("stream", "").lower() in ("true", "1"):
        raise InvalidRequest("a stored response is not streamed again", param="stream")
    found, _ = await _stored_response(calls, stored, request, ident)
    await request.respond(200, found.response)


async def handle_delete_response(
    calls: Calls, stored: ResponseStore, request: Request, ident: str
) -> None:
    found, key_id = await _stored_response(calls, stored, request, ident)
    await stored.delete(found.response_id, key_id)
    body = {"id": found.response_id, "object": "response", "deleted": True}
    await request.respond(200, encoder.encode(body))


async def handle_input_items(
    calls: Calls, stored: ResponseStore, request: Request, ident: str
) -> None:
    """The input items of a stored response, newest first unless `order=asc`; `limit`
    (1 to 100, default 20) and `after` (an item id) page through them."""
    query = request.query
    order = query.get("order", "desc")
    if order not in ("asc", "desc"):
        raise InvalidRequest("order is asc or desc", param="order")
    limit_text = query.get("limit", "20")
    if not limit_text.isdigit() or not 1 <= int(limit_text) <= 100:
        raise InvalidRequest("limit is a whole number from 1 to 100", param="limit")
    found, _ = await _stored_response(calls, stored, request, ident)
    items: list[dict[str, Any]] = list(found.input_items)
    if order == "desc":
        items.reverse()
    after = query.get("after")
    if after is not None:
        ids = [item.get("id") for item in items]
        if after not in ids:
            raise InvalidRequest(f"no input item {after!r} in this response", param="after")
        items = items[ids.index(after) + 1 :]
    page = items[: int(limit_text)]
    body = {
        "object": "list",
        "data": page,
        "first_id": page[0]["id"] if page else None,
        "last_id": page[-1]["id"] if page else None,
        "has_more": len(items) > len(page),
    }
    await request.respond(200, encoder.encode(body))

"""SCIM 2.0 (RFC 7644) for the organisation's identity provider: `/scim/v2/…`.

    GET|POST              /scim/v2/Users          list (filter, startIndex, count) | create
    GET|PUT|PATCH|DELETE  /scim/v2/Users/{id}
    GET|POST              /scim/v2/Groups
    GET|PUT|PATCH|DELETE  /scim/v2/Groups/{id}
    GET  /scim/v2/ServiceProviderConfig, /scim/v2/ResourceTypes, /scim/v2/Schemas

Bearer-token protected: the token is the value of the environment variable
`--scim-token-env` names, compared in constant time; a wrong or missing one is
a 401. Without `--scim-token-env` every route answers 404
`scim_not_configured`. Bodies and answers are `application/scim+json`; errors
are SCIM's own
(`urn:ietf:params:scim:api:messages:2.0:Error`, `status` a string, `scimType`
when SCIM names the fault). What each route does is
`llmeu.api.services.scim_users`' and `scim_groups`'.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any

import msgspec

from llmeu.api.http.asgi import Request
from llmeu.api.http.bodies import decode_body
from llmeu.api.http.error_responses import Routing, as_api_error
from llmeu.api.http.route import OBJECT, Doc, Param
from llmeu.api.routes.session_cookie import own_origin
from llmeu.api.services import scim_groups, scim_users
from llmeu.api.services.platform_service import Actor, Platform
from llmeu.errors import (
    ApiError,
    AuthenticationFailed,
    DatabaseUnavailable,
    InvalidRequest,
    NotFound,
)
from llmeu.protocol import scim_discovery
from llmeu.protocol.json_codec import MAX_NESTING, encoder, nesting_depth
from llmeu.protocol.scim_wire import ERROR, MEDIA_TYPE, PATCH, SCIM_TYPES, paging

_HEADERS = [(b"content-type", MEDIA_TYPE.encode())]
_BODY_LIMIT = 4 << 20
SCIM_ACTOR = "scim"


class ScimErrors:
    """SCIM's error body (RFC 7644 §3.12), for what the router itself answers (a 405)."""

    def status(self, error: ApiError) -> int:
        return error.status

    def body(self, error: ApiError, routing: Routing | None) -> bytes:
        return error_body(error)


SCIM_ERRORS = ScimErrors()


def error_body(error: ApiError) -> bytes:
    body: dict[str, Any] = {"schemas": [ERROR], "status": str(error.status),
                            "detail": error.message}  # fmt: skip
    if error.code in SCIM_TYPES:
        body["scimType"] = error.code
    return encoder.encode(body)


Handler = Callable[..., Awaitable[None]]


def scim(handler: Handler) -> Handler:
    """The route, once the caller's token is checked; its errors in SCIM's shape and media
    type."""

    @wraps(handler)
    async def guarded(p: Platform, request: Request, *values: str) -> None:
        try:
            _check_token(p, request)
            await handler(p, request, *values)
        except (ApiError, DatabaseUnavailable) as raised:
            error = as_api_error(raised)
            headers = list(_HEADERS)
            if isinstance(error, AuthenticationFailed):
                headers.append((b"www-authenticate", b'Bearer realm="scim"'))
            await request.respond(error.status, error_body(error), headers)

    return guarded


def _check_token(p: Platform, request: Request) -> None:
    if p.scim_token is None:
        raise NotFound("SCIM is not set up on this gateway (`--scim-token-env`)",
                       code="scim_not_configured")  # fmt: skip
    scheme, _, token = (request.header(b"authorization") or "").partition(" ")
    # Digests of equal length: the comparison tells nothing of the token's length either.
    sent = hashlib.sha256(token.strip().encode()).digest()
    if scheme.lower() != "bearer" or not hmac.compare_digest(
        sent, hashlib.sha256(p.scim_token.encode()).digest()
    ):
        raise AuthenticationFailed("a SCIM request needs the SCIM bearer token",
                                   code="invalid_scim_token")  # fmt: skip


async def _json(request: Request) -> dict[str, Any]:
    body = await request.body(_BODY_LIMIT)
    try:
        value = decode_body(lambda raw: msgspec.json.decode(raw or b"{}"), body)
    except InvalidRequest as error:
        raise InvalidRequest(error.message, code="invalidSyntax") from None
    if not isinstance(value, dict) or nesting_depth(value) > MAX_NESTING:
        raise InvalidRequest("the body is a JSON object, not nested too deeply",
                             code="invalidSyntax")  # fmt: skip
    return value


async def _operations(request: Request) -> list[Any]:
    body = await _json(request)
    fields = {k.casefold(): v for k, v in body.items()}
    schemas = fields.get("schemas")
    if isinstance(schemas, list) and schemas and PATCH not in schemas:
        raise InvalidRequest(f"a PATCH body is of schema `{PATCH}`", code="invalidSyntax")
    operations = fields.get("operations")
    if not isinstance(operations, list):
        raise InvalidRequest("a PATCH body lists its `Operations`", code="invalidSyntax")
    return operations


def _base(request: Request) -> str:
    return own_origin(request, None)


def _by(request: Request) -> Actor:
    return Actor(SCIM_ACTOR, None, request.client)


async def _send(request: Request, body: object, status: int = 200) -> None:
    await request.respond(status, encoder.encode(body), _HEADERS)


@dataclass(frozen=True)
class _Service:
    """What a SCIM resource type's routes call: `scim_users`' or `scim_groups`' functions."""

    search: Callable[[Platform, dict[str, str], int, int, str], Awaitable[dict[str, Any]]]
    create: Callable[[Platform, dict[str, Any], str, Actor], Awaitable[dict[str, Any]]]
    read: Callable[[Platform, str, str], Awaitable[dict[str, Any]]]
    replace: Callable[[Platform, str, dict[str, Any], str, Actor], Awaitable[dict[str, Any]]]
    patch: Callable[[Platform, str, list[Any], str, Actor], Awaitable[dict[str, Any]]]
    remove: Callable[[Platform, str, Actor], Awaitable[None]]


_USERS = _Service(scim_users.search, scim_users.create, scim_users.read,
                  scim_users.replace_user, scim_users.patch, scim_users.remove)  # fmt: skip
_GROUPS = _Service(scim_groups.search, scim_groups.create, scim_groups.read,
                   scim_groups.replace_group, scim_groups.patch, scim_groups.remove)  # fmt: skip


Route = tuple[str, str, Handler, Doc]


def _resource_routes(path: str, service: _Service, docs: tuple[Doc, ...]) -> list[Route]:
    """A resource type's six routes: list and create on `path`, then get, replace, change
    and delete on `path/{id}` (`path` names the id's parameter last), documented by `docs`
    in that order."""

    @scim
    async def listing(p: Platform, request: Request) -> None:
        start, count = paging(request.query)
        await _send(request, await service.search(p, request.query, start, count,
                                                  _base(request)))  # fmt: skip

    @scim
    async def create(p: Platform, request: Request) -> None:
        made = await service.create(p, await _json(request), _base(request), _by(request))
        await _send(request, made, 201)

    @scim
    async def get(p: Platform, request: Request, resource_id: str) -> None:
        await _send(request, await service.read(p, resource_id, _base(request)))

    @scim
    async def put(p: Platform, request: Request, resource_id: str) -> None:
        body = await _json(request)
        await _send(request, await service.replace(p, resource_id, body, _base(request),
                                                   _by(request)))  # fmt: skip

    @scim
    async def patch(p: Platform, request: Request, resource_id: str) -> None:
        operations = await _operations(request)
        await _send(request, await service.patch(p, resource_id, operations, _base(request),
                                                 _by(request)))  # fmt: skip

    @scim
    async def delete(p: Platform, request: Request, resource_id: str) -> None:
        await service.remove(p, resource_id, _by(request))
        await request.respond(204, b"", [])

    collection, _, _ = path.rpartition("/")
    methods = [("GET", collection, listing), ("POST", collection, create), ("GET", path, get),
               ("PUT", path, put), ("PATCH", path, patch), ("DELETE", path, delete)]  # fmt: skip
    return [(*method, doc) for method, doc in zip(methods, docs, strict=True)]


@scim
async def service_provider_config(p: Platform, request: Request) -> None:
    await _send(request, scim_discovery.service_provider_config(_base(request)))


@scim
async def resource_types(p: Platform, request: Request) -> None:
    await _send(request, scim_discovery.resource_types(_base(request)))


@scim
async def schemas(p: Platform, request: Request) -> None:
    await _send(request, scim_discovery.schemas(_base(request)))


_LIST = (Param("filter"), Param("startIndex", {"type": "integer"}),
         Param("count", {"type": "integer"}), Param("attributes"),
         Param("excludedAttributes"))  # fmt: skip


ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["schemas", "status", "detail"],
    "properties": {
        "schemas": {"type": "array", "items": {"const": ERROR}},
        "status": {"type": "string"},
        "detail": {"type": "string"},
        "scimType": {"type": "string"},
    },
}


def _doc(
    summary: str, status: int = 200, *, body: bool = False, query: tuple[Param, ...] = ()
) -> Doc:
    return Doc(summary, answer_type=MEDIA_TYPE, status=status, body=OBJECT if body else None,
               query=query, error_schema=ERROR_SCHEMA, error_type=MEDIA_TYPE)  # fmt: skip


SCIM_ROUTES: list[Route] = [
    *_resource_routes("/scim/v2/Users/{user_id}", _USERS, (
        _doc("SCIM: users, filtered and paged", query=_LIST),
        _doc("SCIM: provision a user", 201, body=True),
        _doc("SCIM: one user"),
        _doc("SCIM: replace a user", body=True),
        _doc("SCIM: change a user; `active: false` deprovisions them", body=True),
        _doc("SCIM: delete and deprovision a user", 204),
    )),
    *_resource_routes("/scim/v2/Groups/{group_id}", _GROUPS, (
        _doc("SCIM: groups, filtered and paged", query=_LIST),
        _doc("SCIM: create a group", 201, body=True),
        _doc("SCIM: one group"),
        _doc("SCIM: replace a group", body=True),
        _doc("SCIM: change a group's name or members", body=True),
        _doc("SCIM: delete a group", 204),
    )),
    ("GET", "/scim/v2/ServiceProviderConfig", service_provider_config,
     _doc("SCIM: what this service provider supports")),
    ("GET", "/scim/v2/ResourceTypes", resource_types, _doc("SCIM: User and Group")),
    ("GET", "/scim/v2/Schemas", schemas, _doc("SCIM: the User and Group schemas")),
]  # fmt: skip

"""The console's users on the platform API, and the roles an admin grants them.

    GET /v1/platform/users                      every user of the directory
    PUT /v1/platform/users/{user_id}/role       {"role": "auditor"} (null: none)

A caller grants, or takes back, only a role it may grant a key of
(`llmeu.api.routes.access.may_grant`): an operator grants `operator` and
`member`, never `admin`. What each route does is
`llmeu.api.services.users_service`'s.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from msgspec import Struct

from llmeu.api.http.asgi import Request
from llmeu.api.http.route import Doc
from llmeu.api.routes.access import Role, may_grant, role_of
from llmeu.api.routes.caller import authorize, decode_json, reply
from llmeu.api.services import users_service
from llmeu.api.services.platform_service import Platform
from llmeu.errors import PermissionDenied


class RoleGrant(Struct, forbid_unknown_fields=True):
    role: Role | None
    stream: bool | None = None


async def list_users(p: Platform, request: Request) -> None:
    await authorize(p, request)
    await reply(request, {"object": "list", "data": await users_service.users(p)})


async def put_role(p: Platform, request: Request, user_id: str) -> None:
    caller = await authorize(p, request)
    spec: RoleGrant = decode_json(caller.body, RoleGrant)
    found = await users_service.user(p, user_id)
    previous = None if found.role is None else role_of(found.role)
    for changed in (previous, spec.role):
        if changed is not None and not may_grant(caller.role, changed):
            raise PermissionDenied(
                f"the `{caller.role}` role may not grant or take back the role `{changed}`: "
                "it would reach further than the role itself",
                param="role",
                code="role_forbidden",
            )
    granted = None if spec.role is None else spec.role.value
    await reply(request, await users_service.grant(p, found, granted, caller.actor))


USER_ROUTES: list[tuple[str, str, Callable[..., Awaitable[None]], Doc]] = [
    ("GET", "/v1/platform/users", list_users,
     Doc("The console's users: provisioned by SCIM or signed in")),
    ("PUT", "/v1/platform/users/{user_id}/role", put_role,
     Doc("Grant a user a role, added to their groups' (null: take it back)", body=RoleGrant)),
]  # fmt: skip

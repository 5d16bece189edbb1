"""Teams on the platform API: a team's policy, monthly budget, rate limits, members, keys.

    POST   /v1/platform/teams              {"name", "policy_id", "budget_eur_month",
                                            "rpm_limit", "tpm_limit", "members"}
    GET    /v1/platform/teams              every team (a team admin: its own)
    GET    /v1/platform/teams/{team_id}    one team, with its active keys and its spend
                                           this month (`spent_eur_month`, `remaining_eur_month`)
    PATCH  /v1/platform/teams/{team_id}    change any of those fields
    DELETE /v1/platform/teams/{team_id}    a team without active keys

Keys join a team when they are created in it (`team_id` in `POST
/v1/platform/keys`). What each route does is `llmeu.api.services.teams_service`'s.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

from msgspec import UNSET, Meta, Struct, UnsetType

from llmeu.api.http.asgi import Request
from llmeu.api.http.route import Doc
from llmeu.api.routes.caller import authorize, decode_json, reply
from llmeu.api.services import teams_service
from llmeu.api.services.platform_service import Platform
from llmeu.api.services.teams_service import LIMITS, TeamChange, TeamSpec

_Name = Annotated[str, Meta(min_length=1, max_length=200, pattern="^[^\\x00-\\x1f\\x7f]*$")]
_Members = Annotated[list[_Name], Meta(max_length=1000)]
_Budget = Annotated[float, Meta(ge=0)]
_PerMinute = Annotated[int, Meta(ge=1, le=1_000_000_000)]


class TeamCreate(Struct, forbid_unknown_fields=True):
    name: _Name
    policy_id: str | None = None
    budget_eur_month: _Budget | None = None
    rpm_limit: _PerMinute | None = None
    tpm_limit: _PerMinute | None = None
    members: _Members = []
    stream: bool | None = None


class TeamPatch(Struct, forbid_unknown_fields=True):
    name: _Name | UnsetType = UNSET
    policy_id: str | UnsetType = UNSET
    budget_eur_month: _Budget | UnsetType | None = UNSET
    rpm_limit: _PerMinute | UnsetType | None = UNSET
    tpm_limit: _PerMinute | UnsetType | None = UNSET
    members: _Members | UnsetType = UNSET
    stream: bool | None = None


async def create_team(p: Platform, request: Request) -> None:
    caller = await authorize(p, request)
    body: TeamCreate = decode_json(caller.body, TeamCreate)
    spec = TeamSpec(body.name, body.policy_id, tuple(body.members), body.budget_eur_month,
                    body.rpm_limit, body.tpm_limit)  # fmt: skip
    await reply(request, await teams_service.create_team(p, spec, caller.actor), status=201)


async def list_teams(p: Platform, request: Request) -> None:
    caller = await authorize(p, request)
    await reply(request, {"object": "list", "data": await teams_service.teams(p, caller.viewer)})


async def get_team(p: Platform, request: Request, team_id: str) -> None:
    caller = await authorize(p, request)
    await reply(request, await teams_service.team(p, caller.viewer, team_id))


async def patch_team(p: Platform, request: Request, team_id: str) -> None:
    caller = await authorize(p, request)
    spec: TeamPatch = decode_json(caller.body, TeamPatch)
    limits = {name: getattr(spec, name) for name in LIMITS}
    change = TeamChange(
        name=None if spec.name is UNSET else spec.name,
        policy_id=None if spec.policy_id is UNSET else spec.policy_id,
        members=None if spec.members is UNSET else tuple(spec.members),
        cleared=frozenset(name for name, value in limits.items() if value is None),
        **{name: value for name, value in limits.items() if value is not UNSET},
    )
    await reply(request, await teams_service.change_team(p, team_id, change, caller.actor))


async def delete_team(p: Platform, request: Request, team_id: str) -> None:
    caller = await authorize(p, request)
    await reply(request, await teams_service.remove_team(p, team_id, caller.actor))


TEAM_ROUTES: list[tuple[str, str, Callable[..., Awaitable[None]], Doc]] = [
    ("POST", "/v1/platform/teams", create_team,
     Doc("Create a team: its policy, monthly budget, rate limits and members", body=TeamCreate,
         status=201)),
    ("GET", "/v1/platform/teams", list_teams, Doc("Teams (a team admin: its own)")),
    ("GET", "/v1/platform/teams/{team_id}", get_team,
     Doc("One team, with its active keys and its spend this month")),
    ("PATCH", "/v1/platform/teams/{team_id}", patch_team,
     Doc("Change a team; its keys' policies stay at least as strict", body=TeamPatch)),
    ("DELETE", "/v1/platform/teams/{team_id}", delete_team,
     Doc("Delete a team without active keys")),
]  # fmt: skip

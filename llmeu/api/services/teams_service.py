"""Teams as the platform API offers them: create, read, change, delete (design §6).

A team has a name, a policy, a monthly budget in EUR and members; its keys are
the keys created in it. Every key of a team has a policy at least as strict as
the team's: checked when a key is created in it and when the team's policy is
changed (a change its keys' policies would be wider than is refused, naming
the first such key). A team with active keys cannot be deleted. Who may call
which route is `llmeu.api.routes.access`'s; a `team_admin` reads only its team.
Each change is an admin event (`team.create`, `team.update`, `team.delete`: the
team's public view before and after, `llmeu.api.services.admin_log`).
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, replace
from typing import Any

from llmeu.api.services.platform_service import Actor, Platform, Viewer, within_team
from llmeu.errors import InvalidRequest, NotFound
from llmeu.ledger.api_keys import ApiKey
from llmeu.ledger.teams import Team, delete_team, get_team, insert_team, list_teams, update_team


@dataclass(frozen=True, slots=True)
class TeamChange:
    """What a PATCH changes: None leaves a field as it is (`budget_eur_month` is cleared
    with `clear_budget`)."""

    name: str | None = None
    policy_id: str | None = None
    budget_eur_month: float | None = None
    clear_budget: bool = False
    members: tuple[str, ...] | None = None


async def create_team(
    p: Platform,
    name: str,
    policy_id: str | None,
    budget: float | None,
    members: tuple[str, ...],
    by: Actor,
) -> dict[str, Any]:
    chosen = policy_id or p.policies.default_policy
    _known_policy(p, chosen)
    now = time.time()
    team = Team(f"team_{secrets.token_hex(6)}", name, chosen, budget, members, now, now)
    await insert_team(p.store.db, team)
    made = team.public([])
    await p.admin_log.record(by, "team.create", team.team_id, after=made)
    return made


async def teams(p: Platform, caller: Viewer) -> list[dict[str, Any]]:
    """Every team, or the caller's own (a team admin's)."""
    listed = await list_teams(p.store.db)
    return [await _public(p, t) for t in listed if _sees(caller, t)]


async def team(p: Platform, caller: Viewer, team_id: str) -> dict[str, Any]:
    found = await get_team(p.store.db, team_id)
    if found is None or not _sees(caller, found):
        raise NotFound(f"no team `{team_id}`", param="team_id")
    return await _public(p, found)


async def change_team(p: Platform, team_id: str, change: TeamChange, by: Actor) -> dict[str, Any]:
    found = await get_team(p.store.db, team_id)
    if found is None:
        raise NotFound(f"no team `{team_id}`", param="team_id")
    budget = change.budget_eur_month
    if budget is None and not change.clear_budget:
        budget = found.budget_eur_month
    changed = replace(
        found,
        name=change.name if change.name is not None else found.name,
        policy_id=change.policy_id or found.policy_id,
        budget_eur_month=budget,
        members=change.members if change.members is not None else found.members,
        updated_at=time.time(),
    )
    if changed.policy_id != found.policy_id:
        _known_policy(p, changed.policy_id)
        for key in await _keys(p, team_id):
            policy = p.policies.get(key.policy_id)
            if policy is not None:
                within_team(p.policies, changed, policy)
    before = await _public(p, found)
    if not await update_team(p.store.db, changed):
        raise NotFound(f"no team `{team_id}`", param="team_id")
    after = await _public(p, changed)
    await p.admin_log.record(by, "team.update", team_id, before=before, after=after)
    return after


async def remove_team(p: Platform, team_id: str, by: Actor) -> dict[str, Any]:
    active = [k.key_id for k in await _keys(p, team_id)]
    if active:
        raise InvalidRequest(
            f"team `{team_id}` still has active keys ({', '.join(active)}): revoke them first",
            param="team_id",
            code="team_has_keys",
        )
    found = await get_team(p.store.db, team_id)
    if found is None or not await delete_team(p.store.db, team_id):
        raise NotFound(f"no team `{team_id}`", param="team_id")
    await p.admin_log.record(by, "team.delete", team_id, before=found.public([]))
    return {"id": team_id, "object": "team", "deleted": True}


def _sees(caller: Viewer, found: Team) -> bool:
    return caller.every_key or caller.team_id == found.team_id


def _known_policy(p: Platform, policy_id: str) -> None:
    if p.policies.get(policy_id) is None:
        raise InvalidRequest(
            f"unknown policy `{policy_id}`", param="policy_id", code="unknown_policy"
        )


async def _keys(p: Platform, team_id: str) -> list[ApiKey]:
    """The team's active keys."""
    keys = await p.store.list_keys()
    return [k for k in keys if k.team_id == team_id and k.revoked_at is None]


async def _public(p: Platform, found: Team) -> dict[str, Any]:
    return found.public([k.key_id for k in await _keys(p, found.team_id)])

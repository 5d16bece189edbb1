"""Teams as the platform API offers them: create, read, change, delete (design §6).

A team has a name, a policy, a monthly budget in EUR, rate limits and members;
its keys are the keys created in it. Its budget and rate limits hold for all
its keys' calls together (`llmeu.api.services.team_quotas`); a team is shown
with what its keys' calls cost this month and what is left of its budget.
Every key of a team has a policy at least as strict as the team's
(`llmeu.api.services.team_rules`): a change of the team's policy its keys'
would be wider than is refused. A team with active keys cannot be deleted. Who may call
which route is `llmeu.api.routes.access`'s; a `team_admin` reads only its team.
Each change is an admin event (`team.create`, `team.update`, `team.delete`: the
team's public view before and after, `llmeu.api.services.admin_log`).
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, replace
from typing import Any

from llmeu.api.services.platform_service import Actor, Platform, Viewer
from llmeu.api.services.team_rules import within_team
from llmeu.errors import InvalidRequest, NotFound
from llmeu.ledger.api_keys import ApiKey
from llmeu.ledger.teams import (
    Team,
    delete_team,
    get_team,
    insert_team,
    list_teams,
    spend_by_team,
    update_team,
)
from llmeu.limits.limiter import calendar_month

LIMITS = ("budget_eur_month", "rpm_limit", "tpm_limit")
"""A team's limits: each is None for none, and a PATCH may clear it."""


@dataclass(frozen=True, slots=True)
class TeamSpec:
    """A team to create: its name, policy (None: the default), members and limits."""

    name: str
    policy_id: str | None = None
    members: tuple[str, ...] = ()
    budget_eur_month: float | None = None
    rpm_limit: int | None = None
    tpm_limit: int | None = None


@dataclass(frozen=True, slots=True)
class TeamChange:
    """What a PATCH changes: None leaves a field as it is; the limits named in `cleared`
    (of `LIMITS`) are removed."""

    name: str | None = None
    policy_id: str | None = None
    members: tuple[str, ...] | None = None
    budget_eur_month: float | None = None
    rpm_limit: int | None = None
    tpm_limit: int | None = None
    cleared: frozenset[str] = frozenset()


async def create_team(p: Platform, spec: TeamSpec, by: Actor) -> dict[str, Any]:
    chosen = spec.policy_id or p.policies.default_policy
    _known_policy(p, chosen)
    now = time.time()
    team = Team(f"team_{secrets.token_hex(6)}", spec.name, chosen, spec.budget_eur_month,
                spec.members, now, now, spec.rpm_limit, spec.tpm_limit)  # fmt: skip
    await insert_team(p.store.db, team)
    await _changed(p, team)
    made = _view(team, [], 0.0)
    await p.admin_log.record(by, "team.create", team.team_id, after=made)
    return made


async def teams(p: Platform, caller: Viewer) -> list[dict[str, Any]]:
    """Every team, or the caller's own (a team admin's)."""
    listed = [t for t in await list_teams(p.store.db) if _sees(caller, t)]
    keys = await p.store.list_keys()
    spent = await spend_by_team(p.store.db, calendar_month(time.time())[1])
    return [_view(t, _active(keys, t.team_id), spent.get(t.team_id, 0.0)) for t in listed]


async def team(p: Platform, caller: Viewer, team_id: str) -> dict[str, Any]:
    found = await get_team(p.store.db, team_id)
    if found is None or not _sees(caller, found):
        raise NotFound(f"no team `{team_id}`", param="team_id")
    return await _public(p, found)


async def change_team(p: Platform, team_id: str, change: TeamChange, by: Actor) -> dict[str, Any]:
    found = await get_team(p.store.db, team_id)
    if found is None:
        raise NotFound(f"no team `{team_id}`", param="team_id")
    limits: dict[str, Any] = {name: getattr(found, name) for name in LIMITS}
    limits.update(dict.fromkeys(change.cleared))
    limits.update((n, getattr(change, n)) for n in LIMITS if getattr(change, n) is not None)
    changed = replace(
        found,
        name=change.name if change.name is not None else found.name,
        policy_id=change.policy_id or found.policy_id,
        members=change.members if change.members is not None else found.members,
        updated_at=time.time(),
        **limits,
    )
    if changed.policy_id != found.policy_id:
        _known_policy(p, changed.policy_id)
        for key in await _keys(p, team_id):
            policy = p.policies.get(key.policy_id)
            if policy is not None:
                within_team(p.policies.get, changed, policy)
    before = await _public(p, found)
    if not await update_team(p.store.db, changed):
        raise NotFound(f"no team `{team_id}`", param="team_id")
    await _changed(p, changed)
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
    before = None if found is None else await _public(p, found)
    if before is None or not await delete_team(p.store.db, team_id):
        raise NotFound(f"no team `{team_id}`", param="team_id")
    p.teams.drop(team_id)
    await p.broadcast("team", team_id)
    await p.admin_log.record(by, "team.delete", team_id, before=before)
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


def _active(keys: list[ApiKey], team_id: str) -> list[str]:
    return [k.key_id for k in keys if k.team_id == team_id and k.revoked_at is None]


async def _changed(p: Platform, team: Team) -> None:
    """Calls of this process see the team as it is now at once; other processes' when told
    (or at their next refresh)."""
    p.teams.put(team)
    await p.broadcast("team", team.team_id)


async def _public(p: Platform, found: Team) -> dict[str, Any]:
    start = calendar_month(time.time())[1]
    spent = await spend_by_team(p.store.db, start, found.team_id)
    keys = [k.key_id for k in await _keys(p, found.team_id)]
    return _view(found, keys, spent.get(found.team_id, 0.0))


def _view(team: Team, keys: list[str], spent: float) -> dict[str, Any]:
    """The team's public view with what its keys' calls cost this month (calendar month,
    UTC; calls still in flight not yet counted) and what is left of its budget."""
    budget = team.budget_eur_month
    left = None if budget is None else max(0.0, budget - spent)
    return {**team.public(keys), "spent_eur_month": spent, "remaining_eur_month": left}

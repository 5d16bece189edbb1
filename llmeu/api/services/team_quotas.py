"""Teams as calls see them: the limits a call of a key in a team is admitted under too.

A call of a key in a team is admitted against its key's limits, then against
its team's (`Quota(scope="team")`): requests and tokens per minute over all
the team's keys, and the team's budget for the calendar month (UTC) the call
is received in — what the team's keys' calls of that month cost, plus the
estimated cost of those still in flight (`llmeu.limits`). Teams are kept in
memory: a change made through this process applies to its next call; one made
through another is read at the next refresh (with the keys), or when a key
names a team this process does not know yet.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from llmeu.ledger.api_keys import ApiKey
from llmeu.ledger.store import Store
from llmeu.ledger.teams import Team, get_team, list_teams, spend_by_team
from llmeu.limits.limiter import Quota, calendar_month


class TeamBook:
    def __init__(self, store: Store):
        self._store = store
        self._teams: dict[str, Team] = {}

    async def load(self) -> None:
        self._teams = {t.team_id: t for t in await list_teams(self._store.db)}

    def put(self, team: Team) -> None:
        """A team this process just created or changed."""
        self._teams[team.team_id] = team

    def drop(self, team_id: str) -> None:
        self._teams.pop(team_id, None)

    async def quota(self, key: ApiKey, now: float) -> Quota | None:
        """The limits of `key`'s team for a call received at `now`; None: no team, or a
        team without limits."""
        if key.team_id is None:
            return None
        team = self._teams.get(key.team_id)
        if team is None:
            team = await get_team(self._store.db, key.team_id)  # made through another process
            if team is None:
                return None
            self._teams[team.team_id] = team
        return team_quota(team, now)


def team_quota(team: Team, now: float) -> Quota | None:
    if not team.limited:
        return None
    month, _ = calendar_month(now)
    return Quota(team.team_id, team.rpm_limit, team.tpm_limit, team.budget_eur_month,
                 scope="team", period=month)  # fmt: skip


async def ledger_spend(store: Store) -> Mapping[str, float]:
    """What the limits check budgets against, from the ledger: each key's spend, and each
    team's this month (under its `Quota.spend_id`)."""
    spent = await store.spend_by_key()
    month, start = calendar_month(time.time())
    for team_id, cost in (await spend_by_team(store.db, start)).items():
        spent[Quota(team_id, period=month).spend_id] = cost
    return spent

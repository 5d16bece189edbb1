"""Teams as the ledger stores them: a name, a policy, a monthly budget, rate limits
and members.

A key belongs to at most one team (`api_keys.team_id`); the team's keys are the
keys that name it. Members are names (an e-mail address, a subject of the
organisation's identity provider) kept as a JSON list: who a team admin
answers for, not accounts of their own. A team's spend in a month is the cost
of its keys' calls received in it (`spend_by_team`): what its budget is checked
against (`llmeu.limits`), besides the calls still in flight.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from llmeu.ledger.admin_event_rows import NOT_ADMIN
from llmeu.ledger.database import Database, Row

_COLUMNS = (
    "team_id, name, policy_id, budget_eur_month, members, created_at, updated_at, "
    "rpm_limit, tpm_limit"
)


@dataclass(frozen=True, slots=True)
class Team:
    team_id: str
    name: str
    policy_id: str
    budget_eur_month: float | None
    members: tuple[str, ...]
    created_at: float
    updated_at: float
    rpm_limit: int | None = None
    """Requests per minute of all its keys together (migration 21); None: no limit."""
    tpm_limit: int | None = None
    """Tokens per minute of all its keys together; None: no limit."""

    @property
    def limited(self) -> bool:
        """Whether its keys' calls are admitted against the team as well as the key."""
        limits = (self.budget_eur_month, self.rpm_limit, self.tpm_limit)
        return any(limit is not None for limit in limits)

    def public(self, keys: list[str]) -> dict[str, Any]:
        """The team as the platform API shows it, with the ids of its active keys."""
        return {
            "id": self.team_id,
            "object": "team",
            "name": self.name,
            "policy_id": self.policy_id,
            "budget_eur_month": self.budget_eur_month,
            "rpm_limit": self.rpm_limit,
            "tpm_limit": self.tpm_limit,
            "members": list(self.members),
            "keys": keys,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }


async def insert_team(db: Database, team: Team) -> None:
    await db.execute(f"INSERT INTO teams ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     _row(team))  # fmt: skip


async def update_team(db: Database, team: Team) -> bool:
    changed = await db.execute(
        "UPDATE teams SET name = ?, policy_id = ?, budget_eur_month = ?, members = ?, "
        "updated_at = ?, rpm_limit = ?, tpm_limit = ? WHERE team_id = ?",
        (team.name, team.policy_id, team.budget_eur_month, json.dumps(list(team.members)),
         team.updated_at, team.rpm_limit, team.tpm_limit, team.team_id),
    )  # fmt: skip
    return changed > 0


async def delete_team(db: Database, team_id: str) -> bool:
    return await db.execute("DELETE FROM teams WHERE team_id = ?", (team_id,)) > 0


async def get_team(db: Database, team_id: str) -> Team | None:
    rows = await db.fetch(f"SELECT {_COLUMNS} FROM teams WHERE team_id = ?", (team_id,))
    return _team(rows[0]) if rows else None


async def list_teams(db: Database) -> list[Team]:
    rows = await db.fetch(f"SELECT {_COLUMNS} FROM teams ORDER BY created_at, team_id")
    return [_team(r) for r in rows]


async def spend_by_team(db: Database, since: float, team_id: str | None = None) -> dict[str, float]:
    """What each team's keys' calls received from `since` on cost (EUR), by team id (only
    `team_id`'s when given); teams without such calls are left out."""
    where = ""
    params: tuple[float | str, ...] = (since,)
    if team_id is not None:
        where = " AND k.team_id = ?"
        params = (since, team_id)
    rows = await db.fetch(
        "SELECT k.team_id AS team_id, SUM(COALESCE(t.cost_eur, 0)) AS cost FROM traces t "
        "JOIN api_keys k ON k.key_id = t.key_id WHERE k.team_id IS NOT NULL "
        f"AND t.received_at >= ? AND t.{NOT_ADMIN}{where} GROUP BY k.team_id",
        params,
    )
    return {r["team_id"]: float(r["cost"] or 0) for r in rows}


def _row(team: Team) -> tuple[Any, ...]:
    return (team.team_id, team.name, team.policy_id, team.budget_eur_month,
            json.dumps(list(team.members)), team.created_at, team.updated_at, team.rpm_limit,
            team.tpm_limit)  # fmt: skip


def _team(row: Row) -> Team:
    return Team(
        team_id=row["team_id"],
        name=row["name"],
        policy_id=row["policy_id"],
        budget_eur_month=row["budget_eur_month"],
        members=tuple(json.loads(row["members"])),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        rpm_limit=row["rpm_limit"],
        tpm_limit=row["tpm_limit"],
    )

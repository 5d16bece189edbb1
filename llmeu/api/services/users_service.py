"""The console's users on the platform API: who they are, and roles an admin grants them.

A user is in the directory once SCIM provisioned them or they first signed in
(`llmeu.api.services.directory`). A role granted here is added to those their
groups give, at the user's next request; `null` takes the grant back. Each
grant is an admin event (`user.role`: the user's role before and after).

Each user is shown with what the directory makes of them: their SCIM groups,
the roles those groups give (`--oidc-role-map`), those roles and the granted one
together (`roles`; a signed-in user also holds those of their ID token's groups,
which only their session knows), the team they act in, and how many active keys
their console sessions created (`personal_keys`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from llmeu.api.services.directory import team_for
from llmeu.api.services.platform_service import Actor, Platform
from llmeu.errors import NotFound
from llmeu.ledger.directory_rows import (
    DirectoryUser,
    get_user,
    list_groups,
    list_users,
    owned_key_counts,
    update_user,
)
from llmeu.ledger.teams import list_teams


def public(user: DirectoryUser) -> dict[str, Any]:
    return {
        "id": user.user_id,
        "object": "user",
        "user_name": user.user_name,
        "display_name": user.display_name,
        "subject": user.subject,
        "active": user.active,
        "provisioned": user.provisioned,
        "role": user.role,
        "created_at": user.created_at,
        "updated_at": user.updated_at,
    }


async def users(p: Platform) -> list[dict[str, Any]]:
    return await _described(p, await list_users(p.store.db))


async def user(p: Platform, user_id: str) -> DirectoryUser:
    found = await get_user(p.store.db, user_id)
    if found is None:
        raise NotFound(f"no user `{user_id}`", param="user_id")
    return found


async def grant(p: Platform, found: DirectoryUser, role: str | None, by: Actor) -> dict[str, Any]:
    changed = replace(found, role=role, updated_at=time.time())
    if not await update_user(p.store.db, changed):
        raise NotFound(f"no user `{found.user_id}`", param="user_id")
    await p.admin_log.record(by, "user.role", found.user_id, before={"role": found.role},
                             after={"role": role})  # fmt: skip
    return (await _described(p, [changed]))[0]


async def _described(p: Platform, listed: Sequence[DirectoryUser]) -> list[dict[str, Any]]:
    """`listed` as the API shows them, with their groups, roles, team and personal keys (each
    read once for the whole list)."""
    db = p.store.db
    groups_of: dict[str, list[str]] = {}
    for group in await list_groups(db):
        for member in group.members:
            groups_of.setdefault(member, []).append(group.display_name)
    teams = await list_teams(db)
    keys = await owned_key_counts(db)
    shown = []
    for u in listed:
        groups = sorted(groups_of.get(u.user_id, ()), key=str.casefold)
        group_roles = p.directory.roles_of_groups(groups) if p.directory is not None else ()
        granted = (u.role,) if u.role else ()
        team = team_for(teams, [n for n in (u.subject, u.user_name) if n], groups)
        shown.append({
            **public(u),
            "groups": groups,
            "group_roles": list(group_roles),
            "roles": list(dict.fromkeys((*group_roles, *granted))),
            "team_id": None if team is None else team.team_id,
            "team_name": None if team is None else team.name,
            "personal_keys": keys.get(u.subject, 0) if u.subject else 0,
        })  # fmt: skip
    return shown

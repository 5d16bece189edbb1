"""The console's users on the platform API: who they are, and roles an admin grants them.

A user is in the directory once SCIM provisioned them or they first signed in
(`llmeu.api.services.directory`). A role granted here is added to those their
groups give, at the user's next request; `null` takes the grant back. Each
grant is an admin event (`user.role`: the user's role before and after).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from llmeu.api.services.platform_service import Actor, Platform
from llmeu.errors import NotFound
from llmeu.ledger.directory_rows import DirectoryUser, get_user, list_users, update_user


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
    return [public(u) for u in await list_users(p.store.db)]


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
    return public(changed)

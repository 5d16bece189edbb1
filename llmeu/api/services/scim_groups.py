"""SCIM Groups (RFC 7644): the organisation's groups and their members, which give roles.

A group's `displayName` gives its members the role `--oidc-role-map` maps it
to, and makes them members of the team of that name, if there is one
(`llmeu.api.services.directory`); both apply at the members' next request.
Members are users of this directory (`{"value": <user id>}`); a member that is
not one is refused (400 invalidValue). Each change is an admin event of actor
`scim` (`group.create`, `group.update`, `group.delete`: the group's name and
members before and after).
"""

from __future__ import annotations

import secrets
import time
from dataclasses import replace
from typing import Any

from llmeu.api.services.platform_service import Actor, Platform
from llmeu.ledger.directory_rows import (
    DirectoryGroup,
    delete_group,
    existing_users,
    get_group,
    insert_group,
    list_groups,
    update_group,
)
from llmeu.protocol.scim_filter import matches, parse_filter
from llmeu.protocol.scim_patch import apply_patch
from llmeu.protocol.scim_wire import GROUP, invalid_value, list_response, meta, no_such, select


def resource(group: DirectoryGroup, base: str) -> dict[str, Any]:
    shown: dict[str, Any] = {
        "schemas": [GROUP],
        "id": group.group_id,
        "displayName": group.display_name,
        "members": [
            {"value": m, "$ref": f"{base}/scim/v2/Users/{m}", "type": "User"} for m in group.members
        ],
        "meta": meta(
            "Group", group.created_at, group.updated_at, f"{base}/scim/v2/Groups/{group.group_id}"
        ),
    }
    if group.external_id is not None:
        shown["externalId"] = group.external_id
    return shown


def view(group: DirectoryGroup) -> dict[str, Any]:
    return {"id": group.group_id, "displayName": group.display_name,
            "externalId": group.external_id, "members": sorted(group.members)}  # fmt: skip


async def create(p: Platform, body: dict[str, Any], base: str, by: Actor) -> dict[str, Any]:
    name, external_id, members = await _read(p, body)
    now = time.time()
    group = DirectoryGroup(secrets.token_hex(16), name, external_id, now, now, members)
    await insert_group(p.store.db, group)
    await p.admin_log.record(by, "group.create", group.group_id, after=view(group))
    return resource(group, base)


async def read(p: Platform, group_id: str, base: str) -> dict[str, Any]:
    return resource(await _found(p, group_id), base)


async def search(
    p: Platform, query: dict[str, str], start: int, count: int, base: str
) -> dict[str, Any]:
    groups = [resource(g, base) for g in await list_groups(p.store.db)]
    text = query.get("filter")
    if text:
        condition = parse_filter(text)
        groups = [g for g in groups if matches(condition, g)]
    page = groups[start - 1 : start - 1 + count]
    return list_response([select(g, query) for g in page], len(groups), start)


async def replace_group(
    p: Platform, group_id: str, body: dict[str, Any], base: str, by: Actor
) -> dict[str, Any]:
    return await _write(p, await _found(p, group_id), body, base, by)


async def patch(
    p: Platform, group_id: str, operations: list[Any], base: str, by: Actor
) -> dict[str, Any]:
    found = await _found(p, group_id)
    return await _write(p, found, apply_patch(resource(found, base), operations), base, by)


async def remove(p: Platform, group_id: str, by: Actor) -> None:
    found = await _found(p, group_id)
    if not await delete_group(p.store.db, group_id):
        raise no_such("group", group_id)
    await p.admin_log.record(by, "group.delete", group_id, before=view(found))


async def _write(
    p: Platform, found: DirectoryGroup, body: dict[str, Any], base: str, by: Actor
) -> dict[str, Any]:
    name, external_id, members = await _read(p, body)
    changed = replace(found, display_name=name, external_id=external_id, members=members,
                      updated_at=time.time())  # fmt: skip
    if not await update_group(p.store.db, changed, found):
        raise no_such("group", found.group_id)
    await p.admin_log.record(by, "group.update", found.group_id, before=view(found),
                             after=view(changed))  # fmt: skip
    return resource(changed, base)


async def _read(p: Platform, body: dict[str, Any]) -> tuple[str, str | None, tuple[str, ...]]:
    fields = {k.casefold(): v for k, v in body.items()}
    name = fields.get("displayname")
    if not isinstance(name, str) or not name.strip() or len(name) > 256:
        raise invalid_value("`displayName` is required: a string of at most 256 characters",
                            "displayName")  # fmt: skip
    external_id = fields.get("externalid")
    if external_id is not None and not isinstance(external_id, str):
        raise invalid_value("`externalId` is a string", "externalId")
    listed = fields.get("members") or []
    if not isinstance(listed, list) or not all(
        isinstance(m, dict) and isinstance(m.get("value"), str) for m in listed
    ):
        raise invalid_value('`members` is a list of `{"value": <user id>}`', "members")
    members = tuple(dict.fromkeys(m["value"] for m in listed))
    unknown = set(members) - await existing_users(p.store.db, members)
    if unknown:
        raise invalid_value(f"no user `{sorted(unknown)[0]}` to be a member", "members")
    return name, external_id or None, members


async def _found(p: Platform, group_id: str) -> DirectoryGroup:
    found = await get_group(p.store.db, group_id)
    if found is None:
        raise no_such("group", group_id)
    return found

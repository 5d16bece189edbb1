"""SCIM Users (RFC 7644): the organisation's identity provider provisions console users.

Each change is an admin event of actor `scim` (`user.create`, `user.update`,
`user.deactivate`, `user.reactivate`, `user.delete`: the user's view before and
after, `llmeu.api.services.admin_log`). Deprovisioning — `active` set to false,
or the user deleted — ends every console session of the user at once and
revokes their personal keys (those their sessions created,
`api_keys.owner_subject`), each revocation an event of its own (`key.revoke`)
and broadcast to every gateway process like any other. A user provisioned
before their first sign-in is linked to their issuer's subject when they sign
in (`llmeu.api.services.directory`).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from llmeu.api.services.directory import new_user_id
from llmeu.api.services.platform_service import Actor, Platform
from llmeu.errors import Conflict, DatabaseError, NotFound
from llmeu.ledger.console_sessions import delete_sessions_of
from llmeu.ledger.directory_rows import (
    DirectoryUser,
    delete_user,
    get_user,
    insert_user,
    list_users,
    owned_key_ids,
    update_user,
    user_by_external_id,
    user_by_name,
)
from llmeu.protocol.scim_filter import equals, matches, parse_filter
from llmeu.protocol.scim_patch import apply_patch
from llmeu.protocol.scim_wire import (
    list_response,
    meta,
    no_such,
    read_user,
    select,
    user_schemas,
)


def resource(user: DirectoryUser, base: str) -> dict[str, Any]:
    """The user as SCIM shows it."""
    return {
        "schemas": user_schemas(user.attributes),
        **user.attributes,
        "id": user.user_id,
        "userName": user.user_name,
        "active": user.active,
        "meta": meta(
            "User", user.created_at, user.updated_at, f"{base}/scim/v2/Users/{user.user_id}"
        ),
    }


def view(user: DirectoryUser) -> dict[str, Any]:
    """The user as an admin event digests it."""
    return {"id": user.user_id, "userName": user.user_name, "active": user.active,
            "externalId": user.external_id, "subject": user.subject, "role": user.role,
            "attributes": user.attributes}  # fmt: skip


async def create(p: Platform, body: dict[str, Any], base: str, by: Actor) -> dict[str, Any]:
    fields = read_user(body)
    if await user_by_name(p.store.db, fields.user_name) is not None:
        raise _taken(fields.user_name)
    now = time.time()
    user = DirectoryUser(
        new_user_id(), fields.user_name, None, fields.external_id, fields.display_name,
        fields.active, True, fields.attributes, None, now, now,
    )  # fmt: skip
    try:
        await insert_user(p.store.db, user)
    except DatabaseError:
        raise _taken(fields.user_name) from None
    await p.admin_log.record(by, "user.create", user.user_id, after=view(user))
    return resource(user, base)


async def read(p: Platform, user_id: str, base: str) -> dict[str, Any]:
    return resource(await _found(p, user_id), base)


async def search(
    p: Platform, query: dict[str, str], start: int, count: int, base: str
) -> dict[str, Any]:
    """A page of users, those the filter matches (`userName eq` and `externalId eq` are
    looked up by index)."""
    text = query.get("filter")
    users: list[DirectoryUser]
    if not text:
        users = await list_users(p.store.db)
    else:
        condition = parse_filter(text)
        name, external = equals(condition, "userName"), equals(condition, "externalId")
        if name is not None:
            users = [u for u in [await user_by_name(p.store.db, name)] if u is not None]
        elif external is not None:
            users = [u for u in [await user_by_external_id(p.store.db, external)] if u]
        else:
            everyone = await list_users(p.store.db)
            users = [u for u in everyone if matches(condition, resource(u, base))]
    page = users[start - 1 : start - 1 + count]
    shown = [select(resource(u, base), query) for u in page]
    return list_response(shown, len(users), start)


async def replace_user(
    p: Platform, user_id: str, body: dict[str, Any], base: str, by: Actor
) -> dict[str, Any]:
    return await _write(p, await _found(p, user_id), body, base, by)


async def patch(
    p: Platform, user_id: str, operations: list[Any], base: str, by: Actor
) -> dict[str, Any]:
    found = await _found(p, user_id)
    patched = apply_patch(resource(found, base), operations)
    return await _write(p, found, patched, base, by)


async def remove(p: Platform, user_id: str, by: Actor) -> None:
    found = await _found(p, user_id)
    if not await delete_user(p.store.db, user_id):
        raise no_such("user", user_id)
    ended = await deprovision(p, found, by)
    await p.admin_log.record(by, "user.delete", user_id, before=view(found), after=ended)


async def deprovision(p: Platform, user: DirectoryUser, by: Actor) -> dict[str, Any]:
    """End the user's console sessions and revoke their personal keys: what was ended."""
    if user.subject is None:
        return {"sessions_ended": 0, "keys_revoked": []}
    ended = await delete_sessions_of(p.store.db, user.subject)
    revoked = []
    for key_id in await owned_key_ids(p.store.db, user.subject):
        try:
            await p.revoke_key(key_id, by)
        except NotFound:
            continue  # revoked meanwhile by someone else
        revoked.append(key_id)
    return {"sessions_ended": ended, "keys_revoked": revoked}


async def _write(
    p: Platform, found: DirectoryUser, body: dict[str, Any], base: str, by: Actor
) -> dict[str, Any]:
    fields = read_user(body)
    if fields.user_name.casefold() != found.user_name.casefold():
        holder = await user_by_name(p.store.db, fields.user_name)
        if holder is not None and holder.user_id != found.user_id:
            raise _taken(fields.user_name)
    changed = replace(
        found, user_name=fields.user_name, external_id=fields.external_id,
        display_name=fields.display_name, active=fields.active, provisioned=True,
        attributes=fields.attributes, updated_at=time.time(),
    )  # fmt: skip
    try:
        updated = await update_user(p.store.db, changed)
    except DatabaseError:
        raise _taken(fields.user_name) from None
    if not updated:
        raise no_such("user", found.user_id)
    if found.active and not changed.active:
        ended = await deprovision(p, changed, by)
        await p.admin_log.record(by, "user.deactivate", found.user_id, before=view(found),
                                 after={"user": view(changed), **ended})  # fmt: skip
    else:
        action = "user.reactivate" if changed.active and not found.active else "user.update"
        await p.admin_log.record(by, action, found.user_id, before=view(found),
                                 after=view(changed))  # fmt: skip
    return resource(changed, base)


async def _found(p: Platform, user_id: str) -> DirectoryUser:
    found = await get_user(p.store.db, user_id)
    if found is None:
        raise no_such("user", user_id)
    return found


def _taken(user_name: str) -> Conflict:
    return Conflict(f"a user with userName `{user_name}` exists", param="userName",
                    code="uniqueness")  # fmt: skip

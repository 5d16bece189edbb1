"""The organisation's directory as the ledger stores it: users, groups and their members.

Users come from SCIM provisioning (`provisioned`) or from a first console sign-in;
a user's `subject` is the issuer's `sub`, linked at their first sign-in, and
names their console sessions and the keys those sessions created
(`api_keys.owner_subject`). `user_name_key` is the lower-cased userName (SCIM
compares it case-insensitively), unique. Group members are rows of
`directory_members`, so adding or removing one never rewrites the others.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from llmeu.ledger.database import Database, Row

_USER_COLUMNS = (
    "user_id, user_name, user_name_key, subject, external_id, display_name, active, "
    "provisioned, attributes, role, created_at, updated_at"
)
_USER_VALUES = ", ".join("?" for _ in _USER_COLUMNS.split(", "))
_GROUP_COLUMNS = "group_id, display_name, external_id, created_at, updated_at"


@dataclass(frozen=True, slots=True)
class DirectoryUser:
    user_id: str
    user_name: str
    subject: str | None
    external_id: str | None
    display_name: str | None
    active: bool
    provisioned: bool
    attributes: dict[str, Any]
    role: str | None
    created_at: float
    updated_at: float


@dataclass(frozen=True, slots=True)
class DirectoryGroup:
    group_id: str
    display_name: str
    external_id: str | None
    created_at: float
    updated_at: float
    members: tuple[str, ...] = field(default=())


def name_key(name: str) -> str:
    return name.casefold()


async def insert_user(db: Database, user: DirectoryUser) -> None:
    await db.execute(
        f"INSERT INTO directory_users ({_USER_COLUMNS}) VALUES ({_USER_VALUES})",
        _user_row(user),
    )


async def update_user(db: Database, user: DirectoryUser) -> bool:
    changed = await db.execute(
        "UPDATE directory_users SET user_name = ?, user_name_key = ?, subject = ?, "
        "external_id = ?, display_name = ?, active = ?, provisioned = ?, attributes = ?, "
        "role = ?, updated_at = ? WHERE user_id = ?",
        (*_user_row(user)[1:10], user.updated_at, user.user_id),
    )
    return changed > 0


async def delete_user(db: Database, user_id: str) -> bool:
    counts = await db.transaction(
        [
            ("DELETE FROM directory_members WHERE user_id = ?", [(user_id,)]),
            ("DELETE FROM directory_users WHERE user_id = ?", [(user_id,)]),
        ]
    )
    return counts[1] > 0


async def get_user(db: Database, user_id: str) -> DirectoryUser | None:
    return await _one_user(db, "user_id = ?", user_id)


async def user_by_name(db: Database, user_name: str) -> DirectoryUser | None:
    return await _one_user(db, "user_name_key = ?", name_key(user_name))


async def user_by_subject(db: Database, subject: str) -> DirectoryUser | None:
    return await _one_user(db, "subject = ?", subject)


async def user_by_external_id(db: Database, external_id: str) -> DirectoryUser | None:
    return await _one_user(db, "external_id = ?", external_id)


async def list_users(db: Database) -> list[DirectoryUser]:
    rows = await db.fetch(
        f"SELECT {_USER_COLUMNS} FROM directory_users ORDER BY created_at, user_id"
    )
    return [_user(r) for r in rows]


async def _one_user(db: Database, where: str, value: str) -> DirectoryUser | None:
    rows = await db.fetch(f"SELECT {_USER_COLUMNS} FROM directory_users WHERE {where}", (value,))
    return _user(rows[0]) if rows else None


async def insert_group(db: Database, group: DirectoryGroup) -> None:
    await db.transaction(
        [
            (
                "INSERT INTO directory_groups (group_id, display_name, display_name_key, "
                "external_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                [_group_row(group)],
            ),
            _member_inserts(group.group_id, group.members),
        ]
    )


async def update_group(db: Database, group: DirectoryGroup, before: DirectoryGroup) -> bool:
    """The group's name and members as `group` has them; only the members that differ from
    `before` are written."""
    added = tuple(m for m in group.members if m not in before.members)
    removed = [(group.group_id, m) for m in before.members if m not in group.members]
    counts = await db.transaction(
        [
            (
                "UPDATE directory_groups SET display_name = ?, display_name_key = ?, "
                "external_id = ?, updated_at = ? WHERE group_id = ?",
                [(*_group_row(group)[1:4], group.updated_at, group.group_id)],
            ),
            ("DELETE FROM directory_members WHERE group_id = ? AND user_id = ?", removed),
            _member_inserts(group.group_id, added),
        ]
    )
    return counts[0] > 0


async def delete_group(db: Database, group_id: str) -> bool:
    counts = await db.transaction(
        [
            ("DELETE FROM directory_members WHERE group_id = ?", [(group_id,)]),
            ("DELETE FROM directory_groups WHERE group_id = ?", [(group_id,)]),
        ]
    )
    return counts[1] > 0


async def get_group(db: Database, group_id: str) -> DirectoryGroup | None:
    rows = await db.fetch(
        f"SELECT {_GROUP_COLUMNS} FROM directory_groups WHERE group_id = ?", (group_id,)
    )
    if not rows:
        return None
    members = await db.fetch(
        "SELECT user_id FROM directory_members WHERE group_id = ? ORDER BY user_id", (group_id,)
    )
    return _group(rows[0], tuple(m["user_id"] for m in members))


async def list_groups(db: Database) -> list[DirectoryGroup]:
    rows = await db.fetch(
        f"SELECT {_GROUP_COLUMNS} FROM directory_groups ORDER BY created_at, group_id"
    )
    members: dict[str, list[str]] = {}
    for m in await db.fetch(
        "SELECT group_id, user_id FROM directory_members ORDER BY group_id, user_id"
    ):
        members.setdefault(m["group_id"], []).append(m["user_id"])
    return [_group(r, tuple(members.get(r["group_id"], ()))) for r in rows]


async def group_names_of(db: Database, user_id: str) -> list[str]:
    """The display names of the groups the user is a member of."""
    rows = await db.fetch(
        "SELECT g.display_name FROM directory_groups g JOIN directory_members m "
        "ON m.group_id = g.group_id WHERE m.user_id = ? ORDER BY g.display_name",
        (user_id,),
    )
    return [r["display_name"] for r in rows]


async def existing_users(db: Database, user_ids: tuple[str, ...]) -> set[str]:
    """Which of `user_ids` are users of the directory."""
    if not user_ids:
        return set()
    marks = ", ".join("?" for _ in user_ids)
    rows = await db.fetch(
        f"SELECT user_id FROM directory_users WHERE user_id IN ({marks})", user_ids
    )
    return {r["user_id"] for r in rows}


async def owned_key_ids(db: Database, subject: str) -> list[str]:
    """The active keys created by the console sessions of `subject`."""
    rows = await db.fetch(
        "SELECT key_id FROM api_keys WHERE owner_subject = ? AND revoked_at IS NULL "
        "ORDER BY created_at",
        (subject,),
    )
    return [r["key_id"] for r in rows]


async def owned_key_counts(db: Database) -> dict[str, int]:
    """How many active keys the console sessions of each subject created."""
    rows = await db.fetch(
        "SELECT owner_subject, COUNT(*) AS n FROM api_keys WHERE owner_subject IS NOT NULL "
        "AND revoked_at IS NULL GROUP BY owner_subject"
    )
    return {r["owner_subject"]: int(r["n"]) for r in rows}


def _member_inserts(group_id: str, members: tuple[str, ...]) -> tuple[str, list[tuple[str, str]]]:
    return (
        "INSERT INTO directory_members (group_id, user_id) VALUES (?, ?)",
        [(group_id, m) for m in members],
    )


def _group_row(group: DirectoryGroup) -> tuple[Any, ...]:
    return (group.group_id, group.display_name, name_key(group.display_name),
            group.external_id, group.created_at, group.updated_at)  # fmt: skip


def _user_row(user: DirectoryUser) -> tuple[Any, ...]:
    return (user.user_id, user.user_name, name_key(user.user_name), user.subject,
            user.external_id, user.display_name, int(user.active), int(user.provisioned),
            json.dumps(user.attributes), user.role, user.created_at, user.updated_at)  # fmt: skip


def _user(row: Row) -> DirectoryUser:
    return DirectoryUser(
        user_id=row["user_id"],
        user_name=row["user_name"],
        subject=row["subject"],
        external_id=row["external_id"],
        display_name=row["display_name"],
        active=bool(row["active"]),
        provisioned=bool(row["provisioned"]),
        attributes=json.loads(row["attributes"]),
        role=row["role"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def _group(row: Row, members: tuple[str, ...]) -> DirectoryGroup:
    return DirectoryGroup(
        group_id=row["group_id"],
        display_name=row["display_name"],
        external_id=row["external_id"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        members=members,
    )

"""`llmeu users list|grant|revoke-role`: the directory's users and the roles granted them.

    llmeu users list
    llmeu users grant ana@example.eu auditor
    llmeu users revoke-role ana@example.eu

A user is named by their id or their userName (case-insensitively). A granted
role is added to those the user's groups give, from their next request; a
caller grants, or takes back, only a role it may grant a key of
(docs/sso.md#roles-granted-by-an-admin). Each grant is an admin event
(`user.role`).
"""

from __future__ import annotations

import argparse
from typing import Any

from llmeu.cli.platform_api import (
    CliError,
    PlatformClient,
    add_action,
    moment,
    print_json,
    print_table,
)

COLUMNS = ("id", "user", "name", "active", "from", "groups", "group roles", "granted",
           "team", "personal keys", "created")  # fmt: skip


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("users", help="list users and grant them roles")
    actions = parser.add_subparsers(dest="action", required=True)
    add_action(actions, "list", _list, help="the directory's users, their groups and roles")
    add_action(actions, "grant", _grant, help="grant a user a role, added to their groups'",
               arguments=_grant_options)  # fmt: skip
    add_action(actions, "revoke-role", _revoke, help="take back the role granted to a user",
               arguments=_user)  # fmt: skip


def _user(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("user", help="the user's id or userName")


def _grant_options(parser: argparse.ArgumentParser) -> None:
    _user(parser)
    parser.add_argument("role", help="admin, operator, auditor, dpo, team_admin or member")


def _row(user: dict[str, Any]) -> tuple[object, ...]:
    return (
        user["id"], user["user_name"], user["display_name"], user["active"],
        "scim" if user["provisioned"] else "sign-in", ", ".join(user["groups"]) or None,
        ", ".join(user["group_roles"]) or None, user["role"],
        user["team_name"] or user["team_id"], user["personal_keys"], moment(user["created_at"]),
    )  # fmt: skip


def _list(client: PlatformClient, args: argparse.Namespace) -> int:
    listed = client.call("GET", "/v1/platform/users")
    if args.json:
        print_json(listed)
    else:
        print_table(COLUMNS, [_row(u) for u in listed["data"]], right=("personal keys",))
    return 0


def _grant(client: PlatformClient, args: argparse.Namespace) -> int:
    return _put_role(client, args, args.role)


def _revoke(client: PlatformClient, args: argparse.Namespace) -> int:
    return _put_role(client, args, None)


def _put_role(client: PlatformClient, args: argparse.Namespace, role: str | None) -> int:
    user_id = _user_id(client, args.user)
    changed = client.call("PUT", f"/v1/platform/users/{user_id}/role", body={"role": role})
    if args.json:
        print_json(changed)
    elif role is None:
        print(f"{changed['user_name']} holds no granted role; roles now: {_roles(changed)}")
    else:
        print(f"granted {role} to {changed['user_name']}; roles now: {_roles(changed)}")
    return 0


def _roles(user: dict[str, Any]) -> str:
    return ", ".join(user["roles"]) or "none"


def _user_id(client: PlatformClient, named: str) -> str:
    """The id of the user `named` names: an id, else a userName compared case-insensitively."""
    users = client.call("GET", "/v1/platform/users")["data"]
    for user in users:
        if user["id"] == named:
            return str(user["id"])
    for user in users:
        if user["user_name"].casefold() == named.casefold():
            return str(user["id"])
    raise CliError(f"no user `{named}` (give an id or a userName: `llmeu users list`)")

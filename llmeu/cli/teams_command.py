"""`llmeu teams create|list|show|update|delete`: teams through the platform API.

    llmeu teams create --name search --policy eu-strict --budget-eur-month 200 \\
        --rpm 600 --tpm 200000 --members ana@example.eu,bo@example.eu
    llmeu teams list
    llmeu teams update team_1a2b3c4d5e6f --budget-eur-month 300
    llmeu teams delete team_1a2b3c4d5e6f

Keys join a team when created in it (`llmeu keys create --team ID`); a key's
policy is at least as strict as its team's, and its calls are admitted under
both its own limits and its team's (docs/platform.md#teams).
"""

from __future__ import annotations

import argparse
from typing import Any

from llmeu.cli.money import money
from llmeu.cli.platform_api import (
    PlatformClient,
    add_action,
    comma_list,
    moment,
    print_json,
    print_table,
)

COLUMNS = ("id", "name", "policy", "budget/month", "spent this month", "rpm", "tpm", "members",
           "keys", "created")  # fmt: skip


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("teams", help="create, list, change and delete teams")
    actions = parser.add_subparsers(dest="action", required=True)
    add_action(actions, "create", _create, help="create a team", arguments=_create_options)
    add_action(actions, "list", _list, help="list teams (a team admin: its own)")
    add_action(actions, "show", _show, help="one team, with its active keys",
               arguments=_team_id)  # fmt: skip
    add_action(actions, "update", _update,
               help="change a team's name, policy, budget, rate limits, members",
               arguments=_update_options)  # fmt: skip
    add_action(actions, "delete", _delete, help="delete a team that has no active keys",
               arguments=_team_id)  # fmt: skip


def _team_id(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("team_id")


def _create_options(create: argparse.ArgumentParser) -> None:
    create.add_argument("--name", required=True)
    _team_options(create)


def _update_options(update: argparse.ArgumentParser) -> None:
    _team_id(update)
    update.add_argument("--name")
    _team_options(update)
    update.add_argument("--no-budget", action="store_true", help="remove the monthly budget")
    update.add_argument("--no-rpm", action="store_true", help="remove the requests limit")
    update.add_argument("--no-tpm", action="store_true", help="remove the tokens limit")


def _team_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--policy", help="its policy; its keys' are at least as strict")
    parser.add_argument("--budget-eur-month", type=float, help="monthly budget in EUR")
    parser.add_argument("--rpm", type=int, help="requests per minute, all its keys together")
    parser.add_argument("--tpm", type=int, help="tokens per minute, all its keys together")
    parser.add_argument("--members", type=comma_list, metavar="A,B", help="its members' names")


def _row(team: dict[str, Any]) -> tuple[object, ...]:
    return (
        team["id"], team["name"], team["policy_id"], money(team["budget_eur_month"]),
        money(team["spent_eur_month"]), team["rpm_limit"], team["tpm_limit"],
        ", ".join(team["members"]), len(team["keys"]), moment(team["created_at"]),
    )  # fmt: skip


def _print(args: argparse.Namespace, teams: list[dict[str, Any]], raw: object) -> int:
    if args.json:
        print_json(raw)
    else:
        print_table(COLUMNS, [_row(t) for t in teams])
    return 0


def _create(client: PlatformClient, args: argparse.Namespace) -> int:
    spec = {"name": args.name, "policy_id": args.policy,
            "budget_eur_month": args.budget_eur_month, "rpm_limit": args.rpm,
            "tpm_limit": args.tpm, "members": args.members}  # fmt: skip
    made = client.call("POST", "/v1/platform/teams",
                       body={k: v for k, v in spec.items() if v is not None})  # fmt: skip
    return _print(args, [made], made)


def _list(client: PlatformClient, args: argparse.Namespace) -> int:
    listed = client.call("GET", "/v1/platform/teams")
    return _print(args, listed["data"], listed)


def _show(client: PlatformClient, args: argparse.Namespace) -> int:
    team = client.call("GET", f"/v1/platform/teams/{args.team_id}")
    if not args.json:
        print_table(COLUMNS, [_row(team)])
        print(f"keys: {', '.join(team['keys']) or 'none'}")
        return 0
    print_json(team)
    return 0


def _update(client: PlatformClient, args: argparse.Namespace) -> int:
    spec: dict[str, Any] = {"name": args.name, "policy_id": args.policy,
                            "budget_eur_month": args.budget_eur_month, "rpm_limit": args.rpm,
                            "tpm_limit": args.tpm, "members": args.members}  # fmt: skip
    body = {k: v for k, v in spec.items() if v is not None}
    for cleared, field in ((args.no_budget, "budget_eur_month"), (args.no_rpm, "rpm_limit"),
                           (args.no_tpm, "tpm_limit")):  # fmt: skip
        if cleared:
            body[field] = None
    changed = client.call("PATCH", f"/v1/platform/teams/{args.team_id}", body=body)
    return _print(args, [changed], changed)


def _delete(client: PlatformClient, args: argparse.Namespace) -> int:
    done = client.call("DELETE", f"/v1/platform/teams/{args.team_id}")
    if args.json:
        print_json(done)
    else:
        print(f"deleted {done['id']}")
    return 0

"""`llmeu keys create|list|revoke`: API keys through the platform API.

    llmeu keys create --name ci --policy eu-strict --budget-eur 50 --rpm 600
    llmeu keys create --name audit-bot --role auditor
    llmeu keys create --name search-bot --team team_1a2b3c4d5e6f
    llmeu keys create --name agent --allow-mcp-servers crm --allow-tools 'crm__get_*'
    llmeu keys list
    llmeu keys revoke k3f9a…
    llmeu keys reset-admin      (on the ledger itself: `llmeu.cli.admin_reset`)
    llmeu keys rotate-signing   (the receipt-signing key: `llmeu.cli.signing_rotate`)

`create` prints the new key's secret once: only its hash is stored. `revoke`
answers once every gateway process sharing the ledger has confirmed the
revocation (or after a short wait, saying how many did). `--role` gives the key a
platform role (`llmeu.api.routes.access`): the calling key's role must be allowed to
grant it — an operator's key mints no admin, auditor or dpo key.
"""

from __future__ import annotations

import argparse
from typing import Any

from llmeu.api.routes.access import Role
from llmeu.cli import signing_rotate
from llmeu.cli.admin_reset import register_action
from llmeu.cli.money import money
from llmeu.cli.platform_api import (
    PlatformClient,
    add_action,
    comma_list,
    moment,
    print_json,
    print_table,
)

COLUMNS = ("id", "name", "policy", "role", "budget", "rpm", "tpm", "created", "revoked")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("keys", help="create, list and revoke API keys")
    actions = parser.add_subparsers(dest="action", required=True)
    add_action(actions, "create", _create, help="create a key (its secret is shown once)",
               arguments=_create_options)  # fmt: skip
    add_action(actions, "list", _list, help="list keys, revoked ones included")
    add_action(actions, "revoke", _revoke, help="revoke a key at once, in every gateway process",
               arguments=lambda revoke: revoke.add_argument("key_id"))  # fmt: skip
    register_action(actions)
    signing_rotate.register_action(actions)


def _create_options(create: argparse.ArgumentParser) -> None:
    create.add_argument("--name", default="", help="what the key is for")
    create.add_argument("--policy", help="its policy (default: the gateway's default policy)")
    create.add_argument(
        "--role",
        choices=[role.value for role in Role],
        help="its platform role (default: none, acting as `member`); "
        "only a role that reaches no further than yours",
    )
    create.add_argument(
        "--team", help="the team it belongs to (its policy at least as strict as the team's)"
    )
    create.add_argument("--budget-eur", type=float, help="spending limit in EUR")
    create.add_argument("--rpm", type=int, help="requests per minute")
    create.add_argument("--tpm", type=int, help="tokens per minute")
    create.add_argument(
        "--purpose", help="what the key's calls are for (records of processing, GDPR Art. 30)"
    )
    create.add_argument(
        "--allow-mcp-servers",
        type=comma_list,
        metavar="A,B",
        help="the MCP tool servers it may reach, within its policy's (* and ?)",
    )
    create.add_argument(
        "--allow-tools",
        type=comma_list,
        metavar="A,B",
        help="the MCP tools it may call (server__tool), within its policy's",
    )


def _row(key: dict[str, Any]) -> tuple[object, ...]:
    return (
        key["id"], key["name"], key["policy_id"], key["role"], money(key["budget_eur"]),
        key["rpm_limit"], key["tpm_limit"], moment(key["created_at"]), moment(key["revoked_at"]),
    )  # fmt: skip


def _create(client: PlatformClient, args: argparse.Namespace) -> int:
    spec = {"name": args.name, "policy_id": args.policy, "budget_eur": args.budget_eur,
            "rpm_limit": args.rpm, "tpm_limit": args.tpm, "purpose": args.purpose,
            "allow_mcp_servers": args.allow_mcp_servers,
            "allow_tools": args.allow_tools, "role": args.role,
            "team_id": args.team}  # fmt: skip
    created = client.call("POST", "/v1/platform/keys",
                          body={k: v for k, v in spec.items() if v is not None})  # fmt: skip
    if args.json:
        print_json(created)
        return 0
    print_table(COLUMNS, [_row(created)])
    print(f"secret (shown once, store it now): {created['key']}")
    return 0


def _list(client: PlatformClient, args: argparse.Namespace) -> int:
    keys = client.call("GET", "/v1/platform/keys")
    if args.json:
        print_json(keys)
    else:
        print_table(COLUMNS, [_row(k) for k in keys["data"]])
    return 0


def _revoke(client: PlatformClient, args: argparse.Namespace) -> int:
    revoked = client.call("DELETE", f"/v1/platform/keys/{args.key_id}")
    if args.json:
        print_json(revoked)
        return 0
    propagation = revoked.get("propagation")
    reach = ""
    if propagation is not None:
        reach = (f"; confirmed by {propagation['confirmed']} of {propagation['instances']} "
                 "gateway processes")  # fmt: skip
    print(f"revoked {revoked['id']}{reach}")
    return 0

"""`llmeu config check FILE`: validate a configuration file without starting the gateway.

Prints `OK` and a summary (endpoints, models, MCP tool servers, policies, the
default policy, which endpoints and tool servers will be skipped because a
credential variable is unset, and warnings about what is valid but likely not
meant), or the first error with
the field and line it concerns. Exit status: 0 when the file is valid (with
or without warnings), 2 when it is not (or cannot be read).
"""

from __future__ import annotations

import argparse
import socket
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from llmeu.config import Settings
from llmeu.errors import ConfigError
from llmeu.personal.rules import describe_rules
from llmeu.providers.table import missing_credentials
from llmeu.routing.catalog import Capability
from llmeu.routing.config_file import GatewayConfig
from llmeu.routing.endpoint_kinds import RESPONSES_NATIVE_KINDS
from llmeu.routing.load import load_config
from llmeu.routing.policy import DEFAULT_KEEP_METADATA
from llmeu.routing.tool_servers import missing_tool_credentials


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("config", help="work with configuration files")
    commands = parser.add_subparsers(dest="config_command", required=True)
    check = commands.add_parser(
        "check",
        help="validate a configuration file without starting (exit 0 valid, 2 invalid)",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    check.add_argument("file", type=Path, help="the YAML configuration file (docs/design.md §4)")
    check.set_defaults(func=check_file)


def check_file(args: argparse.Namespace) -> int:
    settings = Settings.from_env(config_file=args.file)
    try:
        config = load_config(
            settings.config_file, host=socket.gethostname(), local_country=settings.local_country
        )
    except ConfigError as error:
        print(f"{args.file}: {error}", file=sys.stderr)
        return 2
    print(f"OK {args.file}")
    unavailable = {
        **missing_credentials(config.catalog, settings.environ),
        **{
            f"mcp server {server_id}": why
            for server_id, why in missing_tool_credentials(
                config.tool_servers, settings.environ
            ).items()
        },
    }
    for line in summary(config, unavailable):
        print(f"  {line}")
    return 0


def summary(config: GatewayConfig, unavailable: dict[str, str]) -> list[str]:
    endpoints = config.catalog.endpoints
    kinds = Counter(e.kind.value for e in endpoints)
    classes = Counter(e.sovereignty_class.value for e in endpoints)
    models = config.catalog.aliases()
    lines = [
        f"{_many(len(endpoints), 'endpoint')} ({_counts(kinds)}; {_counts(classes)})",
        f"{_many(len(models), 'model')}: {', '.join(models) or 'none'}",
    ]
    servers = config.tool_servers.servers
    if servers:
        listed = ", ".join(f"{s.server_id} ({s.sovereignty_class.value})" for s in servers)
        lines.append(f"{_many(len(servers), 'MCP tool server')}: {listed}")
    lines.append(
        f"{_many(len(config.policies), 'policy', 'policies')}: {', '.join(config.policies)}; "
        f"default policy: {config.default_policy}"
    )
    lines += [
        f"policy {p.policy_id}: {describe_rules(p.personal_data)}"
        for p in config.policies.values()
        if p.personal_data is not None
    ]
    lines += [f"skipped until configured: {eid} ({why})" for eid, why in unavailable.items()]
    lines += [f"warning: {w}" for w in warnings(config)]
    return lines


def warnings(config: GatewayConfig) -> list[str]:
    """Valid but worth a second look: metadata kept for less than the AI Act's six months,
    and the `responses` capability on a kind that cannot pass Responses calls through."""
    short = [
        f"policy `{p.policy_id}` keeps call metadata for {p.keep_metadata}, less than the "
        f"six months (P6M) the AI Act asks deployers of high-risk systems to keep logs"
        for p in config.policies.values()
        if p.keep_metadata is not None and p.keep_metadata < DEFAULT_KEEP_METADATA
    ]
    native = " and ".join(sorted(k.value for k in RESPONSES_NATIVE_KINDS))
    translated = [
        f"endpoint `{e.endpoint_id}` declares the `responses` capability, but only {native} "
        f"endpoints take Responses calls natively: a `{e.kind.value}` endpoint gets them "
        "translated onto chat, as without the capability"
        for e in config.catalog.endpoints
        if Capability.RESPONSES in e.capabilities and e.kind not in RESPONSES_NATIVE_KINDS
    ]
    return short + translated


def _many(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def _counts(counter: Counter[str]) -> str:
    return ", ".join(f"{n} {name}" for name, n in counter.most_common()) or "none"

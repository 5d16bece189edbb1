"""Entry point of the `llmeu` command.

Each subcommand lives in its own module with a `register(subparsers)` function
that adds its parser and sets `func`, a callable taking the parsed arguments
and returning the exit status.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from llmeu.cli import (
    audit_export,
    cache_command,
    chat,
    config_check,
    keys,
    ledger_purge,
    migrate,
    probe_upstream,
    receipt,
    route_report,
    serve,
    subjects,
    teams_command,
    traces,
    usage,
    users_command,
)
from llmeu.cli.version import VersionAction

SUBCOMMANDS = (
    serve, chat, route_report, config_check, keys, teams_command, users_command, usage, traces,
    ledger_purge,
    receipt,
    subjects,
    audit_export,
    migrate,
    probe_upstream,
    cache_command,
)  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="llmeu", description="An OpenAI-compatible LLM gateway that keeps inference in the EU."
    )
    parser.add_argument("--version", action=VersionAction)
    subparsers = parser.add_subparsers(dest="command", required=True)
    for module in SUBCOMMANDS:
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    status: int = args.func(args)
    return status


if __name__ == "__main__":
    sys.exit(main())

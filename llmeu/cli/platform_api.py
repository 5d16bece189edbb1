"""What the platform subcommands (`keys`, `teams`, `usage`, `traces`, …) share: the
connection options, the wiring of each action, one HTTP call to the platform API, and
the two output forms.

    --base-url URL   [LLMEU_BASE_URL]  the gateway, its root or …/v1, default http://127.0.0.1:8080
    --api-key KEY    [LLMEU_API_KEY]   the admin key, or a tenant key for its own records
                                        (`OPENAI_BASE_URL` and `OPENAI_API_KEY` are the fallbacks,
                                        see `llmeu.cli.gateway_address`)
    --json                              print the API's JSON instead of a table

Exit status: 0; 1 when the gateway answers with an error or cannot be reached
(its message, and the OpenAI-shaped error's `param`, go to standard error).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import httpx
from rich import box
from rich.console import Console
from rich.table import Table

from llmeu.cli.gateway_address import DEFAULT_BASE_URL, gateway_address

Command = Callable[["PlatformClient", argparse.Namespace], int]


class CliError(Exception):
    """A failure to report on standard error, with exit status 1."""


def add_connection_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--base-url",
        help=f"the gateway, its root or …/v1 (env LLMEU_BASE_URL or OPENAI_BASE_URL, "
        f"default {DEFAULT_BASE_URL})",
    )
    parser.add_argument("--api-key", help="API key (env LLMEU_API_KEY or OPENAI_API_KEY)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def add_action(
    actions: Any,
    name: str,
    command: Command,
    *,
    help: str,
    arguments: Callable[[argparse.ArgumentParser], object] | None = None,
) -> None:
    """One action of a platform subcommand (`keys create`, `teams list`, …): its own
    `arguments`, then the connection options, run by `command` through `runner`."""
    parser = actions.add_parser(name, help=help)
    if arguments is not None:
        arguments(parser)
    add_connection_options(parser)
    parser.set_defaults(func=runner(command))


def comma_list(text: str) -> list[str]:
    """An option's `A,B` value as its items, blanks dropped."""
    return [item.strip() for item in text.split(",") if item.strip()]


class PlatformClient:
    def __init__(self, url: str, api_key: str | None, *, timeout: float = 30.0):
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(base_url=url, headers=headers, timeout=timeout)

    def close(self) -> None:
        self._http.close()

    def call(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, object] | None = None,
        body: object = None,
    ) -> Any:
        query = {k: str(v) for k, v in (params or {}).items() if v is not None}
        try:
            response = self._http.request(method, path, params=query, json=body)
        except httpx.HTTPError as failure:
            url = self._http.base_url
            raise CliError(f"cannot reach the gateway at {url}: {failure}") from None
        try:
            payload = response.json()
        except ValueError:
            payload = None
        if response.is_success and payload is not None:
            return payload
        error = payload.get("error") if isinstance(payload, dict) else None
        if not isinstance(error, dict):
            raise CliError(f"HTTP {response.status_code} from {path}: {response.text[:200]}")
        where = f" (param `{error['param']}`)" if error.get("param") else ""
        raise CliError(f"{response.status_code} {error.get('message')}{where}")


def runner(command: Command) -> Callable[[argparse.Namespace], int]:
    """Wrap a subcommand: build the client from the options, report failures."""

    def run(args: argparse.Namespace) -> int:
        address = gateway_address(args.base_url, args.api_key, os.environ)
        client = PlatformClient(address.root, address.api_key)
        try:
            return command(client, args)
        except CliError as error:
            print(f"llmeu {args.command}: {error}", file=sys.stderr)
            return 1
        finally:
            client.close()

    return run


def print_json(value: object) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def print_table(
    columns: Sequence[str],
    rows: Sequence[Sequence[object]],
    *,
    title: str | None = None,
    right: Sequence[str] = (),
) -> None:
    table = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left")
    for column in columns:
        # Fold rather than cut: an id or a time is never shown with an ellipsis.
        table.add_column(column, justify="right" if column in right else "left", overflow="fold")
    for row in rows:
        table.add_row(*(cell(v) for v in row))
    console = Console()
    if not console.is_terminal:  # a pipe or a file gets every table at its natural width
        console = Console(width=1000)
    console.print(table)


def cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def moment(epoch: float | None) -> str | None:
    """Seconds since the epoch as a UTC time people read."""
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S")

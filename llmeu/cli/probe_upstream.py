"""`llmeu probe BASE_URL --model M`: qualify an upstream's stream before it enters the catalog.

    llmeu probe https://api.example.eu/v1 --model mistral-small --api-key-env EXAMPLE_KEY
    llmeu probe http://127.0.0.1:8080/v1 --model smollm2 --api-key-env LLMEU_API_KEY --yes --json
    llmeu probe http://127.0.0.1:8080/v1 --model fake-model --api responses --yes
    llmeu probe https://api.anthropic.com/v1 --model claude-x --api messages --api-key-env K

Makes eight small calls to `/chat/completions` (see `llmeu.probe.plan`), or
with `--api responses` seven to `/responses` (`llmeu.probe.responses_plan`),
with `--api messages` seven to Anthropic's `/messages` (`llmeu.probe.messages_plan`;
the key in `x-api-key`), and prints a table of checks —
transport, framing, content, usage, cancellation, errors, metadata — with the
evidence of every failure, and a suggested catalog entry. The calls and their
most output tokens are printed first and confirmed unless `--yes` (required
when not at a terminal). The key is read from the environment variable named
by `--api-key-env`, never from the command line; without it, from the
variables every `llmeu` command reads (`LLMEU_API_KEY`, else `OPENAI_API_KEY`
where it belongs to that URL: `llmeu.cli.gateway_address`), and the probe says
which one it used. An upstream that refuses the key (401 or 403) fails the
probe with its answer and no suggested catalog entry. Against llmeu itself,
the hung-up call's trace is looked up with the same key to check it was
recorded `cancelled`.

Exit status: 0 when no check failed, 1 when one did, 2 when not confirmed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import httpx
import yaml
from rich.console import Console
from rich.table import Table

from llmeu.cli.gateway_address import gateway_address
from llmeu.probe import messages_plan, plan, responses_plan
from llmeu.probe.plan import Report
from llmeu.protocol.messages_request import ANTHROPIC_VERSION

_APIS: dict[str, tuple[Any, str]] = {
    "chat": (plan, "/chat/completions"),
    "responses": (responses_plan, "/responses"),
    "messages": (messages_plan, "/messages"),
}
_STYLES = {"pass": "green", "warn": "yellow", "fail": "bold red", "n/a": "dim"}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("probe", help="check an upstream's stream, call by call")
    parser.add_argument("base_url", help="the OpenAI-compatible API, e.g. https://host/v1")
    parser.add_argument("--model", required=True, help="the model name the upstream knows")
    parser.add_argument("--api-key-env", help="the environment variable holding the API key")
    parser.add_argument(
        "--api",
        choices=list(_APIS),
        default="chat",
        help="the protocol to probe (chat)",
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per call (60)")
    parser.add_argument("--yes", action="store_true", help="make the calls without asking")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    base = args.base_url.rstrip("/")
    key = os.environ.get(args.api_key_env, "") if args.api_key_env else ""
    if args.api_key_env and not key:
        print(f"llmeu probe: {args.api_key_env} is not set", file=sys.stderr)
        return 2
    if not args.api_key_env:
        key = _key_from_environment(base)
    calls, path = _APIS[args.api]
    asked = (
        f"{calls.CALLS} calls to {base}{path} with model {args.model}, at most "
        f"{calls.MAX_OUTPUT_TOKENS} output tokens in all"
    )
    if not args.yes:
        if not sys.stdin.isatty():
            print(f"llmeu probe: {asked}; confirm with --yes", file=sys.stderr)
            return 2
        if input(f"{asked}. Go on? [y/N] ").strip().lower() not in ("y", "yes"):
            return 2
    bearer = {"authorization": f"Bearer {key}"} if key else {}
    headers = bearer
    if args.api == "messages":  # Anthropic's clients: the key in x-api-key, a pinned version
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        headers |= {"x-api-key": key} if key else {}
    with httpx.Client(base_url=base, headers=headers, timeout=args.timeout) as client:
        report = calls.probe(
            client, base, args.model, lambda trace_id: _recorded(client, trace_id, bearer)
        )
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
    elif report.refused_key is not None:
        print(
            f"llmeu probe: {base} refused the key ({report.refused_key}); no check could run "
            "and no catalog entry is suggested: name the key's variable with --api-key-env",
            file=sys.stderr,
        )
    else:
        _print(report)
    return 1 if report.failed else 0


def _key_from_environment(base: str) -> str:
    """The key `llmeu chat` would send to this URL (`LLMEU_API_KEY`, else `OPENAI_API_KEY`
    where it belongs there); which variable it came from is said, the key never is."""
    key = gateway_address(base, None, os.environ).api_key or ""
    if key:
        source = "LLMEU_API_KEY" if os.environ.get("LLMEU_API_KEY") == key else "OPENAI_API_KEY"
        print(f"llmeu probe: using the key in {source} (--api-key-env to choose)", file=sys.stderr)
    else:
        print("llmeu probe: no key (--api-key-env VAR, or LLMEU_API_KEY)", file=sys.stderr)
    return key


def _recorded(
    client: httpx.Client, trace_id: str, bearer: dict[str, str]
) -> tuple[str, float | None] | None:
    """How an llmeu gateway recorded a call (the probe's key may read its own traces)."""
    root = str(client.base_url).rstrip("/").removesuffix("/v1")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            response = client.get(f"{root}/v1/platform/traces/{trace_id}", headers=bearer)
        except httpx.HTTPError:
            return None
        if response.status_code != 200:
            return None
        trace = response.json()
        if trace.get("status") != "in_progress":
            return str(trace.get("status")), (trace.get("timings") or {}).get("finished_at")
        time.sleep(0.1)
    return "in_progress", None


def _print(report: Report) -> None:
    console = Console()
    table = Table(title=f"{report.base_url} — {report.model}", show_lines=False)
    for column in ("group", "check", "result", "detail"):
        table.add_column(column, overflow="fold")
    for check in report.checks:
        style = _STYLES[check.verdict]
        table.add_row(check.group, check.name, f"[{style}]{check.verdict}[/]", check.detail)
    console.print(table)
    for check in report.checks:
        if check.evidence and check.verdict in ("fail", "warn"):
            console.print(f"[bold]{check.group} / {check.name}[/] evidence:")
            for item in check.evidence:
                console.print(f"  {item}", markup=False)
    console.print("\nSuggested catalog entry (add provider, region, class, retention, prices):")
    console.print(
        yaml.safe_dump({"endpoints": [report.suggested_entry]}, sort_keys=False), markup=False
    )
    verdict = "[bold red]FAIL[/]" if report.failed else "[green]PASS[/]"
    console.print(
        f"{verdict}: {sum(c.verdict == 'fail' for c in report.checks)} failed, "
        f"{sum(c.verdict == 'warn' for c in report.checks)} warnings"
    )

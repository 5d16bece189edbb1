"""`llmeu usage`: requests per outcome, tokens and cost from the platform API.

    llmeu usage --group-by model --from 2026-11-01 --to 2026-12-01

With the admin key it covers every key (or one, `--key`); with a tenant key,
that key's own calls. `--from`/`--to` take an ISO-8601 date or time (UTC
unless it says otherwise) or seconds since the epoch; `--to` is exclusive.
Cancelled calls count in requests, tokens and cost, never as completed;
`est.` is how many calls have token counts the gateway estimated; `cached` how
many were answered from the answer cache (costing nothing upstream), and
`saved` what the calls that produced those answers cost. `model` is
the model that ran (calls no model ran for, such as rejected ones, share the
row `(no model ran)`); `requested_model` is the name the client asked for.
"""

from __future__ import annotations

import argparse
from typing import Any

from llmeu.cli.money import money
from llmeu.cli.platform_api import (
    PlatformClient,
    add_connection_options,
    print_json,
    print_table,
    runner,
)

GROUPS = ("day", "model", "requested_model", "endpoint", "key", "status", "sovereignty_class",
          "team")  # fmt: skip
NO_VALUE = {"model": "(no model ran)", "endpoint": "(no endpoint served)", "team": "(no team)"}
COUNTS = ("requests", "completed", "cancelled", "failed", "rejected", "interrupted")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("usage", help="requests, tokens and cost, grouped")
    parser.add_argument("--group-by", choices=GROUPS, default="day")
    parser.add_argument("--from", dest="since", metavar="TIME", help="from this time (inclusive)")
    parser.add_argument("--to", dest="until", metavar="TIME", help="until this time (exclusive)")
    parser.add_argument("--key", help="one key's usage (admin key only)")
    add_connection_options(parser)
    parser.set_defaults(func=runner(_usage))


def _usage(client: PlatformClient, args: argparse.Namespace) -> int:
    query = {"group_by": args.group_by, "from": args.since, "to": args.until, "key_id": args.key}
    usage = client.call("GET", "/v1/platform/usage", params=query)
    if args.json:
        print_json(usage)
        return 0
    group = args.group_by
    columns = (group, *COUNTS, "input tok", "output tok", "est.", "cost", "cached", "saved")
    rows = [_row(r.get(group) or NO_VALUE.get(group, "-"), r) for r in usage["data"]]
    rows.append(_row("total", usage["totals"]))
    print_table(columns, rows, right=columns[1:])
    return 0


def _row(label: object, counts: dict[str, Any]) -> tuple[Any, ...]:
    return (
        label, *(counts[c] for c in COUNTS), counts["input_tokens"], counts["output_tokens"],
        counts["estimated_requests"], money(counts["cost_eur"]), counts.get("cached", 0),
        money(counts.get("saved_eur", 0.0)),
    )  # fmt: skip

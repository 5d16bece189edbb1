"""`llmeu traces list|show`: the audit trail, from the platform API.

    llmeu traces list --status cancelled --limit 20
    llmeu traces show trc_…

`list` prints the newest traces first; when there are more, it prints the
`--cursor` for the next page on standard error. `show` prints one trace: its
timings, where it ran, its attempts, its tokens and cost, and the prompt and
output where the policy let the gateway store them.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from llmeu.cli.money import money
from llmeu.cli.platform_api import (
    PlatformClient,
    add_action,
    cell,
    moment,
    print_json,
    print_table,
)

STATUSES = ("completed", "cancelled", "failed", "rejected", "interrupted", "in_progress")
COLUMNS = ("id", "received", "status", "key", "model", "endpoint", "class", "TTFT ms",
           "in", "out", "cost")  # fmt: skip


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("traces", help="list traces, or show one")
    actions = parser.add_subparsers(dest="action", required=True)
    add_action(actions, "list", _list, help="newest traces first", arguments=_list_options)
    add_action(actions, "show", _show, help="one trace in full",
               arguments=lambda show: show.add_argument("trace_id"))  # fmt: skip


def _list_options(listing: argparse.ArgumentParser) -> None:
    listing.add_argument("--status", choices=STATUSES)
    listing.add_argument("--model", help="model asked for or used")
    listing.add_argument("--endpoint", help="endpoint id")
    listing.add_argument("--key", help="one key's traces (admin key only)")
    listing.add_argument("--from", dest="since", metavar="TIME", help="received from this time")
    listing.add_argument("--to", dest="until", metavar="TIME", help="received before this time")
    listing.add_argument("--limit", type=int, default=20, help="traces per page (1-500)")
    listing.add_argument("--cursor", help="the next page, as printed by the previous one")


def _list(client: PlatformClient, args: argparse.Namespace) -> int:
    page = client.call("GET", "/v1/platform/traces", params={
        "status": args.status, "model": args.model, "endpoint_id": args.endpoint,
        "key_id": args.key, "from": args.since, "to": args.until, "limit": args.limit,
        "cursor": args.cursor,
    })  # fmt: skip
    if args.json:
        print_json(page)
        return 0
    rows = []
    for t in page["data"]:
        routing, usage = t["routing"], t["usage"]
        rows.append((
            t["id"], moment(t["timings"]["received_at"]), t["status"], t["key_id"],
            routing["model_used"] or t["request_model"], routing["endpoint_id"],
            routing["sovereignty_class"], t["timings"]["ttft_ms"], usage["input_tokens"],
            _tokens(usage["output_tokens"], usage["estimated"]), money(usage["cost_eur"]),
        ))  # fmt: skip
    print_table(COLUMNS, rows, right=COLUMNS[7:])
    if page["has_more"]:
        print(f"more: --cursor {page['next_cursor']}", file=sys.stderr)
    return 0


def _tokens(count: int | None, estimated: bool) -> str:
    return "-" if count is None else f"~{count}" if estimated else str(count)


def _show(client: PlatformClient, args: argparse.Namespace) -> int:
    trace = client.call("GET", f"/v1/platform/traces/{args.trace_id}")
    if args.json:
        print_json(trace)
        return 0
    timings, routing, usage, error = (trace["timings"], trace["routing"], trace["usage"],
                                      trace["error"])  # fmt: skip
    fields: list[tuple[str, object]] = [
        ("status", trace["status"]), ("key", trace["key_id"]), ("route", trace["route"]),
        ("stream", trace["stream"]), ("model asked", trace["request_model"]),
        ("received", moment(timings["received_at"])),
        ("first token", moment(timings["first_token_at"])),
        ("finished", moment(timings["finished_at"])),
        ("TTFT ms", timings["ttft_ms"]), ("TPOT ms", timings["tpot_ms"]),
        *((name.replace("_", " "), value) for name, value in routing.items()),
        ("input tokens", usage["input_tokens"]),
        ("output tokens", _tokens(usage["output_tokens"], usage["estimated"])),
        ("cost", money(usage["cost_eur"])), ("finish reason", trace["finish_reason"]),
    ]  # fmt: skip
    if error is not None:
        fields += [("error", f"{error['http_status']} {error['code']}: {error['message']}")]
    print_table(("field", "value"), fields, title=trace["id"])
    if trace["attempts"]:
        print_table(
            ("endpoint", "provider", "outcome", "upstream status", "error"),
            [(a["endpoint_id"], a["provider"], a["outcome"], a["upstream_status"], a["error"])
             for a in trace["attempts"]],
            title="attempts",
        )  # fmt: skip
    if trace["excluded"]:
        excluded = [(x.get("endpoint_id"), x.get("reason")) for x in trace["excluded"]]
        print_table(("excluded endpoint", "reason"), excluded)
    content = trace["content"]
    if content["stored"]:
        print(f"prompt:\n{json.dumps(content['prompt'], indent=2, ensure_ascii=False)}")
        print(f"output:\n{content['completion']}")
        print(f"(stored until {moment(content['expires_at'])} UTC)")
    else:
        print(f"content: not stored (retention {cell(routing['retention'])})")
    return 0

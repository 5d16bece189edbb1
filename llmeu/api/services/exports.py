"""Exports a data-protection officer hands over, made from the configuration and the ledger.

For a period [`since`, `until`):

    records-of-processing.json / .md   GDPR Art. 30: per key (and its team), its declared
                                       purpose, the recipients (providers, their jurisdiction), the
                                       countries data went to, the retention on each route
                                       and the volumes
    subprocessors.csv                  every provider that received data in the period, with
                                       country, jurisdiction, class and certifications
    calls.jsonl                        the metadata of every trace (never content) and the
                                       team of its key, one JSON object per line, for a log
                                       archive
    admin-events.jsonl                 every administrative change, one JSON object per
                                       line, as `GET /v1/platform/admin-events` shows it
                                       (`llmeu.evidence.admin_events`)

Nothing here is written by hand: a recipient is a provider that served a call in the
period (an attempt that failed sent data too, so every attempt counts), its country and
class are what the trace recorded, and its jurisdiction and certifications are the
catalog's as applied now — `catalog: "unknown"` marks an endpoint no longer in the
catalog, rather than a guess. An MCP tool server an agent's tool call reached is a
recipient too (`kind: mcp_server`, from the configuration's `mcp_servers:`), beside
the model endpoints (`kind: endpoint`).
"""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from llmeu.ledger.admin_event_rows import event_view
from llmeu.ledger.api_keys import ApiKey
from llmeu.ledger.database import Row
from llmeu.protocol.json_codec import encoder
from llmeu.routing.catalog import Catalog, Endpoint
from llmeu.routing.tool_servers import ToolCatalog

EXPORTS = (
    "records-of-processing.json",
    "records-of-processing.md",
    "subprocessors.csv",
    "calls.jsonl",
)
ADMIN_EVENTS = "admin-events.jsonl"
"""Made from the ledger's `admin_events` alone (`admin_events_jsonl`), not from the calls."""


@dataclass(frozen=True, slots=True)
class Period:
    since: float
    until: float

    def describe(self) -> dict[str, str]:
        return {"from": _iso(self.since), "to": _iso(self.until)}


def _recipient(
    endpoint_id: str, provider: str, catalog: Catalog, call: dict[str, Any]
) -> dict[str, Any]:
    endpoint: Endpoint | None = catalog.get(endpoint_id)
    served_here = call.get("endpoint_id") == endpoint_id
    return {
        "provider": provider,
        "endpoint_id": endpoint_id,
        "country": endpoint.country if endpoint else None,
        "inference_region": call["inference_region"] if served_here else (
            endpoint.inference_region if endpoint else None
        ),
        "sovereignty_class": call["sovereignty_class"] if served_here else (
            endpoint.sovereignty_class.value if endpoint else None
        ),
        "jurisdiction": (endpoint.jurisdiction or None) if endpoint else None,
        "certifications": sorted(c.value for c in endpoint.certifications) if endpoint else [],
        "catalog": "current" if endpoint else "unknown",
        "kind": "endpoint",
    }  # fmt: skip


def _tool_recipient(call: dict[str, Any], tools: ToolCatalog) -> dict[str, Any]:
    server = tools.get(call["mcp_server"])
    return {
        "provider": call["provider"] or (server.provider if server else ""),
        "endpoint_id": call["mcp_server"],
        "country": server.country if server else None,
        "inference_region": None,
        "sovereignty_class": call["sovereignty_class"],
        "jurisdiction": (server.jurisdiction or None) if server else None,
        "certifications": sorted(c.value for c in server.certifications) if server else [],
        "catalog": "current" if server else "unknown",
        "kind": "mcp_server",
    }


def _recipients_of(
    call: dict[str, Any], catalog: Catalog, tools: ToolCatalog
) -> Iterable[dict[str, Any]]:
    if call.get("mcp_server"):  # a tool call reached its server (whatever its attempts)
        if call["attempts"]:
            yield _tool_recipient(call, tools)
        return
    seen = set()
    for attempt in call["attempts"]:
        endpoint_id = attempt.get("endpoint_id")
        if endpoint_id and endpoint_id not in seen:
            seen.add(endpoint_id)
            yield _recipient(endpoint_id, attempt.get("provider") or "", catalog, call)


def records_of_processing(
    calls: list[dict[str, Any]],
    keys: list[ApiKey],
    catalog: Catalog,
    period: Period,
    tools: ToolCatalog,
) -> dict[str, Any]:
    by_key: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for call in calls:
        by_key[call["key_id"]].append(call)
    known = {k.key_id: k for k in keys}
    activities = []
    for key_id in sorted(set(by_key) | {k.key_id for k in keys if k.revoked_at is None}):
        key = known.get(key_id)
        own = by_key.get(key_id, [])
        recipients: dict[str, dict[str, Any]] = {}
        routes: dict[tuple[str, str], int] = defaultdict(int)
        for call in own:
            for recipient in _recipients_of(call, catalog, tools):
                recipients.setdefault(recipient["endpoint_id"], recipient)
            site = call["endpoint_id"] or call.get("mcp_server")
            if site:
                routes[(site, call["retention"] or "")] += 1
        activities.append(
            {
                "key_id": key_id,
                "team_id": key.team_id if key else None,
                "name": key.name if key else None,
                "purpose": key.purpose if key else None,
                "policy_id": key.policy_id if key else None,
                "recipients": sorted(
                    recipients.values(), key=lambda r: (r["provider"], r["endpoint_id"])
                ),
                "countries": sorted({r["country"] for r in recipients.values() if r["country"]}),
                "retention_by_route": [
                    {"endpoint_id": e, "retention": r, "calls": n}
                    for (e, r), n in sorted(routes.items())
                ],
                "volumes": _volumes(own),
            }
        )
    return {
        "object": "records_of_processing",
        "period": period.describe(),
        "generated_from": "the gateway's configuration as applied and its ledger",
        "controller_note": "llmeu processes prompts on behalf of the key holder; fill in "
        "controller, DPO contact and legal basis, which a gateway cannot know",
        "activities": activities,
    }


def _volumes(calls: list[dict[str, Any]]) -> dict[str, Any]:
    statuses: dict[str, int] = defaultdict(int)
    for call in calls:
        statuses[call["status"]] += 1
    return {
        "calls": len(calls),
        "by_status": dict(sorted(statuses.items())),
        "input_tokens": sum(c["input_tokens"] or 0 for c in calls),
        "output_tokens": sum(c["output_tokens"] or 0 for c in calls),
        "cost_eur": round(sum(c["cost_eur"] or 0.0 for c in calls), 10),
    }


def records_markdown(records: dict[str, Any]) -> str:
    period = records["period"]
    lines = [
        "# Records of processing (GDPR Art. 30)",
        "",
        f"Period: {period['from']} to {period['to']} (end excluded). Generated from "
        f"{records['generated_from']}.",
        "",
        f"> {records['controller_note']}.",
        "",
    ]
    for activity in records["activities"]:
        volumes = activity["volumes"]
        lines += [
            f"## Key `{activity['key_id']}` — {activity['name'] or 'unnamed'}",
            "",
            f"- Purpose: {activity['purpose'] or 'not declared'}",
            f"- Policy: `{activity['policy_id']}`",
            f"- Countries data went to: {', '.join(activity['countries']) or 'none'}",
            f"- Volumes: {volumes['calls']} calls, {volumes['input_tokens']} input and "
            f"{volumes['output_tokens']} output tokens, EUR {volumes['cost_eur']:.6f}",
            "",
        ]
        if activity["recipients"]:
            lines += [
                "| recipient | endpoint | country | jurisdiction | class | certifications | kind |",
                "| --- | --- | --- | --- | --- | --- | --- |",
            ]
            lines += [
                f"| {r['provider']} | {r['endpoint_id']} | {r['country'] or '?'} | "
                f"{r['jurisdiction'] or '?'} | {r['sovereignty_class'] or '?'} | "
                f"{', '.join(r['certifications']) or '—'} | {r['kind']} |"
                for r in activity["recipients"]
            ]
            lines.append("")
        if activity["retention_by_route"]:
            lines.append("Retention on each route (the longest any party keeps content):")
            lines.append("")
            lines += [
                f"- `{r['endpoint_id']}`: {r['retention']} ({r['calls']} calls)"
                for r in activity["retention_by_route"]
            ]
            lines.append("")
    return "\n".join(lines)


def subprocessors_csv(calls: list[dict[str, Any]], catalog: Catalog, tools: ToolCatalog) -> str:
    found: dict[str, dict[str, Any]] = {}
    counts: dict[str, int] = defaultdict(int)
    for call in calls:
        for recipient in _recipients_of(call, catalog, tools):
            found.setdefault(recipient["endpoint_id"], recipient)
            counts[recipient["endpoint_id"]] += 1
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(
        ["provider", "endpoint_id", "country", "inference_region", "jurisdiction",
         "sovereignty_class", "certifications", "calls", "catalog", "kind"]
    )  # fmt: skip
    for endpoint_id, r in sorted(found.items(), key=lambda i: (i[1]["provider"], i[0])):
        writer.writerow(
            [r["provider"], endpoint_id, r["country"] or "", r["inference_region"] or "",
             r["jurisdiction"] or "", r["sovereignty_class"] or "",
             " ".join(r["certifications"]), counts[endpoint_id], r["catalog"], r["kind"]]
        )  # fmt: skip
    return out.getvalue()


def calls_jsonl(calls: list[dict[str, Any]], keys: list[ApiKey]) -> str:
    """One line per call, with the team its key is in (`team_id`, null for none)."""
    teams = {k.key_id: k.team_id for k in keys}
    return "".join(
        json.dumps({**c, "team_id": teams.get(c["key_id"])}, sort_keys=True, ensure_ascii=False)
        + "\n"
        for c in calls
    )


def admin_events_jsonl(rows: Iterable[Row]) -> str:
    """The events (rows of `all_events`, oldest first), one JSON object a line."""
    return "".join(encoder.encode(event_view(row)).decode() + "\n" for row in rows)


def render(
    name: str,
    calls: list[dict[str, Any]],
    keys: list[ApiKey],
    catalog: Catalog,
    period: Period,
    tools: ToolCatalog,
) -> tuple[str, str]:
    """(content type, text) of one export; `tools`: the MCP tool servers of the catalog."""
    if name == "calls.jsonl":
        return "application/x-ndjson", calls_jsonl(calls, keys)
    if name == "subprocessors.csv":
        return "text/csv; charset=utf-8", subprocessors_csv(calls, catalog, tools)
    records = records_of_processing(calls, keys, catalog, period, tools)
    if name == "records-of-processing.md":
        return "text/markdown; charset=utf-8", records_markdown(records)
    return "application/json", json.dumps(records, indent=2, ensure_ascii=False) + "\n"


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat().replace("+00:00", "Z")

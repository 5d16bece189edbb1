"""The endpoint catalog as the platform API shows it: what the configuration says of each
endpoint, its health, and the policies that admit it."""

from __future__ import annotations

from typing import Any

from llmeu.api.services.policies import PolicyBook
from llmeu.api.services.upstreams import Upstreams
from llmeu.routing.catalog import Endpoint

_VARYING = ("health", "configured", "unavailable_reason", "admitted_by")
"""What of a row is not the configuration's (a reload's event leaves it out)."""


def endpoint_rows(
    upstreams: Upstreams, policies: PolicyBook, *, circuit_keys: bool
) -> list[dict[str, Any]]:
    """Every endpoint's row; with `circuit_keys`, also which keys' calls make up a failing
    streak or opened its circuit."""
    data = []
    for endpoint in upstreams.catalog.endpoints:
        row = endpoint_row(endpoint, upstreams, policies)
        if circuit_keys:
            keys = upstreams.health(endpoint, keys=True)
            row["circuit_keys"] = {
                "failing": keys.get("failing_keys", []),
                "opened_by": keys.get("opened_by", []),
            }
        data.append(row)
    return data


def endpoint_config(e: Endpoint, upstreams: Upstreams, policies: PolicyBook) -> dict[str, Any]:
    """What the configuration says of an endpoint (not its health)."""
    row = endpoint_row(e, upstreams, policies)
    for varying in _VARYING:
        row.pop(varying)
    return row


def endpoint_row(e: Endpoint, upstreams: Upstreams, policies: PolicyBook) -> dict[str, Any]:
    return {
        "endpoint_id": e.endpoint_id,
        "provider": e.provider,
        "kind": e.kind.value,
        "model": e.model,
        "model_version": e.model_version,
        "aliases": list(e.aliases),
        **where_it_runs(e),
        "retention": e.retention.text,
        "price_eur_per_mtok": {"input": e.prices.input, "output": e.prices.output},
        "priority": e.priority,
        "capabilities": sorted([*(c.value for c in e.capabilities), *e.hosted_tools]),
        "configured": e.endpoint_id not in upstreams.unavailable,
        "unavailable_reason": upstreams.unavailable_reason(e.endpoint_id),
        "health": upstreams.health(e),
        "admitted_by": sorted(
            policy_id for policy_id, policy in policies.policies.items() if policy.admits(e)
        ),
    }


def where_it_runs(e: Endpoint) -> dict[str, Any]:
    """An endpoint's sovereignty fields, as the platform API and `GET /v1/models` show them."""
    return {
        "inference_region": e.inference_region,
        "country": e.country,
        "jurisdiction": e.jurisdiction or None,
        "certifications": sorted(c.value for c in e.certifications),
        "seal": e.seal,
        "sovereignty_class": e.sovereignty_class.value,
    }

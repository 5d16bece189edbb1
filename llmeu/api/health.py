"""What `/healthz` and `/readyz` say of a gateway: no key, no tenant data."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llmeu.api.gateway import Gateway


def health(gateway: Gateway) -> tuple[bool, dict[str, Any]]:
    """Alive, and the state an operator wants at a glance (no key, no tenant data)."""
    ledger = gateway.ledger
    body = {
        "status": "ok" if gateway.calls.accepting else "shutting_down",
        "ledger": "ok" if ledger.healthy else "degraded",
        "ledger_queue": ledger.depth,
        "limits": gateway.limits.state.status,
        "instance_id": gateway.instance_id,
    }
    return gateway.calls.accepting, body


def readiness(gateway: Gateway) -> tuple[bool, dict[str, Any]]:
    """Ready to serve: started (configuration and local models loaded), accepting calls,
    and the ledger's database answering."""
    checks = {
        "configuration": "ok" if gateway.loaded else "loading",
        "ledger": "ok" if gateway.ledger.healthy and gateway.loaded else "unavailable",
        "accepting": "ok" if gateway.calls.accepting else "shutting_down",
    }
    ready = all(value == "ok" for value in checks.values())
    # Limits that cannot be checked degrade the gateway but leave it serving (as each
    # policy's `limits_fail` says), so they do not make it unready.
    body = {"status": "ready" if ready else "not_ready", **checks}
    return ready, {**body, "limits": gateway.limits.state.status}

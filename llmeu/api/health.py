"""What `/healthz` and `/readyz` say of a gateway: no key, no tenant data."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from llmeu.api.call.door import Calls
from llmeu.ledger.writer import Ledger
from llmeu.limits import Limiter


@dataclass(frozen=True, slots=True)
class Health:
    calls: Calls
    ledger: Ledger
    limits: Limiter
    instance_id: str
    loaded: Callable[[], bool]
    """Whether the gateway has started: configuration and local models loaded."""
    down: Callable[[], dict[str, str]] = dict
    """The endpoints whose process is down now (the local model host), with why."""

    def alive(self) -> tuple[bool, dict[str, Any]]:
        """Alive, and the state an operator wants at a glance (no key, no tenant data)."""
        accepting = self.calls.accepting
        body = {
            "status": "ok" if accepting else "shutting_down",
            "ledger": "ok" if self.ledger.healthy else "degraded",
            "ledger_queue": self.ledger.depth,
            "limits": self.limits.state.status,
            "instance_id": self.instance_id,
        }
        return accepting, body

    def ready(self) -> tuple[bool, dict[str, Any]]:
        """Ready to serve: started (configuration and local models loaded), accepting calls,
        and the ledger's database answering."""
        loaded = self.loaded()
        checks = {
            "configuration": "ok" if loaded else "loading",
            "ledger": "ok" if self.ledger.healthy and loaded else "unavailable",
            "accepting": "ok" if self.calls.accepting else "shutting_down",
        }
        ready = all(value == "ok" for value in checks.values())
        # Limits that cannot be checked degrade the gateway but leave it serving (as each
        # policy's `limits_fail` says), so they do not make it unready.
        body = {"status": "ready" if ready else "not_ready", **checks}
        # Likewise an endpoint whose process is down (the local model host, while it is
        # restarted): the others serve, and its calls fail over or get a 503.
        down = self.down()
        return ready, {**body, "limits": self.limits.state.status,
                       **({"unavailable_endpoints": down} if down else {})}  # fmt: skip

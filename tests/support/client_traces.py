"""Reading a gateway's traces through its platform API, as an operator would."""

from __future__ import annotations

import time
from typing import Any

import httpx

from tests.support.processes import Gateway


def read_trace(gateway: Gateway, trace_id: str) -> dict[str, Any]:
    response = httpx.get(
        f"{gateway.base_url}/platform/traces/{trace_id}",
        headers={"authorization": f"Bearer {gateway.admin_key}"},
        timeout=10,
    )
    response.raise_for_status()
    trace: dict[str, Any] = response.json()
    return trace


def settled_trace(gateway: Gateway, trace_id: str, timeout: float = 30) -> dict[str, Any]:
    """The trace once its call is over: a hang-up is recorded when the gateway notices it."""
    deadline = time.monotonic() + timeout
    while True:
        trace = read_trace(gateway, trace_id)
        if trace["status"] in ("completed", "cancelled", "failed", "rejected", "interrupted"):
            return trace
        if time.monotonic() > deadline:
            raise AssertionError(f"trace {trace_id} still {trace['status']!r}")
        time.sleep(0.02)

"""What every inference surface shares: the door, the policies, the upstreams, the ledger.

`Calls` is built once by the gateway and handed to each inference route;
`Calls.open` starts one call's lifecycle (`llmeu.api.call.lifecycle.Call`). It also
knows the calls in flight, so that a shutdown can wait for them to record
how they ended.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from llmeu.api.call.lifecycle import Call
from llmeu.api.http.asgi import Request
from llmeu.api.http.error_responses import OPENAI_ERRORS, ErrorShape
from llmeu.api.services.auth import KeyRing
from llmeu.api.services.policies import PolicyBook
from llmeu.api.services.receipt_issuer import Receipts
from llmeu.api.services.upstreams import Upstreams
from llmeu.ledger.writer import Ledger
from llmeu.limits import Limiter
from llmeu.observability.hooks import Observers
from llmeu.routing.durations import Duration
from llmeu.routing.policy import DEFAULT_KEEP_METADATA


class Calls:
    """One per gateway; its collaborators are shared by every call."""

    def __init__(
        self,
        *,
        keys: KeyRing,
        policies: PolicyBook,
        upstreams: Upstreams,
        ledger: Ledger,
        limits: Limiter,
        observers: Observers,
        instance_id: str,
        max_body_bytes: int,
        receipts: Receipts,
        keep_metadata: Duration = DEFAULT_KEEP_METADATA,
    ):
        self.keys = keys
        self.policies = policies
        self.upstreams = upstreams
        self.ledger = ledger
        self.limits = limits
        self.observers = observers
        self.instance_id = instance_id
        self.max_body_bytes = max_body_bytes
        self.keep_metadata = keep_metadata
        self.receipts = receipts
        self.accepting = True
        self.inflight: dict[str, asyncio.Task[Any]] = {}

    def open(
        self,
        request: Request,
        route: str,
        *,
        shape: ErrorShape = OPENAI_ERRORS,
        credentials: Callable[[Request], str | None] | None = None,
    ) -> Call:
        """A call on `request`, entered with `async with`; `credentials` finds the API key
        (default: the `Authorization` header)."""
        return Call(self, request, route, shape, credentials)

    async def settle_inflight(self, timeout: float) -> None:
        """Wait (at most `timeout`) for the calls in flight to record how they ended."""
        if self.inflight:
            await asyncio.wait(set(self.inflight.values()), timeout=timeout)

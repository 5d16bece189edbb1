"""Trying the route plan's endpoints: one attempt after another, each one recorded.

`Attempts.run` runs what a surface asks of an endpoint (`asks.Operation`) on
the plan's endpoints in order, falling back only as `llmeu.routing.fallback`
allows. Every attempt is on the trace whatever its outcome, and the outcome
counts towards the endpoint's health (the circuit breaker). The time spent
inside attempts is the upstream's share of the call, which the overhead
headers leave out.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

from llmeu.api.call.asks import Operation
from llmeu.api.call.trace import TraceRecorder
from llmeu.api.services.upstreams import Upstreams
from llmeu.calls.hangup import Hangup
from llmeu.errors import ClientDisconnected, UnsupportedByEndpoint, UpstreamError
from llmeu.routing.catalog import Endpoint
from llmeu.routing.fallback import run_with_fallback
from llmeu.routing.router import RoutePlan

T = TypeVar("T")


class Attempts:
    """One call's attempts."""

    __slots__ = ("_hangup", "_key_id", "_trace", "seconds", "started")

    def __init__(self, trace: TraceRecorder, hangup: Hangup, key_id: str):
        self._trace = trace
        self._hangup = hangup
        self._key_id = key_id
        self.seconds = 0.0
        """Spent inside attempts, for the overhead headers."""
        self.started: Callable[[Endpoint], None] | None = None
        """Told of each attempt as it starts (the hosted tools its endpoint drops)."""

    async def run(
        self, plan: RoutePlan, upstreams: Upstreams, operation: Operation[T]
    ) -> tuple[Endpoint, T]:
        """The first endpoint's answer that did not fail over to the next."""
        return await run_with_fallback(plan, lambda ep: self._attempt(upstreams, ep, operation))

    async def _attempt(
        self, upstreams: Upstreams, endpoint: Endpoint, operation: Operation[T]
    ) -> T:
        """Run one endpoint; the attempt and the endpoint's health are recorded either way."""
        hangup, trace = self._hangup, self._trace
        hangup.check()
        provider = upstreams.provider(endpoint)
        upstreams.attempt_started(endpoint, self._key_id)
        attempt = trace.attempt_started(endpoint)
        if self.started is not None:
            self.started(endpoint)
        waiting = time.perf_counter()
        try:
            result = await operation(provider, hangup)
        except UnsupportedByEndpoint as error:
            trace.attempt_refused(attempt, endpoint, error)
            raise
        except UpstreamError as error:
            upstreams.scrub(endpoint, error)
            trace.attempt_failed(attempt, error)
            upstreams.attempt_failed(endpoint, error, self._key_id)
            raise
        except (ClientDisconnected, asyncio.CancelledError):
            trace.attempt_cancelled(attempt)
            raise
        finally:
            self.seconds += time.perf_counter() - waiting
        upstreams.attempt_served(endpoint)
        trace.attempt_served(attempt, endpoint)
        return result

"""The endpoints of a call's route plan, tried in turn until one answers.

Each attempt runs one endpoint's provider; whatever its outcome, it is
recorded on the trace and in the endpoint's health (its circuit breaker), and
an upstream's error loses the credentials it quotes before anyone sees it.
Falling back to the next endpoint happens only inside the plan, which holds
only what the policy admits (`llmeu.routing.fallback`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from llmeu.api.call.trace import TraceRecorder
from llmeu.api.services.upstreams import Upstreams
from llmeu.calls.hangup import Hangup
from llmeu.errors import ClientDisconnected, UnsupportedByEndpoint, UpstreamError
from llmeu.providers.base import Provider
from llmeu.routing.catalog import Endpoint
from llmeu.routing.fallback import run_with_fallback
from llmeu.routing.router import RoutePlan

T = TypeVar("T")

Operation = Callable[[Provider, Hangup], Awaitable[T]]
"""What one attempt asks of an endpoint's provider (`llmeu.api.call.asks` makes them)."""


class Attempts:
    """One call's attempts on its plan; `seconds` is the time spent inside them (the rest of
    the call's time is the gateway's overhead, which the response headers say)."""

    __slots__ = ("_hangup", "_key_id", "_plan", "_trace", "_upstreams", "seconds")

    def __init__(
        self,
        plan: RoutePlan,
        upstreams: Upstreams,
        trace: TraceRecorder,
        key_id: str,
        hangup: Hangup,
    ):
        self._plan = plan
        self._upstreams = upstreams
        self._trace = trace
        self._key_id = key_id
        self._hangup = hangup
        self.seconds = 0.0

    async def first_answer(self, operation: Operation[T]) -> tuple[Endpoint, T]:
        """The first endpoint of the plan that answers, and its answer."""
        return await run_with_fallback(self._plan, lambda ep: self._attempt(ep, operation))

    async def _attempt(self, endpoint: Endpoint, operation: Operation[T]) -> T:
        """Run one endpoint; the attempt and the endpoint's health are recorded either way."""
        hangup, trace, upstreams = self._hangup, self._trace, self._upstreams
        hangup.check()
        provider = upstreams.provider(endpoint)
        upstreams.attempt_started(endpoint, self._key_id)
        attempt = trace.attempt_started(endpoint)
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

"""Trying candidates in order: fallback only within the plan, only for retryable failures.

The loop is generic over what an attempt does, so the guarantee — the
endpoint that serves is always one the policy admitted, and a call fails only
when every admitted endpoint failed or a failure was not retryable — is
testable without a network.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from llmeu.errors import UpstreamError
from llmeu.routing.catalog import Endpoint
from llmeu.routing.router import RoutePlan

T = TypeVar("T")


async def run_with_fallback(
    plan: RoutePlan,
    attempt: Callable[[Endpoint], Awaitable[T]],
) -> tuple[Endpoint, T]:
    """Run `attempt` on each candidate until one succeeds.

    A non-retryable failure (an upstream 4xx describing the request) or a
    policy without fallback ends the call at the first failure; otherwise the
    last failure is raised once every candidate has failed.
    """
    last: UpstreamError | None = None
    try:
        for endpoint in plan.candidates:
            try:
                return endpoint, await attempt(endpoint)
            except UpstreamError as error:
                if not error.retryable or not plan.policy.fallback:
                    raise
                last = error
        assert last is not None, "a route plan always has at least one candidate"
        if len(plan.candidates) > 1:
            count = len(plan.candidates)
            last.message = f"all {count} admitted endpoints failed; last: {last.message}"
            last.args = (last.message,)
        raise last
    finally:
        # A failure's traceback holds this frame: were the frame to keep the failure, the
        # call's objects would stay alive in a reference cycle until the collector ran.
        last = None

"""The steps every inference handler shares: route a call, refuse it, reach an upstream.

A handler reads parse → `route` → `reach` → record → respond; what differs
between chat and embeddings (the body, the provider method, the response) stays
in the handler.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from llmeu.api.calls import Call, durable, shutting_down
from llmeu.api.errors import send_error
from llmeu.api.http import DisconnectWatch, Request
from llmeu.errors import ApiError, UpstreamError
from llmeu.ledger.records import CallStatus
from llmeu.protocol.wire import RoutingRequest
from llmeu.providers.base import Provider
from llmeu.routing.catalog import Capability, Endpoint
from llmeu.routing.fallback import run_with_fallback
from llmeu.routing.router import plan_route

T = TypeVar("T")


def route(
    call: Call,
    request: Request,
    model: str,
    needs: frozenset[Capability],
    narrowing: object,
) -> None:
    """The call's effective policy and route plan; raises the ApiError that refuses it."""
    gw = call.gw
    policy = gw.policies.effective(
        call.key.policy_id,
        narrowing if isinstance(narrowing, RoutingRequest) else None,
        request.header(b"x-llmeu-policy"),
    )
    call.governed_by(policy)
    plan = plan_route(
        gw.config.catalog,
        model,
        needs,
        policy,
        unavailable=gw.unavailable,
        health=gw.breaker.snapshot(time.monotonic()),
    )
    call.routed(plan)


async def refuse(call: Call, request: Request, error: ApiError) -> None:
    """Record the call as rejected, then answer the error."""
    await durable(call.gw, call.reject(error))
    await send_error(request.send, error, trace_id=call.trace_id)


def abandoned(call: Call) -> None:
    """The request ended before the call reached an upstream: a hang-up while the body
    was still arriving (`cancelled`) or the gateway shutting down (`interrupted`)."""
    if call.gw.interrupting:
        call.finish(CallStatus.INTERRUPTED, error=shutting_down())
    else:
        call.finish(CallStatus.CANCELLED, http_status=499)


async def reach(
    call: Call,
    request: Request,
    run: Callable[[Provider], Awaitable[T]],
    *,
    hangup_input: Callable[[], int] | None = None,
) -> tuple[Endpoint, T] | None:
    """Run the plan's endpoints in order (fallback inside the policy) until one answers.

    Returns the endpoint and its answer, or None when the call has already
    ended and been recorded: the client hung up (`cancelled`; then
    `hangup_input()`, if given, is counted as estimated input tokens), the
    gateway is shutting down (`interrupted`, answered 503), or every attempt
    failed (`failed`, answered with the last upstream error).
    """
    gw = call.gw
    assert call.plan is not None, "route() the call first"
    watch = DisconnectWatch(request.receive)
    watch.arm()
    call.begin()
    try:
        result = await run_with_fallback(
            call.plan, lambda ep: call.attempt(ep, lambda: run(gw.providers[ep.endpoint_id]))
        )
        watch.disarm()
        return result
    except asyncio.CancelledError:
        if not (watch.disconnected or gw.interrupting):
            raise
        watch.handled()
        if hangup_input is not None:
            call.account(hangup_input(), 0, True)
        if watch.disconnected:
            await durable(gw, call.finish(CallStatus.CANCELLED, http_status=499))
            return None
        stopped = shutting_down()
        await durable(gw, call.finish(CallStatus.INTERRUPTED, error=stopped))
        await send_error(request.send, stopped, trace_id=call.trace_id)
        return None
    except UpstreamError as error:
        watch.disarm()
        await durable(gw, call.finish(CallStatus.FAILED, error=error))
        await send_error(request.send, error, trace_id=call.trace_id, routing=call.error_routing())
        return None
    finally:
        watch.close()

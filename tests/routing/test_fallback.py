"""Trying candidates in order: fallback only for retryable failures, only within the plan."""

from __future__ import annotations

import pytest

from llmeu.errors import (
    InvalidRequest,
    UpstreamError,
    UpstreamRejected,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from llmeu.routing.catalog import Endpoint
from llmeu.routing.fallback import run_with_fallback
from llmeu.routing.policy import Policy
from llmeu.routing.router import RoutePlan
from tests.routing.factories import endpoint, policy

OK = "ok"
FAILURES: dict[str, Exception] = {
    "503": UpstreamUnavailable("upstream answered 503", upstream_status=503),
    "429": UpstreamUnavailable("upstream answered 429", upstream_status=429),
    "connect": UpstreamUnavailable("connection refused"),
    "timeout": UpstreamTimeout("no first token within 60 s"),
    "401": UpstreamError("upstream answered 401", upstream_status=401, retryable=True),
    "400": UpstreamRejected("upstream answered 400", upstream_status=400),
    "invalid": InvalidRequest("the local model refuses tools", param="tools"),
}


def plan(n: int, pol: Policy) -> RoutePlan:
    return RoutePlan("m", pol, tuple(endpoint(f"e{i}") for i in range(n)), ())


async def run(outcomes: list[str], pol: Policy | None = None) -> tuple[list[str], object]:
    tried: list[str] = []

    async def attempt(ep: Endpoint) -> str:
        tried.append(ep.endpoint_id)
        outcome = outcomes[len(tried) - 1]
        if outcome != OK:
            raise FAILURES[outcome]
        return f"served by {ep.endpoint_id}"

    try:
        served, result = await run_with_fallback(plan(len(outcomes), pol or policy()), attempt)
    except Exception as error:
        return tried, error
    assert result == f"served by {served.endpoint_id}"
    return tried, served.endpoint_id


# (outcome of each candidate in order, tried, served endpoint or the failure raised)
CASES = [
    pytest.param([OK, OK], ["e0"], "e0", id="first-serves"),
    pytest.param(["503", OK], ["e0", "e1"], "e1", id="503-falls-back"),
    pytest.param(["429", OK], ["e0", "e1"], "e1", id="429-falls-back"),
    pytest.param(["connect", OK], ["e0", "e1"], "e1", id="connect-error-falls-back"),
    pytest.param(["timeout", OK], ["e0", "e1"], "e1", id="timeout-falls-back"),
    pytest.param(["401", OK], ["e0", "e1"], "e1", id="credentials-fall-back"),
    pytest.param(["503", "timeout", OK], ["e0", "e1", "e2"], "e2", id="two-failures-then-served"),
    pytest.param(["400", OK], ["e0"], "400", id="400-is-not-retried"),
    pytest.param(["503", "400", OK], ["e0", "e1"], "400", id="400-after-a-fallback-stops"),
    pytest.param(["invalid", OK], ["e0"], "invalid", id="gateway-refusal-is-not-retried"),
    pytest.param(["503", "timeout"], ["e0", "e1"], "timeout", id="all-fail-raises-the-last"),
    pytest.param(["503"], ["e0"], "503", id="single-candidate-fails"),
]  # fmt: skip


@pytest.mark.parametrize(("outcomes", "tried", "expected"), CASES)
async def test_fallback(outcomes: list[str], tried: list[str], expected: str) -> None:
    attempted, result = await run(outcomes)
    assert attempted == tried
    if expected in FAILURES:
        assert result is FAILURES[expected]
    else:
        assert result == expected


async def test_a_policy_without_fallback_stops_at_the_first_failure() -> None:
    attempted, result = await run(["503", OK], policy(fallback=False))
    assert attempted == ["e0"]
    assert result is FAILURES["503"]


async def test_the_final_failure_says_how_many_endpoints_failed() -> None:
    error = UpstreamUnavailable("upstream answered 502")

    async def attempt(ep: Endpoint) -> str:
        raise error

    with pytest.raises(UpstreamUnavailable) as caught:
        await run_with_fallback(plan(3, policy()), attempt)
    assert caught.value.message == "all 3 admitted endpoints failed; last: upstream answered 502"
    assert str(caught.value) == caught.value.message

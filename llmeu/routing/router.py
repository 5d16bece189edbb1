"""The routing decision: alias → candidates → policy filter (with reasons) → order.

`plan_route` is pure: the caller supplies which endpoints lack credentials and
each endpoint's health, and gets back the ordered candidates plus every
excluded endpoint with the rule that excluded it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum

from llmeu.errors import InvalidRequest, NoCompliantRoute, NotFound, UpstreamUnavailable
from llmeu.routing.catalog import Capability, Catalog, Endpoint
from llmeu.routing.policy import Policy


class Health(IntEnum):
    """Circuit-breaker view of an endpoint; lower sorts first."""

    HEALTHY = 0
    PROBING = 1
    OPEN = 2


@dataclass(frozen=True, slots=True)
class Exclusion:
    endpoint_id: str
    rule: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"endpoint_id": self.endpoint_id, "rule": self.rule, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class RoutePlan:
    model: str
    policy: Policy
    candidates: tuple[Endpoint, ...]
    excluded: tuple[Exclusion, ...]


def plan_route(
    catalog: Catalog,
    model: str,
    needs: frozenset[Capability],
    policy: Policy,
    *,
    unavailable: Mapping[str, str],
    health: Mapping[str, Health],
) -> RoutePlan:
    """Candidates the policy admits, best first; raises when none can be tried."""
    serving = catalog.serving(model)
    if not serving:
        raise NotFound(f"The model `{model}` does not exist", param="model", code="model_not_found")
    capable = [e for e in serving if needs <= e.capabilities]
    if not capable:
        offered = frozenset().union(*(e.capabilities for e in serving))
        missing = sorted(needs - offered)
        param = "tools" if Capability.TOOLS in missing else "model"
        raise InvalidRequest(
            f"The model `{model}` does not support {', '.join(missing)}",
            param=param,
            code="unsupported_capability",
        )
    excluded: list[Exclusion] = []
    admitted: list[Endpoint] = []
    for endpoint in capable:
        exclusion = assess(endpoint, policy, unavailable)
        if exclusion is None:
            admitted.append(endpoint)
        else:
            excluded.append(exclusion)
    if not admitted:
        raise no_compliant_route(model, policy, excluded)
    usable = [e for e in admitted if health.get(e.endpoint_id, Health.HEALTHY) != Health.OPEN]
    if not usable:
        raise UpstreamUnavailable(
            f"every endpoint for `{model}` that policy `{policy.policy_id}` admits is failing "
            f"(circuit open): {', '.join(e.endpoint_id for e in admitted)}",
            retryable=True,
        )
    for endpoint in admitted:
        if endpoint not in usable:
            excluded.append(Exclusion(endpoint.endpoint_id, "health", "circuit open"))
    usable.sort(key=lambda e: try_order(e, health))
    return RoutePlan(model, policy, tuple(usable), tuple(excluded))


def assess(endpoint: Endpoint, policy: Policy, unavailable: Mapping[str, str]) -> Exclusion | None:
    """Why `endpoint` cannot serve under `policy`, or None when it can.

    The policy's rule comes first; an endpoint the policy admits but that
    cannot be called (its API-key variable is unset, local models are off)
    is excluded by the rule `unavailable`.
    """
    exclusion = policy.exclusion(endpoint)
    if exclusion is not None:
        return Exclusion(endpoint.endpoint_id, *exclusion)
    reason = unavailable.get(endpoint.endpoint_id)
    if reason is not None:
        return Exclusion(endpoint.endpoint_id, "unavailable", reason)
    return None


def try_order(endpoint: Endpoint, health: Mapping[str, Health]) -> tuple[int, Health, float]:
    """Sort key of the candidates: priority (lower first), then health, then price."""
    return (
        endpoint.priority,
        health.get(endpoint.endpoint_id, Health.HEALTHY),
        endpoint.prices.input + endpoint.prices.output,
    )


def no_compliant_route(model: str, policy: Policy, excluded: list[Exclusion]) -> NoCompliantRoute:
    reasons = "; ".join(f"{x.endpoint_id}: {x.reason}" for x in excluded)
    return NoCompliantRoute(
        f"No endpoint for `{model}` satisfies policy `{policy.policy_id}`: {reasons}",
        param="model",
        details=[x.as_dict() for x in excluded],
    )

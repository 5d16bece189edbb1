"""The endpoints a call can reach: the catalog, their providers, and their health.

Built once by the gateway. Routing itself is pure (`llmeu.routing.router`);
this adds what it needs from the running gateway — which endpoints cannot be
called and why, and each endpoint's circuit-breaker state right now.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from llmeu.errors import UpstreamError
from llmeu.providers.base import Provider
from llmeu.routing.breaker import CircuitBreaker
from llmeu.routing.catalog import Capability, Catalog, Endpoint
from llmeu.routing.policy import Policy
from llmeu.routing.router import RoutePlan, plan_route


class Upstreams:
    __slots__ = ("breaker", "catalog", "providers", "unavailable")

    def __init__(
        self,
        catalog: Catalog,
        providers: dict[str, Provider],
        unavailable: dict[str, str],
        breaker: CircuitBreaker,
    ):
        self.catalog = catalog
        self.providers = providers
        self.unavailable = unavailable  # endpoint id → why it cannot be called
        self.breaker = breaker

    def plan(self, model: str, needs: frozenset[Capability], policy: Policy) -> RoutePlan:
        """The candidates `policy` admits, best first; raises the ApiError that refuses the call."""
        health = self.breaker.snapshot(time.monotonic())
        return plan_route(
            self.catalog, model, needs, policy, unavailable=self.unavailable, health=health
        )

    def provider(self, endpoint: Endpoint) -> Provider:
        return self.providers[endpoint.endpoint_id]

    def attempt_started(self, endpoint: Endpoint) -> None:
        self.breaker.attempt_started(endpoint.endpoint_id, time.monotonic())

    def attempt_failed(self, endpoint: Endpoint, error: UpstreamError) -> None:
        if error.retryable:
            self.breaker.failed(endpoint.endpoint_id, time.monotonic())

    def attempt_served(self, endpoint: Endpoint) -> None:
        self.breaker.succeeded(endpoint.endpoint_id)

    def health(self, endpoint: Endpoint) -> dict[str, Any]:
        return self.breaker.describe(endpoint.endpoint_id, time.monotonic())

    def callable(self) -> Mapping[str, Endpoint]:
        """The endpoints that can be called (credentials set, provider started)."""
        return {e.endpoint_id: e for e in self.catalog.endpoints if e.endpoint_id in self.providers}

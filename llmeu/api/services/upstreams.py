"""The endpoints a call can reach: the catalog, their providers, and their health.

Built once by the gateway. Routing itself is pure (`llmeu.routing.router`);
this adds what it needs from the running gateway — which endpoints cannot be
called and why, and each endpoint's circuit-breaker state right now.
"""

from __future__ import annotations

import time
from typing import Any

from llmeu.calls.hangup import Hangup
from llmeu.calls.request import ChatRequest
from llmeu.credentials import redact_credentials
from llmeu.errors import ApiError, UpstreamError
from llmeu.providers.base import Provider
from llmeu.routing.breaker import CircuitBreaker, failure_kind
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

    def scrub(self, endpoint: Endpoint, error: ApiError) -> None:
        """Take every credential out of an error that came from the endpoint's upstream,
        before it reaches a tenant, a trace or a log (`llmeu.credentials`)."""
        provider = self.providers.get(endpoint.endpoint_id)
        error.message = redact_credentials(error.message, provider.secrets if provider else ())
        error.args = (error.message,)

    async def count_tokens(self, endpoint: Endpoint, chat: ChatRequest) -> int | None:
        """The prompt's input tokens as the endpoint's model counts them (None: it cannot).
        Counting is not a call: nothing to hang up on, no attempt recorded."""
        return await self.provider(endpoint).count_tokens(chat, Hangup())

    def attempt_started(self, endpoint: Endpoint, key_id: str) -> None:
        self.breaker.attempt_started(endpoint.endpoint_id, time.monotonic(), key_id=key_id)

    def attempt_failed(self, endpoint: Endpoint, error: UpstreamError, key_id: str) -> None:
        """A retryable failure counts towards the endpoint's circuit, as its kind says: one
        tenant's 5xx alone does not open it for everyone (`routing.breaker`)."""
        if error.retryable:
            self.breaker.failed(
                endpoint.endpoint_id, time.monotonic(), kind=failure_kind(error), key_id=key_id
            )

    def attempt_served(self, endpoint: Endpoint) -> None:
        self.breaker.succeeded(endpoint.endpoint_id)

    def health(self, endpoint: Endpoint, *, keys: bool = False) -> dict[str, Any]:
        """The endpoint's circuit; with `keys`, the ids of the keys whose calls opened it
        (tenant data: the admin's view only)."""
        return self.breaker.describe(endpoint.endpoint_id, time.monotonic(), keys=keys)

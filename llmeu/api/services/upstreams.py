"""The endpoints a call can reach: the catalog, their providers, and their health.

Built by the gateway at start and at each reload (`ProviderBuilder`: a provider
per endpoint that can be called; `start_providers`, `retire_providers`).
Routing itself is pure (`llmeu.routing.router`); this adds what it needs from
the running gateway — which endpoints cannot be called and why, and each
endpoint's circuit-breaker state right now.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from llmeu.calls.hangup import Hangup
from llmeu.calls.request import ChatRequest
from llmeu.config import Settings
from llmeu.credentials import redact_credentials
from llmeu.errors import ApiError, ConfigError, UpstreamError
from llmeu.providers.base import Provider
from llmeu.providers.host_link import HostLink, host_limits
from llmeu.providers.table import ProviderContext, build_provider, missing_credentials
from llmeu.providers.transport import HttpClient
from llmeu.routing.breaker import CircuitBreaker, failure_kind
from llmeu.routing.catalog import Capability, Catalog, Endpoint, EndpointKind
from llmeu.routing.policy import Policy
from llmeu.routing.router import RoutePlan, plan_route

log = logging.getLogger("llmeu")


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

    def unavailable_reason(self, endpoint_id: str) -> str | None:
        """Why the endpoint cannot be called: unconfigured, or its process is down now."""
        reason = self.unavailable.get(endpoint_id)
        provider = self.providers.get(endpoint_id)
        return reason or (provider.unavailable_reason() if provider is not None else None)

    def down(self) -> dict[str, str]:
        """The served endpoints whose process is down right now, with why."""
        reasons = {i: p.unavailable_reason() for i, p in self.providers.items()}
        return {endpoint_id: reason for endpoint_id, reason in reasons.items() if reason}

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


class ProviderBuilder:
    """A provider for every endpoint of a catalog that can be called now: its credentials are
    set (else it is unavailable, with the reason), local models are not switched off."""

    __slots__ = ("_context", "_load_local", "model_host")

    def __init__(self, settings: Settings, http: HttpClient):
        self.model_host = HostLink(settings.model_host_socket, fault=settings.model_host_fault,
                                   limits=host_limits(settings))  # fmt: skip
        self._context = ProviderContext(http, settings.environ, settings.local_threads,
                                        self.model_host)  # fmt: skip
        self._load_local = settings.load_local_models

    def build(
        self, catalog: Catalog, reuse: Mapping[Endpoint, Provider] | None = None
    ) -> tuple[dict[str, Provider], dict[str, str]]:
        """The providers and the unavailable endpoints with why; `reuse` keeps the providers
        of an earlier configuration whose endpoint is unchanged (a loaded model stays)."""
        unavailable = missing_credentials(catalog, self._context.environ)
        providers: dict[str, Provider] = {}
        for endpoint in catalog.endpoints:
            if endpoint.endpoint_id in unavailable:
                continue
            if endpoint.kind is EndpointKind.LOCAL and not self._load_local:
                unavailable[endpoint.endpoint_id] = "local models are disabled (--no-local)"
                continue
            kept = (reuse or {}).get(endpoint)
            providers[endpoint.endpoint_id] = kept or build_provider(endpoint, self._context)
        return providers, unavailable


async def start_providers(upstreams: Upstreams, started: frozenset[str] = frozenset()) -> None:
    """Start the providers not yet started; one that cannot start makes its endpoint
    unavailable, with the reason, and the others serve."""
    for endpoint_id, provider in list(upstreams.providers.items()):
        if endpoint_id in started:
            continue
        try:
            await provider.start()
        except ConfigError as error:
            log.error("endpoint %s is unavailable: %s", endpoint_id, error)
            upstreams.unavailable[endpoint_id] = str(error)
            del upstreams.providers[endpoint_id]


class Closable(Protocol):
    async def aclose(self) -> None: ...


async def retire_providers(
    providers: Sequence[Closable], in_flight: set[asyncio.Task[Any]], grace: float
) -> None:
    """Close the providers of endpoints (and the tool servers' clients) a reload replaced,
    once the calls in flight ended."""
    if in_flight:
        await asyncio.wait(in_flight, timeout=grace)
    for provider in providers:
        await provider.aclose()

"""What a gateway emits about itself: call observers, a metrics registry, span export.

Built once with the gateway. Metrics and the per-call log line are always on
(they cost a few label look-ups per call); tracing exists only when an OTLP
endpoint is configured, and then loads the OpenTelemetry SDK.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from llmeu import __version__
from llmeu.config import Settings
from llmeu.observability.cache_metrics import CacheCollector, CacheState
from llmeu.observability.hooks import CallObserver
from llmeu.observability.limits_metrics import LimitsCollector, LimitsState
from llmeu.observability.logs import CallLogObserver
from llmeu.observability.metrics import MetricsObserver
from llmeu.observability.otel_config import otlp_settings
from llmeu.observability.state_metrics import GatewayStateCollector, LedgerState
from llmeu.routing.breaker import CircuitBreaker
from llmeu.routing.catalog import Catalog

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider


@dataclass
class Telemetry:
    registry: CollectorRegistry
    observers: list[CallObserver] = field(default_factory=list)
    tracer_provider: TracerProvider | None = None

    @classmethod
    def build(
        cls,
        settings: Settings,
        catalog: Catalog,
        *,
        ledger: LedgerState,
        breaker: CircuitBreaker,
        limiter: LimitsState | None = None,
        cache: CacheState | None = None,
        circuits: Sequence[str] = (),
    ) -> Telemetry:
        """`circuits`: the breaker's circuits besides the endpoints' (the MCP tool servers',
        `mcp:<server_id>`), shown by the same gauges."""
        registry = CollectorRegistry()
        known_models = {n for e in catalog.endpoints for n in (*e.aliases, e.model, e.endpoint_id)}
        observers: list[CallObserver] = [MetricsObserver(registry, known_models), CallLogObserver()]
        endpoint_ids = [*(e.endpoint_id for e in catalog.endpoints), *circuits]
        registry.register(GatewayStateCollector(breaker, ledger, endpoint_ids))
        if limiter is not None:
            registry.register(LimitsCollector(limiter))
        if cache is not None:
            registry.register(CacheCollector(cache))
        telemetry = cls(registry, observers)
        otlp = otlp_settings(settings.otel_environ)
        if otlp is not None:
            # Imported here so that a gateway without a collector never loads the SDK.
            from llmeu.observability.otlp import build_tracer_provider
            from llmeu.observability.tracing import TracingObserver

            provider = build_tracer_provider(otlp)
            tracer = provider.get_tracer("llmeu", __version__)
            observers.append(TracingObserver(tracer, catalog, content=settings.otel_content))
            telemetry.tracer_provider = provider
        return telemetry

    def exposition(self, accept: str | None) -> tuple[bytes, str]:
        """The registry in the format the scraper asked for (Prometheus text or OpenMetrics)."""
        encode, content_type = choose_encoder(accept or "")
        return encode(self.registry), content_type

    def shutdown(self) -> None:
        """Export the spans still queued, then stop; blocks, so run it off the event loop."""
        if self.tracer_provider is not None:
            self.tracer_provider.shutdown()

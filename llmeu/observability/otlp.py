"""The OpenTelemetry SDK pipeline: sampler, resource, batch processor, OTLP/HTTP exporter.

Imported only when tracing is configured, so a gateway without a collector
never loads the SDK. Every setting is passed explicitly from `OtlpSettings`;
spans are exported from the SDK's own thread, off the event loop.
"""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    ParentBased,
    Sampler,
    TraceIdRatioBased,
)

from llmeu import __version__
from llmeu.observability.otel_config import OtlpSettings


def build_tracer_provider(otlp: OtlpSettings) -> TracerProvider:
    resource = Resource(
        {
            "service.version": __version__,
            **otlp.resource_attributes,
            "service.name": otlp.service_name,
        }
    )
    provider = TracerProvider(sampler=_sampler(otlp), resource=resource, shutdown_on_exit=False)
    exporter = OTLPSpanExporter(
        endpoint=otlp.traces_endpoint,
        certificate_file=otlp.certificate_file,
        client_key_file=otlp.client_key_file,
        client_certificate_file=otlp.client_certificate_file,
        headers=dict(otlp.headers),
        timeout=otlp.timeout_seconds,
        compression=Compression(otlp.compression),
    )
    provider.add_span_processor(
        BatchSpanProcessor(
            exporter,
            max_queue_size=otlp.max_queue_size,
            schedule_delay_millis=otlp.schedule_delay_ms,
            max_export_batch_size=min(otlp.max_export_batch_size, otlp.max_queue_size),
        )
    )
    return provider


def _sampler(otlp: OtlpSettings) -> Sampler:
    ratio = TraceIdRatioBased(otlp.sampler_ratio)
    return {
        "always_on": ALWAYS_ON,
        "always_off": ALWAYS_OFF,
        "traceidratio": ratio,
        "parentbased_always_on": ParentBased(ALWAYS_ON),
        "parentbased_always_off": ParentBased(ALWAYS_OFF),
        "parentbased_traceidratio": ParentBased(ratio),
    }[otlp.sampler]

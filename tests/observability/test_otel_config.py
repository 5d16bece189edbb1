"""Which `OTEL_*` variables turn tracing on, and what they set."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmeu.config import Settings
from llmeu.errors import ConfigError
from llmeu.ledger.opening import open_database
from llmeu.ledger.store import Store
from llmeu.ledger.writer import Ledger
from llmeu.observability.otel_config import OtlpSettings, otlp_settings
from llmeu.observability.telemetry import Telemetry
from llmeu.observability.tracing import TracingObserver
from llmeu.routing.breaker import CircuitBreaker
from llmeu.routing.catalog import Catalog

BASE = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"OTEL_SERVICE_NAME": "llmeu"},
        {**BASE, "OTEL_SDK_DISABLED": "true"},
        {**BASE, "OTEL_TRACES_EXPORTER": "none"},
    ],
    ids=["nothing", "no-endpoint", "sdk-disabled", "exporter-none"],
)
def test_tracing_is_off(env: dict[str, str]) -> None:
    assert otlp_settings(env) is None


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (BASE, OtlpSettings("http://collector:4318/v1/traces")),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c.example/otlp/"},
            OtlpSettings("https://c.example/otlp/v1/traces"),
        ),
        (
            {**BASE, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:4318/custom"},
            OtlpSettings("http://t:4318/custom"),
        ),
        (
            {
                **BASE,
                "OTEL_EXPORTER_OTLP_HEADERS": "a=1,b=x%20y",
                "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "b=2",
            },
            OtlpSettings("http://collector:4318/v1/traces", headers={"a": "1", "b": "2"}),
        ),
        (
            {
                **BASE,
                "OTEL_EXPORTER_OTLP_TIMEOUT": "2500",
                "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
                "OTEL_BSP_SCHEDULE_DELAY": "100",
                "OTEL_BSP_MAX_QUEUE_SIZE": "64",
                "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "32",
            },
            OtlpSettings(
                "http://collector:4318/v1/traces",
                timeout_seconds=2.5,
                compression="gzip",
                schedule_delay_ms=100,
                max_queue_size=64,
                max_export_batch_size=32,
            ),
        ),
        (
            {**BASE, "OTEL_RESOURCE_ATTRIBUTES": "service.name=gw,deployment.environment=prod"},
            OtlpSettings(
                "http://collector:4318/v1/traces",
                service_name="gw",
                resource_attributes={"service.name": "gw", "deployment.environment": "prod"},
            ),
        ),
        (
            {**BASE, "OTEL_SERVICE_NAME": "edge", "OTEL_RESOURCE_ATTRIBUTES": "service.name=gw"},
            OtlpSettings(
                "http://collector:4318/v1/traces",
                service_name="edge",
                resource_attributes={"service.name": "gw"},
            ),
        ),
        (
            {
                **BASE,
                "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
                "OTEL_TRACES_SAMPLER_ARG": "0.25",
            },
            OtlpSettings(
                "http://collector:4318/v1/traces",
                sampler="parentbased_traceidratio",
                sampler_ratio=0.25,
            ),
        ),
    ],
    ids=[
        "base-endpoint",
        "base-with-path",
        "traces-endpoint",
        "headers",
        "timeouts-and-batching",
        "resource",
        "service-name-wins",
        "sampler",
    ],
)
def test_settings(env: dict[str, str], expected: OtlpSettings) -> None:
    assert otlp_settings(env) == expected


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({**BASE, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "OTEL_EXPORTER_OTLP_PROTOCOL"),
        ({**BASE, "OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER"),
        ({**BASE, "OTEL_EXPORTER_OTLP_COMPRESSION": "br"}, "OTEL_EXPORTER_OTLP_COMPRESSION"),
        ({**BASE, "OTEL_TRACES_SAMPLER": "sometimes"}, "OTEL_TRACES_SAMPLER"),
        (
            {**BASE, "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"},
            "OTEL_TRACES_SAMPLER_ARG",
        ),
        ({**BASE, "OTEL_EXPORTER_OTLP_TIMEOUT": "soon"}, "OTEL_EXPORTER_OTLP_TIMEOUT"),
        ({**BASE, "OTEL_BSP_SCHEDULE_DELAY": "-1"}, "OTEL_BSP_SCHEDULE_DELAY"),
        ({**BASE, "OTEL_EXPORTER_OTLP_HEADERS": "novalue"}, "OTEL_EXPORTER_OTLP_HEADERS"),
    ],
    ids=["grpc", "exporter", "compression", "sampler", "ratio", "timeout", "delay", "headers"],
)
def test_what_cannot_be_honoured_is_an_error_naming_the_variable(
    env: dict[str, str], variable: str
) -> None:
    with pytest.raises(ConfigError, match=variable):
        otlp_settings(env)


@pytest.mark.parametrize(
    ("environ", "traced"),
    [({}, False), ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}, True)],
    ids=["off", "on"],
)
def test_tracing_observer_exists_only_when_configured(
    tmp_path: Path, environ: dict[str, str], traced: bool
) -> None:
    settings = Settings(data_dir=tmp_path, environ={"PATH": "/bin", **environ})
    ledger = Ledger(Store(open_database(settings.effective_database_url)))  # never opened
    telemetry = Telemetry.build(settings, Catalog([]), ledger=ledger, breaker=CircuitBreaker())
    try:
        tracing = [o for o in telemetry.observers if isinstance(o, TracingObserver)]
        assert bool(tracing) is traced
        assert (telemetry.tracer_provider is not None) is traced
    finally:
        telemetry.shutdown()

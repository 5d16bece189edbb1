"""The standard OpenTelemetry variables (`OTEL_*`) that configure trace export.

Pure: the variables come from `Settings.otel_environ`, and the result is a
value object the exporter is then built from, so what the gateway honours is
written down here and tested without a collector. Tracing is on only when an
OTLP endpoint is set; a value the gateway cannot honour is a `ConfigError`
naming the variable, never a silent default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote

from llmeu.errors import ConfigError

SAMPLERS = frozenset(
    {
        "always_on",
        "always_off",
        "traceidratio",
        "parentbased_always_on",
        "parentbased_always_off",
        "parentbased_traceidratio",
    }
)
_PROTOCOL = "http/protobuf"


@dataclass(frozen=True, slots=True)
class OtlpSettings:
    traces_endpoint: str
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout_seconds: float = 10.0
    compression: str = "none"
    certificate_file: str | None = None
    client_key_file: str | None = None
    client_certificate_file: str | None = None
    service_name: str = "llmeu"
    resource_attributes: Mapping[str, str] = field(default_factory=dict)
    sampler: str = "parentbased_always_on"
    sampler_ratio: float = 1.0
    schedule_delay_ms: float = 5000.0
    max_queue_size: int = 2048
    max_export_batch_size: int = 512


def otlp_settings(env: Mapping[str, str]) -> OtlpSettings | None:
    """What to export and where; None when tracing is not configured or is switched off."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    exporter = env.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower()
    if exporter == "none":
        return None
    if exporter != "otlp":
        raise ConfigError(
            f"only `otlp` or `none` are supported, not {exporter!r}", field="OTEL_TRACES_EXPORTER"
        )
    endpoint = _traces_endpoint(env)
    if endpoint is None:
        return None
    protocol = _signal(env, "PROTOCOL") or _PROTOCOL
    if protocol != _PROTOCOL:
        raise ConfigError(
            f"llmeu exports traces over {_PROTOCOL} only, not {protocol!r}",
            field="OTEL_EXPORTER_OTLP_PROTOCOL",
        )
    compression = (_signal(env, "COMPRESSION") or "none").lower()
    if compression not in ("none", "gzip"):
        raise ConfigError(
            f"unknown compression {compression!r} (gzip or none)",
            field="OTEL_EXPORTER_OTLP_COMPRESSION",
        )
    sampler = env.get("OTEL_TRACES_SAMPLER", "parentbased_always_on").strip().lower()
    if sampler not in SAMPLERS:
        raise ConfigError(
            f"unknown sampler {sampler!r}; one of {', '.join(sorted(SAMPLERS))}",
            field="OTEL_TRACES_SAMPLER",
        )
    resource = _pairs(env.get("OTEL_RESOURCE_ATTRIBUTES", ""), "OTEL_RESOURCE_ATTRIBUTES")
    return OtlpSettings(
        traces_endpoint=endpoint,
        headers={
            **_pairs(env.get("OTEL_EXPORTER_OTLP_HEADERS", ""), "OTEL_EXPORTER_OTLP_HEADERS"),
            **_pairs(
                env.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS", ""),
                "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
            ),
        },
        timeout_seconds=_positive(_signal(env, "TIMEOUT"), "OTEL_EXPORTER_OTLP_TIMEOUT", 10_000)
        / 1000,
        compression=compression,
        certificate_file=_signal(env, "CERTIFICATE"),
        client_key_file=_signal(env, "CLIENT_KEY"),
        client_certificate_file=_signal(env, "CLIENT_CERTIFICATE"),
        service_name=env.get("OTEL_SERVICE_NAME") or resource.get("service.name") or "llmeu",
        resource_attributes=resource,
        sampler=sampler,
        sampler_ratio=_ratio(env) if sampler.endswith("traceidratio") else 1.0,
        schedule_delay_ms=_bsp(env, "OTEL_BSP_SCHEDULE_DELAY", 5000),
        max_queue_size=int(_bsp(env, "OTEL_BSP_MAX_QUEUE_SIZE", 2048)),
        max_export_batch_size=int(_bsp(env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512)),
    )


def _traces_endpoint(env: Mapping[str, str]) -> str | None:
    """The signal-specific URL is used as is; the base URL gets `/v1/traces` appended."""
    specific = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if specific:
        return specific
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    if not base:
        return None
    return base.rstrip("/") + "/v1/traces"


def _signal(env: Mapping[str, str], name: str) -> str | None:
    """`OTEL_EXPORTER_OTLP_TRACES_<name>`, else `OTEL_EXPORTER_OTLP_<name>`."""
    value = env.get(f"OTEL_EXPORTER_OTLP_TRACES_{name}") or env.get(f"OTEL_EXPORTER_OTLP_{name}")
    return value.strip() if value and value.strip() else None


def _pairs(text: str, variable: str) -> dict[str, str]:
    """`key1=value1,key2=value2` with percent-encoded values (W3C Baggage style)."""
    pairs: dict[str, str] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        key, equals, value = item.partition("=")
        if not equals or not key.strip():
            raise ConfigError(f"expected key=value pairs, got {item.strip()!r}", field=variable)
        pairs[unquote(key.strip())] = unquote(value.strip())
    return pairs


def _bsp(env: Mapping[str, str], variable: str, default: float) -> float:
    return _positive(env.get(variable), variable, default)


def _positive(text: str | None, variable: str, default: float) -> float:
    """Timeouts and delays are milliseconds, as the specification says."""
    if text is None or not text.strip():
        return default
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"expected a number, got {text!r}", field=variable) from None
    if value <= 0:
        raise ConfigError(f"expected a positive number, got {text!r}", field=variable)
    return value


def _ratio(env: Mapping[str, str]) -> float:
    text = env.get("OTEL_TRACES_SAMPLER_ARG", "1.0")
    try:
        ratio = float(text)
    except ValueError:
        ratio = -1.0
    if not 0.0 <= ratio <= 1.0:
        raise ConfigError(
            f"expected a ratio between 0 and 1, got {text!r}", field="OTEL_TRACES_SAMPLER_ARG"
        )
    return ratio

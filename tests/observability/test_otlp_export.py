"""Spans leave a real `llmeu serve` over OTLP/HTTP (protobuf) and are decoded as they arrived."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tests.support.otlp_receiver import OtlpReceiver, start_otlp_receiver
from tests.support.processes import FakeUpstream, Gateway, config_yaml, fake_endpoint

CALLER_TRACE = "0af7651916cd43dd8448eb211c80319c"
CALLER_SPAN = "b7ad6b7169203331"


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    receiver = start_otlp_receiver()
    yield receiver
    receiver.stop()


def plain(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return tuple(plain(v) for v in value.array_value.values)
    return getattr(value, kind) if kind else None


def attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: plain(pair.value) for pair in pairs if isinstance(pair, KeyValue)}


def decode(requests: list[dict[str, Any]]) -> tuple[dict[str, Any], list[Span]]:
    """The resource attributes and every span of the requests received."""
    resource: dict[str, Any] = {}
    spans: list[Span] = []
    for request in requests:
        export = ExportTraceServiceRequest.FromString(request["body"])
        for resource_spans in export.resource_spans:
            resource = attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                assert scope_spans.scope.name == "llmeu"
                spans.extend(scope_spans.spans)
    return resource, spans


def test_spans_arrive_over_otlp_http(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream, receiver: OtlpReceiver
) -> None:
    gateway = gateway_factory(
        config=config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream)),
        env={
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_EXPORTER_OTLP_HEADERS": "x-collector-token=s3cret%20token",
            "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
            "OTEL_SERVICE_NAME": "llmeu-e2e",
            "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=test",
            "OTEL_BSP_SCHEDULE_DELAY": "50",
            "NO_PROXY": "127.0.0.1",
        },
    )
    response = httpx.post(
        f"{gateway.base_url}/chat/completions",
        json={
            "model": "fake-model",
            "stream": True,
            "messages": [{"role": "user", "content": "hello [[chunks=3]]"}],
        },
        headers={
            "authorization": f"Bearer {gateway.admin_key}",
            "traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01",
        },
        timeout=10,
    )
    assert response.status_code == 200
    trace_id = response.headers["x-llmeu-trace-id"]

    requests = receiver.wait_for(lambda received: len(decode(received)[1]) >= 2)
    resource, spans = decode(requests)
    assert {r["path"] for r in requests} == {"/v1/traces"}
    headers = requests[0]["headers"]
    assert headers["x-collector-token"] == "s3cret token"
    assert headers["content-type"] == "application/x-protobuf"
    assert headers["content-encoding"] == "gzip"
    assert resource == resource | {
        "service.name": "llmeu-e2e",
        "deployment.environment": "test",
    }
    assert "service.version" in resource

    [call] = [s for s in spans if s.kind == Span.SpanKind.SPAN_KIND_SERVER]
    [attempt] = [s for s in spans if s.kind == Span.SpanKind.SPAN_KIND_CLIENT]
    assert call.trace_id.hex() == CALLER_TRACE
    assert call.parent_span_id.hex() == CALLER_SPAN
    assert attempt.trace_id == call.trace_id
    assert attempt.parent_span_id == call.span_id
    assert call.name == "chat fake-model"
    assert attributes(call.attributes) == attributes(call.attributes) | {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "fake-model",
        "gen_ai.response.model": "fake",
        "gen_ai.provider.name": "fakeprov",
        "gen_ai.usage.input_tokens": 11,
        "gen_ai.usage.output_tokens": 3,
        "gen_ai.response.finish_reasons": ("stop",),
        "llmeu.trace_id": trace_id,
        "llmeu.status": "completed",
        "llmeu.cancelled": False,
        "llmeu.sovereignty_class": "eu_sovereign",
    }
    assert attributes(attempt.attributes)["llmeu.endpoint_id"] == "fakeprov-fr-a"
    assert call.start_time_unix_nano <= attempt.start_time_unix_nano
    assert attempt.end_time_unix_nano <= call.end_time_unix_nano

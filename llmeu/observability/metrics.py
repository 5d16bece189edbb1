"""Prometheus metrics of the calls a gateway serves, fed by the call-lifecycle hooks.

Every family lives in the gateway's own registry (no process-global state).
Labels never carry tenant data (no key, no policy, no content) and stay
bounded: `model` is a model name the catalog knows, else `other`, so a
client sending random model names cannot grow the series.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Generic, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from llmeu.calls.record import CallStatus, TraceRecord
from llmeu.observability.hooks import CallObserver, Headers
from llmeu.observability.timing import ResponseTiming

LATENCY_BUCKETS = (0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
TOKEN_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
OVERHEAD_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1.0)
NONE = "none"
OTHER = "other"

M = TypeVar("M", Counter, Gauge, Histogram)


class Labelled(Generic[M]):
    """A labelled metric whose children are looked up once per label set, not per call
    (`labels()` validates and locks each time; the label sets of a gateway are few)."""

    __slots__ = ("_children", "metric")

    def __init__(self, metric: M):
        self.metric: M = metric
        self._children: dict[tuple[str, ...], M] = {}

    def __call__(self, *values: str) -> M:
        child = self._children.get(values)
        if child is None:
            child = self._children[values] = self.metric.labels(*values)
        return child


class MetricsObserver(CallObserver):
    def __init__(self, registry: CollectorRegistry, known_models: Collection[str]):
        self._known_models = frozenset(known_models)
        self._streams: set[str] = set()
        r = registry
        me = ("model", "endpoint")
        self.requests = Labelled(Counter(
            "llmeu_requests", "Calls by final status.",
            ("route", "status", "code", "model", "endpoint", "sovereignty_class"), registry=r,
        ))  # fmt: skip
        self.in_progress = Labelled(Gauge(
            "llmeu_requests_in_progress", "Calls opened and not finished.", ("route",), registry=r,
        ))  # fmt: skip
        self.active_streams = Gauge(
            "llmeu_active_streams", "Streams whose response started and has not ended.", registry=r
        )
        self.duration = Labelled(Histogram(
            "llmeu_request_duration_seconds", "Whole calls, from open to final status.",
            ("route", "status"), buckets=LATENCY_BUCKETS, registry=r,
        ))  # fmt: skip
        self.ttft = Labelled(Histogram(
            "llmeu_time_to_first_token_seconds", "Streams: from the call's open to its first "
            "delta.", me, buckets=LATENCY_BUCKETS, registry=r,
        ))  # fmt: skip
        self.tpot = Labelled(Histogram(
            "llmeu_time_per_output_token_seconds", "Completed streams: mean time per output "
            "token after the first.", me, buckets=TOKEN_BUCKETS, registry=r,
        ))  # fmt: skip
        self.upstream_latency = Labelled(Histogram(
            "llmeu_upstream_latency_seconds", "Upstream attempts, from the request to the "
            "upstream until its answer ended or failed.", ("endpoint", "outcome"),
            buckets=LATENCY_BUCKETS, registry=r,
        ))  # fmt: skip
        self.overhead = Labelled(Histogram(
            "llmeu_gateway_overhead_seconds", "Time not spent waiting on an upstream, up to "
            "the response start (x-llmeu-overhead-ms).", ("route", "stream"),
            buckets=OVERHEAD_BUCKETS, registry=r,
        ))  # fmt: skip
        self.tokens = Labelled(Counter(
            "llmeu_tokens", "Tokens of calls, as billed.", ("type", *me), registry=r,
        ))  # fmt: skip
        self.cost = Labelled(Counter("llmeu_cost_eur", "Cost of calls in EUR.", me, registry=r))
        self.cancellations = Labelled(Counter(
            "llmeu_cancellations", "Calls the client hung up on.", ("route", "endpoint"),
            registry=r,
        ))  # fmt: skip
        self.fallbacks = Labelled(Counter(
            "llmeu_fallbacks", "Calls that tried more than one endpoint.", ("route", "status"),
            registry=r,
        ))  # fmt: skip

    def model(self, record: TraceRecord) -> str:
        return record.request_model if record.request_model in self._known_models else OTHER

    def call_started(self, record: TraceRecord, headers: Headers) -> None:
        self.in_progress(record.route).inc()

    def response_started(self, record: TraceRecord, timing: ResponseTiming) -> None:
        self.overhead(record.route, "true" if record.stream else "false").observe(timing.overhead)
        if record.stream:
            self._streams.add(record.trace_id)
            self.active_streams.inc()

    def call_finished(self, record: TraceRecord) -> None:
        route, status = record.route, record.status.value
        model, endpoint = self.model(record), record.endpoint_id or NONE
        self.in_progress(route).dec()
        if record.trace_id in self._streams:
            self._streams.discard(record.trace_id)
            self.active_streams.dec()
        code = str(record.http_status or 0)
        sovereignty_class = record.sovereignty_class or NONE
        self.requests(route, status, code, model, endpoint, sovereignty_class).inc()
        if record.finished_at is not None:
            self.duration(route, status).observe(record.finished_at - record.received_at)
        if record.first_token_at is not None:
            self.ttft(model, endpoint).observe(record.first_token_at - record.received_at)
        tpot = record.tpot_ms
        if tpot is not None and record.status is CallStatus.COMPLETED:
            self.tpot(model, endpoint).observe(tpot / 1000)
        for attempt in record.attempts:
            if attempt.finished_at is not None:
                latency = attempt.finished_at - attempt.started_at
                self.upstream_latency(attempt.endpoint_id, attempt.outcome).observe(latency)
        self._account(record, model, endpoint)
        if record.status is CallStatus.CANCELLED:
            self.cancellations(route, endpoint).inc()
        if len(record.attempts) > 1:
            self.fallbacks(route, status).inc()

    def _account(self, record: TraceRecord, model: str, endpoint: str) -> None:
        if record.input_tokens:
            self.tokens("input", model, endpoint).inc(record.input_tokens)
        if record.output_tokens:
            self.tokens("output", model, endpoint).inc(record.output_tokens)
        if record.cost_eur:
            self.cost(model, endpoint).inc(record.cost_eur)

"""Prometheus metrics of the calls a gateway serves, fed by the call-lifecycle hooks.

Every family lives in the gateway's own registry (no process-global state).
Labels never carry tenant data (no key, no policy, no content) and stay
bounded: `model` is a model name the catalog knows, else `other`, so a
client sending random model names cannot grow the series.
"""

from __future__ import annotations

from collections.abc import Collection

from prometheus_client import CollectorRegistry

from llmeu.calls.record import CallStatus, TraceRecord
from llmeu.observability.hooks import CallObserver, Headers
from llmeu.observability.series import (
    CounterFamily,
    GaugeFamily,
    HistogramFamily,
    SeriesCollector,
)
from llmeu.observability.timing import ResponseTiming

LATENCY_BUCKETS = (0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
TOKEN_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
OVERHEAD_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1.0)
NONE = "none"
OTHER = "other"


class MetricsObserver(CallObserver):
    """The call metrics, kept as plain numbers (`llmeu.observability.series`) and registered in
    `registry` as one collector."""

    def __init__(self, registry: CollectorRegistry, known_models: Collection[str]):
        self._known_models = frozenset(known_models)
        self._streams: set[str] = set()
        me = ("model", "endpoint")
        self.requests = CounterFamily(
            "llmeu_requests", "Calls by final status.",
            ("route", "status", "code", "model", "endpoint", "sovereignty_class"),
        )  # fmt: skip
        self.in_progress = GaugeFamily(
            "llmeu_requests_in_progress", "Calls opened and not finished.", ("route",)
        )
        streams = GaugeFamily(
            "llmeu_active_streams", "Streams whose response started and has not ended."
        )
        self.active_streams = streams()
        self.duration = HistogramFamily(
            "llmeu_request_duration_seconds", "Whole calls, from open to final status.",
            ("route", "status"), LATENCY_BUCKETS,
        )  # fmt: skip
        self.ttft = HistogramFamily(
            "llmeu_time_to_first_token_seconds", "Streams: from the call's open to its first "
            "delta.", me, LATENCY_BUCKETS,
        )  # fmt: skip
        self.tpot = HistogramFamily(
            "llmeu_time_per_output_token_seconds", "Completed streams: mean time per output "
            "token after the first.", me, TOKEN_BUCKETS,
        )  # fmt: skip
        self.upstream_latency = HistogramFamily(
            "llmeu_upstream_latency_seconds", "Upstream attempts, from the request to the "
            "upstream until its answer ended or failed.", ("endpoint", "outcome"),
            LATENCY_BUCKETS,
        )  # fmt: skip
        self.overhead = HistogramFamily(
            "llmeu_gateway_overhead_seconds", "Time not spent waiting on an upstream, up to "
            "the response start (x-llmeu-overhead-ms).", ("route", "stream"), OVERHEAD_BUCKETS,
        )  # fmt: skip
        self.tokens = CounterFamily("llmeu_tokens", "Tokens of calls, as billed.", ("type", *me))
        self.cost = CounterFamily("llmeu_cost_eur", "Cost of calls in EUR.", me)
        self.cancellations = CounterFamily(
            "llmeu_cancellations", "Calls the client hung up on.", ("route", "endpoint")
        )
        self.fallbacks = CounterFamily(
            "llmeu_fallbacks", "Calls that tried more than one endpoint.", ("route", "status")
        )
        self.tool_calls = CounterFamily(
            "llmeu_mcp_tool_calls", "MCP tool calls by tool server and final status.",
            ("server", "status"),
        )  # fmt: skip
        self.tool_duration = HistogramFamily(
            "llmeu_mcp_tool_call_duration_seconds", "MCP tool calls, from open to final status.",
            ("server",), LATENCY_BUCKETS,
        )  # fmt: skip
        self.tool_bytes = CounterFamily(
            "llmeu_mcp_bytes", "Bytes of MCP tool calls: `in` sent to the server, `out` its "
            "answers.", ("server", "direction"),
        )  # fmt: skip
        registry.register(SeriesCollector([
            self.requests, self.in_progress, streams, self.duration, self.ttft, self.tpot,
            self.upstream_latency, self.overhead, self.tokens, self.cost, self.cancellations,
            self.fallbacks, self.tool_calls, self.tool_duration, self.tool_bytes,
        ]))  # fmt: skip

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
        if record.mcp_server is not None:
            self._tool_call(record)
            return
        for attempt in record.attempts:
            if attempt.finished_at is not None:
                latency = attempt.finished_at - attempt.started_at
                self.upstream_latency(attempt.endpoint_id, attempt.outcome).observe(latency)
        self._account(record, model, endpoint)
        if record.status is CallStatus.CANCELLED:
            self.cancellations(route, endpoint).inc()
        if len(record.attempts) > 1:
            self.fallbacks(route, status).inc()

    def _tool_call(self, record: TraceRecord) -> None:
        """An MCP tool call, by its server (a catalog id: the series stay bounded)."""
        server = record.mcp_server or NONE
        self.tool_calls(server, record.status.value).inc()
        if record.finished_at is not None:
            self.tool_duration(server).observe(record.finished_at - record.received_at)
        if record.bytes_in:
            self.tool_bytes(server, "in").inc(record.bytes_in)
        if record.bytes_out:
            self.tool_bytes(server, "out").inc(record.bytes_out)
        if record.status is CallStatus.CANCELLED:
            self.cancellations(record.route, NONE).inc()

    def _account(self, record: TraceRecord, model: str, endpoint: str) -> None:
        if record.input_tokens:
            self.tokens("input", model, endpoint).inc(record.input_tokens)
        if record.output_tokens:
            self.tokens("output", model, endpoint).inc(record.output_tokens)
        if record.cost_eur:
            self.cost(model, endpoint).inc(record.cost_eur)

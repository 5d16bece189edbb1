"""OpenTelemetry spans for calls: one server span per call, a client span per attempt.

The call span starts when the call is opened (at the time it was received)
and joins the caller's trace when the request carries a W3C `traceparent`;
each upstream attempt is a child span. A failed attempt's span ends with the
attempt; the serving attempt's span ends with its call, so a stream's attempt
covers the whole stream. Registered only when tracing is configured: without
it there is no tracing work at all.
"""

from __future__ import annotations

import time

from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, set_span_in_context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from llmeu.calls.record import Attempt, CallStatus, TraceRecord
from llmeu.observability.hooks import CallObserver, Headers
from llmeu.observability.span_attributes import (
    attempt_attributes,
    attempt_outcome_attributes,
    attempt_span_name,
    call_attributes,
    call_span_name,
    operation,
)
from llmeu.routing.catalog import Catalog

_PROPAGATED = (b"traceparent", b"tracestate")


def _nanoseconds(seconds: float | None) -> int:
    return int((time.time() if seconds is None else seconds) * 1e9)


class _CallSpans:
    __slots__ = ("attempts", "call")

    def __init__(self, call: Span):
        self.call = call
        self.attempts: list[tuple[Attempt, Span]] = []


class TracingObserver(CallObserver):
    def __init__(self, tracer: Tracer, catalog: Catalog, *, content: bool = False):
        self._tracer = tracer
        self._catalog = catalog
        self._content = content
        self._propagator = TraceContextTextMapPropagator()
        self._calls: dict[str, _CallSpans] = {}

    def call_started(self, record: TraceRecord, headers: Headers) -> None:
        carrier = {
            name.decode("latin-1"): value.decode("latin-1")
            for name, value in headers
            if name in _PROPAGATED
        }
        parent = self._propagator.extract(carrier) if carrier else None
        span = self._tracer.start_span(
            operation(record),
            context=parent,
            kind=SpanKind.SERVER,
            start_time=_nanoseconds(record.received_at),
        )
        self._calls[record.trace_id] = _CallSpans(span)

    def attempt_started(self, record: TraceRecord, attempt: Attempt) -> None:
        spans = self._calls.get(record.trace_id)
        if spans is None:
            return
        # An MCP tool call's attempt is at a tool server, not at an endpoint of the catalog.
        endpoint = self._catalog.get(attempt.endpoint_id) if record.route != "/mcp" else None
        span = self._tracer.start_span(
            attempt_span_name(record, endpoint),
            context=set_span_in_context(spans.call),
            kind=SpanKind.CLIENT,
            attributes=attempt_attributes(record, attempt, endpoint),
            start_time=_nanoseconds(attempt.started_at),
        )
        spans.attempts.append((attempt, span))

    def attempt_finished(self, record: TraceRecord, attempt: Attempt) -> None:
        spans = self._calls.get(record.trace_id)
        if spans is None or attempt.outcome == "served":
            return
        for index, (known, span) in enumerate(spans.attempts):
            if known is attempt:
                del spans.attempts[index]
                _end_attempt(span, attempt)
                return

    def first_token(self, record: TraceRecord) -> None:
        spans = self._calls.get(record.trace_id)
        if spans is not None:
            spans.call.add_event(
                "gen_ai.first_token", timestamp=_nanoseconds(record.first_token_at)
            )

    def call_finished(self, record: TraceRecord) -> None:
        spans = self._calls.pop(record.trace_id, None)
        if spans is None:
            return
        for attempt, span in spans.attempts:
            _end_attempt(span, attempt)
        endpoint = self._catalog.get(record.endpoint_id) if record.endpoint_id else None
        call = spans.call
        call.update_name(call_span_name(record))
        call.set_attributes(call_attributes(record, endpoint, self._content))
        failed = record.status is CallStatus.FAILED or (record.http_status or 0) >= 500
        if failed:
            call.set_status(Status(StatusCode.ERROR, record.error_code or record.error_type))
        call.end(end_time=_nanoseconds(record.finished_at))


def _end_attempt(span: Span, attempt: Attempt) -> None:
    attributes = attempt_outcome_attributes(attempt)
    span.set_attributes(attributes)
    if attempt.outcome == "failed":
        span.set_status(Status(StatusCode.ERROR, str(attributes["error.type"])))
    span.end(end_time=_nanoseconds(attempt.finished_at))

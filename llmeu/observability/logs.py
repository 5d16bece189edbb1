"""Structured logs: one line per call, as JSON or as text with key=value fields.

The call line (logger `llmeu.calls`) carries the trace id, status, timings,
routing and token counts, never the prompt or the output. Failed calls log
at WARNING, every other call at INFO, so `--log-level warning` keeps only the
failures; nothing is built for a line the level filters out.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

import msgspec

from llmeu.calls.record import CallStatus, TraceRecord
from llmeu.observability.hooks import CallObserver
from llmeu.observability.timing import ResponseTiming

CALLS_LOGGER = "llmeu.calls"
FORMATS = ("text", "json")
_FIELDS_ATTRIBUTE = "llmeu_fields"
_json = msgspec.json.Encoder(enc_hook=str)


def _milliseconds(start: float | None, end: float | None) -> float | None:
    if start is None or end is None:
        return None
    return round((end - start) * 1000, 3)


def call_fields(record: TraceRecord, overhead_ms: float | None) -> dict[str, Any]:
    return {
        "trace_id": record.trace_id,
        "route": record.route,
        "status": record.status.value,
        "http_status": record.http_status,
        "stream": record.stream,
        "model": record.request_model or None,
        "model_used": record.model_used,
        "provider": record.provider,
        "endpoint_id": record.endpoint_id,
        "inference_region": record.inference_region,
        "sovereignty_class": record.sovereignty_class,
        "policy_id": record.policy_id,
        "key_id": record.key_id,
        "attempts": len(record.attempts),
        "duration_ms": _milliseconds(record.received_at, record.finished_at),
        "ttft_ms": record.ttft_ms,
        "tpot_ms": record.tpot_ms,
        "overhead_ms": overhead_ms,
        "input_tokens": record.input_tokens,
        "output_tokens": record.output_tokens,
        "tokens_estimated": record.tokens_estimated,
        "cost_eur": record.cost_eur,
        "finish_reason": record.finish_reason,
        "error_code": record.error_code,
        "instance_id": record.instance_id,
    }


class CallLogObserver(CallObserver):
    def __init__(self, logger: logging.Logger | None = None):
        self._log = logger or logging.getLogger(CALLS_LOGGER)
        self._overhead_ms: dict[str, float] = {}

    def response_started(self, record: TraceRecord, timing: ResponseTiming) -> None:
        if self._log.isEnabledFor(logging.INFO):
            self._overhead_ms[record.trace_id] = round(timing.overhead * 1000, 3)

    def call_finished(self, record: TraceRecord) -> None:
        overhead_ms = self._overhead_ms.pop(record.trace_id, None)
        level = logging.WARNING if record.status is CallStatus.FAILED else logging.INFO
        if not self._log.isEnabledFor(level):
            return
        fields = call_fields(record, overhead_ms)
        self._log.log(level, "call %s", record.status.value, extra={_FIELDS_ATTRIBUTE: fields})


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, then the record's fields."""

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "time": _timestamp(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, _FIELDS_ATTRIBUTE, None)
        if isinstance(fields, dict):
            payload.update(fields)
        if record.exc_info:
            payload["exception"] = self.formatException(record.exc_info)
        return _json.encode(payload).decode()


class TextFormatter(logging.Formatter):
    """The usual text line, followed by the record's fields as key=value."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = getattr(record, _FIELDS_ATTRIBUTE, None)
        if not isinstance(fields, dict):
            return line
        pairs = " ".join(f"{k}={v}" for k, v in fields.items() if v is not None)
        return f"{line} {pairs}"


def _timestamp(created: float) -> str:
    seconds = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created))
    return f"{seconds}.{int(created % 1 * 1000):03d}Z"


def configure_logging(level: str, log_format: str) -> None:
    """The root handler of a `llmeu serve` process, writing to stderr."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())

"""Structured logs: one line per call, as JSON or as text with key=value fields.

The call line (logger `llmeu.calls`) carries the trace id, status, timings,
routing and token counts, never the prompt or the output. Failed calls log
at WARNING, every other call at INFO, so `--log-level warning` keeps only the
failures; nothing is built for a line the level filters out.

A record is one line, whatever a client sent: model names, paths and error
messages reach logs, and a newline in one would write a forged line of its
own. JSON escapes by nature (and here also the line separators that JSON
leaves raw); the text format escapes control characters, line separators and
bidirectional overrides in the message (format arguments included) and quotes
field values that hold spaces, `=` or quotes, logfmt style. A traceback stays
multi-line, every line of it indented: only a record's first line starts at
the left margin, so no text inside a traceback can pass for a record.
"""

from __future__ import annotations

import logging
import re
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

# What ends a line for some reader (str.splitlines, terminals, editors) or
# disguises text on screen (bidirectional overrides).
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_UNSAFE_IN_JSON = re.compile(r"[\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_BARE_VALUE = re.compile(r'[^\s="\\]+')
_CONTINUATION = "  "


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
        logger = self._log
        if not logger.isEnabledFor(level):
            return
        fields = call_fields(record, overhead_ms)
        # Made and handled directly: `Logger.log` would walk the stack for a caller's
        # file and line, always this line, on every call.
        line = logger.makeRecord(
            logger.name, level, __file__, 0, "call %s", (record.status.value,), None,
            extra={_FIELDS_ATTRIBUTE: fields},
        )  # fmt: skip
        logger.handle(line)


def _escaped_character(match: re.Match[str]) -> str:
    character = match.group()
    named = _NAMED_ESCAPES.get(character)
    if named is not None:
        return named
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape(text: str) -> str:
    """`text` safe on one line of a log: every unsafe character written as an escape."""
    if _UNSAFE.search(text) is None:
        return text
    return _UNSAFE.sub(_escaped_character, text)


# Most values of a call line recur (route, model, provider, policy, key): each is checked
# once. The cache is cleared when it fills, so client-chosen values cannot grow it.
_FIELD_VALUES: dict[str, str] = {}
_FIELD_VALUES_MAX = 4096


def field_value(value: object) -> str:
    """A value of a key=value pair: bare when it can be, else quoted with escapes."""
    if value.__class__ is str:
        known = _FIELD_VALUES.get(value)
        if known is not None:
            return known
    elif isinstance(value, int | float):
        return str(value)
    text = str(value)
    if _BARE_VALUE.fullmatch(text) and _UNSAFE.search(text) is None:
        shown = text
    else:
        shown = '"' + escape(text.replace("\\", "\\\\").replace('"', '\\"')) + '"'
    if value.__class__ is str and len(text) <= 128:
        if len(_FIELD_VALUES) >= _FIELD_VALUES_MAX:
            _FIELD_VALUES.clear()
        _FIELD_VALUES[text] = shown
    return shown


def _pairs(fields: dict[str, Any]) -> str:
    """`key=value ...` of the fields that have a value (one call line: kept tight)."""
    known = _FIELD_VALUES
    shown: list[str] = []
    for key, value in fields.items():
        if value is None:
            continue
        kind = value.__class__
        if kind is str:
            text = known.get(value)
            shown.append(f"{key}={text if text is not None else field_value(value)}")
        elif kind is int or kind is float or kind is bool:
            shown.append(f"{key}={value}")
        else:
            shown.append(f"{key}={field_value(value)}")
    return " ".join(shown)


def _indented(block: str) -> str:
    """A traceback or stack: its lines kept, each indented and stripped of unsafe characters."""
    lines = block.split("\n")
    return "\n".join(_CONTINUATION + escape(line) for line in lines)


def _json_escape(character: re.Match[str]) -> str:
    return f"\\u{ord(character.group()):04x}"


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
        line = _json.encode(payload).decode()
        if _UNSAFE_IN_JSON.search(line) is None:
            return line
        # Only inside strings can these characters occur; the escape decodes to the same text.
        return _UNSAFE_IN_JSON.sub(_json_escape, line)


class TextFormatter(logging.Formatter):
    """The usual text line, followed by the record's fields as key=value."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")
        self._second = -1
        self._stamp = ""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        """As `logging.Formatter`'s, with the date and time formatted once per second."""
        if datefmt is not None:
            return super().formatTime(record, datefmt)
        second = int(record.created)
        if second != self._second:
            self._stamp = time.strftime(self.default_time_format, self.converter(record.created))
            self._second = second
        return f"{self._stamp},{int(record.msecs):03d}"

    def format(self, record: logging.LogRecord) -> str:
        record.message = record.getMessage()
        record.asctime = self.formatTime(record, self.datefmt)
        line = escape(f"{record.asctime} {record.levelname} {record.name}: {record.message}")
        fields = getattr(record, _FIELDS_ATTRIBUTE, None)
        if isinstance(fields, dict):
            line = f"{line} {_pairs(fields)}"
        # Formatted here rather than taken from `record.exc_text`, which another
        # handler's formatter may have filled without indenting it.
        if record.exc_info:
            line += "\n" + _indented(self.formatException(record.exc_info))
        elif record.exc_text:
            line += "\n" + _indented(record.exc_text)
        if record.stack_info:
            line += "\n" + _indented(self.formatStack(record.stack_info))
        return line


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

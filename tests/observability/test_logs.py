"""One structured line per call: its trace id, status, timings and routing, never content."""

from __future__ import annotations

import io
import json
import logging
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from llmeu.calls.record import TraceRecord
from llmeu.observability.logs import (
    CALLS_LOGGER,
    JsonFormatter,
    TextFormatter,
    call_fields,
    field_value,
)
from tests.observability.harness import in_process
from tests.support.processes import FakeUpstream, Gateway, config_yaml, fake_endpoint


class Lines:
    def __init__(self) -> None:
        self.stream = io.StringIO()

    def json(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stream.getvalue().splitlines()]


@pytest.fixture
def call_lines() -> Iterator[Callable[[int], Lines]]:
    """Capture the call lines as JSON, with the calls logger at a given level."""
    logger = logging.getLogger(CALLS_LOGGER)
    handlers: list[logging.Handler] = []
    level = logger.level

    def capture(at: int) -> Lines:
        lines = Lines()
        handler = logging.StreamHandler(lines.stream)
        handler.setFormatter(JsonFormatter())
        logger.addHandler(handler)
        logger.setLevel(at)
        handlers.append(handler)
        return lines

    yield capture
    for handler in handlers:
        logger.removeHandler(handler)
    logger.setLevel(level)


async def test_a_line_per_call_without_content(
    tmp_path: Path, fake_upstream: FakeUpstream, call_lines: Callable[[int], Lines]
) -> None:
    lines = call_lines(logging.INFO)
    # eu-store keeps content in the ledger; the log line still never carries it.
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream), default_policy="eu-store")
    async with in_process(tmp_path, config) as gw:
        response = await gw.chat("a purple elephant [[chunks=3;text=zebra]]", stream=True)
        failed = await gw.chat("x", model="no-such-model")
    assert response.status_code == 200 and failed.status_code == 404
    trace_id = response.headers["x-llmeu-trace-id"]
    completed, rejected = lines.json()
    assert completed == completed | {
        "level": "info",
        "logger": CALLS_LOGGER,
        "message": "call completed",
        "trace_id": trace_id,
        "route": "chat.completions",
        "status": "completed",
        "http_status": 200,
        "stream": True,
        "model": "fake-model",
        "endpoint_id": "fakeprov-fr-a",
        "sovereignty_class": "eu_sovereign",
        "policy_id": "eu-store",
        "attempts": 1,
        "input_tokens": 11,
        "output_tokens": 3,
        "finish_reason": "stop",
    }
    assert completed["ttft_ms"] > 0 and completed["duration_ms"] >= completed["ttft_ms"]
    assert completed["overhead_ms"] >= 0
    assert float(response.headers["x-llmeu-overhead-ms"]) == completed["overhead_ms"]
    assert rejected["status"] == "rejected" and rejected["error_code"] == "model_not_found"
    raw = lines.stream.getvalue()
    assert "purple" not in raw and "zebra" not in raw


async def test_warning_level_keeps_only_failures(
    tmp_path: Path, fake_upstream: FakeUpstream, call_lines: Callable[[int], Lines]
) -> None:
    lines = call_lines(logging.WARNING)
    config = config_yaml(
        fake_endpoint("fakeprov-fr-a", fake_upstream),
        fake_endpoint("fakeprov-fr-b", fake_upstream, model="fake;fault=status_503", aliases=["b"]),
    )
    async with in_process(tmp_path, config) as gw:
        assert (await gw.chat("fine")).status_code == 200
        assert (await gw.chat("broken", model="b")).status_code in (502, 503)
    [line] = lines.json()
    assert (line["level"], line["status"], line["endpoint_id"]) == ("warning", "failed", None)


@pytest.mark.parametrize(
    ("fields", "suffix"),
    [
        (
            {"trace_id": "trc_1", "status": "completed", "ttft_ms": None},
            " trace_id=trc_1 status=completed",
        ),
        (None, ""),
    ],
    ids=["call-line", "plain-line"],
)
def test_text_lines_end_with_key_value_fields(fields: dict[str, Any] | None, suffix: str) -> None:
    record = logging.LogRecord("llmeu.calls", logging.INFO, __file__, 1, "call done", None, None)
    if fields is not None:
        record.llmeu_fields = fields
    line = TextFormatter().format(record)
    assert line.endswith(" INFO llmeu.calls: call done" + suffix)


FORGED_LINE = (
    "2026-12-01 08:00:00,000 WARNING llmeu.calls: call failed trace_id=trc_FORGED "
    "key_id=admin status=failed"
)
# What a client may put in a value to start a line of its own, for some reader.
BREAKS = [
    pytest.param("\n", id="newline"),
    pytest.param("\r\n", id="crlf"),
    pytest.param("\r", id="carriage-return"),
    pytest.param("\x0b", id="vertical-tab"),
    pytest.param("\x1e", id="record-separator"),
    pytest.param("\x85", id="next-line"),
    pytest.param("\u2028", id="line-separator"),
    pytest.param("\u2029", id="paragraph-separator"),
]
FORMATTERS = [
    pytest.param(TextFormatter, id="text"),
    pytest.param(JsonFormatter, id="json"),
]


def forged(separator: str) -> str:
    return "zz" + separator + FORGED_LINE


def record_of(
    message: object, args: tuple[object, ...] = (), exc_info: Any = None, **fields: Any
) -> logging.LogRecord:
    record = logging.LogRecord(
        "llmeu.api", logging.ERROR, __file__, 1, message, args or None, exc_info
    )
    if fields:
        record.llmeu_fields = fields
    return record


def failing(message: str) -> Any:
    try:
        raise ValueError(message)
    except ValueError:
        return sys.exc_info()


def record_lines(formatter: type[logging.Formatter], record: logging.LogRecord) -> list[str]:
    """The lines a reader sees as records; a text traceback's lines are indented continuations."""
    lines = formatter().format(record).splitlines()
    if formatter is JsonFormatter:
        return lines
    return [line for line in lines if not line.startswith("  ")]


# How a request value reaches a record: a call line's field, a message argument
# (the unhandled-error line formats the path into it), a message that is not a
# format string, an exception's message.
CARRIERS = [
    pytest.param(lambda value: record_of("call rejected", model=value), id="call-line-field"),
    pytest.param(lambda value: record_of("unhandled error on %s %s", ("GET", "/v1/" + value)),
                 id="message-argument"),
    pytest.param(lambda value: record_of(ValueError(value)), id="message-object"),
    pytest.param(lambda value: record_of("unhandled error", exc_info=failing(value)),
                 id="exception-message"),
]  # fmt: skip


@pytest.mark.parametrize("formatter", FORMATTERS)
@pytest.mark.parametrize("separator", BREAKS)
@pytest.mark.parametrize("carrier", CARRIERS)
def test_a_request_value_never_starts_a_line_of_its_own(
    carrier: Callable[[str], logging.LogRecord],
    separator: str,
    formatter: type[logging.Formatter],
) -> None:
    record = carrier(forged(separator))
    [line] = record_lines(formatter, record)
    if formatter is JsonFormatter:
        decoded = json.loads(line)
        assert any(forged(separator) in str(v) for v in decoded.values()), "kept exactly"
    else:
        assert FORGED_LINE in formatter().format(record), "kept, escaped or indented"


def test_text_escapes_what_would_disguise_a_line() -> None:
    record = record_of("rejected %s", ("a\x1b[2Jb\u202ec\x00d",), model="\x1b[31mred")
    line = TextFormatter().format(record)
    assert "\x1b" not in line and "\u202e" not in line and "\x00" not in line
    assert "rejected a\\x1b[2Jb\\u202ec\\x00d" in line
    assert line.endswith(' model="\\x1b[31mred"')


def test_a_text_traceback_stays_multi_line_and_indented() -> None:
    record = record_of("unhandled error on %s %s", ("GET", "/x"), exc_info=failing("boom"))
    first, *traceback = TextFormatter().format(record).split("\n")
    assert first.endswith("ERROR llmeu.api: unhandled error on GET /x")
    assert traceback[0] == "  Traceback (most recent call last):"
    assert traceback[-1] == "  ValueError: boom"
    assert all(line.startswith("  ") for line in traceback)


def test_an_exception_formatted_by_another_handler_is_still_indented() -> None:
    record = record_of("unhandled error", exc_info=failing("zz\n" + FORGED_LINE))
    logging.Formatter().format(record)  # fills record.exc_text, unindented
    lines = TextFormatter().format(record).split("\n")
    assert [line for line in lines if not line.startswith("  ")] == [lines[0]]


VALUES = [
    pytest.param("mistral-small", "mistral-small", id="plain"),
    pytest.param(12, "12", id="int"),
    pytest.param(0.5, "0.5", id="float"),
    pytest.param(True, "True", id="bool"),
    pytest.param("", '""', id="empty"),
    pytest.param("a b", '"a b"', id="space"),
    pytest.param("a=b", '"a=b"', id="equals"),
    pytest.param('say "hi"', '"say \\"hi\\""', id="quotes"),
    pytest.param("C:\\x", '"C:\\\\x"', id="backslash"),
    pytest.param("a\nb", '"a\\nb"', id="newline"),
    pytest.param("a\tb", '"a\\tb"', id="tab"),
    pytest.param("\x00", '"\\x00"', id="nul"),
    pytest.param("\u2028", '"\\u2028"', id="line-separator"),
]


@pytest.mark.parametrize(("value", "written"), VALUES)
def test_field_values_are_bare_or_quoted_logfmt_style(value: object, written: str) -> None:
    assert field_value(value) == written


def test_every_call_field_is_escaped_in_text() -> None:
    """Whatever field a request value lands in, the text line stays one line."""
    value = forged("\n")
    record = TraceRecord(
        trace_id="trc_1", key_id=value, route="chat.completions", request_model=value,
        stream=False, received_at=0.0, instance_id=value,
    )  # fmt: skip
    for name in ("policy_id", "endpoint_id", "provider", "model_used", "error_code"):
        setattr(record, name, value)
    fields = call_fields(record, None)
    [line] = TextFormatter().format(record_of("call rejected", **fields)).splitlines()
    assert line.count("trc_FORGED") == sum(
        1 for v in fields.values() if isinstance(v, str) and "trc_FORGED" in v
    )


@pytest.mark.parametrize("formatter", FORMATTERS)
async def test_a_forged_model_name_through_the_gateway_is_one_line(
    tmp_path: Path, fake_upstream: FakeUpstream, formatter: type[logging.Formatter]
) -> None:
    logger = logging.getLogger(CALLS_LOGGER)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter())
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))
        async with in_process(tmp_path, config) as gw:
            response = await gw.chat("hello", model=forged("\n"))
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert response.status_code == 404
    [line] = stream.getvalue().splitlines()
    assert "trc_FORGED" in line and response.headers["x-llmeu-trace-id"] in line
    if formatter is JsonFormatter:
        assert json.loads(line)["model"] == forged("\n")


def test_json_lines_carry_exceptions() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.LogRecord(
            "llmeu",
            logging.ERROR,
            __file__,
            1,
            "failed %s",
            ("here",),
            sys.exc_info(),
        )
    line = json.loads(JsonFormatter().format(record))
    assert line["message"] == "failed here"
    assert line["level"] == "error"
    assert "ValueError: boom" in line["exception"]
    assert line["time"].endswith("Z")


def test_serve_writes_json_lines(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream
) -> None:
    gateway = gateway_factory(
        config=config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream)),
        args=["--log-level", "info", "--log-format", "json"],
    )
    body = json.dumps({"model": "fake-model", "messages": [{"role": "user", "content": "hi"}]})
    request = urllib.request.Request(
        f"{gateway.base_url}/chat/completions",
        data=body.encode(),
        headers={
            "authorization": f"Bearer {gateway.admin_key}",
            "content-type": "application/json",
        },
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        trace_id = response.headers["x-llmeu-trace-id"]
    deadline = time.monotonic() + 10
    while trace_id not in gateway.output() and time.monotonic() < deadline:
        time.sleep(0.05)
    gateway.stop()
    lines = [json.loads(line) for line in gateway.output().splitlines() if line.strip()]
    [call] = [line for line in lines if line.get("trace_id") == trace_id]
    assert (call["status"], call["logger"], call["endpoint_id"]) == (
        "completed",
        CALLS_LOGGER,
        "fakeprov-fr-a",
    )
    assert any(line["logger"].startswith("uvicorn") for line in lines)


@pytest.mark.parametrize(("value", "written"), VALUES)
def test_a_value_seen_before_is_written_the_same_way(value: object, written: str) -> None:
    """Recurring values are checked once and remembered: the second line must not differ."""
    assert [field_value(value) for _ in range(3)] == [written] * 3


def test_the_text_time_is_the_logging_default() -> None:
    """The date and time, formatted once per second, read as `logging.Formatter` writes them."""
    ours, standard = TextFormatter(), logging.Formatter()
    for created in (1_700_000_000.0, 1_700_000_000.999, 1_700_000_001.5, 1_700_000_000.25):
        record = record_of("call completed")
        record.created, record.msecs = created, (created - int(created)) * 1000
        assert ours.formatTime(record) == standard.formatTime(record)
        assert ours.formatTime(record, "%H") == standard.formatTime(record, "%H")

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

from llmeu.observability.logs import CALLS_LOGGER, JsonFormatter, TextFormatter
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

"""GenAI spans for completed, cancelled, fallback, failed and rejected calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from tests.observability.harness import hang_up, in_process
from tests.support.processes import FakeUpstream, config_yaml, fake_endpoint

CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


def sse_frames(text: str) -> list[dict[str, Any]]:
    return [
        json.loads(line[6:])
        for line in text.splitlines()
        if line.startswith("data: ") and line != "data: [DONE]"
    ]


def call_and_attempts(spans: list[ReadableSpan]) -> tuple[ReadableSpan, list[ReadableSpan]]:
    calls = [s for s in spans if s.kind is SpanKind.SERVER]
    assert len(calls) == 1, [s.name for s in spans]
    call = calls[0]
    attempts = [s for s in spans if s.kind is SpanKind.CLIENT]
    assert len(attempts) + 1 == len(spans)
    for attempt in attempts:
        assert attempt.parent is not None
        assert attempt.parent.span_id == call.context.span_id
        assert attempt.context.trace_id == call.context.trace_id
    return call, attempts


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "non-stream"])
async def test_completed_call_joins_the_callers_trace(
    tmp_path: Path, fake_upstream: FakeUpstream, stream: bool
) -> None:
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))
    async with in_process(tmp_path, config) as gw:
        response = await gw.chat(
            "hello [[chunks=4]]",
            stream=stream,
            headers={"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"},
        )
        assert response.status_code == 200
        if stream:
            routing = next(f["llmeu"] for f in sse_frames(response.text) if "llmeu" in f)
        else:
            routing = response.json()["llmeu"]
        call, attempts = call_and_attempts(gw.spans())

    assert call.name == "chat fake-model"
    assert call.parent is not None and call.parent.is_remote
    assert call.parent.span_id == int(CALLER_SPAN, 16)
    assert call.context.trace_id == int(CALLER_TRACE, 16)
    assert call.status.status_code is StatusCode.UNSET
    attributes = dict(call.attributes or {})
    assert attributes == attributes | {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "fakeprov",
        "gen_ai.request.model": "fake-model",
        "gen_ai.response.model": "fake",
        "gen_ai.usage.input_tokens": 11,
        "gen_ai.usage.output_tokens": 4,
        "gen_ai.response.finish_reasons": ("stop",),
        "server.address": "127.0.0.1",
        "server.port": fake_upstream.port,
        "llmeu.trace_id": routing["trace_id"],
        "llmeu.endpoint_id": "fakeprov-fr-a",
        "llmeu.inference_region": "test-1",
        "llmeu.sovereignty_class": "eu_sovereign",
        "llmeu.policy_id": "eu-strict",
        "llmeu.status": "completed",
        "llmeu.cancelled": False,
        "llmeu.stream": stream,
        "llmeu.attempts": 1,
        "http.response.status_code": 200,
    }
    assert "error.type" not in attributes
    assert not any(name.startswith("gen_ai.input") for name in attributes)
    assert [e.name for e in call.events] == (["gen_ai.first_token"] if stream else [])
    [attempt] = attempts
    assert attempt.name == "chat fake"
    assert dict(attempt.attributes or {}) == dict(attempt.attributes or {}) | {
        "gen_ai.provider.name": "fakeprov",
        "gen_ai.request.model": "fake",
        "llmeu.endpoint_id": "fakeprov-fr-a",
        "llmeu.attempt.outcome": "served",
        "server.port": fake_upstream.port,
    }
    assert attempt.end_time == call.end_time  # the serving attempt lasts as long as its call


async def test_a_call_without_traceparent_starts_a_trace(
    tmp_path: Path, fake_upstream: FakeUpstream
) -> None:
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))
    async with in_process(tmp_path, config) as gw:
        assert (await gw.chat("hello")).status_code == 200
        call, _ = call_and_attempts(gw.spans())
    assert call.parent is None


async def test_cancelled_call(tmp_path: Path, fake_upstream: FakeUpstream) -> None:
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))
    async with in_process(tmp_path, config) as gw:
        await hang_up(gw.app, "long [[chunks=2000;delay=5]]", after_deltas=3)
        call, attempts = call_and_attempts(gw.spans())
    attributes = dict(call.attributes or {})
    assert attributes["llmeu.status"] == "cancelled"
    assert attributes["llmeu.cancelled"] is True
    assert attributes["http.response.status_code"] == 499
    assert attributes["gen_ai.usage.output_tokens"] >= 3
    assert attributes["llmeu.tokens_estimated"] is True
    assert "error.type" not in attributes  # the client left; nothing went wrong
    assert call.status.status_code is StatusCode.UNSET
    [attempt] = attempts
    assert attempt.attributes is not None
    assert attempt.attributes["llmeu.attempt.outcome"] == "cancelled"


async def test_fallback_call(tmp_path: Path, fake_upstream: FakeUpstream) -> None:
    config = config_yaml(
        fake_endpoint("fakeprov-fr-a", fake_upstream, model="fake;fault=status_503"),
        fake_endpoint("otherprov-fr-b", fake_upstream, priority=20),
    )
    async with in_process(tmp_path, config) as gw:
        assert (await gw.chat("hello", stream=True)).status_code == 200
        call, attempts = call_and_attempts(gw.spans())
    attributes = dict(call.attributes or {})
    assert attributes["llmeu.status"] == "completed"
    assert attributes["llmeu.attempts"] == 2
    assert attributes["llmeu.endpoint_id"] == "otherprov-fr-b"
    assert attributes["gen_ai.provider.name"] == "otherprov"
    failed, served = attempts
    assert failed.attributes is not None and served.attributes is not None
    assert failed.attributes["llmeu.endpoint_id"] == "fakeprov-fr-a"
    assert failed.attributes["llmeu.attempt.outcome"] == "failed"
    assert failed.attributes["http.response.status_code"] == 503
    assert failed.attributes["error.type"] == "503"
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.end_time is not None and served.start_time is not None
    assert failed.end_time <= served.start_time
    assert served.attributes["llmeu.endpoint_id"] == "otherprov-fr-b"
    assert served.attributes["llmeu.attempt.outcome"] == "served"
    assert served.status.status_code is StatusCode.UNSET


async def test_failed_call(tmp_path: Path, fake_upstream: FakeUpstream) -> None:
    config = config_yaml(
        fake_endpoint("fakeprov-fr-a", fake_upstream, model="fake;fault=status_503")
    )
    async with in_process(tmp_path, config) as gw:
        response = await gw.chat("hello")
        assert response.status_code in (502, 503)
        error = response.json()["error"]
        call, attempts = call_and_attempts(gw.spans())
    attributes = dict(call.attributes or {})
    assert attributes["llmeu.status"] == "failed"
    assert attributes["error.type"] == (error["code"] or error["type"])
    assert attributes["http.response.status_code"] == response.status_code
    assert call.status.status_code is StatusCode.ERROR
    [attempt] = attempts
    assert attempt.attributes is not None
    assert attempt.attributes["llmeu.attempt.outcome"] == "failed"
    assert attempt.status.status_code is StatusCode.ERROR


async def test_rejected_call_has_no_attempt(tmp_path: Path, fake_upstream: FakeUpstream) -> None:
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))
    async with in_process(tmp_path, config) as gw:
        response = await gw.chat("hello", model="no-such-model")
        assert response.status_code == 404
        call, attempts = call_and_attempts(gw.spans())
    assert attempts == []
    assert call.name == "chat no-such-model"
    attributes = dict(call.attributes or {})
    assert attributes["llmeu.status"] == "rejected"
    assert attributes["error.type"] == "model_not_found"
    assert "llmeu.endpoint_id" not in attributes
    assert call.status.status_code is StatusCode.UNSET  # a client error is not the gateway's


@pytest.mark.parametrize(
    ("otel_content", "policy", "expected"),
    [
        (True, "eu-store", True),
        (True, "eu-strict", False),
        (False, "eu-store", False),
    ],
    ids=["flag-and-storing-policy", "flag-only", "policy-only"],
)
async def test_content_only_with_the_flag_and_a_storing_policy(
    tmp_path: Path, fake_upstream: FakeUpstream, otel_content: bool, policy: str, expected: bool
) -> None:
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream), default_policy=policy)
    async with in_process(tmp_path, config, otel_content=otel_content) as gw:
        assert (await gw.chat("a purple elephant [[chunks=2]]")).status_code == 200
        call, _ = call_and_attempts(gw.spans())
    attributes = dict(call.attributes or {})
    assert ("gen_ai.input.messages" in attributes) is expected
    assert ("gen_ai.output.messages" in attributes) is expected
    if expected:
        assert "purple elephant" in str(attributes["gen_ai.input.messages"])
        assert "tok tok" in str(attributes["gen_ai.output.messages"])
    else:
        assert "purple elephant" not in json.dumps(attributes, default=str)

"""Each upstream fault, end to end: what the client sees and what the trace says.

A fault before the first frame is an HTTP error (or a fallback to the next
endpoint); a fault after it is the error frame of docs/design.md §2 with the routing
block and no `[DONE]`, and a `failed` trace holding the partial output.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.faults.helpers import Outcome, chat, create_key, trace
from tests.support.processes import Gateway

ROUTING_FIELDS = {
    "trace_id", "model_used", "model_version", "provider", "endpoint_id", "inference_region",
    "sovereignty_class", "policy_id", "retention", "cost_estimate",
}  # fmt: skip


@pytest.fixture(scope="module")
def storing_key(faults_gateway: Gateway) -> str:
    """A key whose policy stores content, so traces show the partial output."""
    key: str = create_key(faults_gateway, policy_id="eu-store")["key"]
    return key


def assert_openai_error(body: dict[str, Any], status_code: str | None = None) -> dict[str, Any]:
    error: dict[str, Any] = body["error"]
    assert set(error) >= {"message", "type", "param", "code"}
    assert isinstance(error["message"], str) and error["message"]
    if status_code is not None:
        assert error["code"] == status_code
    return error


def assert_broken_stream(outcome: Outcome, deltas: int, code: str) -> dict[str, Any]:
    assert outcome.status == 200
    assert not outcome.done, "a broken stream must not end with [DONE]"
    assert outcome.frames[0]["choices"][0]["delta"] == {"role": "assistant"}
    content_frames = [f for f in outcome.frames[1:-1] if f["choices"][0]["delta"].get("content")]
    assert len(content_frames) == deltas
    frame = outcome.error_frame
    assert frame is not None, "the stream must end with an error frame"
    assert_openai_error(frame, code)
    assert set(frame["llmeu"]) == ROUTING_FIELDS
    assert frame["llmeu"]["trace_id"] == outcome.trace_id
    assert frame["llmeu"]["endpoint_id"] == "fakeprov-fr-main"
    return frame


MID_STREAM = [
    pytest.param("fault=reset_mid_stream", 3, "upstream_error", id="reset-mid-stream"),
    pytest.param("fault=invalid_json", 3, "upstream_error", id="invalid-json"),
    pytest.param("fault=deep_json", 3, "upstream_error", id="json-nested-too-deep"),
    pytest.param("fault=malformed_sse", 3, "upstream_error", id="malformed-sse"),
    pytest.param("fault=error_event", 3, "upstream_error", id="error-event"),
    pytest.param("fault=missing_done", 6, "upstream_error", id="missing-done"),
    pytest.param("fault=stall_between;stall=30", 3, "upstream_timeout", id="stall-between"),
]


@pytest.mark.parametrize(("directives", "deltas", "code"), MID_STREAM)
def test_failure_after_the_first_frame_ends_with_an_error_frame_and_a_failed_trace(
    faults_gateway: Gateway, storing_key: str, directives: str, deltas: int, code: str
) -> None:
    outcome = chat(faults_gateway, f"go [[{directives};chunks=6]]", stream=True, key=storing_key)
    assert_broken_stream(outcome, deltas, code)
    produced = "".join(f"tok{i} " for i in range(deltas))
    assert outcome.content == produced
    found = trace(faults_gateway, outcome.trace_id)
    assert found["status"] == "failed"
    assert found["error"]["code"] == code
    assert found["error"]["http_status"] == 200  # the headers had gone out
    assert found["content"]["completion"] == produced
    assert found["usage"]["output_tokens"] >= deltas
    assert found["usage"]["estimated"] is True
    assert [a["outcome"] for a in found["attempts"]] == ["failed"]
    assert found["timings"]["first_token_at"] is not None


HEALTHY = [
    pytest.param("fault=slow_drip;chunks=12;delay=250", 12, False, id="slow-drip-past-first-token"),
    pytest.param("fault=huge_chunk;chunks=3", 3, False, id="huge-chunk"),
    pytest.param("fault=no_usage;chunks=4", 4, True, id="no-usage"),
]


@pytest.mark.parametrize(("directives", "deltas", "estimated"), HEALTHY)
def test_unusual_but_healthy_streams_complete(
    faults_gateway: Gateway, directives: str, deltas: int, estimated: bool
) -> None:
    outcome = chat(faults_gateway, f"go [[{directives}]]", stream=True)
    assert outcome.status == 200 and outcome.done
    assert outcome.error_frame is None
    content = [
        f for f in outcome.frames if f["choices"] and f["choices"][0]["delta"].get("content")
    ]
    assert len(content) == deltas
    finish = outcome.frames[-1]
    assert finish["choices"][0]["finish_reason"] == "stop"
    assert finish["llmeu"]["cost_estimate"]["estimated"] is estimated
    found = trace(faults_gateway, outcome.trace_id)
    assert found["status"] == "completed"
    assert found["usage"]["estimated"] is estimated
    assert found["usage"]["output_tokens"] >= deltas


def test_a_huge_chunk_is_forwarded_whole(faults_gateway: Gateway) -> None:
    outcome = chat(faults_gateway, "go [[fault=huge_chunk;chunks=2]]", stream=True)
    assert outcome.done
    assert outcome.frames[1]["choices"][0]["delta"]["content"] == "x" * (1 << 20)


BEFORE_FIRST_BYTE = [
    pytest.param("status_503", 503, "upstream_unavailable", id="503"),
    pytest.param("status_500", 503, "upstream_unavailable", id="500"),
    pytest.param("status_429", 503, "upstream_unavailable", id="429"),
    pytest.param("status_400", 400, "upstream_rejected_request", id="400"),
]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "no-stream"])
@pytest.mark.parametrize(("fault", "status", "code"), BEFORE_FIRST_BYTE)
def test_an_error_status_before_the_first_byte_is_an_http_error(
    faults_gateway: Gateway, fault: str, status: int, code: str, stream: bool
) -> None:
    outcome = chat(faults_gateway, f"go [[fault={fault}]]", stream=stream)
    assert outcome.status == status
    assert outcome.headers["content-type"] == "application/json"
    body = outcome.json
    assert_openai_error(body, code)
    assert body["llmeu"]["trace_id"] == outcome.trace_id
    found = trace(faults_gateway, outcome.trace_id)
    assert found["status"] == "failed"
    assert found["error"]["http_status"] == status
    assert found["attempts"][0]["upstream_status"] == int(fault.removeprefix("status_"))
    assert found["usage"]["output_tokens"] is None  # nothing was produced, nothing is invented


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "no-stream"])
@pytest.mark.parametrize(
    ("model", "failure"),
    [("flaky-model", "503"), ("stall-model", "within 0.5 s")],
    ids=["error-status", "stall-before-first-byte"],
)
def test_a_failure_before_the_first_byte_falls_back_to_the_next_endpoint(
    faults_gateway: Gateway, model: str, failure: str, stream: bool
) -> None:
    outcome = chat(faults_gateway, "go [[chunks=3]]", model=model, stream=stream)
    assert outcome.status == 200
    if stream:
        assert outcome.done
        routing = outcome.frames[-1]["llmeu"]
    else:
        routing = outcome.json["llmeu"]
    assert routing["endpoint_id"] == "backup-fr-flaky"
    found = trace(faults_gateway, outcome.trace_id)
    assert found["status"] == "completed"
    attempts = found["attempts"]
    assert [a["outcome"] for a in attempts] == ["failed", "served"]
    assert failure in attempts[0]["error"]
    assert attempts[1]["endpoint_id"] == "backup-fr-flaky"


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "no-stream"])
def test_a_stall_before_the_first_byte_without_fallback_is_a_504(
    faults_gateway: Gateway, stream: bool
) -> None:
    outcome = chat(faults_gateway, "go", model="stall-only", stream=stream)
    assert outcome.status == 504
    assert_openai_error(outcome.json, "upstream_timeout")
    found = trace(faults_gateway, outcome.trace_id)
    assert found["status"] == "failed"
    assert found["error"]["code"] == "upstream_timeout"


def test_a_stream_longer_than_its_total_timeout_is_cut_with_an_error_frame(
    faults_gateway: Gateway,
) -> None:
    outcome = chat(
        faults_gateway,
        "go [[fault=slow_drip;chunks=40;delay=100]]",
        model="short-total",
        stream=True,
    )
    assert outcome.status == 200 and not outcome.done
    frame = outcome.error_frame
    assert frame is not None
    assert_openai_error(frame, "upstream_timeout")
    assert "total timeout" in frame["error"]["message"]
    found = trace(faults_gateway, outcome.trace_id)
    assert found["status"] == "failed"
    assert 0 < found["usage"]["output_tokens"] < 40

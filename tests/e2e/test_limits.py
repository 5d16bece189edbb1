"""Per-key limits in one process (exact, in memory): 429 with Retry-After, a rejected trace."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.faults.helpers import Outcome, chat, create_key, post, trace
from tests.support.processes import FakeUpstream, Gateway, config_yaml, fake_endpoint


@pytest.fixture
def gateway(gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream) -> Gateway:
    return gateway_factory(
        config=config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream)),
        args=["--max-body-bytes", "20000"],
    )


def assert_limited(gateway: Gateway, outcome: Outcome, code: str) -> None:
    assert outcome.status == 429
    assert int(outcome.headers["retry-after"]) >= 1
    error = outcome.json["error"]
    assert error["type"] == "rate_limit_error"
    assert error["code"] == code
    assert set(error) >= {"message", "type", "param", "code"}
    found = trace(gateway, outcome.trace_id)
    assert found["status"] == "rejected"
    assert found["error"]["code"] == code
    assert found["error"]["http_status"] == 429
    assert found["attempts"] == []  # no upstream was contacted


def test_requests_per_minute(gateway: Gateway, fake_upstream: FakeUpstream) -> None:
    key = create_key(gateway, rpm_limit=3)["key"]
    for stream in (False, True, False):
        assert chat(gateway, "hi", key=key, stream=stream).status == 200
    refused = chat(gateway, "hi", key=key, stream=True)
    assert_limited(gateway, refused, "rate_limit_exceeded")
    assert "3 requests per minute" in refused.json["error"]["message"]
    assert int(refused.headers["retry-after"]) <= 60
    assert len(fake_upstream.stats()) == 3
    other = create_key(gateway, rpm_limit=3)["key"]
    assert chat(gateway, "hi", key=other).status == 200  # limits are per key


def test_tokens_per_minute_count_what_calls_really_used(gateway: Gateway) -> None:
    # The fake upstream reports 11 prompt tokens + N completion tokens per call.
    key = create_key(gateway, tpm_limit=60)["key"]
    assert chat(gateway, "hi [[chunks=20]]", key=key).status == 200  # 31 tokens
    assert chat(gateway, "hi [[chunks=20]]", key=key, stream=True).status == 200  # 62 in all
    assert_limited(gateway, chat(gateway, "hi", key=key), "rate_limit_exceeded")


def test_a_request_larger_than_the_tokens_per_minute_is_refused_outright(
    gateway: Gateway,
) -> None:
    key = create_key(gateway, tpm_limit=10)["key"]
    outcome = chat(gateway, "word " * 200, key=key)
    assert_limited(gateway, outcome, "request_too_large")


def test_budget_in_eur(gateway: Gateway) -> None:
    # 1 EUR/Mtok in, 2 EUR/Mtok out: one call of 11 + 6 tokens costs 0.000023 EUR.
    key = create_key(gateway, budget_eur=0.00003)["key"]
    assert chat(gateway, "hi", key=key).status == 200
    assert chat(gateway, "hi", key=key, stream=True).status == 200  # 0.000046 spent now
    refused = chat(gateway, "hi", key=key)
    assert_limited(gateway, refused, "insufficient_quota")
    assert "Budget exhausted" in refused.json["error"]["message"]


def test_the_budget_counts_spend_from_before_a_restart(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))
    first = gateway_factory(config=config, data_dir=tmp_path / "ledger")
    key = create_key(first, budget_eur=0.00003)["key"]
    assert chat(first, "hi", key=key).status == 200
    assert chat(first, "hi", key=key).status == 200
    first.stop()
    second = gateway_factory(config=config, data_dir=tmp_path / "ledger")
    assert_limited(second, chat(second, "hi", key=key), "insufficient_quota")


def test_embeddings_are_limited_too(gateway: Gateway) -> None:
    key = create_key(gateway, rpm_limit=1)["key"]
    body = {"model": "fake-model", "input": ["a", "b"]}
    assert post(gateway, "/v1/embeddings", body, key=key).status == 200
    assert_limited(gateway, post(gateway, "/v1/embeddings", body, key=key), "rate_limit_exceeded")


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_body_over_the_limit_is_a_413(gateway: Gateway, chunked: bool) -> None:
    import httpx

    payload = (
        b'{"model": "fake-model", "messages": [{"role": "user", "content": "'
        + (b"x" * 30000)
        + b'"}]}'
    )
    content = iter([payload[:10000], payload[10000:]]) if chunked else payload
    response = httpx.post(
        gateway.url + "/v1/chat/completions",
        content=content,
        headers={"authorization": f"Bearer {gateway.admin_key}"},
        timeout=30,
    )
    assert response.status_code == 413
    error = response.json()["error"]
    assert error["code"] == "request_too_large"
    assert trace(gateway, response.headers["x-llmeu-trace-id"])["status"] == "rejected"

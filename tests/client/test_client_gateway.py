"""`Client` and `AsyncClient` against a real `llmeu serve` process and its fake upstream."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from llmeu.client import (
    AsyncClient,
    AuthenticationError,
    Client,
    ContentDelta,
    CostEstimate,
    NoCompliantRouteError,
    StreamError,
    Usage,
)
from tests.support.client_traces import read_trace, settled_trace
from tests.support.processes import (
    STORE_POLICY,
    FakeUpstream,
    Gateway,
    config_yaml,
    fake_endpoint,
)

FRANCE_ONLY = """
  - policy_id: fr-only
    allow_classes: [eu_sovereign]
    allow_countries: [FR]
    max_retention: P0D
    store_content: P0D
"""


@pytest.fixture
def gateway(gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream) -> Gateway:
    endpoints = (
        fake_endpoint("fakeprov-fr-a", fake_upstream),
        fake_endpoint("usprov-us-a", fake_upstream, aliases=("us-model",),
                      sovereignty_class="global", country="US"),
    )  # fmt: skip
    return gateway_factory(config=config_yaml(*endpoints, policies=STORE_POLICY + FRANCE_ONLY))


def test_stream_carries_routing_usage_and_a_readable_trace(gateway: Gateway) -> None:
    with (
        Client(gateway.base_url, gateway.admin_key) as client,
        client.stream_chat("hi [[chunks=4]]", model="fake-model") as stream,
    ):
        items = list(stream)
    result = stream.result
    assert result is not None and result.complete
    assert items[:-1] == [ContentDelta(f"tok{i} ") for i in range(4)]
    assert items[-1] == result
    assert result.content == "tok0 tok1 tok2 tok3 "
    assert result.finish_reason == "stop"
    assert result.usage is not None and result.usage.completion_tokens == 4
    routing = result.llmeu
    assert routing is not None and routing.trace_id is not None
    assert (routing.provider, routing.endpoint_id) == ("fakeprov", "fakeprov-fr-a")
    assert (routing.inference_region, routing.sovereignty_class) == ("test-1", "eu_sovereign")
    assert (routing.policy_id, routing.retention) == ("eu-strict", "P0D")
    cost = routing.cost_estimate
    assert isinstance(cost, CostEstimate) and cost.currency == "EUR" and cost.estimated is False
    assert stream.headers is not None
    assert stream.headers["x-llmeu-trace-id"] == routing.trace_id
    trace = read_trace(gateway, routing.trace_id)
    assert trace["status"] == "completed"
    assert trace["usage"]["output_tokens"] == result.usage.completion_tokens


async def test_async_client_and_a_narrower_policy(gateway: Gateway) -> None:
    async with AsyncClient(gateway.base_url, gateway.admin_key) as client:
        result = await client.chat("hi [[chunks=2]]", model="fake-model", policy="fr-only")
    assert result.content == "tok0 tok1 "
    assert result.llmeu is not None and result.llmeu.policy_id == "fr-only"
    assert result.usage == Usage(prompt_tokens=result.usage.prompt_tokens, completion_tokens=2,
                                 total_tokens=result.usage.total_tokens)  # fmt: skip
    assert result.usage.prompt_tokens is not None and result.usage.prompt_tokens > 0


def test_upstream_failure_mid_stream_is_a_stream_error_with_the_text(gateway: Gateway) -> None:
    with (
        Client(gateway.base_url, gateway.admin_key) as client,
        pytest.raises(StreamError) as caught,
    ):
        client.chat("hi [[chunks=6;fault=reset_mid_stream]]", model="fake-model")
    partial = caught.value.result
    assert partial.content == "tok0 tok1 tok2 "
    assert not partial.complete
    assert partial.llmeu is not None and partial.llmeu.trace_id is not None
    assert settled_trace(gateway, partial.llmeu.trace_id)["status"] == "failed"


def test_leaving_the_stream_is_recorded_as_cancelled(gateway: Gateway) -> None:
    with Client(gateway.base_url, gateway.admin_key) as client:
        with client.stream_chat("hi [[chunks=2000;delay=10]]", model="fake-model") as stream:
            for item in stream:
                assert item == ContentDelta("tok0 ")
                break
        assert stream.headers is not None
        trace_id = stream.headers["x-llmeu-trace-id"]
    trace = settled_trace(gateway, trace_id)
    assert trace["status"] == "cancelled"
    assert trace["usage"]["output_tokens"] is not None


def test_no_compliant_route_is_a_403_with_reasons(gateway: Gateway) -> None:
    with (
        Client(gateway.base_url, gateway.admin_key) as client,
        pytest.raises(NoCompliantRouteError) as caught,
    ):
        client.chat("hi", model="us-model")
    assert caught.value.status == 403
    assert caught.value.error.raw.get("details")


def test_a_wrong_key_is_a_401(gateway: Gateway) -> None:
    with Client(gateway.base_url, "sk-wrong") as client, pytest.raises(AuthenticationError):
        client.chat("hi", model="fake-model")

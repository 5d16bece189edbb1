"""Fallback within the policy, end to end: real upstream processes behind a real gateway.

Three fake upstreams: endpoints on the first and second are compliant with
`eu-strict`; the third serves only non-compliant endpoints (`global`,
`eu_resident`, a 30-day retention, an unset API key), some with the best
priority. Each upstream records every request it receives, so "never
contacted" is an observed zero, not an assumption. Faults are set per
endpoint through its upstream model name (`fake;fault=status_503`), and
endpoints are listed out of priority order so that the order is the router's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.processes import (
    FakeUpstream,
    Gateway,
    config_yaml,
    fake_endpoint,
    start_fake_upstream,
    start_gateway,
)

NO_FALLBACK = """
  - policy_id: no-fallback
    allow_classes: [on_premise, eu_sovereign]
    max_retention: P0D
    fallback: false
"""


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[FakeUpstream]]:
    started = [start_fake_upstream(tmp_path_factory.mktemp("upstream")) for _ in range(3)]
    yield started
    for upstream in started:
        upstream.stop()


@pytest.fixture(scope="module")
def gateway(
    upstreams: list[FakeUpstream], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gateway]:
    first, second, third = upstreams

    def ep(endpoint_id: str, upstream: FakeUpstream, alias: str, **kw: Any) -> str:
        return fake_endpoint(endpoint_id, upstream, aliases=(alias,), **kw)

    config = config_yaml(
        ep("gamma-us-global", third, "failover", sovereignty_class="global", country="US", priority=0),
        ep("beta-de-serving", second, "failover", country="DE", priority=20),
        ep("alpha-fr-failing", first, "failover", model="fake;fault=status_503", priority=10),
        ep("alpha-fr-rejecting", first, "rejecting", model="fake;fault=status_400", priority=10),
        ep("beta-de-spare", second, "rejecting", country="DE", priority=20),
        ep("beta-de-down", second, "all-down", model="fake;fault=status_502", priority=20),
        ep("alpha-fr-down", first, "all-down", model="fake;fault=status_503", priority=10),
        ep("delta-de-resident", third, "all-down", sovereignty_class="eu_resident", priority=0),
        ep("gamma-us-open", third, "all-down", sovereignty_class="global", priority=0),
        ep("alpha-fr-breaking", first, "midstream", model="fake;fault=reset_mid_stream;chunks=6"),
        ep("beta-de-unused", second, "midstream", priority=20),
        ep("alpha-fr-stalled", first, "stalled", model="fake;fault=stall_first;stall=30",
           timeouts={"first_token": 1}),
        ep("beta-de-quick", second, "stalled", priority=20),
        ep("gamma-us-x", third, "nowhere", sovereignty_class="global", country="US"),
        ep("delta-de-x", third, "nowhere", sovereignty_class="eu_resident", country="DE"),
        ep("epsilon-fr-x", third, "nowhere", retention="P30D"),
        ep("zeta-fr-x", third, "nowhere", api_key_env="LLMEU_TEST_UNSET_KEY"),
        policies=NO_FALLBACK,
    )  # fmt: skip
    started = start_gateway(
        tmp_path_factory.mktemp("gateway"), config=config, args=["--breaker-threshold", "1000"]
    )
    yield started
    started.kill()


@pytest.fixture(autouse=True)
def fresh_counts(upstreams: list[FakeUpstream]) -> None:
    for upstream in upstreams:
        upstream.reset()


def requests_to(upstream: FakeUpstream) -> list[str]:
    """The upstream model name of every request the upstream received."""
    return [seen["model"] for seen in upstream.stats()]


def call(
    gateway: Gateway, route: str, model: str, *, stream: bool = False, key: str | None = None
) -> httpx.Response:
    body: dict[str, Any] = {"model": model}
    if route == "embeddings":
        body["input"] = ["bonjour"]
    else:
        body["messages"] = [{"role": "user", "content": "hi [[chunks=3]]"}]
        body["stream"] = stream
    return httpx.post(
        f"{gateway.base_url}/{route}",
        json=body,
        headers={"authorization": f"Bearer {key or gateway.admin_key}"},
        timeout=30,
    )


def frames(response: httpx.Response) -> list[Any]:
    """The `data:` payloads of an event stream, `[DONE]` as a string."""
    payloads = [b[len("data: ") :] for b in response.text.split("\n\n") if b.startswith("data: ")]
    return [p if p == "[DONE]" else json.loads(p) for p in payloads]


def routing_of(response: httpx.Response) -> dict[str, Any]:
    if response.headers["content-type"].startswith("text/event-stream"):
        block: dict[str, Any] = next(f["llmeu"] for f in frames(response) if "llmeu" in f)
        return block
    routing: dict[str, Any] = response.json()["llmeu"]
    return routing


def trace(gateway: Gateway, response: httpx.Response) -> dict[str, Any]:
    trace_id = response.headers["x-llmeu-trace-id"]
    got = httpx.get(
        f"{gateway.base_url}/platform/traces/{trace_id}",
        headers={"authorization": f"Bearer {gateway.admin_key}"},
        timeout=10,
    )
    assert got.status_code == 200
    document: dict[str, Any] = got.json()
    return document


def attempts(document: dict[str, Any]) -> list[tuple[str, str, int | None]]:
    return [(a["endpoint_id"], a["outcome"], a["upstream_status"]) for a in document["attempts"]]


KINDS = [
    pytest.param("chat/completions", False, id="chat"),
    pytest.param("chat/completions", True, id="stream"),
    pytest.param("embeddings", False, id="embeddings"),
]


@pytest.mark.parametrize(("route", "stream"), KINDS)
def test_a_failure_before_the_first_byte_falls_back_to_the_next_compliant_endpoint(
    gateway: Gateway, upstreams: list[FakeUpstream], route: str, stream: bool
) -> None:
    first, second, third = upstreams
    response = call(gateway, route, "failover", stream=stream)
    assert response.status_code == 200, response.text
    routing = routing_of(response)
    assert (routing["endpoint_id"], routing["policy_id"]) == ("beta-de-serving", "eu-strict")
    # The fake upstream reports 11 prompt tokens and one per delta (5 per embedded input);
    # the serving endpoint's prices are 1 and 2 EUR per million input and output tokens.
    tokens = (5, 0) if route == "embeddings" else (11, 3)
    assert routing["cost_estimate"] == {
        "currency": "EUR", "input_tokens": tokens[0], "output_tokens": tokens[1],
        "amount": pytest.approx((tokens[0] * 1.0 + tokens[1] * 2.0) / 1e6), "estimated": False,
    }  # fmt: skip
    if stream:
        assert frames(response)[-1] == "[DONE]"
    assert requests_to(first) == ["fake;fault=status_503"]
    assert requests_to(second) == ["fake"]
    assert requests_to(third) == [], "the global endpoint has the best priority but is excluded"
    document = trace(gateway, response)
    assert document["status"] == "completed"
    assert attempts(document) == [
        ("alpha-fr-failing", "failed", 503),
        ("beta-de-serving", "served", None),
    ]
    assert document["excluded"] == [
        {"endpoint_id": "gamma-us-global", "rule": "allow_classes",
         "reason": "sovereignty class global is not in [eu_sovereign, on_premise]"},
    ]  # fmt: skip


@pytest.mark.parametrize(("route", "stream"), KINDS)
def test_a_non_compliant_endpoint_is_never_contacted_even_when_every_compliant_one_fails(
    gateway: Gateway, upstreams: list[FakeUpstream], route: str, stream: bool
) -> None:
    first, second, third = upstreams
    response = call(gateway, route, "all-down", stream=stream)
    assert response.status_code == 503
    error = response.json()["error"]
    assert error["code"] == "upstream_unavailable"
    assert "all 2 admitted endpoints failed" in error["message"]
    assert requests_to(first) == ["fake;fault=status_503"]
    assert requests_to(second) == ["fake;fault=status_502"]
    assert requests_to(third) == []
    document = trace(gateway, response)
    assert document["status"] == "failed"
    assert attempts(document) == [
        ("alpha-fr-down", "failed", 503),
        ("beta-de-down", "failed", 502),
    ]
    assert {(x["endpoint_id"], x["rule"]) for x in document["excluded"]} == {
        ("delta-de-resident", "allow_classes"),
        ("gamma-us-open", "allow_classes"),
    }


@pytest.mark.parametrize(("route", "stream"), KINDS)
def test_an_upstream_400_is_answered_not_retried_elsewhere(
    gateway: Gateway, upstreams: list[FakeUpstream], route: str, stream: bool
) -> None:
    first, second, _ = upstreams
    response = call(gateway, route, "rejecting", stream=stream)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "upstream_rejected_request"
    assert requests_to(first) == ["fake;fault=status_400"]
    assert requests_to(second) == []
    assert attempts(trace(gateway, response)) == [("alpha-fr-rejecting", "failed", 400)]


@pytest.mark.parametrize(("route", "stream"), KINDS)
def test_a_policy_without_fallback_stops_at_the_first_failure(
    gateway: Gateway, upstreams: list[FakeUpstream], route: str, stream: bool
) -> None:
    first, second, _ = upstreams
    created = httpx.post(
        f"{gateway.base_url}/platform/keys",
        json={"name": "no-fallback", "policy_id": "no-fallback"},
        headers={"authorization": f"Bearer {gateway.admin_key}"},
        timeout=10,
    )
    assert created.status_code == 201, created.text
    response = call(gateway, route, "failover", stream=stream, key=created.json()["key"])
    assert response.status_code == 503
    assert requests_to(first) == ["fake;fault=status_503"]
    assert requests_to(second) == []
    assert attempts(trace(gateway, response)) == [("alpha-fr-failing", "failed", 503)]


def test_a_stream_that_breaks_after_its_first_frame_is_not_retried(
    gateway: Gateway, upstreams: list[FakeUpstream]
) -> None:
    first, second, _ = upstreams
    response = call(gateway, "chat/completions", "midstream", stream=True)
    assert response.status_code == 200
    payloads = frames(response)
    assert payloads[0]["choices"][0]["delta"] == {"role": "assistant"}
    assert "[DONE]" not in payloads
    assert "error" in payloads[-1]
    assert payloads[-1]["llmeu"]["endpoint_id"] == "alpha-fr-breaking"
    assert len(requests_to(first)) == 1
    assert requests_to(second) == []
    document = trace(gateway, response)
    assert document["status"] == "failed"
    assert [a[:2] for a in attempts(document)] == [("alpha-fr-breaking", "failed")]


def test_a_stream_whose_first_token_times_out_falls_back_before_any_frame(
    gateway: Gateway, upstreams: list[FakeUpstream]
) -> None:
    first, second, _ = upstreams
    response = call(gateway, "chat/completions", "stalled", stream=True)
    assert response.status_code == 200
    payloads = frames(response)
    assert payloads[-1] == "[DONE]"
    assert (
        sum(
            1
            for p in payloads
            if p != "[DONE]" and p["choices"] and p["choices"][0]["delta"].get("role")
        )
        == 1
    )
    assert routing_of(response)["endpoint_id"] == "beta-de-quick"
    assert len(requests_to(first)) == 1 and requests_to(second) == ["fake"]
    assert [a[:2] for a in attempts(trace(gateway, response))] == [
        ("alpha-fr-stalled", "failed"),
        ("beta-de-quick", "served"),
    ]


EXCLUDED = [
    {"endpoint_id": "gamma-us-x", "rule": "allow_classes",
     "reason": "sovereignty class global is not in [eu_sovereign, on_premise]"},
    {"endpoint_id": "delta-de-x", "rule": "allow_classes",
     "reason": "sovereignty class eu_resident is not in [eu_sovereign, on_premise]"},
    {"endpoint_id": "epsilon-fr-x", "rule": "max_retention",
     "reason": "provider retention P30D exceeds max_retention P0D"},
    {"endpoint_id": "zeta-fr-x", "rule": "unavailable",
     "reason": "LLMEU_TEST_UNSET_KEY is not set"},
]  # fmt: skip


@pytest.mark.parametrize(("route", "stream"), KINDS)
def test_no_compliant_route_is_a_403_listing_each_excluded_endpoint_and_its_rule(
    gateway: Gateway, upstreams: list[FakeUpstream], route: str, stream: bool
) -> None:
    response = call(gateway, route, "nowhere", stream=stream)
    assert response.status_code == 403
    error = response.json()["error"]
    assert error["type"] == "permission_error"
    assert error["code"] == "no_compliant_route"
    assert error["details"] == EXCLUDED
    assert error["message"].startswith("No endpoint for `nowhere` satisfies policy `eu-strict`: ")
    for excluded in EXCLUDED:
        assert f"{excluded['endpoint_id']}: {excluded['reason']}" in error["message"]
    assert all(requests_to(upstream) == [] for upstream in upstreams)
    document = trace(gateway, response)
    assert document["status"] == "rejected"
    assert document["attempts"] == []
    assert document["excluded"] == EXCLUDED

"""`GET /metrics`: scraped with Prometheus' own text parser, before and after calls."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.observability.harness import AUTH, Harness, hang_up, in_process
from tests.support.processes import REPO, FakeUpstream, config_yaml, fake_endpoint

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sum over the samples of `name` whose labels include `labels` (0 when none)."""
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= ls)


@pytest.fixture
def config(fake_upstream: FakeUpstream) -> str:
    return config_yaml(
        fake_endpoint("fakeprov-fr-a", fake_upstream),
        fake_endpoint(
            "fakeprov-fr-broken", fake_upstream, model="fake;fault=status_503", aliases=["broken"]
        ),
        fake_endpoint(
            "fakeprov-fr-flaky", fake_upstream, model="fake;fault=status_503", aliases=["flaky"]
        ),
        fake_endpoint("fakeprov-fr-spare", fake_upstream, aliases=["flaky"], priority=20),
    )


async def exercise(gw: Harness) -> None:
    """Two chats (one streamed), embeddings, a 404, a fallback and a hang-up."""
    plain = await gw.chat("one [[chunks=3]]")
    streamed = await gw.chat(
        "two [[chunks=5]]", stream=True, stream_options={"include_usage": True}
    )
    embedded = await gw.client.post(
        "/v1/embeddings", json={"model": "fake-model", "input": ["a", "b"]}, headers=AUTH
    )
    assert (plain.status_code, streamed.status_code, embedded.status_code) == (200, 200, 200)
    assert (await gw.chat("x", model="no-such-model")).status_code == 404
    assert (await gw.chat("x", model="flaky")).status_code == 200
    await hang_up(gw.app, "long [[chunks=2000;delay=5]]", after_deltas=2)


async def test_counters_move_as_calls_are_made(tmp_path: Path, config: str) -> None:
    chat = {"route": "chat.completions", "model": "fake-model", "endpoint": "fakeprov-fr-a"}
    async with in_process(tmp_path, config) as gw:
        before = parse(await gw.metrics())
        assert value(before, "llmeu_requests_total") == 0
        await exercise(gw)
        after = parse(await gw.metrics())

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    completed = {**chat, "status": "completed", "code": "200", "sovereignty_class": "eu_sovereign"}
    assert moved("llmeu_requests_total", **completed) == 2
    assert moved("llmeu_requests_total", route="embeddings", status="completed") == 1
    assert moved("llmeu_requests_total", status="rejected", code="404", model="other") == 1
    assert moved("llmeu_requests_total", status="cancelled", code="499") == 1
    assert moved("llmeu_requests_total") == 6
    assert moved("llmeu_cancellations_total", route="chat.completions") == 1
    assert moved("llmeu_fallbacks_total", route="chat.completions", status="completed") == 1
    assert moved("llmeu_tokens_total", type="output", **_no_route(chat)) >= 3 + 5
    assert moved("llmeu_tokens_total", type="input", model="fake-model") >= 11 + 11 + 10
    assert moved("llmeu_cost_eur_total") > 0
    assert moved("llmeu_time_to_first_token_seconds_count", endpoint="fakeprov-fr-a") == 2
    assert moved("llmeu_time_per_output_token_seconds_count") == 1
    assert moved("llmeu_gateway_overhead_seconds_count", stream="false") == 3
    assert moved("llmeu_gateway_overhead_seconds_count", stream="true") == 2
    assert moved("llmeu_upstream_latency_seconds_count", outcome="failed") == 1
    assert moved("llmeu_upstream_latency_seconds_count", outcome="served") == 4
    assert moved("llmeu_upstream_latency_seconds_count", outcome="cancelled") == 1
    assert moved("llmeu_request_duration_seconds_count") == 6
    assert value(after, "llmeu_requests_in_progress") == 0
    assert value(after, "llmeu_active_streams") == 0
    assert moved("llmeu_ledger_writes_total") > 0
    assert value(after, "llmeu_ledger_healthy") == 1


def _no_route(labels: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in labels.items() if k != "route"}


async def test_circuit_breaker_state_per_endpoint(tmp_path: Path, config: str) -> None:
    async with in_process(tmp_path, config) as gw:
        before = parse(await gw.metrics())
        for _ in range(gw.app.gateway.breaker.failure_threshold):
            assert (await gw.chat("x", model="broken")).status_code in (502, 503)
        after = parse(await gw.metrics())
    state = "llmeu_circuit_breaker_state"
    assert value(before, state, endpoint="fakeprov-fr-broken") == 0
    assert value(after, state, endpoint="fakeprov-fr-broken") == 2
    assert value(after, state, endpoint="fakeprov-fr-a") == 0
    failures = "llmeu_circuit_breaker_consecutive_failures"
    assert value(after, failures, endpoint="fakeprov-fr-broken") == 5


async def test_metrics_need_no_key_and_carry_no_tenant_data(tmp_path: Path, config: str) -> None:
    async with in_process(tmp_path, config) as gw:
        assert (await gw.chat("hello")).status_code == 200
        response = await gw.client.get("/metrics")  # no Authorization header
        openmetrics = await gw.client.get(
            "/metrics", headers={"accept": "application/openmetrics-text; version=1.0.0"}
        )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    assert openmetrics.headers["content-type"].startswith("application/openmetrics-text")
    labels = {name for (_, ls) in parse(response.text) for name, _ in ls}
    assert labels.isdisjoint({"key", "key_id", "policy", "policy_id", "tenant"})
    assert "admin" not in response.text


async def test_the_grafana_dashboard_uses_only_exposed_metrics(tmp_path: Path, config: str) -> None:
    dashboard = json.loads((REPO / "docs/grafana-dashboard.json").read_text())
    text = json.dumps(dashboard)
    used = set(re.findall(r"\bllmeu_[a-z_]+", text))
    async with in_process(tmp_path, config) as gw:
        await exercise(gw)
        exposed = {name for name, _ in parse(await gw.metrics())}
    assert len(used) >= 15
    assert used <= exposed, used - exposed

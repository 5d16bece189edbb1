"""Provider prompt caching through a real `llmeu serve`: the client's Anthropic breakpoints reach
a native Anthropic upstream, the tokens it read from its cache are priced at the catalog's
`cached_input` rate, and `prompt_cache_key` reaches only an endpoint that takes it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.anthropic_upstream import (
    FAKE_ANTHROPIC_KEY,
    anthropic_endpoint,
    start_fake_anthropic,
)
from tests.support.client_traces import settled_trace
from tests.support.processes import ADMIN_KEY, FakeUpstream, Gateway, config_yaml, fake_endpoint

PRICES = "price_eur_per_mtok: {input: 1.0, output: 2.0}"
CACHED_PRICES = "price_eur_per_mtok: {input: 1.0, output: 2.0, cached_input: 0.1}"
MARK = {"type": "ephemeral"}


@pytest.fixture
def fake_anthropic(tmp_path: Path) -> Iterator[FakeUpstream]:
    upstream = start_fake_anthropic(tmp_path)
    yield upstream
    upstream.stop()


@pytest.fixture
def gateway(
    gateway_factory: Callable[..., Gateway],
    fake_upstream: FakeUpstream,
    fake_anthropic: FakeUpstream,
) -> Gateway:
    keyed = fake_endpoint("keyed-fr-a", fake_upstream, aliases=("keyed",),
                          capabilities=("chat", "prompt_cache_key"))  # fmt: skip
    plain = fake_endpoint("plain-fr-a", fake_upstream, aliases=("plain",))
    claude = anthropic_endpoint("anthro-fr-a", fake_anthropic).replace(PRICES, CACHED_PRICES)
    return gateway_factory(config=config_yaml(keyed, plain, claude),
                           env={"FAKE_ANTHROPIC_KEY": FAKE_ANTHROPIC_KEY})  # fmt: skip


def _post(gateway: Gateway, path: str, body: dict[str, object]) -> dict[str, object]:
    response = httpx.post(f"{gateway.url}{path}", json=body, timeout=30,
                          headers={"authorization": f"Bearer {ADMIN_KEY}"})  # fmt: skip
    assert response.status_code == 200, response.text
    answer: dict[str, object] = response.json()
    return answer


def test_anthropic_breakpoints_pass_through_and_cached_input_is_priced_as_such(
    gateway: Gateway, fake_anthropic: FakeUpstream
) -> None:
    message = _post(gateway, "/v1/messages", {
        "model": "claude-eu", "max_tokens": 50,
        "system": [{"type": "text", "text": "a long stable preamble", "cache_control": MARK}],
        "tools": [{"name": "lookup", "input_schema": {"type": "object"}, "cache_control": MARK}],
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "hi [[cache=1;chunks=2]]", "cache_control": MARK}]}],
    })  # fmt: skip
    (seen,) = fake_anthropic.stats()
    body = seen["body"]
    assert body["system"] == [{"type": "text", "text": "a long stable preamble",
                               "cache_control": MARK}]  # fmt: skip
    assert body["tools"][0]["cache_control"] == MARK
    assert body["messages"][0]["content"][0]["cache_control"] == MARK
    routing = message["llmeu"]
    assert isinstance(routing, dict)
    trace = settled_trace(gateway, routing["trace_id"])
    usage = trace["usage"]
    assert usage["cache_read_tokens"] == 5 and usage["cache_creation_tokens"] == 3
    uncached = usage["input_tokens"] - 5
    assert usage["cost_eur"] == pytest.approx((uncached * 1.0 + 5 * 0.1 + 2 * 2.0) / 1e6)
    assert routing["cost_estimate"]["amount"] == pytest.approx(usage["cost_eur"])


@pytest.mark.parametrize(("model", "forwarded"), [("keyed", True), ("plain", False)])
def test_prompt_cache_key_reaches_only_an_endpoint_that_takes_it(
    gateway: Gateway, fake_upstream: FakeUpstream, model: str, forwarded: bool
) -> None:
    _post(gateway, "/v1/chat/completions", {
        "model": model, "prompt_cache_key": "tenant-a-support-bot",
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "hi [[reply=echo]]", "cache_control": MARK}]}],
    })  # fmt: skip
    (seen,) = fake_upstream.stats()
    sent = json.loads(seen["body"])
    assert sent.get("prompt_cache_key") == ("tenant-a-support-bot" if forwarded else None)
    assert "cache_control" not in seen["body"]

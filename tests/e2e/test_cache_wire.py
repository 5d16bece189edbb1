"""Streams served from the answer cache, through a real `llmeu serve`: the byte-level checks of a
live chat stream and the official SDKs' stream tests, run again on cached answers.

Each SDK test runs with a client whose transport sends every inference request twice and hands
the SDK the second answer: the first call is live and kept, the second is the cache's. The
upstream seeing only the first of each pair proves that every answer the tests check came
from the cache.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest

from tests.e2e import test_chat_wire as chat_wire
from tests.e2e import test_messages_sdk as messages_sdk
from tests.e2e import test_openai_sdk as openai_sdk
from tests.e2e import test_responses_sdk as responses_sdk
from tests.support.processes import FakeUpstream, Gateway, config_yaml, fake_endpoint

CACHING = """
  - policy_id: cached
    allow_classes: [on_premise, eu_sovereign]
    max_retention: P0D
    store_content: P1D
    cache: {ttl: PT1H}
"""


@pytest.fixture
def gateway(gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream) -> Gateway:
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream), policies=CACHING,
                         default_policy="cached")  # fmt: skip
    return gateway_factory(config=config)


@pytest.mark.parametrize("include_usage", [True, False], ids=["with-usage", "without-usage"])
def test_a_cached_stream_passes_the_byte_level_checks(
    gateway: Gateway, fake_upstream: FakeUpstream, include_usage: bool
) -> None:
    live = chat_wire.check_stream_frames(gateway, include_usage)
    cached = chat_wire.check_stream_frames(gateway, include_usage, cached=True)
    assert len(fake_upstream.stats()) == 1
    assert cached["cache"] == {"hit": True, "kind": "exact", "source_trace_id": live["trace_id"],
                               "saved_eur": live["cost_estimate"]["amount"]}  # fmt: skip
    assert cached["trace_id"] != live["trace_id"]


def doubling(http: ModuleType) -> Any:
    """A transport of `http` (httpx, or the httpx2 the anthropic SDK brings) that sends each
    inference request twice and hands the SDK the second answer; `pairs` counts them."""

    class Twice(http.BaseTransport):  # type: ignore[name-defined,misc]
        def __init__(self) -> None:
            self._http = http.HTTPTransport()
            self.pairs = 0

        def handle_request(self, request: Any) -> Any:
            if request.method == "POST" and "/platform/" not in request.url.path:
                request.read()
                first = self._http.handle_request(request)
                first.read()
                first.close()
                assert first.status_code == 200, first.text
                self.pairs += 1
            return self._http.handle_request(request)

        def close(self) -> None:
            self._http.close()

    return Twice()


@pytest.fixture
def twice() -> Iterator[Any]:
    transport = doubling(httpx)
    yield transport
    transport.close()


def _served_from_the_cache(upstream: FakeUpstream, twice: Any) -> None:
    assert twice.pairs > 0
    assert len(upstream.stats()) == twice.pairs


def test_the_openai_sdk_streams_a_cached_chat(
    gateway: Gateway, fake_upstream: FakeUpstream, twice: Any
) -> None:
    client = openai.OpenAI(base_url=gateway.base_url, api_key=gateway.admin_key, max_retries=0,
                           http_client=httpx.Client(transport=twice))  # fmt: skip
    openai_sdk.test_sdk_streaming_yields_each_delta_and_the_routing_block(client)
    _served_from_the_cache(fake_upstream, twice)


def test_the_openai_sdk_streams_cached_responses(
    gateway: Gateway, fake_upstream: FakeUpstream, twice: Any
) -> None:
    client = openai.OpenAI(base_url=gateway.base_url, api_key=gateway.admin_key, max_retries=0,
                           http_client=httpx.Client(transport=twice))  # fmt: skip
    responses_sdk.test_create_streamed_yields_every_event_in_order(client)
    responses_sdk.test_stream_helpers_accumulate_the_final_response(client)
    _served_from_the_cache(fake_upstream, twice)


def test_the_anthropic_sdk_streams_a_cached_message(
    gateway: Gateway, fake_upstream: FakeUpstream
) -> None:
    twice = doubling(httpx2)
    client = anthropic.Anthropic(base_url=gateway.url, api_key=gateway.admin_key, max_retries=0,
                                 http_client=httpx2.Client(transport=twice))  # fmt: skip
    messages_sdk.test_stream_helpers_give_the_text_and_the_final_message(client, gateway)
    _served_from_the_cache(fake_upstream, twice)
    twice.close()

"""The whole request surface end to end: a real `llmeu serve`, the fake upstream, the SDKs.

What llmeu accepts without effect, or reads itself, never reaches the
upstream and is named on the trace (`ignored_features`); the deprecated
`functions` come back in their own form through the official SDK; Codex CLI's
first request is answered, its hosted tools dropped under the default policy.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from llmeu.calls.request import GATEWAY_FIELDS
from tests.support.client_traces import settled_trace
from tests.support.processes import FakeUpstream, Gateway, config_yaml, fake_endpoint, start_gateway

CODEX = Path(__file__).parents[1] / "support" / "codex_exec_request.json"
WEATHER = {"name": "get_weather", "parameters": {"type": "object"}}


@pytest.fixture(scope="module")
def gateway(
    upstream_process: FakeUpstream, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gateway]:
    config = config_yaml(fake_endpoint("fakeprov-fr-a", upstream_process))
    gateway = start_gateway(tmp_path_factory.mktemp("request-surface"), config=config)
    yield gateway
    gateway.kill()


@pytest.fixture
def client(gateway: Gateway, fake_upstream: FakeUpstream) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.base_url, api_key=gateway.admin_key, max_retries=0)


def ignored(gateway: Gateway, trace_id: str) -> list[str]:
    features = settled_trace(gateway, trace_id).get("ignored_features") or ""
    return features.split(", ") if features else []


def test_chat_fields_without_effect_stay_in_the_gateway_and_are_on_the_trace(
    gateway: Gateway, client: openai.OpenAI, fake_upstream: FakeUpstream
) -> None:
    stream = client.chat.completions.create(
        model="fake-model",
        messages=[{"role": "user", "content": "hi [[reply=echo]]"}],
        stream=True,
        stream_options={"include_usage": True, "include_obfuscation": True},
        store=True, service_tier="flex", prompt_cache_key="k", prompt_cache_retention="24h",
        verbosity="low", prediction={"type": "content", "content": "hello"},
        web_search_options={}, safety_identifier="h-ana", metadata={"team": "a"},
    )  # fmt: skip
    chunks = [chunk.model_dump(exclude_unset=True) for chunk in stream]
    assert not any("obfuscation" in c for c in chunks)
    trace_id = next(c["llmeu"]["trace_id"] for c in chunks if "llmeu" in c)
    sent = json.loads(fake_upstream.stats()[-1]["body"])
    assert not set(sent) & set(GATEWAY_FIELDS)
    assert sent["user"] == "h-ana" and sent["metadata"] == {"team": "a"}
    assert ignored(gateway, trace_id) == [
        "prediction", "prompt_cache_key", "prompt_cache_retention", "service_tier", "store",
        "verbosity", "web_search_options", "stream_options.include_obfuscation",
    ]  # fmt: skip


def test_legacy_functions_come_back_as_function_call(client: openai.OpenAI) -> None:
    kwargs: dict[str, Any] = {
        "model": "fake-model",
        "messages": [{"role": "user", "content": "weather? [[tools=1;chunks=3]]"}],
        "functions": [WEATHER],
    }
    whole = client.chat.completions.create(**kwargs).choices[0]
    assert whole.finish_reason == "function_call" and whole.message.tool_calls is None
    assert whole.message.function_call is not None
    assert whole.message.function_call.name == "get_weather"
    chunks = list(client.chat.completions.create(**kwargs, stream=True))
    pieces = [c.choices[0].delta.function_call for c in chunks if c.choices]
    assert "".join(p.arguments or "" for p in pieces if p) == whole.message.function_call.arguments
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "function_call"


def _codex_request() -> dict[str, Any]:
    body: dict[str, Any] = json.loads(CODEX.read_bytes())
    body["model"] = "fake-model"
    return body


def _events(gateway: Gateway, body: dict[str, Any]) -> tuple[int, list[dict[str, Any]]]:
    response = httpx.post(f"{gateway.base_url}/responses", json=body, timeout=60,
                          headers={"authorization": f"Bearer {gateway.admin_key}"})  # fmt: skip
    if response.status_code != 200:
        return response.status_code, [response.json()]
    data = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
    return 200, [json.loads(d) for d in data]


def test_codex_first_request_with_its_function_tools_is_answered(gateway: Gateway) -> None:
    body = _codex_request()
    body["tools"] = [tool for tool in body["tools"] if tool["type"] == "function"]
    status, events = _events(gateway, body)
    assert status == 200, events
    assert events[-1]["type"] == "response.completed"
    trace_id = events[-1]["response"]["llmeu"]["trace_id"]
    assert ignored(gateway, trace_id) == ["client_metadata", "prompt_cache_key", "text.verbosity"]


def test_codex_first_request_is_answered(gateway: Gateway) -> None:
    status, events = _events(gateway, _codex_request())
    assert status == 200, events
    assert events[-1]["type"] == "response.completed"
    assert events[-1]["response"]["llmeu"]["dropped_tools"] == ["tool_search", "web_search"]


def test_messages_fields_without_effect_are_on_the_trace_with_the_betas(gateway: Gateway) -> None:
    client = anthropic.Anthropic(base_url=gateway.url, api_key=gateway.admin_key, max_retries=0)
    message = client.beta.messages.create(
        model="fake-model",
        max_tokens=20,
        messages=[{"role": "user", "content": "hi [[chunks=2]]"}],
        service_tier="auto", container="cnt_1", thread={"type": "create"},
        betas=["files-api-2025-04-14"],
    )  # fmt: skip
    trace_id = message.model_extra["llmeu"]["trace_id"]  # type: ignore[index]
    assert settled_trace(gateway, trace_id)["ignored_features"] == (
        "container, service_tier, thread; anthropic-beta: files-api-2025-04-14"
    )

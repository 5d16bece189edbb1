"""Azure OpenAI, Bedrock and Vertex through a real `llmeu serve`, with the official openai SDK.

Each kind talks to its fake upstream (`tests/support/fake_<kind>.py`), a real
process speaking the provider's wire: Bedrock's binary event stream with
SigV4 checked on every request, Vertex's SSE with OAuth2 tokens from a
service-account key, Azure's deployment and v1 URLs with its `api-key`, and
Claude on Vertex (`kind: vertex_anthropic`): Anthropic's events from
`:streamRawPredict` behind the same OAuth2 tokens.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.support.native_upstreams import SECRETS, NativeFakes
from tests.support.processes import FakeUpstream, Gateway, start_gateway
from tests.support.streams import open_stream, read_until
from tests.support.waiting import wait_for

KINDS = {
    # alias: (fake, provider, region, content chunks the fake sends before the first delta)
    "azure-model": ("azure", "azure", "swedencentral", 2),
    "azure-v1-model": ("azure", "azure", "swedencentral", 2),
    "bedrock-model": ("bedrock", "bedrock", "eu-central-1", 1),
    "vertex-model": ("vertex", "vertex", "europe-west4", 0),
    "vertex-claude-model": ("vertex", "vertex", "europe-west1", 3),  # kind: vertex_anthropic
}
MODELS = list(KINDS)


@pytest.fixture(scope="module")
def fakes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NativeFakes]:
    started = NativeFakes.start(tmp_path_factory.mktemp("native"))
    yield started
    started.stop()


@pytest.fixture(scope="module")
def gateway(fakes: NativeFakes, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    started = start_gateway(tmp_path_factory.mktemp("gw"), config=fakes.config(),
                            env=fakes.environ(), args=["--log-level", "debug"])  # fmt: skip
    yield started
    started.kill()


@pytest.fixture
def client(gateway: Gateway, fakes: NativeFakes) -> openai.OpenAI:
    fakes.reset()
    return openai.OpenAI(base_url=gateway.base_url, api_key=gateway.admin_key, max_retries=0)


def fake_of(fakes: NativeFakes, model: str) -> FakeUpstream:
    fake: FakeUpstream = getattr(fakes, KINDS[model][0])
    return fake


TOOLS: Any = [{"type": "function", "function": {"name": "get_weather", "description": "weather",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]  # fmt: skip


@pytest.mark.parametrize("model", MODELS)
def test_streamed_chat_with_usage_and_routing_block(client: openai.OpenAI, model: str) -> None:
    stream = client.chat.completions.create(
        model=model, stream=True, stream_options={"include_usage": True},
        messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
    )  # fmt: skip
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "tok0 tok1 tok2 tok3 "
    final = next(c for c in chunks if c.choices and c.choices[0].finish_reason)
    assert final.choices[0].finish_reason == "stop"
    _, provider, region, _ = KINDS[model]
    routing = (final.model_extra or {})["llmeu"]
    assert (routing["provider"], routing["inference_region"], routing["sovereignty_class"]) == (
        provider, region, "eu_resident")  # fmt: skip
    usage = chunks[-1].usage
    assert usage is not None and (usage.prompt_tokens, usage.completion_tokens) == (11, 4)
    assert routing["cost_estimate"]["estimated"] is False


@pytest.mark.parametrize("model", MODELS)
def test_whole_chat_with_usage_and_routing_block(client: openai.OpenAI, model: str) -> None:
    completion = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "hi"}], max_tokens=50, temperature=0.2
    )
    assert completion.choices[0].message.content == "tok0 tok1 tok2 tok3 "
    assert completion.usage is not None and completion.usage.prompt_tokens == 11
    routing = (completion.model_extra or {})["llmeu"]
    assert routing["inference_region"] == KINDS[model][2]
    assert routing["sovereignty_class"] == "eu_resident"


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize("model", MODELS)
def test_tool_calls(client: openai.OpenAI, model: str, stream: bool) -> None:
    messages: Any = [{"role": "user", "content": "weather? [[tools=1]]"}]
    if stream:
        chunks = list(client.chat.completions.create(model=model, messages=messages,
                                                     tools=TOOLS, stream=True))  # fmt: skip
        name, arguments, finish = "", "", None
        for chunk in chunks:
            if not chunk.choices:
                continue
            for call in chunk.choices[0].delta.tool_calls or ():
                name += (call.function and call.function.name) or ""
                arguments += (call.function and call.function.arguments) or ""
            finish = chunk.choices[0].finish_reason or finish
    else:
        completion = client.chat.completions.create(model=model, messages=messages, tools=TOOLS)
        (call,) = completion.choices[0].message.tool_calls or []
        name, arguments = call.function.name, call.function.arguments
        finish = completion.choices[0].finish_reason
    assert (name, json.loads(arguments), finish) == ("get_weather", {"city": "Paris"}, "tool_calls")


@pytest.mark.parametrize("model", MODELS)
def test_a_tool_result_goes_back_to_the_upstream(client: openai.OpenAI, model: str) -> None:
    messages: Any = [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    ]  # fmt: skip
    completion = client.chat.completions.create(model=model, messages=messages, tools=TOOLS)
    assert completion.choices[0].message.content == "tok0 tok1 tok2 tok3 "


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize("kind", ["azure", "bedrock", "vertex", "vertex-claude"])
def test_throttling_falls_back_to_another_admitted_endpoint(
    client: openai.OpenAI, gateway: Gateway, kind: str, stream: bool
) -> None:
    messages: Any = [{"role": "user", "content": "hi"}]
    if stream:
        chunks = list(client.chat.completions.create(model=f"{kind}-fallback", stream=True,
                                                     messages=messages))  # fmt: skip
        routing = next(c.model_extra["llmeu"] for c in chunks if "llmeu" in (c.model_extra or {}))
    else:
        completion = client.chat.completions.create(model=f"{kind}-fallback", messages=messages)
        routing = (completion.model_extra or {})["llmeu"]
    assert routing["endpoint_id"] == f"{kind}-spare"
    trace = _trace(gateway, routing["trace_id"])
    attempts = trace["attempts"]
    assert [a["endpoint_id"] for a in attempts] == [f"{kind}-throttled", f"{kind}-spare"]


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_the_first_token_timeout_falls_back(
    client: openai.OpenAI, gateway: Gateway, stream: bool
) -> None:
    messages: Any = [{"role": "user", "content": "hi"}]
    if stream:
        chunks = list(client.chat.completions.create(model="bedrock-slow-fallback", stream=True,
                                                     messages=messages))  # fmt: skip
        routing = next(c.model_extra["llmeu"] for c in chunks if "llmeu" in (c.model_extra or {}))
    else:
        completion = client.chat.completions.create(model="bedrock-slow-fallback",
                                                    messages=messages)  # fmt: skip
        routing = (completion.model_extra or {})["llmeu"]
    attempts = _trace(gateway, routing["trace_id"])["attempts"]
    assert [(a["endpoint_id"], a["outcome"]) for a in attempts] == [
        ("bedrock-stalled", "failed"), ("bedrock-patient", "served")]  # fmt: skip
    assert "0.5 s" in str(attempts[0]["error"])


def test_a_throttling_event_before_any_content_falls_back(client: openai.OpenAI) -> None:
    chunks = list(client.chat.completions.create(
        model="bedrock-stream-fallback", stream=True, messages=[{"role": "user", "content": "hi"}]))  # fmt: skip
    routing = next(c.model_extra["llmeu"] for c in chunks if "llmeu" in (c.model_extra or {}))
    assert routing["endpoint_id"] == "bedrock-spare"


@pytest.mark.parametrize(
    ("model", "fault"),
    [("azure-model", "error_event"), ("bedrock-model", "error_event"),
     ("bedrock-model", "crc"), ("bedrock-model", "truncated"),
     ("vertex-model", "error_event"), ("vertex-model", "malformed"),
     ("vertex-model", "truncated"), ("vertex-claude-model", "overloaded_event")],
)  # fmt: skip
def test_a_broken_stream_ends_with_an_error_not_done(
    client: openai.OpenAI, model: str, fault: str
) -> None:
    stream = client.chat.completions.create(
        model=model, stream=True,
        messages=[{"role": "user", "content": f"hi [[fault={fault};chunks=4]]"}],
    )  # fmt: skip
    received: list[str] = []

    def read() -> None:
        for chunk in stream:
            received.append((chunk.choices[0].delta.content or "") if chunk.choices else "")

    with pytest.raises(openai.APIError):
        read()
    assert "".join(received) == "tok0 tok1 "


@pytest.mark.parametrize("model", MODELS)
def test_a_hangup_closes_the_upstream_within_one_chunk(
    gateway: Gateway, fakes: NativeFakes, model: str
) -> None:
    fakes.reset()
    fake = fake_of(fakes, model)
    body = {"model": model, "stream": True,
            "messages": [{"role": "user", "content": "long [[chunks=2000;delay=300]]"}]}  # fmt: skip
    sock = open_stream(gateway, "", body=body)
    received = read_until(sock, b'"content"', 3).count(b'"content"')
    sock.close()

    def closed() -> dict[str, Any] | None:
        seen = [s for s in fake.stats() if s["path"] != "/token"]
        return seen[-1] if seen and seen[-1]["closed_at"] is not None else None

    seen = wait_for(closed, what="the upstream connection to close")
    assert seen["completed"] is False
    # Chunks before the first delta (Azure's filter results and role, Bedrock's messageStart)
    # and the deltas the client got; at most the one in flight when the close arrived.
    assert seen["chunks_sent"] - KINDS[model][3] <= received


def test_bedrock_reasoning_streams_as_reasoning_content(client: openai.OpenAI) -> None:
    chunks = list(client.chat.completions.create(model="bedrock-model", stream=True,
                  messages=[{"role": "user", "content": "think [[reasoning=1]]"}]))  # fmt: skip
    reasoning = "".join(
        (c.choices[0].delta.model_extra or {}).get("reasoning_content") or ""
        for c in chunks
        if c.choices
    )
    assert reasoning == "thinking"


def test_bedrock_refuses_a_bad_signature_and_the_call_fails_cleanly(
    fakes: NativeFakes, tmp_path: Path
) -> None:
    gateway = start_gateway(tmp_path, config=fakes.config(),
                            env=fakes.environ(aws_secret="not-the-secret"))  # fmt: skip
    try:
        client = openai.OpenAI(base_url=gateway.base_url, api_key=gateway.admin_key,
                               max_retries=0)  # fmt: skip
        with pytest.raises(openai.APIStatusError) as raised:
            client.chat.completions.create(model="bedrock-model",
                                           messages=[{"role": "user", "content": "hi"}])  # fmt: skip
        assert raised.value.status_code in (502, 503)
        assert "not-the-secret" not in raised.value.response.text
        assert fakes.bedrock.stats()[-1]["auth"] == "refused"
    finally:
        gateway.kill()


def test_vertex_refreshes_an_expired_token_and_retries_once(
    client: openai.OpenAI, fakes: NativeFakes
) -> None:
    client.chat.completions.create(
        model="vertex-model", messages=[{"role": "user", "content": "a"}]
    )
    before = _tokens(fakes.vertex)
    completion = client.chat.completions.create(
        model="vertex-model", messages=[{"role": "user", "content": "b [[fault=expire_token]]"}]
    )
    assert completion.choices[0].message.content == "tok0 tok1 tok2 tok3 "
    assert _tokens(fakes.vertex) == before + 1
    calls = [s for s in fakes.vertex.stats() if s["path"] != "/token"]
    assert [s["status"] for s in calls[-2:]] == [401, 200]


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize(("model", "fault"), [("vertex-model", "safety"),
                                              ("vertex-model", "blocked"),
                                              ("azure-model", "filter_finish")])  # fmt: skip
def test_safety_stops_are_content_filter(
    client: openai.OpenAI, model: str, fault: str, stream: bool
) -> None:
    messages: Any = [{"role": "user", "content": f"x [[fault={fault}]]"}]
    if stream:
        chunks = list(client.chat.completions.create(model=model, messages=messages, stream=True))
        finish = next(c.choices[0].finish_reason for c in chunks
                      if c.choices and c.choices[0].finish_reason)  # fmt: skip
    else:
        finish = client.chat.completions.create(model=model, messages=messages).choices[
            0].finish_reason  # fmt: skip
    assert finish == "content_filter"


def test_azure_content_filter_refusal_is_a_400_with_its_code(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(
            model="azure-model",
            messages=[{"role": "user", "content": "x [[fault=content_filter]]"}],
        )
    assert raised.value.code == "content_filter"


@pytest.mark.parametrize("model", ["bedrock-model", "vertex-model", "vertex-claude-model"])
def test_an_error_quoting_the_prompt_is_scrubbed(client: openai.OpenAI, model: str) -> None:
    prompt = "the quarterly figures of project nightingale are confidential"
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": f"{prompt} [[fault=echo]]"}]
        )
    text = raised.value.response.text
    assert "[redacted]" in text
    assert "nightingale" not in text and "quarterly figures" not in text


def test_an_endpoint_without_usable_credentials_is_unavailable_saying_why(
    gateway: Gateway,
) -> None:
    headers = {"authorization": f"Bearer {gateway.admin_key}"}
    listed = httpx.get(f"{gateway.url}/v1/platform/endpoints", headers=headers).json()["data"]
    reasons = {e["endpoint_id"]: e["unavailable_reason"] for e in listed}
    assert "not a readable service-account key" in reasons["vertex-unreadable-key"]
    assert reasons["azure-unset-key"] == "AZURE_KEY_NOBODY_SET is not set"
    assert reasons["bedrock-eu-central-1-claude"] is None


def test_no_credential_in_logs_traces_or_metrics(
    client: openai.OpenAI, gateway: Gateway, fakes: NativeFakes
) -> None:
    for model in MODELS:
        client.chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}])
    headers = {"authorization": f"Bearer {gateway.admin_key}"}
    traces = httpx.get(f"{gateway.url}/v1/platform/traces?limit=200", headers=headers).text
    metrics = httpx.get(f"{gateway.url}/metrics").text
    token_prefix = "ya29.fake-"
    for text in (gateway.output(), traces, metrics):
        for secret in (*SECRETS, fakes.private_key.splitlines()[1], token_prefix):
            assert secret not in text


def _trace(gateway: Gateway, trace_id: str) -> dict[str, Any]:
    headers = {"authorization": f"Bearer {gateway.admin_key}"}
    response = httpx.get(f"{gateway.url}/v1/platform/traces/{trace_id}", headers=headers)
    response.raise_for_status()
    trace: dict[str, Any] = response.json()
    return trace


def _tokens(fake: FakeUpstream) -> int:
    with httpx.Client() as http:
        counters: dict[str, int] = http.get(f"http://127.0.0.1:{fake.port}/_stats").json()[
            "counters"
        ]
    return counters.get("tokens", 0)


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_claude_on_vertex_overloaded_falls_back(
    client: openai.OpenAI, gateway: Gateway, stream: bool
) -> None:
    messages: Any = [{"role": "user", "content": "hi"}]
    if stream:
        chunks = list(client.chat.completions.create(model="vertex-claude-overloaded",
                                                     stream=True, messages=messages))  # fmt: skip
        routing = next(c.model_extra["llmeu"] for c in chunks if "llmeu" in (c.model_extra or {}))
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    else:
        completion = client.chat.completions.create(model="vertex-claude-overloaded",
                                                    messages=messages)  # fmt: skip
        routing = (completion.model_extra or {})["llmeu"]
        text = completion.choices[0].message.content or ""
    assert text == "tok0 tok1 tok2 tok3 "
    assert (routing["endpoint_id"], routing["inference_region"]) == (
        "vertex-claude-spare", "europe-west1")  # fmt: skip
    attempts = _trace(gateway, routing["trace_id"])["attempts"]
    assert [(a["endpoint_id"], a["outcome"]) for a in attempts] == [
        ("vertex-claude-529", "failed"), ("vertex-claude-spare", "served")]  # fmt: skip
    assert "529" in str(attempts[0]) or "overloaded" in str(attempts[0]).lower()


def test_claude_on_vertex_refreshes_an_expired_token_and_retries_once(
    client: openai.OpenAI, fakes: NativeFakes
) -> None:
    client.chat.completions.create(
        model="vertex-claude-model", messages=[{"role": "user", "content": "a"}]
    )
    before = _tokens(fakes.vertex)
    completion = client.chat.completions.create(
        model="vertex-claude-model",
        messages=[{"role": "user", "content": "b [[fault=expire_token]]"}],
    )
    assert completion.choices[0].message.content == "tok0 tok1 tok2 tok3 "
    assert _tokens(fakes.vertex) == before + 1
    calls = [s for s in fakes.vertex.stats() if s["path"] != "/token"]
    assert [s["status"] for s in calls[-2:]] == [401, 200]
    path = calls[-1]["path"]
    assert "/locations/europe-west1/publishers/anthropic/models/claude-test" in path
    assert path.endswith(":rawPredict")

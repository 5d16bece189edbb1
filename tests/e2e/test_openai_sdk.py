"""The official `openai` SDK against a real `llmeu serve` process."""

from __future__ import annotations

from collections.abc import Callable

import openai
import pytest

from tests.support.processes import FakeUpstream, Gateway, config_yaml, fake_endpoint


@pytest.fixture
def gateway(gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream) -> Gateway:
    return gateway_factory(config=config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream)))


@pytest.fixture
def client(gateway: Gateway) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.base_url, api_key=gateway.admin_key, max_retries=0)


def test_sdk_non_streaming_completion_carries_usage_and_routing(client: openai.OpenAI) -> None:
    completion = client.chat.completions.create(
        model="fake-model",
        messages=[
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hi [[chunks=3]]"},
        ],
        temperature=0.2,
        max_tokens=10,
        seed=7,
        user="alice",
        metadata={"team": "a"},
    )
    assert completion.choices[0].message.content == "tok tok tok"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None and completion.usage.completion_tokens == 3
    routing = completion.model_extra["llmeu"]  # type: ignore[index]
    assert routing["endpoint_id"] == "fakeprov-fr-a"
    assert routing["policy_id"] == "eu-strict"
    assert routing["trace_id"].startswith("trc_")
    assert completion.model == "fake"


def test_sdk_streaming_yields_each_delta_and_the_routing_block(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(
        model="fake-model",
        messages=[{"role": "user", "content": "hi [[chunks=4]]"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "tok0 tok1 tok2 tok3 "
    finish = next(c for c in chunks if c.choices and c.choices[0].finish_reason)
    assert finish.model_extra["llmeu"]["provider"] == "fakeprov"  # type: ignore[index]
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens == 15


def test_sdk_tool_calls_round_trip(client: openai.OpenAI) -> None:
    tools = [
        {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
    ]
    completion = client.chat.completions.create(
        model="fake-model",
        messages=[{"role": "user", "content": "weather? [[tools=1]]"}],
        tools=tools,  # type: ignore[arg-type]
        tool_choice="auto",
    )
    message = completion.choices[0].message
    assert message.tool_calls and message.tool_calls[0].function.name == "get_weather"
    followup = client.chat.completions.create(
        model="fake-model",
        messages=[
            {"role": "user", "content": "weather?"},
            message.model_dump(exclude_none=True),  # type: ignore[list-item]
            {"role": "tool", "tool_call_id": message.tool_calls[0].id, "content": "sunny"},
            {"role": "user", "content": "so? [[chunks=1]]"},
        ],
        tools=tools,  # type: ignore[arg-type]
    )
    assert followup.choices[0].message.content == "tok"


@pytest.mark.parametrize(
    ("kwargs", "status", "param"),
    [
        ({"model": "no-such-model"}, 404, "model"),
        ({"n": 2}, 400, "n"),
        ({"temperature": 5}, 400, "temperature"),
        ({"messages": [{"role": "robot", "content": "x"}]}, 400, "messages[0].role"),
        ({"extra_body": {"frobnicate": True}}, 400, "frobnicate"),
    ],
    ids=["unknown-model", "n-above-one", "temperature-range", "bad-role", "unknown-field"],
)
def test_sdk_sees_openai_shaped_errors(
    client: openai.OpenAI, kwargs: dict[str, object], status: int, param: str
) -> None:
    request: dict[str, object] = {
        "model": "fake-model",
        "messages": [{"role": "user", "content": "x"}],
    }
    request.update(kwargs)
    with pytest.raises(openai.APIStatusError) as caught:
        client.chat.completions.create(**request)  # type: ignore[call-overload]
    assert caught.value.status_code == status
    body = caught.value.body
    assert isinstance(body, dict) and body["param"] == param


def test_sdk_embeddings_and_models(client: openai.OpenAI) -> None:
    result = client.embeddings.create(model="fake-model", input=["a", "bb"])
    assert [d.index for d in result.data] == [0, 1]
    assert result.model_extra["llmeu"]["endpoint_id"] == "fakeprov-fr-a"  # type: ignore[index]
    models = client.models.list()
    ids = [m.id for m in models.data]
    assert "fake-model" in ids

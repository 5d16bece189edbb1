"""The `anthropic` provider kind end to end: llmeu in front of the fake Anthropic upstream.

Chat completions (the OpenAI SDK) and Messages (the Anthropic SDK) both reach it;
its faults — an overloaded error event mid-stream, a 529, a stream cut before
`message_stop`, a refused key — end calls the way the contract says, and a
hang-up closes the upstream request.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from tests.support.anthropic_upstream import (
    FAKE_ANTHROPIC_KEY,
    anthropic_endpoint,
    start_fake_anthropic,
)
from tests.support.client_traces import settled_trace
from tests.support.processes import FakeUpstream, Gateway, config_yaml, start_gateway
from tests.support.streams import open_stream, read_until
from tests.support.waiting import wait_for


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeUpstream]:
    fake = start_fake_anthropic(tmp_path_factory.mktemp("fake-anthropic"))
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def gateway(upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp: Path = tmp_path_factory.mktemp("anthropic-kind")
    config = config_yaml(
        anthropic_endpoint("anthro-fr-a", upstream),
        anthropic_endpoint("wrongkey-fr-b", upstream, aliases=("claude-wrong-key",),
                           api_key_env="WRONG_ANTHROPIC_KEY"),
    )  # fmt: skip
    env = {"FAKE_ANTHROPIC_KEY": FAKE_ANTHROPIC_KEY, "WRONG_ANTHROPIC_KEY": "sk-ant-not-this"}
    gw = start_gateway(tmp, config=config, env=env)
    yield gw
    gw.kill()


@pytest.fixture
def messages(gateway: Gateway) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gateway.url, api_key=gateway.admin_key, max_retries=0)


def test_the_openai_sdk_reaches_an_anthropic_endpoint_streamed_and_not(gateway: Gateway) -> None:
    client = openai.OpenAI(base_url=gateway.base_url, api_key=gateway.admin_key, max_retries=0)
    completion = client.chat.completions.create(
        model="claude-eu", messages=[{"role": "user", "content": "hi [[chunks=3;cache=1]]"}]
    )
    assert completion.choices[0].message.content == "tok0 tok1 tok2 "
    assert completion.usage is not None and completion.usage.prompt_tokens == 11 + 5 + 3
    chunks = list(
        client.chat.completions.create(
            model="claude-eu", stream=True, stream_options={"include_usage": True},
            messages=[{"role": "user", "content": "weather? [[tools=1;chunks=3]]"}],
            tools=[{"type": "function", "function": {"name": "get_weather",
                                                     "parameters": {"type": "object"}}}],
        )
    )  # fmt: skip
    arguments = "".join(
        c.choices[0].delta.tool_calls[0].function.arguments or ""  # type: ignore[index, union-attr]
        for c in chunks
        if c.choices and c.choices[0].delta.tool_calls
    )
    assert json.loads(arguments) == {"city": "Paris"}
    finish = next(c for c in chunks if c.choices and c.choices[0].finish_reason)
    assert finish.choices[0].finish_reason == "tool_calls"
    assert finish.model_extra["llmeu"]["provider"] == "anthro"  # type: ignore[index]


def test_an_overloaded_event_mid_stream_ends_with_an_overloaded_error_event(
    messages: anthropic.Anthropic, gateway: Gateway
) -> None:
    with (
        pytest.raises(anthropic.APIStatusError) as caught,
        messages.messages.stream(
            model="claude-eu", max_tokens=50, messages=[{"role": "user", "content":
                                                         "hi [[fault=overloaded_event]]"}],
        ) as stream,
    ):  # fmt: skip
        for _ in stream:
            pass
    body: Any = caught.value.body
    assert body["error"]["type"] == "overloaded_error"
    trace = settled_trace(gateway, body["llmeu"]["trace_id"])
    assert trace["status"] == "failed"


def test_a_529_before_the_stream_is_answered_as_overloaded(
    messages: anthropic.Anthropic,
) -> None:
    with pytest.raises(anthropic.APIStatusError) as caught:
        messages.messages.create(
            model="claude-eu", max_tokens=50,
            messages=[{"role": "user", "content": "hi [[fault=status_529]]"}],
        )  # fmt: skip
    assert caught.value.status_code == 529
    assert caught.value.body["error"]["type"] == "overloaded_error"  # type: ignore[index]


@pytest.mark.parametrize("fault", ["missing_stop", "reset_mid_stream"])
def test_a_stream_cut_before_message_stop_is_a_failed_call(
    messages: anthropic.Anthropic, gateway: Gateway, fault: str
) -> None:
    with (
        pytest.raises(anthropic.APIStatusError) as caught,
        messages.messages.stream(
            model="claude-eu", max_tokens=50,
            messages=[{"role": "user", "content": f"hi [[fault={fault}]]"}],
        ) as stream,
    ):  # fmt: skip
        for _ in stream:
            pass
    body: Any = caught.value.body
    assert body["type"] == "error" and body["error"]["type"] == "api_error"
    assert settled_trace(gateway, body["llmeu"]["trace_id"])["status"] == "failed"


def test_a_refused_key_is_an_upstream_failure_never_leaking_the_key(
    messages: anthropic.Anthropic,
) -> None:
    with pytest.raises(anthropic.APIStatusError) as caught:
        messages.messages.create(
            model="claude-wrong-key", max_tokens=10, messages=[{"role": "user", "content": "x"}]
        )
    assert caught.value.status_code == 502
    assert "sk-ant-not-this" not in json.dumps(caught.value.body)


def test_a_hang_up_closes_the_anthropic_upstream(gateway: Gateway, upstream: FakeUpstream) -> None:
    upstream.reset()
    content = "long [[chunks=2000;delay=200]]"
    body = {"model": "claude-eu", "max_tokens": 100, "stream": True,
            "messages": [{"role": "user", "content": content}]}  # fmt: skip
    sock = open_stream(gateway, content, path="/v1/messages", body=body)
    read_until(sock, b"text_delta", 2)
    sock.close()

    def closed() -> dict[str, Any] | None:
        seen = upstream.stats()
        return seen[-1] if seen and seen[-1]["closed_at"] is not None else None

    seen = wait_for(closed, what="the upstream request to close")
    assert seen["completed"] is False and seen["chunks_sent"] < 2000

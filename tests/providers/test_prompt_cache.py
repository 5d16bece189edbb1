"""Provider prompt caching, passed through: Anthropic's breakpoints to the wires that cache
prompts (Anthropic, Claude on Vertex, Bedrock's `cachePoint`), OpenAI's `prompt_cache_key` to
the endpoints that declare they take it, neither to anyone else; cached input priced as such."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from llmeu.calls.request import ChatRequest
from llmeu.protocol.messages_codec import to_chat_request
from llmeu.protocol.messages_request import messages_request_decoder
from llmeu.protocol.messages_upstream import anthropic_request
from llmeu.providers.bedrock_request import converse_body
from llmeu.providers.openai import _openai_request
from llmeu.routing.catalog import Prices

MARK = {"type": "ephemeral"}
MESSAGES: dict[str, Any] = {
    "model": "claude",
    "max_tokens": 100,
    "system": [{"type": "text", "text": "a long preamble", "cache_control": MARK},
               {"type": "text", "text": "today's date"}],
    "tools": [{"name": "lookup", "input_schema": {"type": "object"}, "cache_control": MARK}],
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "a document", "cache_control": MARK},
                                     {"type": "text", "text": "the question"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "lookup",
                                           "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": "found", "cache_control": MARK}]},
    ],
}  # fmt: skip


def canonical(messages: dict[str, Any]) -> ChatRequest:
    return to_chat_request(messages_request_decoder.decode(json.dumps(messages)))


def test_anthropic_breakpoints_reach_an_anthropic_upstream_where_they_were() -> None:
    body = anthropic_request(canonical(MESSAGES), "claude-x", stream=False,
                             default_max_tokens=None)  # fmt: skip
    assert body["system"] == [
        {"type": "text", "text": "a long preamble", "cache_control": MARK},
        {"type": "text", "text": "today's date"},
    ]
    assert body["tools"][0]["cache_control"] == MARK
    first, _, last = body["messages"]
    assert first["content"] == [
        {"type": "text", "text": "a document", "cache_control": MARK},
        {"type": "text", "text": "the question"},
    ]
    assert last["content"][0]["cache_control"] == MARK


def test_without_breakpoints_the_anthropic_request_is_as_before() -> None:
    plain = json.loads(json.dumps(MESSAGES).replace(', "cache_control": {"type": "ephemeral"}', ""))
    body = anthropic_request(canonical(plain), "claude-x", stream=False, default_max_tokens=None)
    assert body["system"] == "a long preamble\ntoday's date"
    assert "cache_control" not in json.dumps(body)


def test_a_request_wide_breakpoint_marks_the_prompts_end() -> None:
    asked = {"model": "claude", "max_tokens": 10, "cache_control": {"type": "ephemeral", "ttl": "1h"},
             "messages": [{"role": "user", "content": "all of it"}]}  # fmt: skip
    body = anthropic_request(canonical(asked), "claude-x", stream=False, default_max_tokens=None)
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "all of it", "cache_control": {"type": "ephemeral", "ttl": "1h"}}
    ]


def test_bedrock_gets_a_cache_point_after_each_breakpoint() -> None:
    body = json.loads(converse_body(canonical(MESSAGES)))
    point = {"cachePoint": {"type": "default"}}
    assert body["system"] == [{"text": "a long preamble"}, point, {"text": "today's date"}]
    assert body["toolConfig"]["tools"][1] == point
    assert body["messages"][0]["content"] == [{"text": "a document"}, point,
                                              {"text": "the question"}]  # fmt: skip
    assert body["messages"][2]["content"][-1] == point


@pytest.mark.parametrize("takes_key", [True, False], ids=["declared", "not-declared"])
def test_an_openai_compatible_upstream_gets_no_breakpoints_and_the_key_only_if_it_takes_it(
    takes_key: bool,
) -> None:
    chat = msgspec.json.decode(json.dumps({
        "model": "m", "prompt_cache_key": "tenant-a",
        "messages": [{"role": "system", "content": [{"type": "text", "text": "s",
                                                     "cache_control": MARK}]},
                     {"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {"name": "f"}, "cache_control": MARK}],
    }), type=ChatRequest)  # fmt: skip
    sent = json.loads(msgspec.json.encode(_openai_request(chat, takes_key)))
    assert "cache_control" not in json.dumps(sent)
    assert sent.get("prompt_cache_key") == ("tenant-a" if takes_key else None)
    assert sent["messages"][0]["content"] == [{"type": "text", "text": "s"}]


@pytest.mark.parametrize(
    ("prices", "cached", "cost"),
    [
        (Prices(3.0, 15.0, cached_input=0.3), 0, (1000 * 3.0 + 100 * 15.0) / 1e6),
        (Prices(3.0, 15.0, cached_input=0.3), 800, (200 * 3.0 + 800 * 0.3 + 100 * 15.0) / 1e6),
        (Prices(3.0, 15.0), 800, (1000 * 3.0 + 100 * 15.0) / 1e6),
        (Prices(3.0, 15.0, cached_input=0.3), 5000, (1000 * 0.3 + 100 * 15.0) / 1e6),
    ],
    ids=["nothing-cached", "cached-rate", "no-cached-price", "more-cached-than-input"],
)
def test_cached_input_is_priced_at_the_cached_rate(
    prices: Prices, cached: int, cost: float
) -> None:
    assert prices.cost(1000, 100, cached_tokens=cached) == pytest.approx(cost)

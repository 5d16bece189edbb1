"""Which answer a call may reuse: partitions and normalized requests, as keys."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import msgspec
import pytest

from llmeu.cache.lookups import (
    Lookup,
    Partition,
    chat_cacheable,
    embeddings_cacheable,
    routed_model,
)
from llmeu.calls.request import ChatRequest
from llmeu.routing.cache_rules import CacheRules, CacheScope
from llmeu.routing.durations import Duration
from tests.routing.factories import endpoint

KEY_SCOPE = CacheRules(Duration.parse("PT1H"))
POLICY_SCOPE = CacheRules(Duration.parse("PT1H"), CacheScope.POLICY)
BASE: dict[str, Any] = {
    "model": "fake-model",
    "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
    "temperature": 0,
}


def chat(**changes: Any) -> ChatRequest:
    body = {**BASE, **changes}
    return msgspec.json.decode(json.dumps(body), type=ChatRequest)


def lookup(
    request: ChatRequest, partition: Partition | None = None, routed: bytes = b"ep"
) -> Lookup:
    partition = partition or Partition.of("cached", "digest", KEY_SCOPE, "k1")
    return Lookup(partition, "chat.completions", routed, chat_cacheable(request))


@pytest.mark.parametrize(
    "changes",
    [
        {"stream": True, "stream_options": {"include_usage": True}},
        {"user": "alice", "metadata": {"user_id": "alice"}},
        {"llmeu": {"cache": True, "receipt": True}},
        {"model": "another-alias-of-the-same-endpoints"},
        {"response_format": {"json_schema": {"b": 1, "a": 2}, "type": "json_schema"}},
    ],
    ids=["stream-flags", "end-user", "llmeu-field", "model-alias", "json-key-order"],
)
def test_what_does_not_change_the_answer_does_not_change_the_key(changes: dict[str, Any]) -> None:
    schema = {"response_format": {"type": "json_schema", "json_schema": {"a": 2, "b": 1}}}
    assert lookup(chat(**{**schema, **changes})).exact == lookup(chat(**schema)).exact


@pytest.mark.parametrize(
    "changes",
    [
        {"temperature": 0.7},
        {"max_tokens": 5},
        {"stop": ["\n"]},
        {"seed": 1},
        {"tools": [{"type": "function", "function": {"name": "f"}}]},
        {"response_format": {"type": "json_object"}},
        {"messages": [{"role": "system", "content": "be long"}, {"role": "user", "content": "hi"}]},
        {"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "ho"}]},
    ],
    ids=["temperature", "max-tokens", "stop", "seed", "tools", "response-format", "earlier-turn",
         "last-turn"],
)  # fmt: skip
def test_what_changes_the_answer_changes_the_key(changes: dict[str, Any]) -> None:
    assert lookup(chat(**changes)).exact != lookup(chat()).exact


def test_partitions_and_the_model_as_routed_separate_entries() -> None:
    request = chat()
    base = lookup(request)
    other_key = lookup(request, Partition.of("cached", "digest", KEY_SCOPE, "k2"))
    other_digest = lookup(request, Partition.of("cached", "digest-2", KEY_SCOPE, "k1"))
    other_policy = lookup(request, Partition.of("other", "digest", KEY_SCOPE, "k1"))
    other_route = lookup(request, routed=b"another endpoint")
    keys = {base.exact, other_key.exact, other_digest.exact, other_policy.exact, other_route.exact}
    assert len(keys) == 5
    shared = [Partition.of("cached", "digest", POLICY_SCOPE, key) for key in ("k1", "k2")]
    assert lookup(request, shared[0]).exact == lookup(request, shared[1]).exact


def test_the_semantic_scope_is_everything_but_the_last_user_turn() -> None:
    near = lookup(chat(messages=[BASE["messages"][0], {"role": "user", "content": "hello"}]))
    base = lookup(chat())
    assert near.scope == base.scope and near.exact != base.exact
    assert (near.request.text, base.request.text) == ("hello", "hi")
    other_system = lookup(chat(messages=[{"role": "system", "content": "x"}, BASE["messages"][1]]))
    assert other_system.scope != base.scope


@pytest.mark.parametrize(
    ("changes", "text", "tools", "sampled"),
    [
        ({}, "hi", False, False),
        ({"temperature": 0.2}, "hi", False, True),
        ({"temperature": None}, "hi", False, True),
        ({"tools": [{"type": "function", "function": {"name": "f"}}]}, "hi", True, False),
        ({"messages": [{"role": "user", "content": [{"type": "text", "text": "a"},
                                                     {"type": "text", "text": "b"}]}]},
         "ab", False, False),
        ({"messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "data:,"}}]}]}, None, False, False),
        ({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]},
         None, False, False),
    ],
    ids=["plain", "sampled", "default-temperature-samples", "tools", "text-parts", "image",
         "last-turn-not-user"],
)  # fmt: skip
def test_what_the_semantic_cache_may_compare(
    changes: dict[str, Any], text: str | None, tools: bool, sampled: bool
) -> None:
    request = chat_cacheable(chat(**changes))
    assert (request.text, request.tools, request.sampled) == (text, tools, sampled)


def test_embeddings_are_keyed_by_their_inputs_and_dimensions() -> None:
    keys = {
        embeddings_cacheable(inputs, dimensions).material
        for inputs, dimensions in ((["a"], None), (["a"], 8), (["b"], None), ([[1, 2]], None))
    }
    assert len(keys) == 4
    assert embeddings_cacheable(["a"], None).text is None


def _framed_key(partition: Partition, surface: str, routed: bytes, request: Any) -> str:
    """The exact key as its definition reads: SHA-256 of every part, length-prefixed."""
    digest = hashlib.sha256()
    parts = (partition.policy_id, partition.policy_sha256, partition.tenant, surface)
    for part in (*(p.encode() for p in parts), routed, request.material,
                 (request.text or "").encode()):  # fmt: skip
        digest.update(len(part).to_bytes(8, "big") + part)
    return digest.hexdigest()


def test_a_key_is_its_parts_framed_whether_its_prefix_was_hashed_before_or_not() -> None:
    partition = Partition.of("cached", "digest", KEY_SCOPE, "k-framed")
    for text in ("first", "second", "first"):  # the second and third reuse the prefix
        request = chat(messages=[{"role": "user", "content": text}])
        made = Lookup(partition, "chat.completions", b"ep", chat_cacheable(request))
        assert made.exact == _framed_key(partition, "chat.completions", b"ep", made.request)


def test_the_model_as_routed_follows_the_endpoints_not_their_ids() -> None:
    first = routed_model([endpoint("ep-a")])
    assert routed_model([endpoint("ep-a")]) == first  # equal facts, other objects
    for _ in range(3):  # a reloaded catalog's endpoint: new facts, maybe a freed object's id
        changed = routed_model([endpoint("ep-a", retention="P1D")])
        assert changed != first and b"P1D" in changed
    both = routed_model([endpoint("ep-b"), endpoint("ep-a")])
    assert both == routed_model([endpoint("ep-a"), endpoint("ep-b")])

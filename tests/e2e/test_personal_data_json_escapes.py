"""Personal data written with JSON escapes in tool-call arguments, on a real gateway.

A tool call's arguments are a JSON document inside the message, so an e-mail
address can reach the gateway as `ana\\u0040example.eu` and an IBAN as
`\\u004E\\u004C91…`: six characters each that the detectors would not read
as `@` or `N`, and that the tool or the model reads as exactly that. Here such
arguments are sent on chat completions (`tool_calls[].function.arguments`) and
on `/v1/responses` (a `function_call` item's `arguments`), with the tool's
result, JSON as well, and what the fake upstream got is read from its own
log: under `block` nothing, under `mask` arguments and a result whose parsed
values hold placeholders. The upstream then answers
with a tool call of the arguments it got (`args=echo`), whole and streamed in
pieces that cut the placeholders, and the client gets arguments that parse to
the values it sent.
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

ARGUMENTS = (
    r'{"email": "ana\u0040example.eu", "iban": "\u004E\u004C91 ABNA 0417 1643 00",'
    r' "card": "\uD835\uDFD2111 1111 1111 1111", "note": "a\\u0040b"}'
)
"""Arguments as a JSON encoder that escapes everything writes them (a surrogate pair for a
mathematical digit 4; `a\\u0040b` is an escaped backslash, no `@`)."""
RESULT = r'{"owner": "bob\u0040example.eu"}'
"""The tool's result, JSON too."""
SENT = json.loads(ARGUMENTS)
PLACEHOLDERS = {"email": "[EMAIL_1]", "iban": "[IBAN_1]", "card": "[PAYMENT_CARD_1]"}
POLICIES = """
  - policy_id: pd-mask
    allow_classes: [eu_sovereign]
    max_retention: P0D
    personal_data:
      detectors: {email: mask, iban: mask, payment_card: mask}
  - policy_id: pd-block
    allow_classes: [eu_sovereign]
    max_retention: P0D
    personal_data:
      detectors: {email: block, iban: mask}
"""
ANSWER = "[[tools=1;call=lookup;args=echo;chunks=%d]]"


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeUpstream]:
    started = start_fake_upstream(tmp_path_factory.mktemp("upstream"))
    yield started
    started.stop()


@pytest.fixture(scope="module")
def native(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeUpstream]:
    """An upstream speaking the Responses API, which gets the input items themselves."""
    started = start_fake_upstream(tmp_path_factory.mktemp("native"), "fake_responses_upstream.py")
    yield started
    started.stop()


@pytest.fixture(scope="module")
def gateway(
    upstream: FakeUpstream, native: FakeUpstream, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gateway]:
    config = config_yaml(
        fake_endpoint("sov-fr", upstream, aliases=("shared",)),
        fake_endpoint("native-fr", native, aliases=("native",),
                      capabilities=("chat", "tools", "responses")),
        policies=POLICIES,
    )  # fmt: skip
    started = start_gateway(tmp_path_factory.mktemp("gateway"), config=config)
    yield started
    started.kill()


@pytest.fixture(scope="module")
def client(gateway: Gateway) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=gateway.base_url, timeout=30) as made:
        yield made


@pytest.fixture(scope="module")
def keys(gateway: Gateway) -> dict[str, str]:
    return {
        policy_id: gateway.new_key(policy_id, policy_id) for policy_id in ("pd-mask", "pd-block")
    }


@pytest.fixture(autouse=True)
def fresh_log(upstream: FakeUpstream, native: FakeUpstream) -> None:
    upstream.reset()
    native.reset()


def chat_body(chunks: int, stream: bool) -> dict[str, Any]:
    call = {"id": "call_0", "type": "function",
            "function": {"name": "lookup", "arguments": ARGUMENTS}}  # fmt: skip
    return {
        "model": "shared",
        "stream": stream,
        "tools": [
            {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}
        ],
        "messages": [
            {"role": "user", "content": "Look the customer up."},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_0", "content": RESULT},
            {"role": "user", "content": "Try again. " + ANSWER % chunks},
        ],
    }


def responses_body(chunks: int, stream: bool) -> dict[str, Any]:
    return {
        "model": "shared",
        "stream": stream,
        "store": False,
        "tools": [{"type": "function", "name": "lookup", "parameters": {"type": "object"}}],
        "input": [
            {"role": "user", "content": "Look the customer up."},
            {
                "type": "function_call",
                "call_id": "call_0",
                "name": "lookup",
                "arguments": ARGUMENTS,
            },
            {"type": "function_call_output", "call_id": "call_0", "output": RESULT},
            {"role": "user", "content": "Try again. " + ANSWER % chunks},
        ],
    }


def sent_upstream(upstream: FakeUpstream) -> list[tuple[str, str]]:
    """The tool call's arguments and the tool's result in each request the upstream got, as
    it got them."""
    sent = []
    for seen in upstream.stats():
        messages = json.loads(seen["body"])["messages"]
        (called,) = [m for m in messages if m.get("tool_calls")]
        (result,) = [m for m in messages if m["role"] == "tool"]
        sent.append((called["tool_calls"][0]["function"]["arguments"], result["content"]))
    return sent


def events(response: httpx.Response) -> list[dict[str, Any]]:
    lines = response.text.splitlines()
    return [json.loads(line[6:]) for line in lines if line.startswith("data: {")]


def chat_arguments(response: httpx.Response, stream: bool) -> str:
    if not stream:
        return str(
            response.json()["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
        )
    pieces = [c["function"].get("arguments") or "" for e in events(response) for ch in e["choices"]
              for c in ch["delta"].get("tool_calls") or ()]  # fmt: skip
    assert all("[" not in piece for piece in pieces), pieces  # no placeholder, whole or in part
    return "".join(pieces)


def responses_arguments(response: httpx.Response, stream: bool) -> str:
    if not stream:
        (call,) = [i for i in response.json()["output"] if i["type"] == "function_call"]
        return str(call["arguments"])
    seen = events(response)
    deltas = [e["delta"] for e in seen if e["type"] == "response.function_call_arguments.delta"]
    assert all("[" not in delta for delta in deltas), deltas
    (done,) = [e["arguments"] for e in seen if e["type"] == "response.function_call_arguments.done"]
    assert "".join(deltas) == done
    return str(done)


SURFACES = {
    "chat": ("/chat/completions", chat_body, chat_arguments),
    "responses": ("/responses", responses_body, responses_arguments),
}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("surface", SURFACES)
def test_mask_sends_placeholders_for_escaped_values_and_restores_them(
    client: httpx.Client, keys: dict[str, str], upstream: FakeUpstream, surface: str, stream: bool
) -> None:
    route, body, arguments_of = SURFACES[surface]
    chunks = 9 if stream else 6  # streamed: the arguments in 8 pieces, cutting placeholders
    response = client.post(route, json=body(chunks, stream),
                           headers={"authorization": f"Bearer {keys['pd-mask']}"})  # fmt: skip
    assert response.status_code == 200, response.text
    ((got, result),) = sent_upstream(upstream)
    assert json.loads(got) == {**SENT, **PLACEHOLDERS}  # valid JSON, each value a placeholder
    assert json.loads(result) == {"owner": "[EMAIL_2]"}
    for leak in ("ana", "bob", "example.eu", "0417", "\\u0040e", "\\u004E", "\\uD835"):
        assert leak not in got + result
    restored = arguments_of(response, stream)
    assert json.loads(restored) == SENT


@pytest.mark.parametrize("surface", SURFACES)
def test_block_refuses_an_escaped_email_before_any_upstream(
    client: httpx.Client, keys: dict[str, str], upstream: FakeUpstream, surface: str
) -> None:
    route, body, _ = SURFACES[surface]
    response = client.post(route, json=body(6, False),
                           headers={"authorization": f"Bearer {keys['pd-block']}"})  # fmt: skip
    assert response.status_code == 403, response.text
    error = response.json()["error"]
    assert error["code"] == "personal_data_detected"
    assert error["param"].endswith(".function.arguments")
    assert "ana" not in response.text
    assert upstream.stats() == []


def test_a_responses_upstream_gets_the_items_masked(
    client: httpx.Client, keys: dict[str, str], native: FakeUpstream
) -> None:
    """Passed through to an endpoint that speaks the Responses API, the `function_call` and
    `function_call_output` items go as items: masked as the chat request is."""
    body = {**responses_body(6, False), "model": "native"}
    response = client.post("/responses", json=body,
                           headers={"authorization": f"Bearer {keys['pd-mask']}"})  # fmt: skip
    assert response.status_code == 200, response.text
    (seen,) = native.stats()
    items = {item.get("type"): item for item in seen["body"]["input"]}
    assert json.loads(items["function_call"]["arguments"]) == {**SENT, **PLACEHOLDERS}
    assert json.loads(items["function_call_output"]["output"]) == {"owner": "[EMAIL_2]"}
    sent = json.dumps(seen["body"])
    for leak in ("ana", "bob", "example.eu", "0417", "u0040e", "u004E", "uD835"):
        assert leak not in sent

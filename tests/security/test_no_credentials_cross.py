"""An upstream that quotes the operator's provider key never shows it to a tenant.

A fake upstream answers a wrong key the way providers do (`Incorrect API key
provided: <key>`), before the first byte or in an error event mid-stream,
quoting the key the gateway sent it. On every surface — chat completions,
Responses, Messages, embeddings — streamed and not, the key must appear
neither in what the client receives, nor in the trace, nor in the gateway's
log (at debug level); the error still says what went wrong. The gateway's own
messages are left whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from tests.support.processes import (
    ADMIN_KEY,
    FakeUpstream,
    Gateway,
    config_yaml,
    fake_endpoint,
    start_gateway,
)

SECRET = "scw-0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9"
"""The upstream's key, in a shape no pattern knows: only the exact match can find it."""
PROMPT = "Say hello"


@pytest.fixture(scope="module")
def gateway(
    upstream_process: FakeUpstream, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gateway]:
    config = config_yaml(
        fake_endpoint("keyed-fr-a", upstream_process, api_key_env="UPSTREAM_SECRET"),
        fake_endpoint("keyed-fr-e", upstream_process, model="fake;fault=quote_key",
                      aliases=["quoting-embeddings"], api_key_env="UPSTREAM_SECRET"),
    )  # fmt: skip
    started = start_gateway(
        tmp_path_factory.mktemp("credentials"),
        config=config,
        env={"UPSTREAM_SECRET": SECRET},
        args=["--log-level", "debug", "--breaker-threshold", "1000000"],
    )
    yield started
    started.kill()


@dataclass(frozen=True)
class Case:
    path: str
    body: dict[str, object]


def _chat(fault: str, stream: bool) -> Case:
    messages = [{"role": "user", "content": f"{PROMPT} [[fault={fault}]]"}]
    return Case(
        "/v1/chat/completions", {"model": "fake-model", "messages": messages, "stream": stream}
    )


def _responses(fault: str, stream: bool) -> Case:
    return Case("/v1/responses", {"model": "fake-model", "input": f"{PROMPT} [[fault={fault}]]",
                                  "stream": stream})  # fmt: skip


def _messages(fault: str, stream: bool) -> Case:
    messages = [{"role": "user", "content": f"{PROMPT} [[fault={fault}]]"}]
    return Case("/v1/messages", {"model": "fake-model", "max_tokens": 32, "messages": messages,
                                 "stream": stream})  # fmt: skip


CASES = {
    f"{surface}-{fault}-{'stream' if stream else 'whole'}": make(fault, stream)
    for surface, make in (("chat", _chat), ("responses", _responses), ("messages", _messages))
    for fault, stream in (("quote_key", False), ("quote_key", True), ("quote_key_mid_stream", True))
}
CASES["embeddings-quote_key"] = Case(
    "/v1/embeddings", {"model": "quoting-embeddings", "input": PROMPT}
)


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_the_upstream_key_reaches_no_tenant_no_trace_and_no_log(
    gateway: Gateway, case: Case
) -> None:
    headers = {"authorization": f"Bearer {ADMIN_KEY}"}
    response = httpx.post(gateway.url + case.path, json=case.body, headers=headers, timeout=60)
    assert SECRET not in response.text
    assert "[credential redacted]" in response.text, response.text[:500]
    trace_id = response.headers["x-llmeu-trace-id"]
    trace = httpx.get(f"{gateway.url}/v1/platform/traces/{trace_id}", headers=headers, timeout=30)
    assert trace.status_code == 200, trace.text
    assert SECRET not in trace.text
    assert trace.json()["status"] in ("failed", "rejected")
    assert SECRET not in gateway.output()


def test_the_gateway_own_messages_are_left_whole(gateway: Gateway) -> None:
    """A policy that stores no content scrubs what upstreams quote, never the gateway's own
    sentences, even where they share words with the prompt."""
    prompt = "Is it true that the model `no-such-model-anywhere` does not exist?"
    body = {"model": "no-such-model-anywhere", "messages": [{"role": "user", "content": prompt}]}
    response = httpx.post(f"{gateway.url}/v1/chat/completions", json=body,
                          headers={"authorization": f"Bearer {ADMIN_KEY}"}, timeout=30)  # fmt: skip
    assert response.status_code == 404
    message = response.json()["error"]["message"]
    assert "[redacted]" not in message and "no-such-model-anywhere" in message
    assert json.loads(response.text)["error"]["code"] == "model_not_found"

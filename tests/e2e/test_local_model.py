"""The embedded default: real tokens from the bundled SmolLM2, real embeddings from MiniLM."""

from __future__ import annotations

import re
from importlib.util import find_spec

import numpy as np
import openai
import pytest

from tests.support.processes import Gateway

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(find_spec("llama_cpp") is None, reason="needs the `local` extra"),
]


@pytest.fixture(scope="module")
def local_gateway(tmp_path_factory: pytest.TempPathFactory) -> Gateway:  # type: ignore[misc]
    from tests.support.processes import start_gateway

    gateway = start_gateway(tmp_path_factory.mktemp("local"), local_models=True, timeout=120)
    yield gateway
    gateway.kill()


def test_embedded_default_streams_real_tokens(local_gateway: Gateway) -> None:
    client = openai.OpenAI(base_url=local_gateway.base_url, api_key=local_gateway.admin_key)
    stream = client.chat.completions.create(
        model="smollm2",
        messages=[{"role": "user", "content": "What is the capital of France?"}],
        max_tokens=24,
        temperature=0,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    pieces = [
        c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content
    ]
    assert len(pieces) >= 3, "a real model streams several deltas"
    text = "".join(pieces)
    assert text.strip() and any(ch.isalpha() for ch in text)
    routing = next(c for c in chunks if c.choices and c.choices[0].finish_reason).model_extra[
        "llmeu"
    ]  # type: ignore[index]
    assert routing["sovereignty_class"] == "on_premise"
    assert routing["inference_region"].startswith("local:")
    assert routing["cost_estimate"]["estimated"] is False
    usage = chunks[-1].usage
    assert (
        usage is not None and usage.completion_tokens == routing["cost_estimate"]["output_tokens"]
    )
    assert 0 < usage.completion_tokens <= 24


def test_embedded_default_embeddings_know_a_paraphrase(local_gateway: Gateway) -> None:
    client = openai.OpenAI(base_url=local_gateway.base_url, api_key=local_gateway.admin_key)
    sentences = [
        "A man is playing the guitar on stage.",
        "Someone performs music with a guitar in front of an audience.",
        "The central bank raised interest rates again.",
    ]
    result = client.embeddings.create(model="minilm", input=sentences)
    vectors = np.array([d.embedding for d in result.data])
    assert vectors.shape == (3, 384)
    similarity = vectors @ vectors.T
    assert similarity[0, 1] > similarity[0, 2] + 0.3
    assert result.usage.prompt_tokens > 0


def test_hanging_up_stops_local_generation(local_gateway: Gateway) -> None:
    import json
    import socket
    import time

    import httpx

    payload = json.dumps({
        "model": "smollm2", "stream": True, "max_tokens": 400, "temperature": 0,
        "messages": [{"role": "user", "content": "Write a long story about a lighthouse."}],
    }).encode()  # fmt: skip
    sock = socket.create_connection(("127.0.0.1", local_gateway.port), timeout=30)
    sock.sendall(
        f"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {local_gateway.admin_key}\r\n"
        f"content-type: application/json\r\ncontent-length: {len(payload)}\r\n\r\n".encode()
        + payload
    )
    data = b""
    while data.count(b'"content"') < 3:
        data += sock.recv(65536)
    trace_id = re.search(rb"x-llmeu-trace-id: (trc_\w+)", data).group(1).decode()  # type: ignore[union-attr]
    sock.close()
    headers = {"authorization": f"Bearer {local_gateway.admin_key}"}
    deadline = time.monotonic() + 30
    trace: dict[str, object] = {}
    while time.monotonic() < deadline:
        trace = httpx.get(
            f"{local_gateway.base_url}/platform/traces/{trace_id}", headers=headers
        ).json()
        # Not found yet: the call's row is written by the ledger's next batch.
        if trace.get("status", "in_progress") != "in_progress":
            break
        time.sleep(0.05)
    assert trace["status"] == "cancelled"
    usage = trace["usage"]
    assert isinstance(usage, dict)
    assert usage["estimated"] is False  # the local model counts what it generated
    assert 3 <= usage["output_tokens"] < 30, (
        "generation stopped within a token or so of the hang-up"
    )


LOCAL_CHAT = """\
  - endpoint_id: local-short
    provider: llmeu-local
    kind: local
    model: SmolLM2-135M-Instruct
    aliases: [short]
    inference_region: local
    sovereignty_class: on_premise
    retention: P0D
    price_eur_per_mtok: {input: 0, output: 0}
    default_max_tokens: 6
"""


def test_a_request_without_max_tokens_stops_at_the_endpoints_default(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    from tests.support.processes import config_yaml, start_gateway

    gateway = start_gateway(tmp_path_factory.mktemp("short"), config=config_yaml(LOCAL_CHAT),
                            local_models=True, timeout=120)  # fmt: skip
    try:
        client = openai.OpenAI(base_url=gateway.base_url, api_key=gateway.admin_key)
        story = [{"role": "user", "content": "Write a long story about Brussels."}]
        unset = client.chat.completions.create(model="short", messages=story, temperature=0)
        assert unset.usage is not None and unset.usage.completion_tokens == 6
        assert unset.choices[0].finish_reason == "length"
        asked = client.chat.completions.create(
            model="short", messages=story, temperature=0, max_tokens=9
        )
        assert asked.usage is not None and asked.usage.completion_tokens == 9, "the request wins"
    finally:
        gateway.kill()


def test_what_a_local_model_cannot_do_is_rejected_naming_the_endpoint(
    local_gateway: Gateway,
) -> None:
    import httpx

    headers = {"authorization": f"Bearer {local_gateway.admin_key}"}
    asks = [
        ("chat/completions", {"model": "smollm2", "thinking": {"type": "enabled",
                                                               "budget_tokens": 1024},
                              "messages": [{"role": "user", "content": "Think first"}]},
         "thinking", "local-smollm2-135m"),
        ("embeddings", {"model": "minilm", "input": [[101, 2023, 102]]}, "input",
         "local-minilm-l6-v2"),
    ]  # fmt: skip
    for route, body, param, endpoint_id in asks:
        refused = httpx.post(f"{local_gateway.base_url}/{route}", json=body, headers=headers)
        assert refused.status_code == 400
        error = refused.json()["error"]
        assert error["param"] == param and endpoint_id in error["message"]
        trace_id = refused.headers["x-llmeu-trace-id"]
        trace = httpx.get(
            f"{local_gateway.base_url}/platform/traces/{trace_id}", headers=headers
        ).json()
        assert trace["status"] == "rejected"
        assert trace["routing"]["endpoint_id"] == endpoint_id
        assert trace["routing"]["model_used"] is None, "no model ran"
        assert [a["outcome"] for a in trace["attempts"]] == ["rejected"]

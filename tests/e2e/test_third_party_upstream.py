"""The OpenAI-compatible adapter against a third-party server: llama_cpp.server."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import openai
import pytest

from tests.support.processes import Gateway

pytest.importorskip("llama_cpp.server.app", reason="needs llama-cpp-python's server extras")
pytestmark = pytest.mark.local_model


@pytest.fixture(scope="module")
def llama_base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from tests.support.client_llama_server import llama_server

    with llama_server(tmp_path_factory.mktemp("llama") / "llama.log") as base_url:
        yield base_url


def llama_config(base_url: str, *, price: str) -> str:
    """One `on_premise` endpoint: llama_cpp.server serving the bundled SmolLM2 as `smol`."""
    return f"""
endpoints:
  - endpoint_id: llamacpp-local-smollm2
    provider: llamacpp
    kind: openai
    base_url: {base_url}
    model: smollm2
    aliases: [smol]
    inference_region: lab-1
    country: DE
    sovereignty_class: on_premise
    retention: P0D
    price_eur_per_mtok: {price}
default_policy: eu-strict
"""


def test_gateway_streams_through_llama_cpp_server(
    gateway_factory: Callable[..., Gateway], llama_base_url: str
) -> None:
    config = llama_config(llama_base_url, price="{input: 0.5, output: 1.5}")
    gateway = gateway_factory(config=config)
    client = openai.OpenAI(base_url=gateway.base_url, api_key=gateway.admin_key, max_retries=0)
    stream = client.chat.completions.create(
        model="smol",
        messages=[{"role": "user", "content": "Name a colour."}],
        max_tokens=12,
        temperature=0,
        stream=True,
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.strip()
    finish = next(c for c in chunks if c.choices and c.choices[0].finish_reason)
    routing = finish.model_extra["llmeu"]  # type: ignore[index]
    assert routing["endpoint_id"] == "llamacpp-local-smollm2"
    assert routing["cost_estimate"]["output_tokens"] > 0

    completion = client.chat.completions.create(
        model="smol",
        messages=[{"role": "user", "content": "Say yes."}],
        max_tokens=5,
        temperature=0,
    )
    assert completion.usage is not None and completion.usage.completion_tokens > 0
    assert completion.model_extra["llmeu"]["cost_estimate"]["estimated"] is False  # type: ignore[index]
    assert json.dumps(completion.model_extra["llmeu"])  # type: ignore[index]


def test_llama_cpp_server_rejection_is_a_400_not_a_fallback(
    gateway_factory: Callable[..., Gateway], llama_base_url: str, tmp_path: Path
) -> None:
    config = llama_config(llama_base_url, price="{input: 0, output: 0}")
    gateway = gateway_factory(config=config)
    client = openai.OpenAI(base_url=gateway.base_url, api_key=gateway.admin_key, max_retries=0)
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(
            model="smol",
            messages=[{"role": "user", "content": "x " * 3000}],
            max_tokens=5,
        )

"""Claude on Vertex writes Anthropic's body the way Vertex takes it (pure: no call is made)."""

from __future__ import annotations

from typing import Any

import msgspec

from llmeu.calls.request import ChatRequest
from llmeu.providers.anthropic import AnthropicProvider
from llmeu.providers.transport import HttpClient
from llmeu.providers.vertex_anthropic import VertexAnthropicProvider
from llmeu.routing.config_file import parse_endpoints

COMMON = (
    '    model: "claude-sonnet-4-5@20250929"\n    model_version: "1"\n    aliases: [m]\n'
    "    inference_region: europe-west1\n    country: BE\n    sovereignty_class: eu_resident\n"
    "    retention: P0D\n    price_eur_per_mtok: {input: 1.0, output: 2.0}\n"
    "    capabilities: [chat, tools]\n"
)


def payloads(**fields: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The Vertex body and the native Anthropic body for the same request."""
    text = (f"endpoints:\n  - endpoint_id: g\n    provider: p\n    kind: vertex_anthropic\n"
            f"{COMMON}    region: europe-west1\n    project: acme\n"
            f"  - endpoint_id: a\n    provider: p\n    kind: anthropic\n{COMMON}"
            "    base_url: https://api.anthropic.com/v1\n")  # fmt: skip
    vertex_endpoint, native_endpoint = parse_endpoints(text)
    chat = msgspec.convert({"model": "m", "messages": [{"role": "user", "content": "hi"}],
                            **fields}, ChatRequest)  # fmt: skip
    client = HttpClient()
    vertex = VertexAnthropicProvider(vertex_endpoint, client, {})
    native = AnthropicProvider(native_endpoint, client, None)
    return vertex._payload(chat, stream=True), native._payload(chat, stream=True)


def test_the_body_is_anthropic_s_without_model_and_with_vertex_s_version() -> None:
    vertex, native = payloads(max_tokens=50, temperature=0.5, stop="END")
    assert "model" not in vertex and native["model"] == "claude-sonnet-4-5@20250929"
    assert vertex.pop("anthropic_version") == "vertex-2023-10-16"
    native.pop("model")
    assert vertex == native
    assert vertex["stream"] is True and vertex["max_tokens"] == 50

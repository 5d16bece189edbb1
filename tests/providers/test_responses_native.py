"""Which attempts pass through natively, and where a native request goes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

import pytest

from llmeu.providers.anthropic import AnthropicProvider
from llmeu.providers.azure_openai import AzureOpenAIProvider
from llmeu.providers.openai import OpenAIProvider
from llmeu.providers.responses_native import native
from llmeu.providers.transport import HttpClient
from llmeu.routing.catalog import (
    Capability,
    Endpoint,
    EndpointKind,
    Prices,
    SovereigntyClass,
    UpstreamOptions,
)
from llmeu.routing.durations import ZERO

ENDPOINT = Endpoint(
    endpoint_id="e", provider="p", kind=EndpointKind.OPENAI, model="up-model",
    model_version="1", aliases=("alias",), inference_region="r", country="FR",
    sovereignty_class=SovereigntyClass.EU_SOVEREIGN, retention=ZERO, prices=Prices(0.0, 0.0),
    base_url="http://127.0.0.1:9/v1",
)  # fmt: skip
NATIVE = frozenset({Capability.CHAT, Capability.RESPONSES})


@pytest.fixture
async def client() -> AsyncIterator[HttpClient]:
    made = HttpClient()
    yield made
    await made.aclose()


async def test_an_openai_endpoint_passes_through_only_with_the_capability(
    client: HttpClient,
) -> None:
    assert native(OpenAIProvider(ENDPOINT, client, None)) is None
    passing = native(OpenAIProvider(replace(ENDPOINT, capabilities=NATIVE), client, None))
    assert passing is not None and passing.model == "up-model"


async def test_a_kind_without_the_responses_wire_is_translated(client: HttpClient) -> None:
    endpoint = replace(ENDPOINT, kind=EndpointKind.ANTHROPIC, capabilities=NATIVE)
    assert native(AnthropicProvider(endpoint, client, None)) is None


@pytest.mark.parametrize(
    ("options", "path", "model"),
    [
        (UpstreamOptions(deployment="gpt-eu", api_version="2025-04-01-preview"),
         "/openai/responses?api-version=2025-04-01-preview", "gpt-eu"),
        (UpstreamOptions(), "/openai/v1/responses", "up-model"),
    ],
    ids=["deployment", "v1"],
)  # fmt: skip
async def test_azure_serves_responses_at_its_own_path(
    client: HttpClient, options: UpstreamOptions, path: str, model: str
) -> None:
    endpoint = replace(
        ENDPOINT, kind=EndpointKind.AZURE_OPENAI, capabilities=NATIVE, upstream=options
    )
    provider = AzureOpenAIProvider(endpoint, client, "key", "https://res.openai.azure.com")
    assert provider.responses_path == path
    passing = native(provider)
    assert passing is not None and passing.model == model

"""Which adapter serves which endpoint kind."""

from __future__ import annotations

from llmeu.config import Settings
from llmeu.providers.base import Provider
from llmeu.providers.http import HttpClient
from llmeu.routing.catalog import Capability, Endpoint, EndpointKind


def build_provider(
    endpoint: Endpoint, http: HttpClient, api_key: str | None, settings: Settings
) -> Provider:
    if endpoint.kind is EndpointKind.OPENAI:
        from llmeu.providers.openai import OpenAIProvider

        return OpenAIProvider(endpoint, http, api_key)
    if Capability.EMBEDDINGS in endpoint.capabilities:
        from llmeu.providers.local_embeddings import LocalEmbeddingsProvider

        return LocalEmbeddingsProvider(endpoint, threads=settings.local_threads)
    from llmeu.providers.local import LocalChatProvider

    return LocalChatProvider(endpoint, threads=settings.local_threads)

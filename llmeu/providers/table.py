"""Which adapter serves which endpoint kind: one row per kind.

The kinds themselves are the catalog's (`routing.catalog.EndpointKind`), so
the configuration file refuses an unknown `kind` with its field and line
before anything starts; every kind has exactly one row here (a test holds
the two together). Adding a kind: one module in this package and one row.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from llmeu.providers.anthropic import AnthropicProvider
from llmeu.providers.base import Provider
from llmeu.providers.local_chat import LocalChatProvider
from llmeu.providers.local_embeddings import LocalEmbeddingsProvider
from llmeu.providers.openai import OpenAIProvider
from llmeu.providers.transport import HttpClient
from llmeu.routing.catalog import Capability, Catalog, Endpoint, EndpointKind


@dataclass(frozen=True, slots=True)
class ProviderContext:
    """What a provider may need to be built: the pooled HTTP client, the environment the
    settings snapshotted (secrets are read by variable name, never written in config),
    and the CPU threads the local models may use."""

    http: HttpClient
    environ: Mapping[str, str] = field(default_factory=dict, repr=False)
    local_threads: int = 2

    def secret(self, variable: str | None) -> str | None:
        return self.environ.get(variable) if variable else None


Factory = Callable[[Endpoint, ProviderContext], Provider]


def _openai(endpoint: Endpoint, context: ProviderContext) -> Provider:
    return OpenAIProvider(endpoint, context.http, context.secret(endpoint.api_key_env))


def _anthropic(endpoint: Endpoint, context: ProviderContext) -> Provider:
    return AnthropicProvider(endpoint, context.http, context.secret(endpoint.api_key_env))


def _local(endpoint: Endpoint, context: ProviderContext) -> Provider:
    if Capability.EMBEDDINGS in endpoint.capabilities:
        return LocalEmbeddingsProvider(endpoint, threads=context.local_threads)
    return LocalChatProvider(endpoint, threads=context.local_threads)


PROVIDER_KINDS: Mapping[EndpointKind, Factory] = {
    EndpointKind.OPENAI: _openai,
    EndpointKind.LOCAL: _local,
    EndpointKind.ANTHROPIC: _anthropic,
}


def build_provider(endpoint: Endpoint, context: ProviderContext) -> Provider:
    return PROVIDER_KINDS[endpoint.kind](endpoint, context)


def missing_credentials(catalog: Catalog, environ: Mapping[str, str]) -> dict[str, str]:
    """Endpoints whose API-key variable is unset, with the reason they are skipped."""
    return {
        e.endpoint_id: f"{e.api_key_env} is not set"
        for e in catalog.endpoints
        if e.api_key_env and not environ.get(e.api_key_env)
    }

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
from llmeu.providers.host_link import HostLink
from llmeu.providers.local_chat import LocalChatProvider
from llmeu.providers.local_embeddings import LocalEmbeddingsProvider
from llmeu.providers.native_credentials import (
    entra_available,
    google_key_file,
    missing_aws_credentials,
)
from llmeu.providers.openai import OpenAIProvider
from llmeu.providers.transport import HttpClient
from llmeu.routing.catalog import AzureAuth, Capability, Catalog, Endpoint, EndpointKind


@dataclass(frozen=True, slots=True)
class ProviderContext:
    """What a provider may need to be built: the pooled HTTP client, the environment the
    settings snapshotted (secrets are read by variable name, never written in config),
    and the CPU threads the local models may use."""

    http: HttpClient
    environ: Mapping[str, str] = field(default_factory=dict, repr=False)
    local_threads: int = 2
    model_host: HostLink = field(default_factory=lambda: HostLink(None))
    """The local models' process, shared by every local endpoint of the gateway."""

    def secret(self, variable: str | None) -> str | None:
        return self.environ.get(variable) if variable else None


Factory = Callable[[Endpoint, ProviderContext], Provider]
Missing = Callable[[Endpoint, Mapping[str, str]], str | None]
"""Why an endpoint of the kind cannot be called with this environment (offline), or None."""


@dataclass(frozen=True, slots=True)
class ProviderKind:
    build: Factory
    missing: Missing


def _openai(endpoint: Endpoint, context: ProviderContext) -> Provider:
    return OpenAIProvider(endpoint, context.http, context.secret(endpoint.api_key_env))


def _anthropic(endpoint: Endpoint, context: ProviderContext) -> Provider:
    return AnthropicProvider(endpoint, context.http, context.secret(endpoint.api_key_env))


def _local(endpoint: Endpoint, context: ProviderContext) -> Provider:
    if Capability.EMBEDDINGS in endpoint.capabilities:
        return LocalEmbeddingsProvider(endpoint, context.model_host)
    return LocalChatProvider(endpoint, context.model_host)


# The native kinds' modules load their cloud SDK (botocore, google-auth), so they are
# imported when an endpoint of their kind is built, not by every command that reads the table.


def _azure_openai(endpoint: Endpoint, context: ProviderContext) -> Provider:
    from llmeu.providers.azure_openai import AzureOpenAIProvider

    key = context.secret(endpoint.api_key_env)
    base_url = context.secret(endpoint.upstream.base_url_env) or ""
    return AzureOpenAIProvider(endpoint, context.http, key, base_url)


def _bedrock(endpoint: Endpoint, context: ProviderContext) -> Provider:
    from llmeu.providers.bedrock import BedrockProvider

    key = context.secret(endpoint.api_key_env)
    return BedrockProvider(endpoint, context.http, context.environ, key)


def _vertex(endpoint: Endpoint, context: ProviderContext) -> Provider:
    from llmeu.providers.vertex import VertexProvider

    return VertexProvider(endpoint, context.http, context.environ)


def _vertex_anthropic(endpoint: Endpoint, context: ProviderContext) -> Provider:
    from llmeu.providers.vertex_anthropic import VertexAnthropicProvider

    return VertexAnthropicProvider(endpoint, context.http, context.environ)


def _missing_key(endpoint: Endpoint, environ: Mapping[str, str]) -> str | None:
    if endpoint.api_key_env and not environ.get(endpoint.api_key_env):
        return f"{endpoint.api_key_env} is not set"
    return None


def _missing_azure(endpoint: Endpoint, environ: Mapping[str, str]) -> str | None:
    url_env = endpoint.upstream.base_url_env
    if url_env and not environ.get(url_env, "").startswith(("https://", "http://")):
        return f"{url_env} is not set to the resource's https:// URL"
    if endpoint.upstream.auth is AzureAuth.ENTRA:
        return None if entra_available() else "`auth: entra` needs the azure-identity package"
    return _missing_key(endpoint, environ)


def _missing_aws(endpoint: Endpoint, environ: Mapping[str, str]) -> str | None:
    if endpoint.api_key_env:  # a Bedrock API key instead of SigV4
        return _missing_key(endpoint, environ)
    return missing_aws_credentials(environ)


def _missing_google(endpoint: Endpoint, environ: Mapping[str, str]) -> str | None:
    if google_key_file(endpoint, environ):
        return None
    return "no Google credentials: credentials_file and GOOGLE_APPLICATION_CREDENTIALS are not set"


PROVIDER_KINDS: Mapping[EndpointKind, ProviderKind] = {
    EndpointKind.OPENAI: ProviderKind(_openai, _missing_key),
    EndpointKind.LOCAL: ProviderKind(_local, _missing_key),
    EndpointKind.AZURE_OPENAI: ProviderKind(_azure_openai, _missing_azure),
    EndpointKind.BEDROCK: ProviderKind(_bedrock, _missing_aws),
    EndpointKind.VERTEX: ProviderKind(_vertex, _missing_google),
    EndpointKind.ANTHROPIC: ProviderKind(_anthropic, _missing_key),
    EndpointKind.VERTEX_ANTHROPIC: ProviderKind(_vertex_anthropic, _missing_google),
}


def build_provider(endpoint: Endpoint, context: ProviderContext) -> Provider:
    provider = PROVIDER_KINDS[endpoint.kind].build(endpoint, context)
    key = context.secret(endpoint.api_key_env)
    if key:
        provider.secrets = (key,)
    return provider


def missing_credentials(catalog: Catalog, environ: Mapping[str, str]) -> dict[str, str]:
    """Endpoints whose credentials are not set, with the reason they are skipped."""
    reasons = {e.endpoint_id: PROVIDER_KINDS[e.kind].missing(e, environ) for e in catalog.endpoints}
    return {endpoint_id: reason for endpoint_id, reason in reasons.items() if reason}

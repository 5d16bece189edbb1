"""Azure OpenAI: the OpenAI wire at Azure's URLs, with Azure's keys and tokens.

Two URL forms, chosen by the endpoint's fields:

- `deployment` set: `{base_url}/openai/deployments/{deployment}/chat/completions
  ?api-version={api_version}` — the classic form; the deployment picks the model.
- no `deployment`: the v1 API, `{base_url}/openai/v1/chat/completions`, with the
  endpoint's `model` (the deployment's name) in the body; `api_version`, when
  given, is sent as the `api-version` query parameter.

Authentication is the `api-key` header (`auth: api_key`, the key read from
`api_key_env`) or an Entra ID bearer token (`auth: entra`), fetched through
azure-identity's `DefaultAzureCredential` when that package is installed
(managed identity, workload identity, environment, Azure CLI), cached and
refreshed before it expires; a 401 refreshes it and retries once.

Azure's content filters pass through: `finish_reason: "content_filter"` as
the upstream sends it, and a prompt the filters refused is a 400 whose code
is `content_filter`. Azure's error bodies are OpenAI-shaped; its 429s carry
`retry-after-ms`, which the error message reports.
"""

from __future__ import annotations

import importlib
import time
from urllib.parse import quote

from llmeu.calls.hangup import Hangup
from llmeu.errors import ConfigError, UpstreamError
from llmeu.providers.bearer_tokens import Fetch, TokenSource, post_with_token
from llmeu.providers.openai import OpenAIProvider
from llmeu.providers.sdk_logging import quiet_sdk_loggers
from llmeu.providers.transport import HttpClient, Response
from llmeu.providers.upstream_http import Headers, HttpUpstream
from llmeu.routing.catalog import AzureAuth, Endpoint

ENTRA_SCOPE = "https://cognitiveservices.azure.com/.default"


class AzureOpenAIProvider(OpenAIProvider):
    key_header = (b"api-key", b"")

    def __init__(
        self, endpoint: Endpoint, client: HttpClient, api_key: str | None, base_url: str = ""
    ):
        options = endpoint.upstream
        entra = options.auth is AzureAuth.ENTRA
        super().__init__(endpoint, client, None if entra else api_key)
        if base_url:  # from `base_url_env`
            self._http = HttpUpstream(endpoint, client, base_url=base_url.rstrip("/"))
        query = f"?api-version={quote(options.api_version)}" if options.api_version else ""
        if options.deployment:
            prefix = f"/openai/deployments/{quote(options.deployment, safe='')}"
        else:
            prefix = "/openai/v1"
        self.chat_path = f"{prefix}/chat/completions{query}"
        self.embeddings_path = f"{prefix}/embeddings{query}"
        # The Responses API has no per-deployment path: the deployment is the body's model.
        self.responses_path = f"/openai{'' if options.deployment else '/v1'}/responses{query}"
        self.responses_model = options.deployment or endpoint.model
        self._tokens: TokenSource | None = None
        self._entra = entra

    async def start(self) -> None:
        if self._entra:
            quiet_sdk_loggers()
            self._tokens = TokenSource(entra_fetch())

    async def _post(self, path: str, body: bytes, headers: Headers, hangup: Hangup) -> Response:
        if self._tokens is None:
            return await self._http.post(path, body, headers, hangup)
        return await post_with_token(self._http, self._tokens, path, body, headers, hangup)


def entra_fetch() -> Fetch:
    """A fetch of Entra ID tokens through azure-identity; `ConfigError` (the endpoint is
    unavailable, saying why) when the package is not installed."""
    try:
        identity = importlib.import_module("azure.identity")
        core_errors = importlib.import_module("azure.core.exceptions")
    except ImportError:
        raise ConfigError(
            "`auth: entra` needs the azure-identity package (pip install azure-identity)"
        ) from None
    credential = identity.DefaultAzureCredential()

    def fetch() -> tuple[str, float]:
        try:
            token = credential.get_token(ENTRA_SCOPE)
        except core_errors.ClientAuthenticationError as error:
            raise UpstreamError(
                f"could not obtain an Entra ID token: {type(error).__name__}", retryable=True
            ) from None
        return str(token.token), float(token.expires_on or time.time() + 300)

    return fetch

"""The endpoint catalog: what each upstream is, where it runs and what it costs."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from llmeu.routing.durations import Duration


class SovereigntyClass(StrEnum):
    """Where inference runs and who controls it, from the strictest to the loosest."""

    ON_PREMISE = "on_premise"
    EU_SOVEREIGN = "eu_sovereign"
    EU_RESIDENT = "eu_resident"
    GLOBAL = "global"


class Capability(StrEnum):
    CHAT = "chat"
    EMBEDDINGS = "embeddings"
    TOOLS = "tools"
    # Speaks OpenAI's Responses API itself, as `llmeu probe --api responses` qualifies it.
    # llmeu's own `/v1/responses` routes on `chat`; an attempt on an endpoint with this
    # capability (kinds openai, azure_openai) passes through natively
    # (`llmeu.providers.responses_native`).
    RESPONSES = "responses"
    # Takes OpenAI's `prompt_cache_key` (OpenAI's own API, Azure OpenAI): a chat request's key
    # is forwarded to it, and left out for an upstream that does not declare it.
    PROMPT_CACHE_KEY = "prompt_cache_key"


class Certification(StrEnum):
    """The certifications and attestations a policy may require, a fixed vocabulary so that a
    typo in a policy is a configuration error, not a requirement nothing can meet."""

    SECNUMCLOUD = "secnumcloud"  # ANSSI SecNumCloud qualification (FR)
    BSI_C5 = "bsi-c5"  # BSI Cloud Computing Compliance Criteria Catalogue attestation (DE)
    ENS_HIGH = "ens-high"  # Esquema Nacional de Seguridad, high category (ES)
    HDS = "hds"  # Hébergeur de Données de Santé (FR)
    EUCS_BASIC = "eucs-basic"  # EU Cybersecurity Certification Scheme for Cloud Services
    EUCS_SUBSTANTIAL = "eucs-substantial"
    EUCS_HIGH = "eucs-high"
    ISO27001 = "iso27001"
    ISO27017 = "iso27017"
    ISO27018 = "iso27018"
    ISO27701 = "iso27701"
    ISO42001 = "iso42001"
    SOC2 = "soc2"


SEAL_LEVELS = range(0, 5)
"""Assurance levels of the Commission's Cloud Sovereignty Framework: SEAL-0 … SEAL-4."""


class EndpointKind(StrEnum):
    OPENAI = "openai"
    LOCAL = "local"
    AZURE_OPENAI = "azure_openai"
    BEDROCK = "bedrock"
    VERTEX = "vertex"
    ANTHROPIC = "anthropic"  # Anthropic's Messages API, natively
    VERTEX_ANTHROPIC = "vertex_anthropic"  # Claude on Vertex AI: Anthropic's wire, Google's auth


class AzureAuth(StrEnum):
    API_KEY = "api_key"  # the `api-key` header, from `api_key_env`
    ENTRA = "entra"  # an Entra ID bearer token, through azure-identity when installed


@dataclass(frozen=True, slots=True)
class UpstreamOptions:
    """What a native upstream kind needs beyond the base URL: where it runs, which
    deployment, which API version, how it authenticates. Secrets never sit here: only
    the name of an environment variable (`Endpoint.api_key_env`) or a file's path."""

    region: str = ""
    """AWS region (`bedrock`) or Google Cloud location (`vertex`, `vertex_anthropic`)."""
    project: str = ""
    """Google Cloud project id (`vertex`, `vertex_anthropic`; default: the service-account
    key's project)."""
    deployment: str = ""
    """Azure OpenAI deployment name; empty: the v1 API with `model` in the body."""
    api_version: str = ""
    """Azure OpenAI `api-version` query parameter."""
    auth: AzureAuth = AzureAuth.API_KEY
    credentials_file: str = ""
    """Path of a Google service-account key file (`vertex`, `vertex_anthropic`; default:
    GOOGLE_APPLICATION_CREDENTIALS)."""
    base_url_env: str = ""
    """The variable holding the base URL (`azure_openai`: each customer's resource has its
    own, so a shipped catalog entry names the variable; skipped until it is set)."""


LOCAL_CHAT_MODEL = "SmolLM2-135M-Instruct"
LOCAL_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
BUNDLED_MODELS: dict[str, frozenset[Capability]] = {
    LOCAL_CHAT_MODEL: frozenset({Capability.CHAT, Capability.TOOLS}),
    LOCAL_EMBEDDING_MODEL: frozenset({Capability.EMBEDDINGS}),
}
"""What a `kind: local` endpoint may serve: the bundled models and what each can do."""
LOCAL_DEFAULT_MAX_TOKENS = 512
"""A small local model asked for "a long story" runs on to its context (8,192 tokens,
minutes on a CPU): a `kind: local` endpoint stops at this many unless it says otherwise."""


@dataclass(frozen=True, slots=True)
class Prices:
    """EUR per million tokens. `cached_input` is what the provider charges for input tokens
    read from its prompt cache (None: the input price)."""

    input: float
    output: float
    cached_input: float | None = None

    def cost(self, input_tokens: int, output_tokens: int, cached_tokens: int = 0) -> float:
        """`input_tokens` counts every input token, `cached_tokens` of them read from the
        provider's prompt cache."""
        cached = min(cached_tokens, input_tokens)
        rate = self.input if self.cached_input is None else self.cached_input
        amount = (input_tokens - cached) * self.input + cached * rate
        return round((amount + output_tokens * self.output) / 1e6, 10)


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Seconds. `first_token` bounds the wait for the first delta, `idle` each gap
    after it and `total` the whole call, so a long healthy stream is never cut by
    a timeout meant for the first byte."""

    connect: float = 10.0
    first_token: float = 60.0
    idle: float = 30.0
    total: float = 600.0


@dataclass(frozen=True, slots=True)
class Endpoint:
    endpoint_id: str
    provider: str
    kind: EndpointKind
    model: str
    model_version: str
    aliases: tuple[str, ...]
    inference_region: str
    country: str
    sovereignty_class: SovereigntyClass
    retention: Duration
    prices: Prices
    base_url: str = ""
    api_key_env: str | None = None
    priority: int = 100
    capabilities: frozenset[Capability] = frozenset({Capability.CHAT})
    timeouts: Timeouts = field(default_factory=Timeouts)
    jurisdiction: str = ""
    """ISO country of the provider's controlling entity (whose law reaches the provider)."""
    certifications: frozenset[Certification] = frozenset()
    seal: int | None = None
    """The Cloud Sovereignty Framework's assurance level, 0 to 4, where one is known."""
    upstream: UpstreamOptions = field(default_factory=UpstreamOptions)
    """The fields of the native kinds (`azure_openai`, `bedrock`, `vertex`)."""
    default_max_tokens: int | None = None
    """The answer's length limit when a request sets neither `max_tokens` nor
    `max_completion_tokens` (`kind: local` only; None: the model's context)."""
    hosted_tools: frozenset[str] = frozenset()
    """The hosted tools its provider runs, by name (`web_search`: `llmeu.calls.hosted_tools`),
    declared among its `capabilities`."""

    def serves(self, model: str) -> bool:
        return model in self.aliases or model == self.model or model == self.endpoint_id


class Catalog:
    """The endpoints, indexed by id and by every model name a client may send."""

    __slots__ = ("_by_id", "_by_model", "endpoints")

    def __init__(self, endpoints: Iterable[Endpoint]):
        self.endpoints: tuple[Endpoint, ...] = tuple(endpoints)
        self._by_id = {e.endpoint_id: e for e in self.endpoints}
        by_model: dict[str, list[Endpoint]] = {}
        for endpoint in self.endpoints:
            for name in dict.fromkeys((*endpoint.aliases, endpoint.model, endpoint.endpoint_id)):
                by_model.setdefault(name, []).append(endpoint)
        self._by_model = {k: tuple(v) for k, v in by_model.items()}

    def get(self, endpoint_id: str) -> Endpoint | None:
        return self._by_id.get(endpoint_id)

    def serving(self, model: str) -> Sequence[Endpoint]:
        return self._by_model.get(model, ())

    def aliases(self) -> list[str]:
        """Public model names: every alias, in catalog order."""
        return list(dict.fromkeys(a for e in self.endpoints for a in e.aliases))

"""The built-in catalog and policies: what `llmeu serve` routes to without `--config`.

The bundled local models come first (class `on_premise`, region = this
machine); the EU providers of `builtin.yaml` follow and are skipped, with a
reason, until their API key is set.
"""

from __future__ import annotations

from importlib import resources

from llmeu.routing.catalog import (
    BUNDLED_MODELS,
    LOCAL_CHAT_MODEL,
    LOCAL_DEFAULT_MAX_TOKENS,
    LOCAL_EMBEDDING_MODEL,
    Catalog,
    Endpoint,
    EndpointKind,
    Prices,
    SovereigntyClass,
)
from llmeu.routing.config_file import parse_endpoints, parse_tool_servers
from llmeu.routing.durations import ZERO, Duration
from llmeu.routing.policy import Policy
from llmeu.routing.tool_servers import ToolCatalog

EU_STRICT = Policy(
    policy_id="eu-strict",
    allow_classes=frozenset({SovereigntyClass.ON_PREMISE, SovereigntyClass.EU_SOVEREIGN}),
    max_retention=ZERO,
    store_content=ZERO,
)
EU = Policy(
    policy_id="eu",
    allow_classes=frozenset(
        {SovereigntyClass.ON_PREMISE, SovereigntyClass.EU_SOVEREIGN, SovereigntyClass.EU_RESIDENT}
    ),
    max_retention=Duration.parse("P30D"),
    store_content=ZERO,
)
OPEN = Policy(
    policy_id="open",
    allow_classes=frozenset(SovereigntyClass),
    max_retention=Duration.parse("P100Y"),
    store_content=Duration.parse("P7D"),
)
BUILTIN_POLICIES = (EU_STRICT, EU, OPEN)
DEFAULT_POLICY = EU_STRICT.policy_id


def local_endpoints(host: str, country: str = "") -> list[Endpoint]:
    """The bundled models, served on this machine (`inference_region` = `local:<host>`)."""
    region = f"local:{host}"
    free = Prices(input=0.0, output=0.0)
    return [
        Endpoint(
            endpoint_id="local-smollm2-135m",
            provider="llmeu-local",
            kind=EndpointKind.LOCAL,
            model=LOCAL_CHAT_MODEL,
            model_version="Q4_1",
            aliases=("smollm2", "smollm2-135m", "local"),
            inference_region=region,
            country=country,
            jurisdiction=country,  # the operator's own: it runs the machine
            sovereignty_class=SovereigntyClass.ON_PREMISE,
            retention=ZERO,
            prices=free,
            priority=0,
            capabilities=BUNDLED_MODELS[LOCAL_CHAT_MODEL],
            default_max_tokens=LOCAL_DEFAULT_MAX_TOKENS,
        ),
        Endpoint(
            endpoint_id="local-minilm-l6-v2",
            provider="llmeu-local",
            kind=EndpointKind.LOCAL,
            model=LOCAL_EMBEDDING_MODEL,
            model_version="int8",
            aliases=("minilm", "all-minilm-l6-v2", "local-embeddings"),
            inference_region=region,
            country=country,
            jurisdiction=country,  # the operator's own: it runs the machine
            sovereignty_class=SovereigntyClass.ON_PREMISE,
            retention=ZERO,
            prices=free,
            priority=0,
            capabilities=BUNDLED_MODELS[LOCAL_EMBEDDING_MODEL],
        ),
    ]


def provider_endpoints() -> list[Endpoint]:
    """The EU provider endpoints shipped in `builtin.yaml`."""
    return parse_endpoints(_builtin_text())


def builtin_tool_servers() -> ToolCatalog:
    """The MCP servers shipped in `builtin.yaml` (`mcp_servers:`; none today: a tool server
    holds an operator's own data, so the operator catalogues it)."""
    return parse_tool_servers(_builtin_text())


def _builtin_text() -> str:
    return resources.files("llmeu.routing").joinpath("builtin.yaml").read_text("utf-8")


def builtin_catalog(host: str, country: str = "") -> Catalog:
    return Catalog([*local_endpoints(host, country), *provider_endpoints()])

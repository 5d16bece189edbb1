"""What an endpoint's `kind` asks of its fields in the configuration file.

The native kinds carry fields of their own (`region` for bedrock and the
Vertex kinds, `deployment`, `api_version` and `auth` for azure_openai, ...),
each accepted only on the kinds it applies to and checked here, so that a typo
fails `llmeu config check`, not the first call. A `local` endpoint serves a
bundled model: its model, its capabilities and its `default_max_tokens` are
checked against what that model can do.
"""

from __future__ import annotations

import re
from datetime import date

from llmeu.calls.hosted_tools import HOSTED_NAMES, MESSAGES_HOSTED, RESPONSES_HOSTED
from llmeu.errors import ConfigError
from llmeu.routing import yaml_nodes as nodes
from llmeu.routing.catalog import (
    BUNDLED_MODELS,
    LOCAL_DEFAULT_MAX_TOKENS,
    AzureAuth,
    Capability,
    Endpoint,
    EndpointKind,
    UpstreamOptions,
)
from llmeu.routing.yaml_nodes import NULL_TAG, Node

RESPONSES_NATIVE_KINDS = frozenset({EndpointKind.OPENAI, EndpointKind.AZURE_OPENAI})
"""The kinds whose upstream takes Responses calls natively (`responses` capability); on
any other kind the capability changes nothing: its Responses calls are translated."""
MESSAGES_NATIVE_KINDS = frozenset({EndpointKind.ANTHROPIC, EndpointKind.VERTEX_ANTHROPIC})
"""The kinds whose upstream speaks Anthropic's Messages wire: where its server tools run."""


def responses_native(endpoint: Endpoint) -> bool:
    """Whether `endpoint` takes Responses calls on its own Responses API."""
    return endpoint.kind in RESPONSES_NATIVE_KINDS and Capability.RESPONSES in endpoint.capabilities


def messages_native(endpoint: Endpoint) -> bool:
    """Whether `endpoint` speaks Anthropic's Messages wire."""
    return endpoint.kind in MESSAGES_NATIVE_KINDS


_GOOGLE = frozenset({EndpointKind.VERTEX, EndpointKind.VERTEX_ANTHROPIC})
_KIND_FIELDS: dict[str, frozenset[EndpointKind]] = {
    "region": frozenset({EndpointKind.BEDROCK}) | _GOOGLE,
    "project": _GOOGLE,
    "deployment": frozenset({EndpointKind.AZURE_OPENAI}),
    "api_version": frozenset({EndpointKind.AZURE_OPENAI}),
    "auth": frozenset({EndpointKind.AZURE_OPENAI}),
    "credentials_file": _GOOGLE,
    "base_url_env": frozenset({EndpointKind.AZURE_OPENAI}),
}
_KIND_REQUIRED = {
    EndpointKind.BEDROCK: ("region",),
    EndpointKind.VERTEX: ("region",),
    EndpointKind.VERTEX_ANTHROPIC: ("region",),
}
_REGION = re.compile(r"^[a-z]{2,}(-[a-z]+)+-?[0-9]+$")
_TOKEN = re.compile(r"^[A-Za-z0-9._:-]+$")


def upstream_options(fields: dict[str, Node], kind: EndpointKind, node: Node) -> UpstreamOptions:
    """The native kinds' fields: each only on the kinds it applies to, values checked here so
    that a typo fails `llmeu config check`, not the first call."""
    for name, kinds in _KIND_FIELDS.items():
        if name in fields and kind not in kinds:
            allowed = ", ".join(sorted(k.value for k in kinds))
            raise ConfigError(f"{name} applies to `kind: {allowed}` endpoints only", field=name,
                              line=nodes.line(fields[name]))  # fmt: skip
    for name in _KIND_REQUIRED.get(kind, ()):
        if name not in fields:
            raise ConfigError(f"a `{kind.value}` endpoint needs `{name}`", field=name,
                              line=nodes.line(node))  # fmt: skip
    region = nodes.text(fields, "region", "")
    if region and not _REGION.match(region):
        raise ConfigError(f"region must look like eu-central-1 or europe-west4, got {region!r}",
                          field="region", line=nodes.line(fields["region"]))  # fmt: skip
    for name in ("project", "deployment", "api_version"):
        value = nodes.text(fields, name, "", (str, date))  # YAML reads 2024-10-21 as a date
        if name in fields and not _TOKEN.match(value):
            raise ConfigError(f"{name} must be a plain name (letters, digits, . _ : -)",
                              field=name, line=nodes.line(fields[name]))  # fmt: skip
    deployment = nodes.text(fields, "deployment", "")
    api_version = nodes.text(fields, "api_version", "", (str, date))
    if deployment and not api_version:
        raise ConfigError("an Azure deployment URL needs `api_version` (e.g. 2024-10-21)",
                          field="api_version", line=nodes.line(fields["deployment"]))  # fmt: skip
    auth = nodes.enum(fields.get("auth"), "auth", AzureAuth, AzureAuth.API_KEY)
    azure_key = kind is EndpointKind.AZURE_OPENAI and auth is AzureAuth.API_KEY
    if azure_key and "api_key_env" not in fields:
        raise ConfigError("`auth: api_key` needs `api_key_env` (or use `auth: entra`)",
                          field="api_key_env", line=nodes.line(node))  # fmt: skip
    credentials_file = nodes.text(fields, "credentials_file", "")
    if credentials_file.lstrip().startswith(("{", "-----")) or "\n" in credentials_file:
        raise ConfigError(
            "credentials_file is the path of a key file, never the key itself",
            field="credentials_file",
            line=nodes.line(fields["credentials_file"]),
        )
    return UpstreamOptions(
        region=region, project=nodes.text(fields, "project", ""), deployment=deployment,
        api_version=api_version, auth=auth, credentials_file=credentials_file,
        base_url_env=nodes.text(fields, "base_url_env", ""),
    )  # fmt: skip


def base_url(
    fields: dict[str, Node], kind: EndpointKind, upstream: UpstreamOptions, node: Node
) -> str:
    """The endpoint's base URL: given, or a region's public endpoint; an http(s) URL on every
    kind but `local` (and Azure's `base_url_env`, read when the gateway starts)."""
    url = nodes.text(fields, "base_url", "") or _default_base_url(kind, upstream)
    if upstream.base_url_env and "base_url" in fields:
        raise ConfigError("give base_url or base_url_env, not both", field="base_url_env",
                          line=nodes.line(fields["base_url_env"]))  # fmt: skip
    remote = kind is not EndpointKind.LOCAL and not upstream.base_url_env
    if remote and not url.startswith(("http://", "https://")):
        raise ConfigError(
            f"an `{kind.value}` endpoint needs a base_url starting with http:// or https://",
            field="base_url",
            line=nodes.line(fields.get("base_url", node)),
        )
    return url.rstrip("/")


def _default_base_url(kind: EndpointKind, upstream: UpstreamOptions) -> str:
    """The public endpoint of a region, so a catalog entry need not spell it out."""
    if kind is EndpointKind.BEDROCK:
        return f"https://bedrock-runtime.{upstream.region}.amazonaws.com"
    if kind in _GOOGLE:
        return f"https://{upstream.region}-aiplatform.googleapis.com"
    return ""


def default_max_tokens(fields: dict[str, Node], kind: EndpointKind, model: str) -> int | None:
    """A positive number, or null for none; `kind: local` only, where a chat model
    defaults to 512."""
    if "default_max_tokens" not in fields:
        chat = Capability.CHAT in BUNDLED_MODELS.get(model, frozenset())
        return LOCAL_DEFAULT_MAX_TOKENS if kind is EndpointKind.LOCAL and chat else None
    node = fields["default_max_tokens"]
    if kind is not EndpointKind.LOCAL:
        raise ConfigError(
            "default_max_tokens applies to `kind: local` endpoints only (an upstream has its own)",
            field="default_max_tokens",
            line=nodes.line(node),
        )
    if getattr(node, "tag", None) == NULL_TAG:
        return None
    value: int = nodes.scalar(node, "default_max_tokens", int)
    if value <= 0:
        raise ConfigError("default_max_tokens must be positive", field="default_max_tokens",
                          line=nodes.line(node))  # fmt: skip
    return value


def capabilities(fields: dict[str, Node], kind: EndpointKind, model: str) -> frozenset[Capability]:
    """Declared capabilities (the hosted tools among them are `hosted_tools`'s); a `local`
    endpoint serves a bundled model and only what it can do."""
    bundled = BUNDLED_MODELS.get(model) if kind is EndpointKind.LOCAL else None
    if kind is EndpointKind.LOCAL and bundled is None:
        raise ConfigError(
            f"no bundled local model `{model}` (bundled: {', '.join(BUNDLED_MODELS)})",
            field="model",
            line=nodes.line(fields["model"]),
        )
    if "capabilities" not in fields:
        return bundled or frozenset({Capability.CHAT})
    items = nodes.sequence(fields["capabilities"], "capabilities")
    if not items:
        raise ConfigError(
            "capabilities must not be empty (chat, embeddings, tools, responses, prompt_cache_key)",
            field="capabilities",
            line=nodes.line(fields["capabilities"]),
        )
    known = {c.value for c in Capability}
    declared: set[Capability] = set()
    for item in items:
        name = nodes.scalar(item, "capabilities", str)
        if name in known:
            declared.add(Capability(name))
        elif name not in HOSTED_NAMES:
            raise ConfigError(
                f"unknown capability `{name}` (known: {', '.join(sorted(known))}, and the hosted "
                f"tools {', '.join(sorted(HOSTED_NAMES))})",
                field="capabilities",
                line=nodes.line(item),
            )
    if bundled is not None and not declared <= bundled:
        raise ConfigError(
            f"the bundled model `{model}` offers only {', '.join(sorted(bundled))}",
            field="capabilities",
            line=nodes.line(fields["capabilities"]),
        )
    return frozenset(declared)


def hosted_tools(fields: dict[str, Node], kind: EndpointKind) -> frozenset[str]:
    """The hosted tools an endpoint declares among its `capabilities` (by name,
    `llmeu.calls.hosted_tools`): those of the Responses API on a kind that passes Responses
    calls through (with `responses`), Anthropic's on a kind that speaks its wire."""
    node = fields.get("capabilities")
    items = nodes.sequence(node, "capabilities") if node is not None else []
    named = {n: nodes.scalar(n, "capabilities", str) for n in items}
    hosted = {n: name for n, name in named.items() if name in HOSTED_NAMES}
    if not hosted:
        return frozenset()
    if kind in RESPONSES_NATIVE_KINDS and Capability.RESPONSES in named.values():
        wire, known = "the Responses API", RESPONSES_HOSTED
    elif kind in MESSAGES_NATIVE_KINDS:
        wire, known = "Anthropic's Messages API", MESSAGES_HOSTED
    else:
        node, name = next(iter(hosted.items()))
        raise ConfigError(
            f"`{name}` is a hosted tool: only an endpoint that passes calls through to a "
            "provider running it declares one (kind openai or azure_openai with `responses`, "
            "kind anthropic or vertex_anthropic)",
            field="capabilities",
            line=nodes.line(node),
        )
    for node, name in hosted.items():
        if name not in known:
            raise ConfigError(
                f"`{name}` is not a hosted tool of {wire} (those are: {', '.join(sorted(known))})",
                field="capabilities",
                line=nodes.line(node),
            )
    return frozenset(hosted.values())

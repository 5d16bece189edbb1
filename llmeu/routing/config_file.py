"""The configuration file of docs/design.md §4: endpoints, policies and the default policy.

Validation is strict: an unknown field, a missing required one, a bad
ISO-8601 duration, an unknown sovereignty class, kind or capability, or a
duplicate id is a `ConfigError` naming the field and its line. What an
endpoint's kind asks of its fields is `endpoint_kinds`; reading one YAML
value is `yaml_nodes`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import yaml

from llmeu.errors import ConfigError
from llmeu.personal.rules import (
    DEFAULT_MAX_SCAN_CHARS,
    Action,
    Detector,
    OnError,
    PersonalDataRules,
    RestrictTo,
    Unscanned,
)
from llmeu.routing import endpoint_kinds
from llmeu.routing import yaml_nodes as nodes
from llmeu.routing.cache_rules import parse_cache
from llmeu.routing.catalog import (
    Catalog,
    Certification,
    Endpoint,
    EndpointKind,
    Prices,
    SovereigntyClass,
    Timeouts,
)
from llmeu.routing.durations import Duration
from llmeu.routing.policy import HostedToolsMode, LimitsFail, Policy
from llmeu.routing.predicates import RULES, seal_level
from llmeu.routing.tool_servers import ToolCatalog, normal_url, parse_tool_server
from llmeu.routing.yaml_nodes import Node


@dataclass(frozen=True, slots=True)
class GatewayConfig:
    catalog: Catalog
    policies: dict[str, Policy]
    default_policy: str
    tool_servers: ToolCatalog = field(default_factory=ToolCatalog)
    """The MCP servers of `mcp_servers:` (`llmeu.routing.tool_servers`)."""


def parse_config(text: str, *, base_policies: Iterable[Policy] = ()) -> GatewayConfig:
    """Parse and validate a configuration file's text.

    `base_policies` (the built-in ones) stay available unless the file
    defines a policy with the same id.
    """
    root = nodes.compose(text)
    if root is None:
        raise ConfigError("the configuration file is empty")
    top = nodes.mapping(
        root, "configuration", {"endpoints", "mcp_servers", "policies", "default_policy"}
    )
    endpoints = [_endpoint(n) for n in nodes.sequence(top.get("endpoints"), "endpoints")]
    nodes.refuse_duplicates(endpoints, top.get("endpoints"), lambda e: e.endpoint_id, "endpoint_id")
    tool_servers = _tool_servers(top.get("mcp_servers"))
    own = [_policy(n) for n in nodes.sequence(top.get("policies"), "policies")]
    nodes.refuse_duplicates(own, top.get("policies"), lambda p: p.policy_id, "policy_id")
    policies = {p.policy_id: p for p in base_policies}
    policies.update({p.policy_id: p for p in own})
    if "default_policy" not in top:
        raise ConfigError(
            "missing required field", field="default_policy", line=root.start_mark.line + 1
        )
    default = nodes.scalar(top["default_policy"], "default_policy", str)
    if default not in policies:
        raise ConfigError(
            f"default_policy `{default}` is not a defined policy ({', '.join(sorted(policies))})",
            field="default_policy",
            line=nodes.line(top["default_policy"]),
        )
    return GatewayConfig(Catalog(endpoints), policies, default, tool_servers)


def parse_endpoints(text: str) -> list[Endpoint]:
    """Endpoints from a catalog document: an `endpoints:` list (and `mcp_servers:`, read by
    `parse_tool_servers`)."""
    root = nodes.compose(text)
    if root is None:
        return []
    top = nodes.mapping(root, "catalog", {"endpoints", "mcp_servers"})
    return [_endpoint(n) for n in nodes.sequence(top.get("endpoints"), "endpoints")]


def parse_tool_servers(text: str) -> ToolCatalog:
    """The tool servers of a catalog document's `mcp_servers:` list."""
    root = nodes.compose(text)
    if root is None:
        return ToolCatalog()
    top = nodes.mapping(root, "catalog", {"endpoints", "mcp_servers"})
    return _tool_servers(top.get("mcp_servers"))


def _tool_servers(node: Node | None) -> ToolCatalog:
    servers = [parse_tool_server(n) for n in nodes.sequence(node, "mcp_servers")]
    nodes.refuse_duplicates(servers, node, lambda s: s.server_id, "server_id")
    nodes.refuse_duplicates(servers, node, lambda s: normal_url(s.url), "url")
    return ToolCatalog(servers)


def parse_policy(text: str) -> Policy:
    """One policy from a YAML or JSON document (the platform API's PUT body)."""
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as error:
        raise ConfigError(f"not valid YAML or JSON: {error}") from None
    if root is None:
        raise ConfigError("the policy document is empty")
    return _policy(root)


_ENDPOINT_FIELDS = {
    "endpoint_id", "provider", "kind", "base_url", "api_key_env", "model", "model_version",
    "aliases", "inference_region", "country", "sovereignty_class", "retention",
    "price_eur_per_mtok", "priority", "capabilities", "timeouts", "jurisdiction",
    "certifications", "seal", "default_max_tokens",
    "region", "project", "deployment", "api_version", "auth", "credentials_file", "base_url_env",
}  # fmt: skip
_ENDPOINT_REQUIRED = (
    "endpoint_id", "provider", "model", "inference_region", "sovereignty_class", "retention",
    "price_eur_per_mtok",
)  # fmt: skip


def _endpoint(node: Node) -> Endpoint:
    fields = nodes.mapping(node, "endpoint", _ENDPOINT_FIELDS, required=_ENDPOINT_REQUIRED)
    kind = nodes.enum(fields.get("kind"), "kind", EndpointKind, EndpointKind.OPENAI)
    model = nodes.name(fields["model"], "model")
    upstream = endpoint_kinds.upstream_options(fields, kind, node)
    base_url = endpoint_kinds.base_url(fields, kind, upstream, node)
    prices = nodes.mapping(
        fields["price_eur_per_mtok"], "price_eur_per_mtok", {"input", "output", "cached_input"},
        required=("input", "output"), prefix="price_eur_per_mtok.",
    )  # fmt: skip
    return Endpoint(
        endpoint_id=nodes.name(fields["endpoint_id"], "endpoint_id"),
        provider=nodes.name(fields["provider"], "provider"),
        kind=kind,
        base_url=base_url,
        api_key_env=nodes.text(fields, "api_key_env", None),
        model=model,
        model_version=nodes.text(fields, "model_version", "", (str, int, float)),
        aliases=tuple(
            nodes.name(n, "aliases") for n in nodes.sequence(fields.get("aliases"), "aliases")
        ),
        inference_region=nodes.name(fields["inference_region"], "inference_region"),
        country=nodes.country(fields["country"], "country") if "country" in fields else "",
        sovereignty_class=nodes.enum(
            fields["sovereignty_class"], "sovereignty_class", SovereigntyClass
        ),
        retention=nodes.duration(fields["retention"], "retention"),
        prices=Prices(
            input=nodes.non_negative(prices["input"], "price_eur_per_mtok.input"),
            output=nodes.non_negative(prices["output"], "price_eur_per_mtok.output"),
            cached_input=nodes.non_negative(
                prices["cached_input"], "price_eur_per_mtok.cached_input"
            )
            if "cached_input" in prices
            else None,
        ),
        priority=nodes.optional(fields, "priority", int, 100),
        capabilities=endpoint_kinds.capabilities(fields, kind, model),
        hosted_tools=endpoint_kinds.hosted_tools(fields, kind),
        timeouts=_timeouts(fields.get("timeouts")),
        jurisdiction=nodes.country(fields["jurisdiction"], "jurisdiction")
        if "jurisdiction" in fields
        else "",
        certifications=_certifications(fields.get("certifications"), "certifications"),
        seal=seal_level(fields.get("seal"), "seal"),
        upstream=upstream,
        default_max_tokens=endpoint_kinds.default_max_tokens(fields, kind, model),
    )


def _certifications(node: Node | None, what: str) -> frozenset[Certification]:
    return frozenset(nodes.enum(n, what, Certification) for n in nodes.sequence(node, what))


def _timeouts(node: Node | None) -> Timeouts:
    if node is None:
        return Timeouts()
    names = {"connect", "first_token", "idle", "total"}
    fields = nodes.mapping(node, "timeouts", names, prefix="timeouts.")
    values = {k: nodes.positive(v, f"timeouts.{k}") for k, v in fields.items()}
    return Timeouts(**values)


_OWN_POLICY_FIELDS = (
    "policy_id",
    "limits_fail",
    "keep_metadata",
    "personal_data",
    "hosted_tools",
    "cache",
)
_POLICY_FIELDS = {*_OWN_POLICY_FIELDS, *(rule.name for rule in RULES)}
_POLICY_REQUIRED = ("policy_id", *(rule.name for rule in RULES if rule.required))


def _policy(node: Node) -> Policy:
    """A policy: its own fields, and one per rule of the predicate table, each parsed by its
    rule (a rule's field left out takes the rule's default)."""
    fields = nodes.mapping(node, "policy", _POLICY_FIELDS, required=_POLICY_REQUIRED)
    ruled: dict[str, Any] = {
        rule.name: rule.parse(fields[rule.name]) if rule.name in fields else rule.default
        for rule in RULES
    }
    return Policy(
        policy_id=nodes.name(fields["policy_id"], "policy_id"),
        limits_fail=nodes.enum(
            fields.get("limits_fail"), "limits_fail", LimitsFail, LimitsFail.OPEN
        ),
        keep_metadata=_optional_duration(fields.get("keep_metadata"), "keep_metadata"),
        personal_data=_personal_data(fields.get("personal_data")),
        hosted_tools=nodes.enum(
            fields.get("hosted_tools"), "hosted_tools", HostedToolsMode, HostedToolsMode.DROP
        ),
        cache=parse_cache(fields.get("cache"), ruled["store_content"]),
        **ruled,
    )


_PERSONAL_DATA_FIELDS = {"detectors", "restrict", "unscanned", "on_error", "max_scan_chars"}
_RESTRICT_FIELDS = {"allow_classes", "allow_countries", "allow_providers"}


def _personal_data(node: Node | None) -> PersonalDataRules | None:
    if node is None or nodes.is_null(node):
        return None
    fields = nodes.mapping(node, "personal_data", _PERSONAL_DATA_FIELDS, prefix="personal_data.")
    actions: list[tuple[Detector, Action]] = []
    detectors = fields.get("detectors")
    if detectors is not None:
        for key, value in nodes.mapping(
            detectors, "personal_data.detectors", {d.value for d in Detector},
            prefix="personal_data.detectors.",
        ).items():  # fmt: skip
            what = f"personal_data.detectors.{key}"
            actions.append((Detector(key), nodes.enum(value, what, Action)))
    restrict = _restrict(fields.get("restrict"))
    if any(a is Action.RESTRICT for _, a in actions) and restrict == RestrictTo():
        raise ConfigError(
            "a detector's action is `restrict` but `restrict` names no class, country or "
            "provider to restrict to",
            field="personal_data.restrict",
            line=nodes.line(node),
        )
    max_scan = fields.get("max_scan_chars")
    return PersonalDataRules(
        actions=tuple(sorted(actions)),
        restrict=restrict,
        unscanned=nodes.enum(fields.get("unscanned"), "personal_data.unscanned", Unscanned,
                             Unscanned.ALLOW),
        on_error=nodes.enum(fields.get("on_error"), "personal_data.on_error", OnError,
                            OnError.CLOSED),
        max_scan_chars=DEFAULT_MAX_SCAN_CHARS
        if max_scan is None
        else int(nodes.positive(max_scan, "personal_data.max_scan_chars")),
    )  # fmt: skip


def _restrict(node: Node | None) -> RestrictTo:
    if node is None or nodes.is_null(node):
        return RestrictTo()
    fields = nodes.mapping(node, "personal_data.restrict", _RESTRICT_FIELDS,
                           prefix="personal_data.restrict.")  # fmt: skip
    classes = "personal_data.restrict.allow_classes"
    countries = "personal_data.restrict.allow_countries"
    providers = "personal_data.restrict.allow_providers"
    return RestrictTo(
        allow_classes=frozenset(
            nodes.enum(n, classes, SovereigntyClass).value
            for n in nodes.sequence(fields.get("allow_classes"), classes)
        ),
        allow_countries=frozenset(
            nodes.country(n, countries)
            for n in nodes.sequence(fields.get("allow_countries"), countries)
        ),
        allow_providers=frozenset(
            nodes.name(n, providers)
            for n in nodes.sequence(fields.get("allow_providers"), providers)
        ),
    )


def _optional_duration(node: Node | None, what: str) -> Duration | None:
    if node is None or nodes.is_null(node):
        return None
    return nodes.duration(node, what)

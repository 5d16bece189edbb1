"""The rules of a policy about where a call may go, each declared once, in one table.

A policy is mostly predicates on a *site*: the place a call's content would
reach — a model endpoint today, a tool server as well tomorrow — described by
its sovereignty class, country, provider, retention, the law its provider
answers to, its certifications and its assurance level (`Site`). Each row of
`RULES` is one policy field and says everything the gateway does with it:

- `parse` / `document`: how the configuration file and the platform API spell it;
- `exclusion`: whether a site meets it, and the reason when not (the 403's details,
  `llmeu routes`);
- `widens`: whether another policy is looser in it (a request may narrow, never widen);
- `narrow`: how a request's `llmeu` field (or `x-llmeu-policy` header) narrows it, for the
  rules a request may narrow;
- `describe`: how `llmeu routes` says it in words;
- `kind`: the name of its comparison, which the console's JavaScript implements once per
  kind (`rules_document` is what the console is served), so the playground offers exactly
  the policies the gateway accepts.

Three rows are the gateway's own rather than the site's (`store_content`, `fallback`,
`allow_hosted_tools`): they have no exclusion but take part in widening (and a request may
narrow the hosted tools a call may send; where each goes is the governance step's,
`llmeu.api.call.governance`). The last two list names by pattern
(`llmeu.routing.glob_rules`): `allow_mcp_servers` excludes the tool servers whose id
it does not match (an endpoint is not a tool server: the rule says nothing of it), and
`allow_tools` the tools whose exposed name it does not match, which `/mcp` asks of
`Policy.admits_tool` once it knows a tool's name. Adding a predicate is one row here, one field
on `Policy` and on the request's `RoutingRequest` when a request may narrow it
(docs/extending.md walks through it).
"""

from __future__ import annotations

from collections.abc import Iterable
from operator import attrgetter
from typing import Any

from llmeu.calls.hosted_tools import HOSTED_NAMES
from llmeu.errors import ConfigError, InvalidRequest
from llmeu.routing import yaml_nodes as nodes
from llmeu.routing.catalog import SovereigntyClass
from llmeu.routing.glob_rules import AllowedGlobs
from llmeu.routing.rule_kinds import (
    AllowedValues,
    AtLeastSeal,
    AtMost,
    IncludesAll,
    NeverEnable,
    Rule,
    Site,
    parse_certifications,
    seal_level,
)
from llmeu.routing.tool_servers import ToolServer
from llmeu.routing.yaml_nodes import Node

__all__ = [
    "EU_MEMBER_STATES", "NARROWABLE", "RULES", "RULES_BY_NAME", "Rule", "Site",
    "expand_jurisdictions", "parse_certifications", "rules_document", "seal_level",
]  # fmt: skip

EU_MEMBER_STATES = frozenset((
    "AT", "BE", "BG", "CY", "CZ", "DE", "DK", "EE", "ES", "FI", "FR", "GR", "HR", "HU",
    "IE", "IT", "LT", "LU", "LV", "MT", "NL", "PL", "PT", "RO", "SE", "SI", "SK",
))  # fmt: skip
"""The 27 member states (ISO 3166-1; Greece is GR, not the EU's own code EL)."""


def expand_jurisdictions(values: Iterable[str]) -> list[str]:
    """Upper-cased ISO countries, `EU` standing for every member state."""
    out: list[str] = []
    for value in values:
        code = value.strip().upper()
        out.extend(sorted(EU_MEMBER_STATES) if code == "EU" else [code])
    return out


def _class_from_request(value: str, param: str) -> SovereigntyClass:
    try:
        return SovereigntyClass(value)
    except ValueError:
        known = ", ".join(c.value for c in SovereigntyClass)
        raise InvalidRequest(
            f"unknown sovereignty class {value!r}; known classes: {known}", param=param
        ) from None


def _jurisdictions_from_request(value: str, param: str) -> list[str]:
    codes = expand_jurisdictions([value])
    bad = [c for c in codes if len(c) != 2 or not c.isalpha()]
    if bad:
        raise InvalidRequest(
            f"require_jurisdictions takes two-letter ISO countries or EU, got {bad}", param=param
        )
    return codes


def _jurisdictions_from_config(node: Node, what: str) -> list[str]:
    value: str = nodes.scalar(node, what, str)
    if value.strip().upper() == "EU":
        return expand_jurisdictions([value])
    return [nodes.country(node, what)]


ALLOW_CLASSES = AllowedValues(
    "allow_classes", "classes", "sovereignty class", attrgetter("sovereignty_class"),
    lambda n, what: nodes.enum(n, what, SovereigntyClass), _class_from_request,
    empty_is_any=False,
)  # fmt: skip
ALLOW_COUNTRIES = AllowedValues(
    "allow_countries", "countries", "country", attrgetter("country"), nodes.country,
    lambda value, _: value.upper(), empty_is_any=True,
)  # fmt: skip
ALLOW_PROVIDERS = AllowedValues(
    "allow_providers", "providers", "provider", attrgetter("provider"), nodes.name,
    lambda value, _: value, empty_is_any=True,
)  # fmt: skip
MAX_RETENTION = AtMost("max_retention", "max provider retention", attrgetter("retention"), True)
STORE_CONTENT = AtMost("store_content", "gateway keeps content", None)
FALLBACK = NeverEnable("fallback", "fallback")
REQUIRE_JURISDICTIONS = AllowedValues(
    "require_jurisdictions", "jurisdictions", "provider jurisdiction", attrgetter("jurisdiction"),
    _jurisdictions_from_config, _jurisdictions_from_request, empty_is_any=True,
)  # fmt: skip
REQUIRE_CERTIFICATIONS = IncludesAll("require_certifications", "certifications")
MIN_SEAL = AtLeastSeal("min_seal", "SEAL")


def _hosted_from_config(node: Node, what: str) -> str:
    name: str = nodes.scalar(node, what, str)
    if name not in HOSTED_NAMES:
        raise ConfigError(
            f"unknown hosted tool `{name}` (known: {', '.join(sorted(HOSTED_NAMES))})",
            field=what,
            line=nodes.line(node),
        )
    return name


def _hosted_from_request(value: str, param: str) -> str:
    if value not in HOSTED_NAMES:
        known = ", ".join(sorted(HOSTED_NAMES))
        raise InvalidRequest(f"unknown hosted tool {value!r}; known: {known}", param=param)
    return value


ALLOW_HOSTED_TOOLS = AllowedValues(
    "allow_hosted_tools", "hosted tools", "hosted tool", None, _hosted_from_config,
    _hosted_from_request, empty_is_any=False,
)  # fmt: skip


def _tool_server_id(site: Site) -> str | None:
    return site.server_id if isinstance(site, ToolServer) else None


ALLOW_MCP_SERVERS = AllowedGlobs(
    "allow_mcp_servers", "tool servers", "tool server", _tool_server_id
)
ALLOW_TOOLS = AllowedGlobs("allow_tools", "tools", "tool", None)

RULES: tuple[Rule[Any], ...] = (
    ALLOW_CLASSES,
    ALLOW_COUNTRIES,
    ALLOW_PROVIDERS,
    MAX_RETENTION,
    STORE_CONTENT,
    FALLBACK,
    REQUIRE_JURISDICTIONS,
    REQUIRE_CERTIFICATIONS,
    MIN_SEAL,
    ALLOW_HOSTED_TOOLS,
    ALLOW_MCP_SERVERS,
    ALLOW_TOOLS,
)
"""Every rule, in the order a refusal names the first that fails (exclusion, widening)."""

RULES_BY_NAME: dict[str, Rule[Any]] = {rule.name: rule for rule in RULES}

NARROWABLE: tuple[Rule[Any], ...] = tuple(r for r in RULES if r.narrowable)
"""The rules a request's `llmeu` field may narrow, each by a field of the same name."""


def rules_document() -> list[dict[str, object]]:
    """The table for the console: each rule's field, comparison, label and the value of a
    policy that leaves the field out."""
    return [
        {"field": r.name, "kind": r.kind, "label": r.label, "default": r.document(r.default)}
        for r in RULES
    ]

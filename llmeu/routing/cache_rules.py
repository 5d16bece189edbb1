"""A policy's `cache:` section: whether the gateway may answer a call with an earlier answer.

A cached answer is stored content, so the section obeys the policy's
`store_content`: an entry lives at most `ttl`, `ttl` may not exceed
`store_content`, and a policy that keeps no content (`store_content: P0D`, the
built-in `eu-strict` and `eu`) cannot have a cache at all — writing one is a
configuration error naming `cache`, not a section silently ignored. Without
the section nothing is cached.

    cache:
      ttl: PT1H              # how long an answer may be reused (≤ store_content)
      scope: key             # key (default): one API key's calls share answers;
                             # policy: every key under this policy does
      semantic:              # optional: answer near-identical prompts too
        threshold: 0.95      # cosine similarity of the prompts, 0 < threshold ≤ 1
        tools: false         # also calls that offer tools
        temperature: false   # also calls that sample (temperature above 0)

`scope: team` is refused: teams do not exist in this version, and a scope that
silently meant `key` (or `policy`) would share answers differently from what
the policy says. Entries are partitioned by the policy as applied (its id and
digest), so a changed policy never reuses what its earlier version cached.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from llmeu.errors import ConfigError
from llmeu.routing import yaml_nodes as nodes
from llmeu.routing.durations import Duration
from llmeu.routing.yaml_nodes import Node


class CacheScope(StrEnum):
    """Whose calls share answers: one API key's, or every key's under the policy."""

    KEY = "key"
    POLICY = "policy"


@dataclass(frozen=True, slots=True)
class SemanticRules:
    """When a prompt close enough to a cached one is answered with its answer. Calls that
    offer tools or sample (temperature above 0) are answered only from an identical prompt
    unless `tools` / `temperature` say otherwise: a near prompt's tool call or a sampled
    answer is the least likely to be what the caller wanted."""

    threshold: float
    tools: bool = False
    temperature: bool = False


@dataclass(frozen=True, slots=True)
class CacheRules:
    ttl: Duration
    scope: CacheScope = CacheScope.KEY
    semantic: SemanticRules | None = None


_FIELDS = {"ttl", "scope", "semantic"}
_SEMANTIC_FIELDS = {"threshold", "tools", "temperature"}


def parse_cache(node: Node | None, store_content: Duration) -> CacheRules | None:
    """The `cache:` section of a policy that keeps content for `store_content`."""
    if node is None or nodes.is_null(node):
        return None
    if store_content.seconds == 0:
        raise ConfigError(
            f"a cached answer is stored content, and this policy stores none "
            f"(store_content {store_content}): remove `cache` or let the policy keep content",
            field="cache",
            line=nodes.line(node),
        )
    fields = nodes.mapping(node, "cache", _FIELDS, required=("ttl",), prefix="cache.")
    ttl = nodes.duration(fields["ttl"], "cache.ttl")
    if ttl.seconds == 0:
        raise ConfigError("cache.ttl must be longer than zero", field="cache.ttl",
                          line=nodes.line(fields["ttl"]))  # fmt: skip
    if ttl > store_content:
        raise ConfigError(
            f"cache.ttl {ttl} is longer than the policy keeps content (store_content "
            f"{store_content})",
            field="cache.ttl",
            line=nodes.line(fields["ttl"]),
        )
    return CacheRules(ttl, _scope(fields.get("scope")), _semantic(fields.get("semantic")))


def _scope(node: Node | None) -> CacheScope:
    if node is not None and nodes.scalar(node, "cache.scope", str) == "team":
        raise ConfigError(
            "cache.scope `team` needs teams, which this version does not have: use `key` or "
            "`policy`",
            field="cache.scope",
            line=nodes.line(node),
        )
    return nodes.enum(node, "cache.scope", CacheScope, CacheScope.KEY)


def _semantic(node: Node | None) -> SemanticRules | None:
    if node is None or nodes.is_null(node):
        return None
    fields = nodes.mapping(node, "cache.semantic", _SEMANTIC_FIELDS, required=("threshold",),
                           prefix="cache.semantic.")  # fmt: skip
    threshold = nodes.positive(fields["threshold"], "cache.semantic.threshold")
    if threshold > 1:
        raise ConfigError(
            "cache.semantic.threshold is a cosine similarity: at most 1",
            field="cache.semantic.threshold",
            line=nodes.line(fields["threshold"]),
        )
    return SemanticRules(threshold, _flag(fields, "tools"), _flag(fields, "temperature"))


def _flag(fields: dict[str, Node], name: str) -> bool:
    node = fields.get(name)
    return False if node is None else nodes.scalar(node, f"cache.semantic.{name}", bool)


def cache_document(rules: CacheRules | None) -> dict[str, object] | None:
    """The section as the configuration file and the platform API spell it."""
    if rules is None:
        return None
    semantic = rules.semantic
    return {
        "ttl": rules.ttl.text,
        "scope": rules.scope.value,
        "semantic": None
        if semantic is None
        else {
            "threshold": semantic.threshold,
            "tools": semantic.tools,
            "temperature": semantic.temperature,
        },
    }

"""A policy's `cache:` section: read as written, refused where keeping content is not allowed."""

from __future__ import annotations

import json

import pytest

from llmeu.errors import ConfigError
from llmeu.routing.builtin import BUILTIN_POLICIES
from llmeu.routing.cache_rules import CacheRules, CacheScope, SemanticRules
from llmeu.routing.config_file import parse_policy
from llmeu.routing.durations import Duration
from llmeu.routing.policy import policy_document


def _policy(cache: str, store_content: str = "P1D") -> str:
    return (
        "policy_id: cached\n"
        "allow_classes: [on_premise]\n"
        "max_retention: P0D\n"
        f"store_content: {store_content}\n"
        f"cache:\n{cache}"
    )


@pytest.mark.parametrize(
    ("section", "rules"),
    [
        ("  ttl: PT1H\n", CacheRules(Duration.parse("PT1H"))),
        ("  ttl: P1D\n  scope: policy\n", CacheRules(Duration.parse("P1D"), CacheScope.POLICY)),
        (
            "  ttl: PT10M\n  semantic: {threshold: 0.95}\n",
            CacheRules(Duration.parse("PT10M"), semantic=SemanticRules(0.95)),
        ),
        (
            "  ttl: PT10M\n  semantic: {threshold: 1, tools: true, temperature: true}\n",
            CacheRules(Duration.parse("PT10M"), semantic=SemanticRules(1.0, True, True)),
        ),
    ],
    ids=["ttl-only", "policy-scope", "semantic", "semantic-with-tools-and-sampling"],
)
def test_a_section_means_what_it_says(section: str, rules: CacheRules) -> None:
    assert parse_policy(_policy(section)).cache == rules


@pytest.mark.parametrize(
    ("section", "store_content", "field", "words"),
    [
        ("  ttl: PT1H\n", "P0D", "cache", "stores none"),
        ("  ttl: P2D\n", "P1D", "cache.ttl", "longer than the policy keeps content"),
        ("  ttl: P0D\n", "P1D", "cache.ttl", "longer than zero"),
        ("  scope: key\n", "P1D", "cache.ttl", "missing required field"),
        ("  ttl: PT1H\n  scope: team\n", "P1D", "cache.scope", "needs teams"),
        ("  ttl: PT1H\n  scope: tenant\n", "P1D", "cache.scope", "unknown cache.scope"),
        ("  ttl: PT1H\n  shared: true\n", "P1D", "cache.shared", "unknown field"),
        ("  ttl: PT1H\n  semantic: {threshold: 1.5}\n", "P1D", "cache.semantic.threshold",
         "at most 1"),
        ("  ttl: PT1H\n  semantic: {threshold: 0}\n", "P1D", "cache.semantic.threshold",
         "positive"),
        ("  ttl: PT1H\n  semantic: {tools: true}\n", "P1D", "cache.semantic.threshold",
         "missing required field"),
        ("  ttl: PT1H\n  semantic: {threshold: 0.9, tools: yes-please}\n", "P1D",
         "cache.semantic.tools", "must be a bool"),
    ],
    ids=["p0d-policy", "ttl-beyond-store-content", "zero-ttl", "no-ttl", "team-scope",
         "unknown-scope", "unknown-field", "threshold-above-one", "zero-threshold",
         "semantic-without-threshold", "flag-not-boolean"],
)  # fmt: skip
def test_a_refused_section_names_its_field(
    section: str, store_content: str, field: str, words: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_policy(_policy(section, store_content))
    assert refused.value.field == field
    assert words in str(refused.value)
    assert refused.value.line is not None


def test_no_built_in_policy_caches() -> None:
    """`eu-strict` (the default) and `eu` keep no content, so they cannot cache; `open` could
    but does not say so."""
    assert [p.cache for p in BUILTIN_POLICIES] == [None, None, None]


def test_the_document_reads_back_as_the_same_policy() -> None:
    """The platform API's documents (and the policy's digest) carry the section."""
    policy = parse_policy(_policy("  ttl: PT1H\n  scope: policy\n  semantic: {threshold: 0.9}\n"))
    document = policy_document(policy)
    assert document["cache"] == {
        "ttl": "PT1H",
        "scope": "policy",
        "semantic": {"threshold": 0.9, "tools": False, "temperature": False},
    }
    assert parse_policy(json.dumps(document)) == policy
    without = parse_policy(_policy("  ttl: PT1H\n").replace("cache:\n  ttl: PT1H\n", ""))
    assert policy_document(without)["cache"] is None
    assert parse_policy(json.dumps(policy_document(without))) == without

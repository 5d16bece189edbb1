"""The configuration file of docs/design.md §4: what it means, and every refusal naming field and line."""

from __future__ import annotations

import json

import pytest

from llmeu.errors import ConfigError
from llmeu.routing.builtin import BUILTIN_POLICIES
from llmeu.routing.catalog import Capability, EndpointKind, SovereigntyClass, Timeouts
from llmeu.routing.config_file import parse_config, parse_endpoints, parse_policy
from llmeu.routing.durations import Duration
from llmeu.routing.policy import LimitsFail, policy_document

VALID = """\
endpoints:
  - endpoint_id: scw-small
    provider: scaleway
    kind: openai
    base_url: https://api.scaleway.ai/v1/
    api_key_env: SCW_SECRET_KEY
    model: mistral-small-3.2-24b-instruct-2506
    model_version: "2506"
    aliases: [mistral-small]
    inference_region: fr-par
    country: fr
    sovereignty_class: eu_sovereign
    retention: P0D
    price_eur_per_mtok: {input: 0.15, output: 0.35}
    priority: 10
    capabilities: [chat, tools]
    timeouts: {connect: 5, first_token: 20}
  - endpoint_id: local-chat
    provider: llmeu-local
    kind: local
    model: SmolLM2-135M-Instruct
    aliases: [smollm2]
    inference_region: local
    sovereignty_class: on_premise
    retention: P0D
    price_eur_per_mtok: {input: 0, output: 0}
policies:
  - policy_id: fr-only
    allow_classes: [on_premise, eu_sovereign]
    allow_countries: [fr]
    allow_providers: []
    max_retention: P0D
    store_content: PT12H
    fallback: false
default_policy: fr-only
"""


def test_a_valid_file_means_what_it_says() -> None:
    config = parse_config(VALID, base_policies=BUILTIN_POLICIES)
    scw, local = config.catalog.endpoints
    assert scw.endpoint_id == "scw-small"
    assert scw.kind is EndpointKind.OPENAI
    assert scw.base_url == "https://api.scaleway.ai/v1"
    assert scw.country == "FR"
    assert scw.model_version == "2506"
    assert scw.sovereignty_class is SovereigntyClass.EU_SOVEREIGN
    assert (scw.prices.input, scw.prices.output) == (0.15, 0.35)
    assert scw.capabilities == {Capability.CHAT, Capability.TOOLS}
    assert scw.timeouts == Timeouts(connect=5, first_token=20)
    assert local.kind is EndpointKind.LOCAL
    assert local.country == ""
    assert local.priority == 100
    assert local.capabilities == {Capability.CHAT, Capability.TOOLS}
    assert config.default_policy == "fr-only"
    own = config.policies["fr-only"]
    assert own.allow_countries == {"FR"}
    assert own.store_content == Duration.parse("PT12H")
    assert own.fallback is False
    assert own.limits_fail is LimitsFail.OPEN, "admitting unchecked is the default"
    assert set(config.policies) == {"fr-only", "eu-strict", "eu", "open"}


@pytest.mark.parametrize(
    ("kind", "capabilities", "hosted"),
    [
        ("openai", "[chat, tools, responses, web_search, file_search]", {"web_search",
                                                                       "file_search"}),
        ("anthropic", "[chat, web_search, code_execution]", {"web_search", "code_execution"}),
        ("openai", "[chat, tools]", set()),
    ],
    ids=["responses-native", "anthropic", "none"],
)  # fmt: skip
def test_an_endpoint_declares_the_hosted_tools_it_runs_among_its_capabilities(
    kind: str, capabilities: str, hosted: set[str]
) -> None:
    text = edit("capabilities: [chat, tools]", f"capabilities: {capabilities}")
    scw = parse_config(text.replace("kind: openai", f"kind: {kind}")).catalog.endpoints[0]
    assert scw.hosted_tools == hosted
    assert {c.value for c in scw.capabilities} <= {"chat", "tools", "responses"}


def test_a_file_policy_replaces_a_built_in_one_of_the_same_id() -> None:
    text = VALID.replace("policy_id: fr-only", "policy_id: eu").replace(
        "default_policy: fr-only", "default_policy: eu"
    )
    config = parse_config(text, base_policies=BUILTIN_POLICIES)
    assert config.policies["eu"].allow_countries == {"FR"}


@pytest.mark.parametrize(
    ("model", "capabilities"),
    [
        pytest.param("SmolLM2-135M-Instruct", {Capability.CHAT, Capability.TOOLS}, id="chat-model"),
        pytest.param("all-MiniLM-L6-v2", {Capability.EMBEDDINGS}, id="embedding-model"),
    ],
)
def test_a_local_endpoint_defaults_to_what_its_bundled_model_does(
    model: str, capabilities: set[Capability]
) -> None:
    text = VALID.replace("model: SmolLM2-135M-Instruct", f"model: {model}")
    local = parse_config(text).catalog.endpoints[1]
    assert local.capabilities == capabilities


LOCAL_PRICE = "    price_eur_per_mtok: {input: 0, output: 0}\n"


@pytest.mark.parametrize(
    ("extra", "limit"),
    [
        pytest.param("", 512, id="local-default"),
        pytest.param("    default_max_tokens: 64\n", 64, id="set"),
        pytest.param("    default_max_tokens: null\n", None, id="null-is-the-context"),
    ],
)
def test_a_local_endpoint_stops_at_a_default_length(extra: str, limit: int | None) -> None:
    scw, local = parse_config(VALID.replace(LOCAL_PRICE, LOCAL_PRICE + extra)).catalog.endpoints
    assert local.default_max_tokens == limit
    assert scw.default_max_tokens is None, "an upstream has its own default"


def edit(old: str, new: str, count: int = 1) -> str:
    assert old in VALID, old
    return VALID.replace(old, new, count)


# (text, field, line, part of the message)
INVALID = [
    # unknown fields
    pytest.param(edit("    priority: 10\n", "    priority: 10\n    zone: fr\n"), "zone", 16,
                 "unknown field `zone`", id="unknown-endpoint-field"),
    pytest.param(edit("    priority: 10\n", "    priority: 10\n    region: eu-west-1\n"),
                 "region", 16,
                 "region applies to `kind: bedrock, vertex, vertex_anthropic` endpoints only",
                 id="native-field-on-an-openai-endpoint"),
    pytest.param(edit("    fallback: false\n", "    fallback: false\n    retries: 3\n"), "retries", 35,
                 "unknown field `retries`", id="unknown-policy-field"),
    pytest.param(edit("default_policy: fr-only\n", "default_policy: fr-only\nlisten: 8080\n"),
                 "listen", 36, "unknown field `listen`", id="unknown-top-level-field"),
    pytest.param(edit("{input: 0.15, output: 0.35}", "{input: 0.15, output: 0.35, currency: EUR}"),
                 "price_eur_per_mtok.currency", 14, "unknown field `currency`", id="unknown-price-field"),
    pytest.param(edit("{connect: 5, first_token: 20}", "{connect: 5, first_byte: 20}"),
                 "timeouts.first_byte", 17, "unknown field `first_byte`", id="unknown-timeout"),
    pytest.param(edit("    priority: 10\n", "    priority: 10\n    priority: 20\n"), "priority", 16,
                 "given twice", id="field-given-twice"),
    # durations
    pytest.param(edit("    retention: P0D\n", "    retention: 30 days\n"), "retention", 13,
                 "'30 days' is not an ISO-8601 duration", id="bad-retention"),
    pytest.param(edit("    retention: P0D\n", "    retention: P101Y\n"), "retention", 13,
                 "'P101Y' is longer than P100Y", id="retention-beyond-a-century"),
    pytest.param(edit("store_content: PT12H", "store_content: P" + "9" * 320 + "Y"),
                 "store_content", 33, "at most P100Y", id="store-content-of-320-digits"),
    pytest.param(edit("    retention: P0D\n", "    retention: 0\n"), "retention", 13,
                 "retention must be a str", id="retention-not-text"),
    pytest.param(edit("max_retention: P0D", "max_retention: P30"), "max_retention", 32,
                 "'P30' is not an ISO-8601 duration", id="bad-max-retention"),
    pytest.param(edit("store_content: PT12H", "store_content: 12h"), "store_content", 33,
                 "'12h' is not an ISO-8601 duration", id="bad-store-content"),
    # enumerations
    pytest.param(edit("sovereignty_class: eu_sovereign", "sovereignty_class: sovereign"),
                 "sovereignty_class", 12, "unknown sovereignty_class `sovereign`", id="unknown-class"),
    pytest.param(edit("allow_classes: [on_premise, eu_sovereign]", "allow_classes: [on_premise, eu]"),
                 "allow_classes", 29, "unknown allow_classes `eu`", id="unknown-allowed-class"),
    pytest.param(edit("    kind: openai\n", "    kind: vllm\n"), "kind", 4, "unknown kind `vllm`",
                 id="unknown-kind"),
    pytest.param(edit("capabilities: [chat, tools]", "capabilities: [chat, vision]"), "capabilities",
                 16, "unknown capability `vision`", id="unknown-capability"),
    pytest.param(edit("capabilities: [chat, tools]", "capabilities: []"), "capabilities", 16,
                 "must not be empty", id="no-capability"),
    pytest.param(edit("capabilities: [chat, tools]", "capabilities: [chat, web_search]"),
                 "capabilities", 16, "only an endpoint that passes calls through",
                 id="hosted-tool-without-responses"),
    pytest.param(edit("capabilities: [chat, tools]", "capabilities: [responses, web_fetch]"),
                 "capabilities", 16, "`web_fetch` is not a hosted tool of the Responses API",
                 id="hosted-tool-of-another-wire"),
    pytest.param(edit("allow_providers: []\n", "allow_providers: []\n    hosted_tools: silent\n"),
                 "hosted_tools", 32, "unknown hosted_tools `silent`", id="unknown-hosted-tools-mode"),
    # duplicates
    pytest.param(edit("endpoint_id: local-chat", "endpoint_id: scw-small"), "endpoint_id", 18,
                 "duplicate endpoint_id `scw-small` (first defined on line 2)", id="duplicate-endpoint"),
    pytest.param(edit("default_policy: fr-only\n",
                      "  - policy_id: fr-only\n    allow_classes: []\n    max_retention: P0D\n"
                      "default_policy: fr-only\n"),
                 "policy_id", 35, "duplicate policy_id `fr-only`", id="duplicate-policy"),
    # missing fields
    pytest.param(edit("    provider: scaleway\n", ""), "provider", 2, "missing required field",
                 id="missing-provider"),
    pytest.param(edit("    sovereignty_class: eu_sovereign\n", ""), "sovereignty_class", 2,
                 "missing required field", id="missing-class"),
    pytest.param(edit("    retention: P0D\n", ""), "retention", 2, "missing required field",
                 id="missing-retention"),
    pytest.param(edit("    price_eur_per_mtok: {input: 0.15, output: 0.35}\n", ""),
                 "price_eur_per_mtok", 2, "missing required field", id="missing-prices"),
    pytest.param(edit("{input: 0.15, output: 0.35}", "{input: 0.15}"), "price_eur_per_mtok.output",
                 14, "missing required field", id="missing-output-price"),
    pytest.param(edit("    max_retention: P0D\n", ""), "max_retention", 28, "missing required field",
                 id="missing-max-retention"),
    pytest.param(edit("default_policy: fr-only\n", ""), "default_policy", 1,
                 "missing required field", id="missing-default-policy"),
    pytest.param(edit("    base_url: https://api.scaleway.ai/v1/\n", ""), "base_url", 2,
                 "needs a base_url", id="openai-without-base-url"),
    # values
    pytest.param(edit("base_url: https://api.scaleway.ai/v1/", "base_url: api.scaleway.ai/v1"),
                 "base_url", 5, "starting with http:// or https://", id="base-url-without-scheme"),
    pytest.param(edit("default_policy: fr-only", "default_policy: eu-lax"), "default_policy", 35,
                 "`eu-lax` is not a defined policy", id="undefined-default-policy"),
    pytest.param(edit("{input: 0.15, output: 0.35}", "{input: -0.15, output: 0.35}"),
                 "price_eur_per_mtok.input", 14, "must not be negative", id="negative-price"),
    pytest.param(edit("{input: 0.15, output: 0.35}", "{input: cheap, output: 0.35}"),
                 "price_eur_per_mtok.input", 14, "must be a int or float", id="price-not-a-number"),
    pytest.param(edit("{connect: 5, first_token: 20}", "{connect: 0, first_token: 20}"),
                 "timeouts.connect", 17, "must be positive", id="zero-timeout"),
    pytest.param(edit("priority: 10", "priority: high"), "priority", 15, "priority must be a int",
                 id="priority-not-int"),
    pytest.param(edit("priority: 10", "priority: true"), "priority", 15, "must not be a boolean",
                 id="priority-boolean"),
    pytest.param(edit("fallback: false", "fallback: sometimes"), "fallback", 34,
                 "fallback must be a bool", id="fallback-not-boolean"),
    pytest.param(edit("    country: fr\n", "    country: France\n"), "country", 11,
                 "two-letter ISO country code", id="country-not-iso"),
    pytest.param(edit("allow_countries: [fr]", "allow_countries: [FRA]"), "allow_countries", 30,
                 "two-letter ISO country code", id="allowed-country-not-iso"),
    pytest.param(edit("fallback: false", "fallback: false\n    limits_fail: maybe"), "limits_fail",
                 35, "unknown limits_fail `maybe` (known: open, closed)", id="limits-fail-unknown"),
    pytest.param(edit("endpoint_id: scw-small", 'endpoint_id: ""'), "endpoint_id", 2,
                 "must not be empty", id="empty-endpoint-id"),
    pytest.param(edit("aliases: [mistral-small]", "aliases: mistral-small"), "aliases", 9,
                 "aliases must be a list", id="aliases-not-a-list"),
    pytest.param(edit("model: SmolLM2-135M-Instruct", "model: llama-3-8b"), "model", 21,
                 "no bundled local model `llama-3-8b`", id="unknown-local-model"),
    pytest.param(edit("    price_eur_per_mtok: {input: 0, output: 0}\n",
                      "    price_eur_per_mtok: {input: 0, output: 0}\n    capabilities: [embeddings]\n"),
                 "capabilities", 27, "offers only chat", id="local-model-cannot-embed"),
    pytest.param(edit("    priority: 10\n", "    priority: 10\n    default_max_tokens: 512\n"),
                 "default_max_tokens", 16, "`kind: local` endpoints only", id="max-tokens-upstream"),
    pytest.param(edit(LOCAL_PRICE, LOCAL_PRICE + "    default_max_tokens: 0\n"),
                 "default_max_tokens", 27, "must be positive", id="max-tokens-zero"),
    pytest.param(edit(LOCAL_PRICE, LOCAL_PRICE + "    default_max_tokens: many\n"),
                 "default_max_tokens", 27, "must be a int", id="max-tokens-text"),
    pytest.param(edit("  - endpoint_id: local-chat\n", "  - local-chat\n  - endpoint_id: local-chat\n"),
                 "endpoint", 18, "must be a mapping", id="endpoint-not-a-mapping"),
    pytest.param(edit("    aliases: [mistral-small]\n", "    aliases: [mistral-small\n"), None, 10,
                 "not valid YAML", id="broken-yaml"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "field", "line", "message"), INVALID)
def test_an_invalid_file_is_refused_naming_field_and_line(
    text: str, field: str | None, line: int, message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, base_policies=BUILTIN_POLICIES)
    error = caught.value
    assert message in str(error)
    assert (error.field, error.line) == (field, line)
    if field is not None:
        assert f"(field `{field}`, line {line})" in str(error)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("", "the configuration file is empty", id="empty"),
        pytest.param("# only a comment\n", "the configuration file is empty", id="comment"),
        pytest.param("- endpoints\n", "configuration must be a mapping", id="a-list"),
        pytest.param("a: 1\n---\nb: 2\n", "not valid YAML", id="two-documents"),
    ],
)
def test_a_file_that_is_not_a_configuration_is_refused(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(text)


def test_a_file_without_endpoints_or_policies_keeps_the_built_in_policies() -> None:
    config = parse_config("default_policy: eu\n", base_policies=BUILTIN_POLICIES)
    assert config.catalog.endpoints == ()
    assert set(config.policies) == {"eu-strict", "eu", "open"}


def test_a_quoted_null_is_a_name_not_an_empty_list() -> None:
    text = edit("aliases: [mistral-small]", 'aliases: "null"')
    with pytest.raises(ConfigError, match="aliases must be a list"):
        parse_config(text)


def test_endpoints_alone_parse_with_the_same_rules() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_endpoints("endpoints:\n  - endpoint_id: x\n    colour: blue\n")
    assert (caught.value.field, caught.value.line) == ("colour", 3)
    with pytest.raises(ConfigError, match="not valid YAML"):
        parse_endpoints("endpoints: [\n")


@pytest.mark.parametrize(
    ("document", "field"),
    [
        pytest.param('{"policy_id": "x", "allow_classes": ["eu"], "max_retention": "P0D"}',
                     "allow_classes", id="json-unknown-class"),
        pytest.param('{"policy_id": "x", "allow_classes": [], "max_retention": "P0D", "ttl": 1}',
                     "ttl", id="json-unknown-field"),
        pytest.param('{"policy_id": "x", "allow_classes": []}', "max_retention",
                     id="json-missing-field"),
        pytest.param('{"policy_id": "x", "allow_classes": [], "max_retention": "P0D", '
                     '"store_content": "P' + "9" * 320 + 'Y"}', "store_content",
                     id="json-duration-beyond-a-century"),
    ],
)  # fmt: skip
def test_a_policy_document_is_validated_like_the_file(document: str, field: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_policy(document)
    assert caught.value.field == field
    assert caught.value.line == 1


def test_limits_fail_closed_is_read_and_rendered() -> None:
    config = parse_config(edit("fallback: false", "fallback: false\n    limits_fail: closed"))
    own = config.policies["fr-only"]
    assert own.limits_fail is LimitsFail.CLOSED
    assert policy_document(own)["limits_fail"] == "closed"
    assert parse_policy(json.dumps(policy_document(own))) == own


FORGED = "zz\n2026-12-01 08:00:00,000 WARNING llmeu.calls: call failed trace_id=trc_FORGED"
CONTROL = [
    pytest.param("\n", id="newline"),
    pytest.param("\r", id="carriage-return"),
    pytest.param("\x1b[2J", id="escape-sequence"),
    pytest.param("\x00", id="nul"),
    pytest.param("\x85", id="next-line"),
    pytest.param("\u2028", id="line-separator"),
    pytest.param("\u202e", id="right-to-left-override"),
]
# (the field, the text of the file it is in, the value the name replaces)
NAMED = [
    pytest.param("endpoint_id", "endpoint_id: scw-small", id="endpoint-id"),
    pytest.param("provider", "provider: scaleway", id="provider"),
    pytest.param("model", "model: mistral-small-3.2-24b-instruct-2506", id="model"),
    pytest.param("model_version", 'model_version: "2506"', id="model-version"),
    pytest.param("aliases", "aliases: [mistral-small]", id="alias"),
    pytest.param("inference_region", "inference_region: fr-par", id="region"),
    pytest.param("api_key_env", "api_key_env: SCW_SECRET_KEY", id="api-key-env"),
    pytest.param("base_url", "base_url: https://api.scaleway.ai/v1/", id="base-url"),
    pytest.param("policy_id", "policy_id: fr-only", id="policy-id"),
    pytest.param("allow_providers", "allow_providers: []", id="allowed-provider"),
]


@pytest.mark.parametrize("control", CONTROL)
@pytest.mark.parametrize(("field", "line"), NAMED)
def test_names_with_control_characters_are_refused(field: str, line: str, control: str) -> None:
    """Names reach log lines and tables: a newline in one would forge a line."""
    value = json.dumps(f"https://x{control}y" if field == "base_url" else f"a{control}b")
    text = edit(line, f"{field}: [{value}]" if "[" in line else f"{field}: {value}")
    text = text.replace("default_policy: fr-only", "default_policy: eu")
    with pytest.raises(ConfigError) as caught:
        parse_config(text, base_policies=BUILTIN_POLICIES)
    where = next(n for n, text in enumerate(VALID.splitlines(), 1) if line in text)
    assert (caught.value.field, caught.value.line) == (field, where)
    assert "must not contain control characters" in str(caught.value)


def test_a_forged_log_line_in_a_policy_id_is_refused_by_the_platform_api_parser() -> None:
    document = {"policy_id": FORGED, "allow_classes": [], "max_retention": "P0D"}
    with pytest.raises(ConfigError) as caught:
        parse_policy(json.dumps(document))
    assert (caught.value.field, caught.value.line) == ("policy_id", 1)
    assert "found '\\n' at position 2" in str(caught.value)


def test_an_endpoint_may_declare_the_responses_capability_the_probe_suggests() -> None:
    text = edit("capabilities: [chat, tools]", "capabilities: [responses, tools]")
    scw, _ = parse_config(text, base_policies=BUILTIN_POLICIES).catalog.endpoints
    assert scw.capabilities == {Capability.RESPONSES, Capability.TOOLS}

"""The predicate table: every rule reaches every place that reads policies, and says why.

Adding a rule to `llmeu.routing.predicates.RULES` must be enough for the
configuration file, the platform API's documents, request narrowing and the
console: these tests fail when one of them does not see a rule.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import msgspec
import pytest

from llmeu.calls.request import RoutingRequest
from llmeu.errors import ConfigError, InvalidRequest, PermissionDenied
from llmeu.routing.config_file import parse_policy
from llmeu.routing.policy import Narrowing, Policy, narrow, policy_document
from llmeu.routing.predicates import NARROWABLE, RULES, Rule, rules_document
from tests.routing.factories import endpoint, tool_server

RULE_NAMES = [rule.name for rule in RULES]


@pytest.mark.parametrize("name", RULE_NAMES)
def test_every_rule_is_a_field_of_the_policy_and_its_document(name: str) -> None:
    fields = {f.name for f in dataclasses.fields(Policy)}
    assert name in fields
    document = policy_document(
        parse_policy('{"policy_id": "p", "allow_classes": [], "max_retention": "P0D"}')
    )
    assert name in document


@pytest.mark.parametrize("rule", NARROWABLE, ids=lambda r: r.name)
def test_every_narrowable_rule_is_a_field_of_the_request(rule: Rule[Any]) -> None:
    name = rule.name
    assert name in RoutingRequest.__struct_fields__
    assert Narrowing(**{name: [] if name != "min_seal" else None}).is_empty()


def test_the_console_is_served_every_rule() -> None:
    assert [r["field"] for r in rules_document()] == RULE_NAMES
    assert json.loads(json.dumps(rules_document()))  # plain JSON for the JavaScript module


BASE = {"policy_id": "base", "allow_classes": ["eu_sovereign", "eu_resident"], "max_retention": "P30D",
        "store_content": "P1D"}  # fmt: skip
SITE = endpoint("acme-x", sovereignty_class="eu_resident", country="DE", provider="acme",
                retention="P7D", jurisdiction="US", certifications=["iso27001"], seal=2)  # fmt: skip
TOOL_SITE = tool_server("crm-eu", sovereignty_class="eu_resident", country="DE", provider="acme",
                        retention="P7D", jurisdiction="US", certifications=["iso27001"], seal=2)  # fmt: skip
NOT_ABOUT_SITES = ("store_content", "fallback", "allow_hosted_tools", "allow_tools")

# One row per site rule: the policy field and value that excludes SITE (an endpoint) or
# TOOL_SITE (a tool server, for the rules about tool servers only), and the reason.
EXCLUDING = [
    pytest.param("allow_classes", ["eu_sovereign"], "sovereignty class eu_resident is not in [eu_sovereign]",
                 id="allow_classes"),
    pytest.param("allow_countries", ["FR"], "country DE is not in [FR]", id="allow_countries"),
    pytest.param("allow_providers", ["ovh"], "provider acme is not in [ovh]", id="allow_providers"),
    pytest.param("max_retention", "P1D", "provider retention P7D exceeds max_retention P1D", id="max_retention"),
    pytest.param("require_jurisdictions", ["EU"], "provider jurisdiction US is not in [AT, BE,",
                 id="require_jurisdictions"),
    pytest.param("require_certifications", ["secnumcloud"], "provider lacks certifications [secnumcloud]",
                 id="require_certifications"),
    pytest.param("min_seal", 3, "provider assurance level SEAL-2 is below SEAL-3", id="min_seal"),
    pytest.param("allow_mcp_servers", ["crm", "erp-*"], "tool server crm-eu is not in [crm, erp-*]",
                 id="allow_mcp_servers"),
]  # fmt: skip
TOOL_SERVER_RULES = ("allow_mcp_servers",)


@pytest.mark.parametrize(("field", "value", "reason"), EXCLUDING)
def test_each_site_rule_excludes_with_its_reason(field: str, value: object, reason: str) -> None:
    site = TOOL_SITE if field in TOOL_SERVER_RULES else SITE
    policy = parse_policy(json.dumps({**BASE, field: value}))
    assert parse_policy(json.dumps(BASE)).exclusion(site) is None
    rule, said = policy.exclusion(site) or ("", "")
    assert rule == field
    assert said.startswith(reason)


@pytest.mark.parametrize(("field", "value", "reason"), EXCLUDING)
def test_a_tool_server_is_excluded_by_the_same_rules(
    field: str, value: object, reason: str
) -> None:
    policy = parse_policy(json.dumps({**BASE, field: value}))
    rule, said = policy.exclusion(TOOL_SITE) or ("", "")
    assert rule == field
    assert said.startswith(reason.replace("acme-x", "crm-eu"))


def test_rules_about_tool_servers_say_nothing_of_endpoints() -> None:
    policy = parse_policy(json.dumps({**BASE, "allow_mcp_servers": ["nothing"]}))
    assert policy.exclusion(SITE) is None


def test_every_site_rule_has_an_exclusion_row() -> None:
    site_rules = {r.name for r in RULES if r.name not in NOT_ABOUT_SITES}
    assert {p.id for p in EXCLUDING} == site_rules


@pytest.mark.parametrize(("field", "value", "reason"), EXCLUDING)
def test_a_policy_stricter_in_one_rule_is_refused_by_the_looser_name(
    field: str, value: object, reason: str
) -> None:
    base = parse_policy(json.dumps(BASE))
    stricter = parse_policy(json.dumps({**BASE, "policy_id": "stricter", field: value}))
    assert stricter.widening_field(base) == field
    assert base.widening_field(stricter) is None
    policies = {"base": base, "stricter": stricter}
    assert narrow(base, Narrowing(policy_id="stricter"), policies) is stricter


def test_a_request_field_narrows_through_the_table() -> None:
    base = parse_policy(json.dumps(BASE))
    request = msgspec.json.decode(
        b'{"allow_countries": ["de"], "require_certifications": ["iso27001"], "min_seal": 1}',
        type=RoutingRequest,
    )
    narrowed = narrow(base, Narrowing.of(request, policy_id=None, source="llmeu"), {})
    assert narrowed.allow_countries == {"DE"}
    assert {c.value for c in narrowed.require_certifications} == {"iso27001"}
    assert narrowed.min_seal == 1
    assert narrowed.exclusion(SITE) is None


HOSTED = {**BASE, "allow_hosted_tools": ["web_search", "file_search"]}


@pytest.mark.parametrize(
    ("base", "other", "widens"),
    [
        ([], ["web_search"], True),
        (["web_search"], [], False),
        (["web_search", "file_search"], ["web_search"], False),
        (["web_search"], ["web_search", "mcp"], True),
    ],
    ids=["from-none", "to-none", "fewer", "more"],
)
def test_allow_hosted_tools_widens_with_any_tool_more(
    base: list[str], other: list[str], widens: bool
) -> None:
    looser = parse_policy(json.dumps({**BASE, "allow_hosted_tools": base}))
    named = parse_policy(json.dumps({**BASE, "policy_id": "other", "allow_hosted_tools": other}))
    assert (looser.widening_field(named) == "allow_hosted_tools") is widens
    assert looser.exclusion(SITE) is None and named.exclusion(SITE) is None  # not about sites


def test_a_request_narrows_the_hosted_tools_and_never_widens_them() -> None:
    base = parse_policy(json.dumps(HOSTED))
    narrowed = narrow(base, Narrowing(allow_hosted_tools=["web_search"]), {})
    assert narrowed.allow_hosted_tools == {"web_search"}
    with pytest.raises(PermissionDenied) as caught:
        narrow(base, Narrowing(allow_hosted_tools=["code_interpreter"]), {})
    assert caught.value.param == "llmeu.allow_hosted_tools"
    with pytest.raises(InvalidRequest) as unknown:
        narrow(base, Narrowing(allow_hosted_tools=["frobnicate"]), {})
    assert unknown.value.param == "llmeu.allow_hosted_tools"


def test_a_named_stricter_policy_keeps_the_keys_hosted_tools_mode() -> None:
    base = parse_policy(json.dumps({**HOSTED, "hosted_tools": "reject"}))
    named = parse_policy(json.dumps({**HOSTED, "policy_id": "named"}))
    effective = narrow(base, Narrowing(policy_id="named"), {"named": named})
    assert effective.policy_id == "named" and effective.hosted_tools.value == "reject"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"allow_hosted_tools": ["web_serch"]}, "unknown hosted tool `web_serch`"),
        ({"hosted_tools": "ignore"}, "unknown hosted_tools `ignore`"),
    ],
    ids=["unknown-tool", "unknown-mode"],
)
def test_a_policy_names_known_hosted_tools_and_modes(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_policy(json.dumps({**BASE, **fields}))
    assert message in str(caught.value)

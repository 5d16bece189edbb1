"""`allow_mcp_servers` and `allow_tools`: patterns of names, narrowed never widened."""

from __future__ import annotations

import json

import pytest

from llmeu.errors import ConfigError, InvalidRequest, PermissionDenied
from llmeu.routing.config_file import parse_policy
from llmeu.routing.glob_rules import matches, within
from llmeu.routing.policy import Narrowing, narrow

BASE = {"policy_id": "base", "allow_classes": ["eu_sovereign"], "max_retention": "P0D"}


@pytest.mark.parametrize(
    ("name", "patterns", "expected"),
    [
        pytest.param("crm", ["crm"], True, id="exact"),
        pytest.param("crm-eu", ["crm"], False, id="exact-only"),
        pytest.param("crm__lookup", ["crm__*"], True, id="star"),
        pytest.param("erp__lookup", ["crm__*", "*__lookup"], True, id="any-of"),
        pytest.param("crm1", ["crm?"], True, id="question-mark"),
        pytest.param("crm12", ["crm?"], False, id="question-mark-one-character"),
        pytest.param("a.b", ["a?b"], True, id="dot-is-a-character"),
        pytest.param("axb", ["a.b"], False, id="dot-is-not-a-wildcard"),
        pytest.param("x[1]", ["x[1]"], True, id="brackets-are-characters"),
        pytest.param("x1", ["x[1]"], False, id="brackets-are-no-class"),
    ],
)
def test_patterns_match_whole_names(name: str, patterns: list[str], expected: bool) -> None:
    assert matches(name, frozenset(patterns)) is expected


@pytest.mark.parametrize(
    ("pattern", "patterns", "expected"),
    [
        pytest.param("crm__*", ["crm__*"], True, id="same-pattern"),
        pytest.param("crm__lookup", ["crm__*"], True, id="plain-name-it-matches"),
        pytest.param("crm__get*", ["crm__*"], False, id="narrower-pattern-undecided"),
        pytest.param("erp__lookup", ["crm__*"], False, id="other-name"),
    ],
)
def test_within(pattern: str, patterns: list[str], expected: bool) -> None:
    assert within(pattern, frozenset(patterns)) is expected


def test_a_policy_admits_tools_by_exposed_name() -> None:
    policy = parse_policy(json.dumps({**BASE, "allow_tools": ["crm__lookup", "docs__*"]}))
    assert policy.admits_tool("crm__lookup")
    assert policy.admits_tool("docs__search")
    assert not policy.admits_tool("crm__delete")
    assert parse_policy(json.dumps(BASE)).admits_tool("anything__at_all")


@pytest.mark.parametrize(
    ("base", "asked", "allowed"),
    [
        pytest.param([], ["crm__*"], True, id="any-narrowed-to-a-pattern"),
        pytest.param(["crm__*"], ["crm__lookup"], True, id="pattern-narrowed-to-a-name"),
        pytest.param(["crm__*"], ["crm__*"], True, id="same"),
        pytest.param(["crm__*"], ["erp__*"], False, id="other-pattern-widens"),
        pytest.param(["crm__lookup"], ["crm__*"], False, id="pattern-over-a-name-widens"),
    ],
)
def test_a_request_narrows_allow_tools_never_widens(
    base: list[str], asked: list[str], allowed: bool
) -> None:
    policy = parse_policy(json.dumps({**BASE, "allow_tools": base}))
    narrowing = Narrowing(allow_tools=asked, source="x-llmeu-policy")
    if allowed:
        assert narrow(policy, narrowing, {}).allow_tools == frozenset(asked)
    else:
        with pytest.raises(PermissionDenied) as refused:
            narrow(policy, narrowing, {})
        assert refused.value.param == "x-llmeu-policy.allow_tools"
        assert refused.value.code == "policy_widening"


def test_a_named_policy_with_more_servers_widens() -> None:
    base = parse_policy(json.dumps({**BASE, "allow_mcp_servers": ["crm"]}))
    wider = parse_policy(json.dumps({**BASE, "policy_id": "wider", "allow_mcp_servers": []}))
    narrower = parse_policy(json.dumps({**BASE, "policy_id": "n", "allow_mcp_servers": ["crm"]}))
    assert base.widening_field(wider) == "allow_mcp_servers"
    assert base.widening_field(narrower) is None
    assert wider.widening_field(base) is None


@pytest.mark.parametrize("bad", ["", "has space", "é", "x" * 201])
def test_invalid_patterns_are_refused(bad: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_policy(json.dumps({**BASE, "allow_tools": [bad]}))
    assert refused.value.field == "allow_tools"
    with pytest.raises(InvalidRequest):
        narrow(parse_policy(json.dumps(BASE)), Narrowing(allow_tools=[bad]), {})

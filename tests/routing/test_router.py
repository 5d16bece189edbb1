"""The routing decision: alias → candidates → policy filter (with reasons) → order."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from llmeu.errors import InvalidRequest, NoCompliantRoute, NotFound, UpstreamUnavailable
from llmeu.routing.builtin import EU, EU_STRICT
from llmeu.routing.catalog import Capability, Catalog, Endpoint
from llmeu.routing.router import Health, assess, plan_route
from tests.routing.factories import endpoint, policy

CHAT = frozenset({Capability.CHAT})
HEALTHY: Mapping[str, Health] = {}


def order(
    endpoints: list[Endpoint], health: Mapping[str, Health] = HEALTHY, model: str = "m"
) -> list[str]:
    plan = plan_route(Catalog(endpoints), model, CHAT, EU, unavailable={}, health=health)
    return [e.endpoint_id for e in plan.candidates]


ORDERING = [
    pytest.param([endpoint("b", priority=20), endpoint("a", priority=10)], HEALTHY, ["a", "b"],
                 id="lower-priority-first"),
    pytest.param([endpoint("a", priority=10), endpoint("b", priority=10)], HEALTHY, ["a", "b"],
                 id="ties-keep-catalog-order"),
    pytest.param([endpoint("a"), endpoint("b")], {"a": Health.PROBING}, ["b", "a"],
                 id="healthy-before-probing"),
    pytest.param([endpoint("a", priority=10), endpoint("b", priority=20)], {"a": Health.PROBING},
                 ["a", "b"], id="priority-before-health"),
    pytest.param([endpoint("a", prices=(1, 2)), endpoint("b", prices=(0.5, 1))], HEALTHY, ["b", "a"],
                 id="cheaper-first"),
    pytest.param([endpoint("a", prices=(0.1, 9)), endpoint("b", prices=(3, 3))], HEALTHY, ["b", "a"],
                 id="price-is-input-plus-output"),
    pytest.param([endpoint("a", prices=(0.1, 0.1)), endpoint("b", prices=(3, 3))], {"a": Health.PROBING},
                 ["b", "a"], id="health-before-price"),
    pytest.param([endpoint("a", priority=5, prices=(9, 9)), endpoint("b", priority=6, prices=(0, 0))],
                 HEALTHY, ["a", "b"], id="priority-before-price"),
    pytest.param([endpoint("a"), endpoint("b"), endpoint("c")], {"a": Health.OPEN}, ["b", "c"],
                 id="open-circuit-left-out"),
]  # fmt: skip


@pytest.mark.parametrize(("endpoints", "health", "expected"), ORDERING)
def test_candidates_are_ordered_by_priority_health_price(
    endpoints: list[Endpoint], health: Mapping[str, Health], expected: list[str]
) -> None:
    assert order(endpoints, health) == expected


def test_a_model_is_found_by_alias_upstream_name_or_endpoint_id() -> None:
    catalog = [endpoint("a", aliases=("small", "m")), endpoint("b", aliases=("m",))]
    assert order(catalog, model="small") == ["a"]
    assert order(catalog, model="upstream-b") == ["b"]
    assert order(catalog, model="a") == ["a"]
    assert order(catalog, model="m") == ["a", "b"]


def test_the_plan_lists_every_excluded_endpoint_with_its_rule() -> None:
    catalog = Catalog(
        [
            endpoint("ok"),
            endpoint("aws", sovereignty_class="eu_resident"),
            endpoint("mistral", retention="P30D"),
            endpoint("nokey"),
            endpoint("failing"),
            endpoint("embed", capabilities=("embeddings",)),
        ]
    )
    plan = plan_route(
        catalog,
        "m",
        CHAT,
        EU_STRICT,
        unavailable={"nokey": "NOKEY_API_KEY is not set"},
        health={"failing": Health.OPEN},
    )
    assert [e.endpoint_id for e in plan.candidates] == ["ok"]
    assert plan.policy is EU_STRICT
    assert [(x.endpoint_id, x.rule) for x in plan.excluded] == [
        ("aws", "allow_classes"),
        ("mistral", "max_retention"),
        ("nokey", "unavailable"),
        ("failing", "health"),
    ]


REFUSED = [
    pytest.param([endpoint("a")], "other", CHAT, NotFound, "model_not_found", "model",
                 id="unknown-model"),
    pytest.param([endpoint("a", capabilities=("embeddings",))], "m", CHAT, InvalidRequest,
                 "unsupported_capability", "model", id="chat-on-an-embedding-model"),
    pytest.param([endpoint("a")], "m", frozenset({Capability.CHAT, Capability.TOOLS}), InvalidRequest,
                 "unsupported_capability", "tools", id="tools-on-a-model-without-tools"),
    pytest.param([endpoint("a", sovereignty_class="global")], "m", CHAT, NoCompliantRoute,
                 "no_compliant_route", "model", id="nothing-compliant"),
]  # fmt: skip


@pytest.mark.parametrize(("endpoints", "model", "needs", "error", "code", "param"), REFUSED)
def test_refusals_before_any_attempt(
    endpoints: list[Endpoint],
    model: str,
    needs: frozenset[Capability],
    error: type[Exception],
    code: str,
    param: str,
) -> None:
    with pytest.raises(error) as caught:
        plan_route(Catalog(endpoints), model, needs, EU_STRICT, unavailable={}, health={})
    assert caught.value.code == code  # type: ignore[attr-defined]
    assert caught.value.param == param  # type: ignore[attr-defined]


def test_no_compliant_route_is_a_403_listing_each_excluded_endpoint_and_rule() -> None:
    catalog = Catalog(
        [
            endpoint("openai", sovereignty_class="global"),
            endpoint("aws", sovereignty_class="eu_resident"),
            endpoint("mistral", retention="P30D"),
            endpoint("scaleway"),
        ]
    )
    with pytest.raises(NoCompliantRoute) as caught:
        plan_route(
            catalog, "m", CHAT, EU_STRICT, unavailable={"scaleway": "SCW_SECRET_KEY is not set"},
            health={},
        )  # fmt: skip
    error = caught.value
    assert error.status == 403
    assert error.code == "no_compliant_route"
    assert error.details == [
        {"endpoint_id": "openai", "rule": "allow_classes",
         "reason": "sovereignty class global is not in [eu_sovereign, on_premise]"},
        {"endpoint_id": "aws", "rule": "allow_classes",
         "reason": "sovereignty class eu_resident is not in [eu_sovereign, on_premise]"},
        {"endpoint_id": "mistral", "rule": "max_retention",
         "reason": "provider retention P30D exceeds max_retention P0D"},
        {"endpoint_id": "scaleway", "rule": "unavailable", "reason": "SCW_SECRET_KEY is not set"},
    ]  # fmt: skip
    assert error.message.startswith("No endpoint for `m` satisfies policy `eu-strict`: ")
    for detail in error.details:
        assert f"{detail['endpoint_id']}: {detail['reason']}" in error.message


def test_every_admitted_endpoint_with_an_open_circuit_is_a_retryable_503() -> None:
    catalog = Catalog([endpoint("a"), endpoint("b"), endpoint("x", sovereignty_class="global")])
    with pytest.raises(UpstreamUnavailable) as caught:
        plan_route(
            catalog, "m", CHAT, EU_STRICT, unavailable={},
            health={"a": Health.OPEN, "b": Health.OPEN},
        )  # fmt: skip
    assert caught.value.status == 503
    assert "a, b" in caught.value.message


ASSESS = [
    pytest.param(endpoint("a"), {}, None, id="admitted"),
    pytest.param(endpoint("a"), {"a": "A_KEY is not set"}, ("unavailable", "A_KEY is not set"),
                 id="unavailable"),
    pytest.param(endpoint("a", sovereignty_class="global"), {"a": "A_KEY is not set"},
                 ("allow_classes", "sovereignty class global is not in [eu_sovereign, on_premise]"),
                 id="policy-rule-before-unavailable"),
]  # fmt: skip


@pytest.mark.parametrize(("ep", "unavailable", "expected"), ASSESS)
def test_assess(
    ep: Endpoint, unavailable: dict[str, str], expected: tuple[str, str] | None
) -> None:
    exclusion = assess(ep, EU_STRICT, unavailable)
    assert (None if exclusion is None else (exclusion.rule, exclusion.reason)) == expected


def test_an_empty_country_list_admits_any_country() -> None:
    catalog = [endpoint("a", country="DE"), endpoint("b", country="")]
    plan = plan_route(Catalog(catalog), "m", CHAT, policy(), unavailable={}, health={})
    assert len(plan.candidates) == 2

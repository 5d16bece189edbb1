"""Policy admission: each rule, its reason, and the retention a route reports."""

from __future__ import annotations

import pytest

from llmeu.routing.builtin import EU, EU_STRICT, OPEN
from llmeu.routing.policy import Policy, policy_document
from tests.routing.factories import endpoint, policy

FR_SCALEWAY = endpoint("scaleway-fr", provider="scaleway")

# (policy, endpoint, expected rule or None, part of the reason)
ADMISSION = [
    pytest.param(EU_STRICT, FR_SCALEWAY, None, "", id="eu-strict-admits-eu-sovereign"),
    pytest.param(EU_STRICT, endpoint("local", sovereignty_class="on_premise", country=""), None, "",
                 id="eu-strict-admits-on-premise-of-unknown-country"),
    pytest.param(EU_STRICT, endpoint("aws-de", sovereignty_class="eu_resident", country="DE"),
                 "allow_classes", "sovereignty class eu_resident is not in [eu_sovereign, on_premise]",
                 id="eu-strict-excludes-eu-resident"),
    pytest.param(EU_STRICT, endpoint("openai-us", sovereignty_class="global", country="US"),
                 "allow_classes", "sovereignty class global is not in", id="eu-strict-excludes-global"),
    pytest.param(EU_STRICT, endpoint("mistral-fr", retention="P30D"), "max_retention",
                 "provider retention P30D exceeds max_retention P0D", id="eu-strict-excludes-retention"),
    pytest.param(EU, endpoint("aws-de", sovereignty_class="eu_resident", retention="P30D"), None, "",
                 id="eu-admits-eu-resident-up-to-30-days"),
    pytest.param(EU, endpoint("x-de", retention="P31D"), "max_retention",
                 "provider retention P31D exceeds max_retention P30D", id="eu-excludes-31-days"),
    pytest.param(EU, endpoint("openai-us", sovereignty_class="global"), "allow_classes",
                 "global is not in [eu_resident, eu_sovereign, on_premise]", id="eu-excludes-global"),
    pytest.param(OPEN, endpoint("openai-us", sovereignty_class="global", retention="P1Y"), None, "",
                 id="open-admits-global"),
    pytest.param(policy(countries=["DE"]), FR_SCALEWAY, "allow_countries",
                 "country FR is not in [DE]", id="country-not-allowed"),
    pytest.param(policy(countries=["DE"]), endpoint("local", sovereignty_class="on_premise", country=""),
                 "allow_countries", "country unknown is not in [DE]", id="unknown-country-not-allowed"),
    pytest.param(policy(countries=["DE", "FR"]), FR_SCALEWAY, None, "", id="country-allowed"),
    pytest.param(policy(providers=["ovhcloud", "ionos"]), FR_SCALEWAY, "allow_providers",
                 "provider scaleway is not in [ionos, ovhcloud]", id="provider-not-allowed"),
    pytest.param(policy(providers=["scaleway"]), FR_SCALEWAY, None, "", id="provider-allowed"),
    pytest.param(policy(classes=[]), FR_SCALEWAY, "allow_classes", "is not in []",
                 id="no-class-admits-nothing"),
    pytest.param(policy(max_retention="PT24H"), endpoint("x", retention="P1D"), None, "",
                 id="retention-equal-in-other-units"),
    # the first failing rule is the one reported
    pytest.param(policy(countries=["DE"], providers=["ionos"]),
                 endpoint("openai-us", sovereignty_class="global", country="US", retention="P30D"),
                 "allow_classes", "sovereignty class global", id="class-reported-first"),
    pytest.param(policy(countries=["DE"], providers=["ionos"]), FR_SCALEWAY, "allow_countries",
                 "country FR", id="country-reported-before-provider"),
    pytest.param(policy(providers=["ionos"]), endpoint("scaleway-fr", retention="P1D"),
                 "allow_providers", "provider scaleway", id="provider-reported-before-retention"),
]  # fmt: skip


@pytest.mark.parametrize(("pol", "ep", "rule", "reason"), ADMISSION)
def test_admission_names_the_rule_and_why(
    pol: Policy, ep: object, rule: str | None, reason: str
) -> None:
    exclusion = pol.exclusion(ep)  # type: ignore[arg-type]
    if rule is None:
        assert exclusion is None
        assert pol.admits(ep)  # type: ignore[arg-type]
    else:
        assert exclusion is not None
        assert exclusion[0] == rule
        assert reason in exclusion[1]
        assert not pol.admits(ep)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("provider_retention", "store_content", "route"),
    [
        pytest.param("P0D", "P0D", "P0D", id="nobody-keeps-content"),
        pytest.param("P30D", "P0D", "P30D", id="provider-keeps-longer"),
        pytest.param("P0D", "P7D", "P7D", id="gateway-keeps-longer"),
        pytest.param("P1D", "PT12H", "P1D", id="provider-day-over-gateway-half-day"),
    ],
)
def test_route_retention_is_the_longer_of_provider_and_gateway(
    provider_retention: str, store_content: str, route: str
) -> None:
    pol = policy(max_retention="P100Y", store_content=store_content)
    assert str(pol.route_retention(endpoint("x", retention=provider_retention))) == route


def test_built_in_policies_are_those_of_the_issue() -> None:
    assert policy_document(EU_STRICT) == {
        "policy_id": "eu-strict", "allow_classes": ["eu_sovereign", "on_premise"],
        "allow_countries": [], "allow_providers": [], "max_retention": "P0D",
        "store_content": "P0D", "fallback": True, "limits_fail": "open",
        "require_jurisdictions": [], "require_certifications": [], "min_seal": None,
        "allow_hosted_tools": [], "hosted_tools": "drop", "allow_mcp_servers": [], "allow_tools": [],
        "keep_metadata": None, "personal_data": None, "cache": None,
    }  # fmt: skip
    assert policy_document(EU)["allow_classes"] == ["eu_resident", "eu_sovereign", "on_premise"]
    assert (policy_document(EU)["max_retention"], policy_document(EU)["store_content"]) == (
        "P30D",
        "P0D",
    )
    assert policy_document(OPEN)["allow_classes"] == [
        "eu_resident", "eu_sovereign", "global", "on_premise"
    ]  # fmt: skip

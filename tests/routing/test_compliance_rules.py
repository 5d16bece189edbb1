"""Jurisdiction, certifications and SEAL: in the catalog, the policy, the file and a request."""

from __future__ import annotations

import pytest

from llmeu.errors import ConfigError, InvalidRequest, NoCompliantRoute, PermissionDenied
from llmeu.routing.builtin import provider_endpoints
from llmeu.routing.catalog import Capability, Catalog, Certification, SovereigntyClass
from llmeu.routing.config_file import parse_config, parse_policy
from llmeu.routing.policy import EU_MEMBER_STATES, Narrowing, narrow, policy_document
from llmeu.routing.router import plan_route
from tests.routing.factories import endpoint, policy

CHAT = frozenset({Capability.CHAT})
FILE = """\
endpoints:
  - endpoint_id: fr-sec
    provider: outscale
    base_url: https://api.example.eu/v1
    model: m
    inference_region: eu-west-2
    country: FR
    jurisdiction: fr
    certifications: [secnumcloud, iso27001]
    seal: 3
    sovereignty_class: eu_sovereign
    retention: P0D
    price_eur_per_mtok: {input: 1, output: 1}
  - endpoint_id: us-owned
    provider: hyperscaler
    base_url: https://api.example.com/v1
    model: m
    inference_region: eu-central-1
    country: DE
    jurisdiction: US
    certifications: [iso27001, bsi-c5]
    sovereignty_class: eu_resident
    retention: P0D
    price_eur_per_mtok: {input: 1, output: 1}
policies:
  - policy_id: ministry
    allow_classes: [eu_sovereign, eu_resident]
    max_retention: P0D
    require_jurisdictions: [EU]
    require_certifications: [secnumcloud]
    min_seal: 3
default_policy: ministry
"""


def test_the_file_declares_endpoints_and_policy_requirements() -> None:
    config = parse_config(FILE)
    fr = config.catalog.get("fr-sec")
    us = config.catalog.get("us-owned")
    assert fr is not None and us is not None
    assert (fr.jurisdiction, fr.seal) == ("FR", 3)
    assert fr.certifications == {Certification.SECNUMCLOUD, Certification.ISO27001}
    assert (us.jurisdiction, us.seal) == ("US", None)
    ministry = config.policies["ministry"]
    assert ministry.require_jurisdictions == EU_MEMBER_STATES
    assert ministry.require_certifications == {Certification.SECNUMCLOUD}
    assert ministry.min_seal == 3
    assert ministry.admits(fr)
    assert ministry.exclusion(us) == (
        "require_jurisdictions",
        f"provider jurisdiction US is not in [{', '.join(sorted(EU_MEMBER_STATES))}]",
    )


@pytest.mark.parametrize(
    ("old", "new", "field", "line"),
    [
        ("[secnumcloud, iso27001]", "[secnumcloud, iso9001]", "certifications", 9),
        ("seal: 3", "seal: 5", "seal", 10),
        ("seal: 3", "seal: high", "seal", 10),
        ("jurisdiction: fr", "jurisdiction: France", "jurisdiction", 8),
        ("require_certifications: [secnumcloud]", "require_certifications: [c5]",
         "require_certifications", 30),
        ("min_seal: 3", "min_seal: -1", "min_seal", 31),
        ("require_jurisdictions: [EU]", "require_jurisdictions: [Europe]",
         "require_jurisdictions", 29),
    ],
)  # fmt: skip
def test_config_check_refuses_unknown_certifications_and_bad_levels(
    old: str, new: str, field: str, line: int
) -> None:
    assert old in FILE
    with pytest.raises(ConfigError) as caught:
        parse_config(FILE.replace(old, new))
    assert (caught.value.field, caught.value.line) == (field, line)


def test_a_policy_document_round_trips_through_the_platform_parser() -> None:
    ministry = parse_config(FILE).policies["ministry"]
    document = policy_document(ministry)
    assert document["require_certifications"] == ["secnumcloud"]
    assert document["min_seal"] == 3
    import json

    assert parse_policy(json.dumps(document)) == ministry
    plain = parse_policy(json.dumps(policy_document(policy("plain"))))
    assert (plain.require_jurisdictions, plain.require_certifications, plain.min_seal) == (
        frozenset(),
        frozenset(),
        None,
    )


def test_unknown_values_never_meet_a_requirement() -> None:
    bare = endpoint("bare")  # no jurisdiction, no certifications, no SEAL
    assert policy().admits(bare)
    for requirement, rule in (
        ({"require_jurisdictions": frozenset({"FR"})}, "require_jurisdictions"),
        ({"require_certifications": frozenset({Certification.ISO27001})}, "require_certifications"),
        ({"min_seal": 0}, "min_seal"),
    ):
        from dataclasses import replace

        excluded = replace(policy(), **requirement).exclusion(bare)  # type: ignore[arg-type]
        assert excluded is not None and excluded[0] == rule
        assert "unknown" in excluded[1] or "lacks" in excluded[1]


def test_a_request_adds_requirements_and_the_403_names_each_rule() -> None:
    catalog = Catalog(
        [
            endpoint("a", jurisdiction="FR", certifications=["iso27001"], seal=2),
            endpoint("b", jurisdiction="US", certifications=["iso27001", "secnumcloud"], seal=4),
        ]
    )
    base = policy()
    narrowed = narrow(
        base,
        Narrowing(require_jurisdictions=("eu",), require_certifications=("secnumcloud",)),
        {"p": base},
    )
    with pytest.raises(NoCompliantRoute) as caught:
        plan_route(catalog, "m", CHAT, narrowed, unavailable={}, health={})
    rules = {e["endpoint_id"]: e["rule"] for e in caught.value.details or ()}
    assert rules == {"a": "require_certifications", "b": "require_jurisdictions"}
    raised = narrow(base, Narrowing(min_seal=3), {"p": base})
    plan = plan_route(catalog, "m", CHAT, raised, unavailable={}, health={})
    assert [e.endpoint_id for e in plan.candidates] == ["b"]


def test_a_request_can_neither_drop_nor_lower_a_requirement() -> None:
    from dataclasses import replace

    strict = replace(
        policy("strict"),
        require_jurisdictions=frozenset({"FR", "DE"}),
        require_certifications=frozenset({Certification.BSI_C5}),
        min_seal=3,
    )
    book = {"strict": strict, "loose": policy("loose")}
    lowered = narrow(strict, Narrowing(min_seal=1), book)
    assert lowered.min_seal == 3
    kept = narrow(strict, Narrowing(require_certifications=("iso27001",)), book)
    assert kept.require_certifications == {Certification.BSI_C5, Certification.ISO27001}
    with pytest.raises(PermissionDenied) as widened:
        narrow(strict, Narrowing(require_jurisdictions=("US",)), book)
    assert widened.value.param == "llmeu.require_jurisdictions"
    with pytest.raises(PermissionDenied) as named:
        narrow(strict, Narrowing(policy_id="loose"), book)
    assert "require_jurisdictions" in str(named.value)
    with pytest.raises(InvalidRequest):
        narrow(strict, Narrowing(require_certifications=("gold",)), book)
    with pytest.raises(InvalidRequest):
        narrow(strict, Narrowing(min_seal=7), book)


def test_the_built_in_catalog_names_every_providers_jurisdiction() -> None:
    for ep in provider_endpoints():
        assert len(ep.jurisdiction) == 2, ep.endpoint_id
        assert ep.seal is None  # no provider publishes a SEAL level (docs/catalog.md)
        if ep.jurisdiction not in EU_MEMBER_STATES:
            assert ep.sovereignty_class is not SovereigntyClass.EU_SOVEREIGN, ep.endpoint_id


def test_config_check_warns_when_metadata_is_kept_less_than_six_months() -> None:
    from llmeu.cli.config_check import warnings

    short = FILE.replace("    min_seal: 3\n", "    min_seal: 3\n    keep_metadata: P30D\n")
    config = parse_config(short)
    assert str(config.policies["ministry"].keep_metadata) == "P30D"
    assert warnings(config) == [
        "policy `ministry` keeps call metadata for P30D, less than the six months (P6M) the "
        "AI Act asks deployers of high-risk systems to keep logs"
    ]
    assert warnings(parse_config(short.replace("P30D", "P1Y"))) == []
    assert warnings(parse_config(FILE)) == []

"""The `personal_data` section of a policy in the configuration file and the platform API."""

from __future__ import annotations

import json

import pytest

from llmeu.errors import ConfigError
from llmeu.personal.rules import Action, Detector, OnError, RestrictTo, Unscanned
from llmeu.routing.config_file import parse_policy
from llmeu.routing.policy import Narrowing, narrow, policy_document

POLICY = """
policy_id: pii
allow_classes: [on_premise, eu_sovereign, eu_resident]
max_retention: P0D
personal_data:
  detectors:
    iban: block
    nl_bsn: restrict
    email: mask
    phone: allow
  restrict: {allow_classes: [on_premise], allow_countries: [nl]}
  unscanned: block
  on_error: open
  max_scan_chars: 20000
"""


def test_the_section_parses_and_round_trips_through_the_platform_document() -> None:
    policy = parse_policy(POLICY)
    rules = policy.personal_data
    assert rules is not None
    assert rules.action(Detector.IBAN) is Action.BLOCK
    assert rules.action(Detector.NL_BSN) is Action.RESTRICT
    assert rules.action(Detector.PL_PESEL) is Action.ALLOW  # not listed: not run
    assert Detector.PL_PESEL not in rules.active()
    assert rules.restrict == RestrictTo(frozenset({"on_premise"}), frozenset({"NL"}))
    assert (rules.unscanned, rules.on_error, rules.max_scan_chars) == (
        Unscanned.BLOCK, OnError.OPEN, 20000
    )  # fmt: skip
    document = policy_document(policy)
    assert document["personal_data"] == {
        "detectors": {"email": "mask", "iban": "block", "nl_bsn": "restrict", "phone": "allow"},
        "restrict": {"allow_classes": ["on_premise"], "allow_countries": ["NL"],
                     "allow_providers": []},
        "unscanned": "block",
        "on_error": "open",
        "max_scan_chars": 20000,
    }  # fmt: skip
    assert parse_policy(json.dumps(document)) == policy


def test_defaults_fail_closed() -> None:
    rules = parse_policy(POLICY.split("personal_data:")[0] + "personal_data: {}\n").personal_data
    assert rules is not None and rules.on_error is OnError.CLOSED
    assert rules.unscanned is Unscanned.ALLOW and rules.actions == ()
    assert parse_policy(POLICY.split("personal_data:")[0]).personal_data is None


@pytest.mark.parametrize(
    ("section", "field"),
    [
        ("  detectors: {passport: block}", "personal_data.detectors.passport"),
        ("  detectors: {iban: redact}", "personal_data.detectors.iban"),
        ("  detectors: {iban: restrict}", "personal_data.restrict"),
        ("  colour: red", "personal_data.colour"),
        ("  unscanned: maybe", "personal_data.unscanned"),
        ("  on_error: ignore", "personal_data.on_error"),
        ("  max_scan_chars: 0", "personal_data.max_scan_chars"),
        ("  restrict: {allow_classes: [orbit]}", "personal_data.restrict.allow_classes"),
        ("  restrict: {allow_countries: [Holland]}", "personal_data.restrict.allow_countries"),
        ("  restrict: {regions: [x]}", "personal_data.restrict.regions"),
    ],
)
def test_a_wrong_field_is_named(section: str, field: str) -> None:
    text = POLICY.split("personal_data:")[0] + "personal_data:\n" + section + "\n"
    with pytest.raises(ConfigError) as error:
        parse_policy(text)
    assert error.value.field == field, str(error.value)


def test_a_request_naming_a_stricter_policy_keeps_the_keys_personal_data() -> None:
    base = parse_policy(POLICY)
    stricter = parse_policy("policy_id: strict\nallow_classes: [on_premise]\nmax_retention: P0D\n")
    narrowed = narrow(base, Narrowing(policy_id="strict"), {"pii": base, "strict": stricter})
    assert narrowed.allow_classes == stricter.allow_classes
    assert narrowed.personal_data == base.personal_data

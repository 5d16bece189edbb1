"""Detectors: every national identifier found in any setting, its near misses never."""

from __future__ import annotations

import itertools
import json

import pytest

from llmeu.personal.detectors import find
from llmeu.personal.rules import Detector
from tests.personal.identifiers import GENERATORS, PUBLISHED, VALIDATORS, valid_identifiers

NATIONAL = list(GENERATORS)
ALL = frozenset(Detector)


def found(text: str, detectors: frozenset[Detector] = ALL) -> list[tuple[str, str]]:
    return [(h.detector.value, text[h.start : h.end]) for h in find(text, detectors)]


def settings(value: str) -> dict[str, str]:
    return {
        "alone": value,
        "prose": f"Hello, my number is {value}. Thanks!",
        "start": f"{value} is what the form says",
        "json": json.dumps({"customer": {"id": value, "note": "ok"}}),
        "code": f'record = {{"national_id": "{value}"}}  # from the form',
        "markdown": f"| name | id |\n| --- | --- |\n| Jan | `{value}` |",
        "between_numbers": f"order 5512, {value}, qty 3",
    }


@pytest.mark.parametrize("detector", NATIONAL, ids=lambda d: d.value)
@pytest.mark.parametrize("setting", list(settings("x")))
def test_generated_identifiers_are_found(detector: Detector, setting: str) -> None:
    for value in valid_identifiers(detector, 25):
        text = settings(value)[setting]
        assert (detector.value, value) in found(text, frozenset([detector])), text


@pytest.mark.parametrize("detector", NATIONAL, ids=lambda d: d.value)
def test_published_examples_are_found(detector: Detector) -> None:
    for value in PUBLISHED[detector]:
        assert found(f"id: {value}.", frozenset([detector])) == [(detector.value, value)]


def near_misses(detector: Detector, value: str) -> list[str]:
    """The value with each of its digits in turn one off (a typo of one key), where the
    identifier's own check rejects the result: a Portuguese NIF's check digit 0 stands for
    two remainders, and a Swedish personnummer's century is outside its check, so a few
    typos of those are valid identifiers, which the detector must then find."""
    misses = [
        value[:i] + str((int(c) + 1) % 10) + value[i + 1 :]
        for i, c in enumerate(value)
        if c.isdigit()
    ]
    return [miss for miss in misses if not VALIDATORS[detector](miss)]


@pytest.mark.parametrize("detector", NATIONAL, ids=lambda d: d.value)
def test_one_digit_off_is_not_a_hit(detector: Detector) -> None:
    tried = 0
    for value in [*valid_identifiers(detector, 10), *PUBLISHED[detector]]:
        for miss in near_misses(detector, value):
            tried += 1
            assert found(f"my id is {miss} ok", frozenset([detector])) == [], miss
    assert tried >= 80


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("write to jan.de-vries+work@example.co.nl today", [("email", "jan.de-vries+work@example.co.nl")]),
        ("IBAN: NL91 ABNA 0417 1643 00 thanks", [("iban", "NL91 ABNA 0417 1643 00")]),
        ("IBAN: NL91ABNA0417164300.", [("iban", "NL91ABNA0417164300")]),
        ("iban DE89 3704 0044 0532 0130 00 BIC COBADEFFXXX", [("iban", "DE89 3704 0044 0532 0130 00")]),
        ("card 4111 1111 1111 1111 exp 12/29", [("payment_card", "4111 1111 1111 1111")]),
        ("amex 378282246310005.", [("payment_card", "378282246310005")]),
        ("from 203.0.113.7 at noon", [("ip_address", "203.0.113.7")]),
        ("v6 2001:db8:85a3::8a2e:370:7334 seen", [("ip_address", "2001:db8:85a3::8a2e:370:7334")]),
        ("call +31 20 794 0000 or 0049 30 227 0", [("phone", "+31 20 794 0000")]),
        ("bel +33 1 42 68 53 00.", [("phone", "+33 1 42 68 53 00")]),
    ],
    ids=["email", "iban_grouped", "iban_compact", "iban_then_word", "visa", "amex", "ipv4",
         "ipv6", "phone_nl", "phone_fr"],
)  # fmt: skip
def test_common_detectors(text: str, expected: list[tuple[str, str]]) -> None:
    assert found(text)[: len(expected)] == expected


@pytest.mark.parametrize(
    "text",
    [
        "IBAN: NL92 ABNA 0417 1643 00",  # check digits off
        "card 4111 1111 1111 1112",  # Luhn off
        "version 1.2.3.4000 and 300.1.1.1",
        "time 12:30:45, ratio 3:4",
        "call +31 0 0000",
        "user at example dot com",
        "order 123456780, invoice 2024-001234, total EUR 1,234.56",
    ],
)
def test_near_misses_of_common_detectors(text: str) -> None:
    assert found(text) == []


def test_hits_never_overlap_and_keep_order() -> None:
    bsn, pesel = (
        valid_identifiers(Detector.NL_BSN, 1)[0],
        valid_identifiers(Detector.PL_PESEL, 1)[0],
    )
    text = f"{pesel} then {bsn} then a@b.eu"
    hits = find(text, ALL)
    assert [text[h.start : h.end] for h in hits] == [pesel, bsn, "a@b.eu"]
    assert all(a.end <= b.start for a, b in itertools.pairwise(hits))


def test_only_the_detectors_asked_for_run() -> None:
    assert found("mail a@b.eu, IBAN NL91ABNA0417164300", frozenset([Detector.IBAN])) == [
        ("iban", "NL91ABNA0417164300")
    ]
    assert found("mail a@b.eu", frozenset()) == []


def test_numbers_of_one_shape_are_each_checked() -> None:
    """The windows a number's shape allows are planned once per shape; each number of that
    shape is still checked on its own digits."""
    valid = valid_identifiers(Detector.NL_BSN, 1)[0]
    miss = near_misses(Detector.NL_BSN, valid)[0]
    dotted = [f"{v[:3]}.{v[3:6]}.{v[6:]}" for v in (valid, miss)]
    for first, second in (dotted, dotted[::-1]):
        text = f"{first}, {second}, {first}, {second}"
        assert found(text, frozenset([Detector.NL_BSN])) == [("nl_bsn", dotted[0])] * 2


def test_an_identifier_at_the_end_of_a_long_run() -> None:
    """A run longer than the shapes kept (64 characters) is planned on the spot."""
    card = "4111 1111 1111 1111"
    text = f"codes {' '.join(['98'] * 30)} {card} end"
    assert found(text) == [("payment_card", card)]

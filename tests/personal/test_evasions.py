"""Every form a value was typed in to slip past the scan is found, where it was typed."""

from __future__ import annotations

import pytest

from llmeu.personal.detectors import find
from llmeu.personal.rules import Detector
from tests.personal.evasions import FORMS

ALL = frozenset(Detector)


def settings(value: str) -> dict[str, str]:
    return {
        "alone": value,
        "prose": f"Please use {value}. Thanks!",
        "json": f'{{"account": "{value}", "note": "ok"}}',
        "after_a_number": f"order 5512, {value}, qty 3",
    }


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("setting", list(settings("x")))
def test_an_evasive_form_is_found_where_it_was_typed(form: str, setting: str) -> None:
    detector, value = FORMS[form]
    text = settings(value)[setting]
    hits = find(text, frozenset([detector]))
    assert [(h.detector, text[h.start : h.end]) for h in hits] == [(detector, value)]


@pytest.mark.parametrize("form", list(FORMS))
def test_an_evasive_form_is_found_with_every_detector_on(form: str) -> None:
    detector, value = FORMS[form]
    assert [h.detector for h in find(f"see {value} here", ALL)] == [detector]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("IBAN NL91ABNA0417164300and more", "NL91ABNA0417164300"),  # runs into a word
        ("IBAN Nl91 Abna 0417 1643 00.", "Nl91 Abna 0417 1643 00"),  # any case
        ("IBAN NL-91-AB-NA-04-17-16-43-00 ok", "NL-91-AB-NA-04-17-16-43-00"),
        ("IBAN NL91.ABNA.0417.1643.00 ok", "NL91.ABNA.0417.1643.00"),
        ("IBAN DE89_3704_0044_0532_0130_00 ok", "DE89_3704_0044_0532_0130_00"),
    ],
)
def test_an_iban_in_any_case_and_grouping(text: str, expected: str) -> None:
    assert [text[h.start : h.end] for h in find(text, frozenset([Detector.IBAN]))] == [expected]


@pytest.mark.parametrize(
    "text",
    [
        "meet at 10 am on 15 May, room no 12 34 56",  # country codes before numbers
        "hash de44a0b1c2d3e4f5a6b7c8d9e0f1a2b3",
        "NL91 ABNA 0417 1643 01",  # check digits off
        "nl 91abna0417164300",  # a separator after the country but none after its check digits
    ],
)
def test_what_only_looks_like_an_iban_is_not_one(text: str) -> None:
    assert find(text, frozenset([Detector.IBAN])) == []

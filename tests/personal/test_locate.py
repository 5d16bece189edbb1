"""Locating hits in a request's parts: each part as if alone, and values split across them."""

from __future__ import annotations

import pytest

from llmeu.personal.locate import REACH, Found, Piece, locate
from llmeu.personal.masking import Cut, Masking
from llmeu.personal.rules import Detector
from tests.personal.evasions import fullwidth

ALL = frozenset(Detector)
IBAN = "NL91 ABNA 0417 1643 00"
CARD = "4111 1111 1111 1111"
EMAIL = "jan.jansen@example.nl"
FILLER = "Nothing of interest is said here, and it takes a while to say it. " * 5


def values(found: list[Found]) -> list[tuple[str, str]]:
    return [(f.detector.value, f.value) for f in found]


def test_each_part_is_searched_as_if_alone() -> None:
    found = locate([f"mail {EMAIL}", CARD, "", f"iban {IBAN}"], ALL)
    assert values(found) == [("email", EMAIL), ("payment_card", CARD), ("iban", IBAN)]
    assert [f.pieces for f in found] == [
        (Piece(0, 5, 5 + len(EMAIL)),), (Piece(1, 0, len(CARD)),), (Piece(3, 5, 5 + len(IBAN)),)
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("parts", "detector", "value"),
    [
        ([f"pay to {IBAN[:9]}", f"{IBAN[9:]} today"], "iban", IBAN),
        ([f"card {CARD[:9]}", CARD[9:]], "payment_card", CARD),
        (["card 4111", " 1111 ", "1111", " 1111 ok"], "payment_card", CARD),  # four parts
        ([f"{FILLER}write to jan.jansen@exa", f"mple.nl {FILLER}"], "email", EMAIL),
        (["type", "object", IBAN[:9], IBAN[10:], "string"], "iban", IBAN[:9] + IBAN[10:]),
        ([f"{FILLER}NL91\u200bABNA", "\u00ad0417 1643 00"], "iban", f"NL91\u200bABNA{IBAN[10:]}"),
        ([fullwidth(IBAN[:12]), fullwidth(IBAN[12:])], "iban", fullwidth(IBAN)),
    ],
    ids=[
        "iban",
        "card",
        "card_in_four",
        "email_in_long_parts",
        "after_a_word",
        "invisible",
        "fullwidth",
    ],
)
def test_a_value_split_across_consecutive_parts_is_found(
    parts: list[str], detector: str, value: str
) -> None:
    found = locate(parts, ALL)
    assert values(found) == [(detector, value)]
    (hit,) = found
    assert "".join(parts[p.part][p.start : p.end] for p in hit.pieces) == value
    assert len(hit.pieces) > 1


def test_a_value_a_part_holds_whole_stays_as_the_part_holds_it() -> None:
    parts = [f"write to {EMAIL}", "nothing personal", f"IBAN {IBAN}", "12 items", "type", EMAIL]
    found = locate(parts, ALL)
    assert values(found) == [("email", EMAIL), ("iban", IBAN), ("email", EMAIL)]
    assert all(len(f.pieces) == 1 for f in found)


def test_parts_are_joined_only_near_their_boundary() -> None:
    """A window reaches `REACH` characters into each side: values far from a boundary are
    found in their part, and many short parts are searched as one window."""
    long = "x" * (3 * REACH)
    found = locate([f"{CARD} {long}", f"{long} {EMAIL}"], ALL)
    assert values(found) == [("payment_card", CARD), ("email", EMAIL)]
    pieces = [c for c in EMAIL]
    found = locate(pieces, ALL)
    assert values(found) == [("email", EMAIL)] and len(found[0].pieces) == len(EMAIL)


def test_a_split_value_is_masked_where_it_begins_and_removed_where_it_goes_on() -> None:
    parts = [f"pay to {IBAN[:9]}", f"{IBAN[9:]} today"]
    (hit,) = locate(parts, ALL)
    masking = Masking()
    masked = [
        masking.mask(
            text,
            [Cut(p.start, p.end, hit.detector, hit.value, first=i == 0)
             for i, p in enumerate(hit.pieces) if p.part == part],
        )
        for part, text in enumerate(parts)
    ]  # fmt: skip
    assert masked == ["pay to [IBAN_1]", " today"]
    assert masking.restore("refund [IBAN_1]") == f"refund {IBAN}"

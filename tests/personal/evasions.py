"""Values typed to slip past a scanner that reads only ASCII: each form a reader still reads.

Every form of an IBAN, a card number, a Steuer-ID and an e-mail address that
reached an upstream under `block` before the scan folded its text: other
scripts' digits, invisible characters inside, another case, other groupings.
`canonical` is the test's own reading of any text (letters and digits only,
digits in ASCII, capitals), independent of the gateway's, to tell whether a
value got through in any form.
"""

from __future__ import annotations

import unicodedata

from llmeu.personal.rules import Detector

IBAN = "NL91ABNA0417164300"
CARD = "4111111111111111"
STEUER_ID = "36574261809"
EMAIL = "jan.jansen@example.nl"
VALUES = {Detector.IBAN: IBAN, Detector.PAYMENT_CARD: CARD, Detector.DE_STEUER_ID: STEUER_ID,
          Detector.EMAIL: EMAIL}  # fmt: skip

ZERO_WIDTH_SPACE, SOFT_HYPHEN, NO_BREAK_SPACE, NUL = "\u200b", "\u00ad", "\u00a0", "\x00"


def groups(value: str, size: int, separator: str = " ") -> str:
    return separator.join(value[i : i + size] for i in range(0, len(value), size))


def fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


def digits_from(zero: int, text: str) -> str:
    """`text` with its ASCII digits in the script whose zero is `zero`."""
    return "".join(chr(zero + int(c)) if c.isdigit() else c for c in text)


ARABIC_INDIC, MATHEMATICAL_BOLD = 0x0660, 0x1D7CE

FORMS: dict[str, tuple[Detector, str]] = {
    "iban_fullwidth": (Detector.IBAN, fullwidth(groups(IBAN, 4))),
    "iban_mathematical_bold_digits": (Detector.IBAN, digits_from(MATHEMATICAL_BOLD, groups(IBAN, 4))),
    "iban_arabic_indic_digits": (Detector.IBAN, digits_from(ARABIC_INDIC, groups(IBAN, 4))),
    "iban_zero_width_spaces": (Detector.IBAN, groups(IBAN, 2, ZERO_WIDTH_SPACE)),
    "iban_soft_hyphens": (Detector.IBAN, groups(IBAN, 3, SOFT_HYPHEN)),
    "iban_no_break_spaces": (Detector.IBAN, groups(IBAN, 4, NO_BREAK_SPACE)),
    "iban_lowercase": (Detector.IBAN, groups(IBAN.lower(), 4)),
    "iban_in_pairs": (Detector.IBAN, groups(IBAN, 2)),
    "iban_nul_inside": (Detector.IBAN, IBAN[:8] + NUL + IBAN[8:]),
    "card_fullwidth_digits": (Detector.PAYMENT_CARD, fullwidth(groups(CARD, 4))),
    "card_mathematical_bold_digits": (
        Detector.PAYMENT_CARD, digits_from(MATHEMATICAL_BOLD, groups(CARD, 4))
    ),
    "card_arabic_indic_digits": (Detector.PAYMENT_CARD, digits_from(ARABIC_INDIC, groups(CARD, 4))),
    "card_zero_width_spaces": (Detector.PAYMENT_CARD, groups(CARD, 4, ZERO_WIDTH_SPACE)),
    "card_no_break_spaces": (Detector.PAYMENT_CARD, groups(CARD, 4, NO_BREAK_SPACE)),
    "card_dots": (Detector.PAYMENT_CARD, groups(CARD, 4, ".")),
    "card_slashes": (Detector.PAYMENT_CARD, groups(CARD, 4, "/")),
    "card_underscores": (Detector.PAYMENT_CARD, groups(CARD, 4, "_")),
    "card_nul_inside": (Detector.PAYMENT_CARD, CARD[:6] + NUL + CARD[6:]),
    "steuer_id_dashed": (Detector.DE_STEUER_ID, "36-574-261-809"),
    "email_fullwidth": (Detector.EMAIL, fullwidth(EMAIL)),
}  # fmt: skip
SPLIT = (Detector.IBAN, (groups(IBAN, 4)[:9], groups(IBAN, 4)[9:]))
"""A value split across two consecutive parts: `NL91 ABNA` and `0417 1643 00`."""


def canonical(text: str) -> str:
    """Letters and digits only, each digit in ASCII, in capitals."""
    read = unicodedata.normalize("NFKC", text)
    return "".join(
        str(unicodedata.decimal(c)) if c.isdecimal() else c.upper() for c in read if c.isalnum()
    )


def leaked(text: str) -> list[Detector]:
    """The values whose letters and digits `text` still holds, in any form."""
    held = canonical(text)
    return [detector for detector, value in VALUES.items() if canonical(value) in held]

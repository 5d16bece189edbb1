"""National identifiers and payment cards: digits only, found by their length and checks.

One candidate pattern serves them all: a run of at least nine digits,
optionally grouped by single spaces, dots or dashes. Every window of
whole groups of a length some identifier has is tried, longest first, so an
identifier written next to other numbers is still found; a window is only
tried with the marks the identifier's published format groups it with (a
date's dashes and slashes are none of them). Each identifier's own check, in
plain arithmetic, rules most windows out; `python-stdnum` decides the rest.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import lru_cache
from operator import mul

from stdnum import luhn
from stdnum.at import vnr
from stdnum.be import nn
from stdnum.de import idnr
from stdnum.fr import nir
from stdnum.nl import bsn
from stdnum.pl import pesel
from stdnum.pt import nif
from stdnum.se import personnummer

from llmeu.personal.rules import Detector

Check = Callable[[str], bool]

# Not after a word's character nor after `.+/-` (a decimal, a signed or a slashed number):
# a look-behind, so the whole text is one `finditer` in the regex engine.
RUN = re.compile(rb"9(?<![Aa9_?.+/-]9)(?:[ .-]?9){8,}(?![Aa9_])")
_DIGITS = re.compile(r"\d+")
# Nine digits joined the way one window may join them: by dots and dashes, or by spaces.
_WINDOW = re.compile(rb"9(?:[.-]?9){8}|9(?: ?9){8}")
_MAX_GROUPS = 12
_NO_MARKS: frozenset[str] = frozenset()


def _weighted(digits: str, weights: tuple[int, ...]) -> int:
    return sum(map(mul, map(int, digits), weights))  # stops at the shorter, like zip


_DOUBLED = str.maketrans("0123456789", "0246813579")
"""Each digit to the digit sum of its double, as Luhn adds them."""


def _luhn(digits: str) -> bool:
    """The Luhn check in C-speed string steps, before `python-stdnum` parses the number."""
    return sum(map(int, digits[-1::-2] + digits[-2::-2].translate(_DOUBLED))) % 10 == 0


def _nl_bsn(d: str) -> bool:
    return _weighted(d, (9, 8, 7, 6, 5, 4, 3, 2, -1)) % 11 == 0 and bsn.is_valid(d)


def _pt_nif(d: str) -> bool:
    check = 11 - _weighted(d, (9, 8, 7, 6, 5, 4, 3, 2)) % 11
    return (0 if check >= 10 else check) == int(d[8]) and nif.is_valid(d)


def _at_social_security(d: str) -> bool:
    """The check digit and a birth date DDMMYY (months 13 to 15 stand for an unknown date)."""
    return 1 <= int(d[4:6]) <= 31 and 1 <= int(d[6:8]) <= 15 and vnr.is_valid(d)


def _se_personnummer(d: str) -> bool:
    date = d[-10:-4]
    month, day = int(date[2:4]), int(date[4:6])
    valid_date = 1 <= month <= 12 and (1 <= day <= 31 or 61 <= day <= 91)
    return valid_date and _luhn(d[-10:]) and personnummer.is_valid(d)


def _pl_pesel(d: str) -> bool:
    if int(d[2:4]) % 20 not in range(1, 13):  # the birth month, before the weighted sum
        return False
    check = (10 - _weighted(d, (1, 3, 7, 9, 1, 3, 7, 9, 1, 3)) % 10) % 10
    return check == int(d[10]) and pesel.is_valid(d)


def _de_steuer_id(d: str) -> bool:
    """Exactly one of the first ten digits repeats, twice or three times; then the check."""
    if d[0] == "0" or len(set(d[:10])) not in (8, 9):
        return False
    product = 10
    for digit in d[:10]:
        total = (int(digit) + product) % 10 or 10
        product = total * 2 % 11
    return (11 - product) % 10 == int(d[10]) and idnr.is_valid(d)


def _be_national_number(d: str) -> bool:
    check = int(d[9:])
    return check in (97 - int(d[:9]) % 97, 97 - int("2" + d[:9]) % 97) and nn.is_valid(d)


def _fr_nir(d: str) -> bool:
    return d[0] in "1278" and 97 - int(d[:13]) % 97 == int(d[13:]) and nir.is_valid(d)


def _payment_card(d: str) -> bool:
    """Luhn and an issuer prefix (Visa, Mastercard, Amex, Diners, Discover, JCB, Maestro)."""
    return d[0] in "23456" and _luhn(d) and luhn.is_valid(d)


Table = dict[int, tuple[tuple[Detector, Check, frozenset[str]], ...]]

# By number of digits, in the order tried, with the marks each published format uses.
BY_LENGTH: Table = {
    9: (
        (Detector.NL_BSN, _nl_bsn, frozenset(" .")),
        (Detector.PT_NIF, _pt_nif, frozenset(" ")),
    ),
    10: (
        (Detector.AT_SOCIAL_SECURITY, _at_social_security, frozenset(" ")),
        (Detector.SE_PERSONNUMMER, _se_personnummer, frozenset("-")),
    ),
    11: (
        (Detector.PL_PESEL, _pl_pesel, frozenset()),
        (Detector.DE_STEUER_ID, _de_steuer_id, frozenset(" ")),
        (Detector.BE_NATIONAL_NUMBER, _be_national_number, frozenset(" .-")),
    ),
    12: ((Detector.SE_PERSONNUMMER, _se_personnummer, frozenset("-")),),
    15: ((Detector.FR_NIR, _fr_nir, frozenset(" ")),),
}
for _length in range(13, 20):
    BY_LENGTH[_length] = (
        *BY_LENGTH.get(_length, ()),
        (Detector.PAYMENT_CARD, _payment_card, frozenset(" -")),
    )
DETECTORS = frozenset(d for row in BY_LENGTH.values() for d, _, _ in row)
_SHORTEST = min(BY_LENGTH)


def identifiers(
    text: str, form: bytes, detectors: frozenset[Detector]
) -> Iterator[tuple[Detector, int, int]]:
    """(detector, start, end) of each digit-only identifier of `detectors` in `text`."""
    table = _by_length(detectors)
    for match in RUN.finditer(form):
        start, end = match.span()
        run = text[start:end]
        if run.isdigit():  # the common case: one plain number
            found = _identify(run, _NO_MARKS, table)
            if found is not None:
                yield found, start, end
            continue
        if _WINDOW.search(form, start, end) is None:  # `2024-01-15 12`: no window is long enough
            continue
        for found, a, b in _in_run(run, table):
            yield found, start + a, start + b


def _in_run(run: str, table: Table) -> Iterator[tuple[Detector, int, int]]:
    """Windows of whole groups, longest first; a hit consumes its groups. A window never
    joins groups by spaces and by other marks both (`2024-01-15 12` are two numbers)."""
    spans = [(m.start(), m.end()) for m in _DIGITS.finditer(run)]
    parts = [run[a:b] for a, b in spans]
    marks = [run[b] for _, b in spans[:-1]]  # the one mark after each group but the last
    sums = [0]
    for part in parts:
        sums.append(sums[-1] + len(part))
    i = 0
    while i < len(parts):
        hit = _longest(parts, marks, sums, i, table)
        if hit is None:
            i += 1
            continue
        found, j = hit
        yield found, spans[i][0], spans[j - 1][1]
        i = j


def _longest(
    parts: list[str], marks: list[str], sums: list[int], i: int, table: Table
) -> tuple[Detector, int] | None:
    """The longest window of groups from `i` that is an identifier, and where it ends."""
    for j in range(_reach(marks, i, min(len(parts), i + _MAX_GROUPS)), i, -1):
        length = sums[j] - sums[i]
        if length < _SHORTEST:
            return None
        if length in table:
            found = _identify("".join(parts[i:j]), frozenset(marks[i : j - 1]), table)
            if found is not None:
                return found, j
    return None


def _reach(marks: list[str], i: int, limit: int) -> int:
    """The end of the longest window from group `i` whose marks are all spaces or none."""
    j = i + 1
    spaced = marks[i] == " " if i < len(marks) else False
    while j < limit and (marks[j - 1] == " ") == spaced:
        j += 1
    return j


def _identify(digits: str, marks: frozenset[str], table: Table) -> Detector | None:
    for detector, check, allowed in table.get(len(digits), ()):
        if marks <= allowed and check(digits):
            return detector
    return None


@lru_cache(maxsize=64)
def _by_length(detectors: frozenset[Detector]) -> Table:
    """`BY_LENGTH` narrowed to `detectors`, once per set a policy has."""
    narrowed = {
        n: tuple(row for row in rows if row[0] in detectors) for n, rows in BY_LENGTH.items()
    }
    return {n: rows for n, rows in narrowed.items() if rows}

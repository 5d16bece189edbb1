"""National identifiers and payment cards: digits only, found by their length and checks.

One candidate pattern serves them all: a run of at least nine digits,
optionally grouped by single spaces, dots, dashes, slashes or underscores. Every window of
whole groups of a length some identifier has is tried, longest first, so an
identifier written next to other numbers is still found; a window is only
tried with the marks the identifier's published format groups it with (a
date's dashes and slashes are none of them). Which windows those are depends
on the run's shape alone (`999-9-999-99999-9`), so it is planned once per
shape and kept. Each identifier's own check, in plain arithmetic, rules most
windows out; `python-stdnum` decides the rest.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
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
# a look-behind, so the whole text is one `finditer` in the regex engine. The look-ahead
# (eight more digits or marks) refuses the many short numbers before the repetition runs.
RUN = re.compile(rb"9(?<![Aa9_?.+/-]9)(?=[9 ./_-]{8})(?:[ ./_-]?9){8,}(?![Aa9_])")
_MAX_GROUPS = 12


def _weighted(*weights: int) -> Callable[[str], int]:
    """`digits -> sum(weight * digit)` over the first `len(weights)` digits, computed on the
    ASCII codes in C (no `int()` per digit): each code is its digit plus 48."""
    bias = 48 * sum(weights)
    return lambda digits: sum(map(mul, digits.encode(), weights)) - bias


_BSN = _weighted(9, 8, 7, 6, 5, 4, 3, 2, -1)
_NIF = _weighted(9, 8, 7, 6, 5, 4, 3, 2)
_PESEL = _weighted(1, 3, 7, 9, 1, 3, 7, 9, 1, 3, 1)
_VNR = _weighted(3, 7, 9, 0, 5, 8, 4, 2, 1, 6)
_DOUBLED = str.maketrans("0123456789", "0246813579")
"""Each digit to the digit sum of its double, as Luhn adds them."""


def _luhn(digits: str) -> bool:
    """The Luhn check in C-speed string steps, before `python-stdnum` parses the number."""
    doubled = digits[-2::-2].translate(_DOUBLED)
    return (sum((digits[-1::-2] + doubled).encode()) - 48 * len(digits)) % 10 == 0


def _nl_bsn(d: str) -> bool:
    return _BSN(d) % 11 == 0 and bsn.is_valid(d)


def _pt_nif(d: str) -> bool:
    check = 11 - _NIF(d) % 11
    return (0 if check >= 10 else check) == int(d[8]) and nif.is_valid(d)


def _two_digits(numbers: Iterable[int]) -> frozenset[str]:
    """Two-digit fields as written: a date's part is compared as text, without `int()`."""
    return frozenset(f"{n:02}" for n in numbers)


_DAYS = _two_digits(range(1, 32))
_MONTHS = _two_digits(range(1, 13))
_AT_MONTHS = _two_digits(range(1, 16))  # 13 to 15 stand for an unknown date
_SE_DAYS = _DAYS | _two_digits(range(61, 92))  # a coordination number adds 60 to the day
_PESEL_MONTHS = _two_digits(m for m in range(100) if 0 < m % 20 < 13)  # 20 more per century


def _at_social_security(d: str) -> bool:
    """A birth date DDMMYY in the last six digits, then the check digit (the fourth)."""
    return (
        d[4:6] in _DAYS and d[6:8] in _AT_MONTHS and _VNR(d) % 11 == int(d[3]) and vnr.is_valid(d)
    )


def _se_personnummer(d: str) -> bool:
    valid_date = d[-8:-6] in _MONTHS and d[-6:-4] in _SE_DAYS
    return valid_date and _luhn(d[-10:]) and personnummer.is_valid(d)


def _pl_pesel(d: str) -> bool:
    """The birth month before the weighted sum, which with the check digit is 0 mod 10."""
    return d[2:4] in _PESEL_MONTHS and _PESEL(d) % 10 == 0 and pesel.is_valid(d)


def _de_steuer_id(d: str) -> bool:
    """Exactly one of the first ten digits repeats, twice or three times; then the check."""
    if d[0] == "0" or len(set(d[:10])) not in (8, 9):
        return False
    product = 10
    for code in d[:10].encode():
        product = _IDNR_STEP[product][code - 48]
    return (11 - product) % 10 == int(d[10]) and idnr.is_valid(d)


_IDNR_STEP = tuple(
    tuple(((digit + product) % 10 or 10) * 2 % 11 for digit in range(10)) for product in range(11)
)
"""ISO 7064 mod 11,10: the next product from the current one and a digit, looked up."""


def _be_national_number(d: str) -> bool:
    """97 minus the first nine digits mod 97; for births from 2000 on, with a 2 before them."""
    remainder = int(d[:9]) % 97
    check = 97 - int(d[9:])
    return check in (remainder, (remainder + _BORN_2000) % 97) and nn.is_valid(d)


_BORN_2000 = 2_000_000_000 % 97


def _fr_nir(d: str) -> bool:
    return d[0] in "1278" and 97 - int(d[:13]) % 97 == int(d[13:]) and nir.is_valid(d)


def _payment_card(d: str) -> bool:
    """Luhn and an issuer prefix (Visa, Mastercard, Amex, Diners, Discover, JCB, Maestro)."""
    return d[0] in "23456" and _luhn(d) and luhn.is_valid(d)


Table = dict[int, tuple[tuple[Detector, Check, frozenset[str]], ...]]

# By number of digits, in the order tried, with the marks each published format uses, and
# those people type: a card grouped by dots, slashes or underscores, a Steuer-ID by dashes.
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
        (Detector.DE_STEUER_ID, _de_steuer_id, frozenset(" -")),
        (Detector.BE_NATIONAL_NUMBER, _be_national_number, frozenset(" .-")),
    ),
    12: ((Detector.SE_PERSONNUMMER, _se_personnummer, frozenset("-")),),
    15: ((Detector.FR_NIR, _fr_nir, frozenset(" ")),),
}
for _length in range(13, 20):
    BY_LENGTH[_length] = (
        *BY_LENGTH.get(_length, ()),
        (Detector.PAYMENT_CARD, _payment_card, frozenset(" -./_")),
    )
DETECTORS = frozenset(d for row in BY_LENGTH.values() for d, _, _ in row)
_SHORTEST = min(BY_LENGTH)


def identifiers(
    text: str, form: bytes, detectors: frozenset[Detector]
) -> list[tuple[Detector, int, int]]:
    """(detector, start, end) of each digit-only identifier of `detectors` in `text`."""
    found: list[tuple[Detector, int, int]] = []
    plans = _plans(detectors)
    for match in RUN.finditer(form):
        start, end = match.span()
        plan = plans[form[start:end]]
        if not plan:  # `2024-01-15 12`, an ISBN's groups: no window of an identifier's length
            continue
        digits = text[start:end]
        if not digits.isdigit():
            digits = digits.translate(_WITHOUT_MARKS)
        resume = 0
        for i, windows in plan:
            if i < resume:
                continue
            for j, a, b, low, high, rows in windows:
                window = digits[low:high]
                for detector, check in rows:
                    if check(window):
                        found.append((detector, start + a, start + b))
                        resume = j
                        break
                else:
                    continue
                break  # a hit consumes its groups: the next window starts after them
    return found


_WITHOUT_MARKS = str.maketrans("", "", " ./_-")

Window = tuple[int, int, int, int, int, tuple[tuple[Detector, Check], ...]]
"""The group a window ends before, its span in the run, its span in the run's digits, and
the (detector, check) pairs whose length and marks it has, in the order tried."""
Plan = tuple[tuple[int, tuple[Window, ...]], ...]
"""Per group a window may start at, its windows longest first; empty: nothing to check."""


class _Plans(dict[bytes, Plan]):
    """The plans of one detector set by run shape: most numbers share a handful of shapes.
    Shapes up to `LONGEST` bytes are kept, at most `KEPT` of them (a text of odd groupings
    gets its plans computed, not a bigger cache): under 1 MB per detector set, for the 16
    sets last used."""

    LONGEST = 64
    KEPT = 1024

    def __init__(self, detectors: frozenset[Detector]):
        super().__init__()
        self.detectors = detectors

    def __missing__(self, skeleton: bytes) -> Plan:
        plan = _windows(self.detectors, skeleton)
        if len(skeleton) <= self.LONGEST and len(self) < self.KEPT:
            self[skeleton] = plan
        return plan


@lru_cache(maxsize=16)
def _plans(detectors: frozenset[Detector]) -> _Plans:
    return _Plans(detectors)


def _windows(detectors: frozenset[Detector], skeleton: bytes) -> Plan:
    """Which windows of whole groups to try, from the run's shape alone (`999-9-999`): from
    each group the longest first, ending where the run's marks stop being alike (a window
    never joins groups by spaces and by other marks both: `2024-01-15 12` are two numbers),
    at most `_MAX_GROUPS` groups, as long as an identifier of `detectors` has that many digits
    and groups them with those marks. A hit consumes its groups."""
    table = _by_length(detectors)
    spans = [(m.start(), m.end()) for m in _GROUPS.finditer(skeleton)]
    marks = [skeleton[b : b + 1].decode() for _, b in spans[:-1]]  # the mark after each group
    sums = [0]
    for a, b in spans:
        sums.append(sums[-1] + b - a)
    plan = []
    for i in range(len(spans)):
        windows = []
        for j in range(_reach(marks, i, min(len(spans), i + _MAX_GROUPS)), i, -1):
            length = sums[j] - sums[i]
            if length < _SHORTEST:
                break
            joined = frozenset(marks[i : j - 1])
            rows = tuple(
                (d, check) for d, check, allowed in table.get(length, ()) if joined <= allowed
            )
            if rows:
                windows.append((j, spans[i][0], spans[j - 1][1], sums[i], sums[j], rows))
        if windows:
            plan.append((i, tuple(windows)))
    return tuple(plan)


_GROUPS = re.compile(rb"9+")


def _reach(marks: list[str], i: int, limit: int) -> int:
    """The end of the longest window from group `i` whose marks are all spaces or none."""
    j = i + 1
    spaced = marks[i] == " " if i < len(marks) else False
    while j < limit and (marks[j - 1] == " ") == spaced:
        j += 1
    return j


@lru_cache(maxsize=64)
def _by_length(detectors: frozenset[Detector]) -> Table:
    """`BY_LENGTH` narrowed to `detectors`, once per set a policy has."""
    narrowed = {
        n: tuple(row for row in rows if row[0] in detectors) for n, rows in BY_LENGTH.items()
    }
    return {n: rows for n, rows in narrowed.items() if rows}

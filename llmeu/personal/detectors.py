"""Detectors: a pattern finds candidates, a validator decides.

Every detector is a pure function of the text. A candidate is only a hit
when its checksum (IBAN mod 97, Luhn, each national identifier's own check
as `python-stdnum` implements it) or its structure (an address `ipaddress`
parses, a number `phonenumbers` calls valid) holds, so a random digit string
is a hit only as often as its checksum lets one through by chance. Patterns
run over the text's shape (`llmeu.personal.shape`); digit-only identifiers
are `llmeu.personal.numbers`'.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import phonenumbers
from stdnum import iban
from stdnum.es import dni, nie
from stdnum.it import codicefiscale

from llmeu.personal import numbers
from llmeu.personal.rules import Detector
from llmeu.personal.shape import WORD, candidates, shape


@dataclass(frozen=True, slots=True)
class Hit:
    detector: Detector
    start: int
    end: int


Validator = Callable[[str], bool]

# The look-ahead: no IBAN is shorter than 15 characters (a flight number `AB1234` is no candidate).
_IBAN = re.compile(rb"AA99(?=[A9 ]{11})[A9]{0,30}(?: [A9]{1,4}){0,8}")
_IPV4_MIDDLE = re.compile(rb"9\.9{1,3}\.9{1,3}\.9")
_IPV4 = re.compile(r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}(?![\w]|\.\d)")
# `::`, or three groups between colons: what every address has and a time of day lacks.
_IPV6_HINT = re.compile(r"::|:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}:")
_IPV6 = re.compile(r"[0-9A-Fa-f:]+(?![\w])")
_EMAIL_LOCAL = re.compile(rb"[Aa9._%+-]{1,64}\Z")
_EMAIL_DOMAIN = re.compile(rb"[Aa9-]+(?:\.[Aa9-]+)*\.[Aa]{2,}")
_PHONE = re.compile(rb"\+9(?:[ ./-]?\(?9+\)?){2,8}(?![Aa9_])")
_PHONE_00 = re.compile(r"00[1-9](?:[ ./-]?\(?\d+\)?){2,8}(?!\w)")
_CODICE_FISCALE = re.compile(rb"AAAAAA[9A]{2}A[9A]{2}A[9A]{3}A(?![Aa9_])")
_DNI = re.compile(rb"99999999-?[Aa](?![Aa9_])")
_NIE = re.compile(rb"A-?9999999-?[Aa](?![Aa9_])")
_AFTER_ADDRESS = WORD | frozenset(b".:")
_AFTER_PHONE = WORD | frozenset(b"+")
_HEX_COLON = frozenset("0123456789abcdefABCDEF:")
_IBAN_DIGITS = str.maketrans(
    {chr(c): str(c - 55) for c in range(ord("A"), ord("Z") + 1)} | {" ": ""}
)


def find(text: str, detectors: frozenset[Detector]) -> list[Hit]:
    """The hits of `detectors` in `text`, in order, none overlapping another."""
    form = shape(text)
    hits: list[Hit] = []
    if Detector.EMAIL in detectors and b"@" in form:
        hits.extend(_emails(form))
    if Detector.IP_ADDRESS in detectors:
        hits.extend(_ipv4(text, form))
        if ":" in text:
            hits.extend(_ipv6(text))
    if Detector.IBAN in detectors:
        hits.extend(_ibans(text, form))
    if Detector.PHONE in detectors:
        hits.extend(_phones(text, form))
    for detector, pattern, valid in _LETTERED:
        if detector in detectors:
            hits.extend(_matches(pattern, text, form, detector, valid))
    if detectors & numbers.DETECTORS:
        hits.extend(Hit(*found) for found in numbers.identifiers(text, form, detectors))
    return _without_overlaps(hits)


def _is_nie(candidate: str) -> bool:
    return candidate[0] in "XYZ" and nie.is_valid(candidate)


_LETTERED: tuple[tuple[Detector, re.Pattern[bytes], Validator], ...] = (
    (Detector.IT_CODICE_FISCALE, _CODICE_FISCALE, codicefiscale.is_valid),
    (Detector.ES_DNI, _DNI, dni.is_valid),
    (Detector.ES_NIE, _NIE, _is_nie),
)


def _matches(
    pattern: re.Pattern[bytes], text: str, form: bytes, detector: Detector, valid: Validator
) -> Iterator[Hit]:
    for start, end in candidates(pattern, form):
        if valid(text[start:end]):
            yield Hit(detector, start, end)


def _emails(form: bytes) -> Iterator[Hit]:
    at = form.find(b"@")
    while at >= 0:
        local = _EMAIL_LOCAL.search(form, max(0, at - 64), at)
        domain = _EMAIL_DOMAIN.match(form, at + 1)
        if local is not None and domain is not None:
            yield Hit(Detector.EMAIL, local.start(), domain.end())
        at = form.find(b"@", at + 1)


def _ipv4(text: str, form: bytes) -> Iterator[Hit]:
    """Around each `digit.digits.digits.digit` of the shape, the address it may be part of."""
    end = 0
    for middle in _IPV4_MIDDLE.finditer(form):
        start = middle.start()
        while start > max(end, middle.start() - 2) and form[start - 1] == ord("9"):
            start -= 1
        if start < end or (start and form[start - 1] in _AFTER_ADDRESS):
            continue
        match = _IPV4.match(text, start)
        if match is not None and _is_ip(match.group()):
            end = match.end()
            yield Hit(Detector.IP_ADDRESS, start, end)


def _ipv6(text: str) -> Iterator[Hit]:
    end = 0
    for hint in _IPV6_HINT.finditer(text):
        start = hint.start()
        if start < end:
            continue
        while start > 0 and text[start - 1] in _HEX_COLON:
            start -= 1
        match = _IPV6.match(text, start)
        if match is None or (start and (text[start - 1].isalnum() or text[start - 1] == "_")):
            continue
        end = match.end()
        if _is_ipv6(match.group()):
            yield Hit(Detector.IP_ADDRESS, start, end)


def _phones(text: str, form: bytes) -> Iterator[Hit]:
    if b"+" in form:
        for start, end in candidates(_PHONE, form, _AFTER_PHONE):
            if _is_phone(text[start:end]):
                yield Hit(Detector.PHONE, start, end)
    if "00" in text:
        for match in _PHONE_00.finditer(text):
            start = match.start()
            if start and form[start - 1] in _AFTER_PHONE:
                continue
            if _is_phone(match.group()):
                yield Hit(Detector.PHONE, start, match.end())


def _is_ip(candidate: str) -> bool:
    try:
        ipaddress.ip_address(candidate)
    except ValueError:
        return False
    return True


def _is_ipv6(candidate: str) -> bool:
    """Eight groups, or fewer with `::`; a time of day (`12:30:45`) is neither."""
    if "::" not in candidate and candidate.count(":") != 7:
        return False
    return sum(c.isalnum() for c in candidate) >= 3 and _is_ip(candidate)


def _is_phone(candidate: str) -> bool:
    number = "+" + candidate[2:] if candidate.startswith("00") else candidate
    try:
        parsed = phonenumbers.parse(number, None)
    except phonenumbers.NumberParseException:
        return False
    return bool(phonenumbers.is_valid_number(parsed))


def _ibans(text: str, form: bytes) -> Iterator[Hit]:
    """An IBAN printed in groups may run into the next word: shorter group counts are tried."""
    for start, end in candidates(_IBAN, form):
        candidate = text[start:end]
        while len(candidate) >= 15:
            if _mod97(candidate) and iban.is_valid(candidate):
                yield Hit(Detector.IBAN, start, start + len(candidate))
                break
            cut = candidate.rfind(" ")
            if cut < 0:
                break
            candidate = candidate[:cut]


def _mod97(candidate: str) -> bool:
    """ISO 7064 mod 97-10 in one integer, before `python-stdnum` checks country and length."""
    return int((candidate[4:] + candidate[:4]).translate(_IBAN_DIGITS)) % 97 == 1


def _without_overlaps(hits: Iterable[Hit]) -> list[Hit]:
    kept: list[Hit] = []
    for hit in sorted(hits, key=lambda h: (h.start, h.start - h.end)):
        if not kept or hit.start >= kept[-1].end:
            kept.append(hit)
    return kept

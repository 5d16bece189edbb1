"""Detectors: a pattern finds candidates, a validator decides.

Every detector is a pure function of the text. A candidate is only a hit
when its checksum (IBAN mod 97, Luhn, each national identifier's own check
as `python-stdnum` implements it) or its structure (an address `ipaddress`
parses, a number `phonenumbers` calls valid) holds, so a random digit string
is a hit only as often as its checksum lets one through by chance. They read
the text as folded (`llmeu.personal.folding`: fullwidth, other scripts'
digits, invisible characters), their patterns run over its shape
(`llmeu.personal.shape`); digit-only identifiers are `llmeu.personal.numbers`'.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache

import phonenumbers
from stdnum import iban, numdb
from stdnum.es import dni, nie
from stdnum.it import codicefiscale

from llmeu.personal import numbers
from llmeu.personal.folding import fold
from llmeu.personal.rules import Detector
from llmeu.personal.shape import WORD, candidates


@dataclass(frozen=True, slots=True)
class Hit:
    detector: Detector
    start: int
    end: int


Validator = Callable[[str], bool]

# Where an IBAN may begin, in the shape with case and separators made alike: a country and
# its check digits (`NL91`, `nl91`), or both followed by a separator (`NL 91 AB NA …`,
# grouped in pairs).
_IBAN_FORM = bytes.maketrans(b"a./_-", b"A    ")
_IBAN_CHECK = re.compile(rb"99(?<=AA99|A 99)")
_IBAN_STARTS = (re.compile(rb"AA99(?<![A9_?]AA99)"), re.compile(rb"AA 99 (?<![A9_?]AA 99 )"))
_IBAN_COMPACT = str.maketrans("", "", " ./_-")
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
    """The hits of `detectors` in `text`, in order, none overlapping another: spans of the
    original text, read as folded."""
    folded = fold(text)
    return [
        Hit(hit.detector, *folded.span(hit.start, hit.end))
        for hit in detect(folded.text, folded.form, detectors)
    ]


def detect(text: str, form: bytes, detectors: frozenset[Detector]) -> list[Hit]:
    """The hits of `detectors` in a folded text whose shape is `form`."""
    hits: list[Hit] = []
    if Detector.EMAIL in detectors and b"@" in form:
        hits.extend(_emails(form))
    if Detector.IP_ADDRESS in detectors:
        hits.extend(_ipv4(text, form))
        if ":" in text:
            hits.extend(_ipv6(text))
    if Detector.IBAN in detectors and b"9" in form:
        hits.extend(_ibans(text, form))
    if Detector.PHONE in detectors:
        hits.extend(_phones(text, form))
    for detector, pattern, valid in _LETTERED:
        if detector in detectors:
            hits.extend(_matches(pattern, text, form, detector, valid))
    if detectors & numbers.DETECTORS:
        hits.extend(Hit(*found) for found in numbers.identifiers(text, form, detectors))
    return without_overlaps(hits)


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
    """From each country and its check digits, as many letters and digits as that country's
    IBAN has, each set apart by at most one separator. The count, not the grouping, decides
    where it ends, so an IBAN running into the next word is found."""
    alike = form.translate(_IBAN_FORM)
    end = 0
    for start in _iban_starts(alike):
        if start < end or (start and alike[start - 1] in _IBAN_WORD):
            continue
        length = _iban_length(text[start : start + 2].upper())
        digits = start + 2 if alike[start + 2] != 32 else start + 3
        rest = _iban_rest(length).match(form, digits) if length else None
        if rest is None:
            continue
        candidate = text[start : rest.end()].translate(_IBAN_COMPACT).upper()
        if _mod97(candidate) and iban.is_valid(candidate):
            end = rest.end()
            yield Hit(Detector.IBAN, start, end)


_IBAN_WORD = frozenset(b"A9_?")


def _iban_starts(alike: bytes) -> list[int]:
    """Where `AA99` or `AA 99 ` begins. Looking back from each pair of digits costs per digit,
    searching for the two as literals per character (every letter being `A`): the first
    where digits are few, the second in text made of numbers."""
    if alike.count(b"9") * 8 >= len(alike):
        return sorted({m.start() for p in _IBAN_STARTS for m in p.finditer(alike)})
    starts = []
    for match in _IBAN_CHECK.finditer(alike):
        digits = match.start()
        if alike[digits - 1] == 32:  # `AA 99 `: a letter before the space, a space after
            if digits < 3 or alike[digits - 3] != 65 or alike[digits + 2 : digits + 3] != b" ":
                continue
            digits -= 1
        starts.append(digits - 2)
    return starts


@cache
def _iban_length(country: str) -> int | None:
    """The length of the country's IBANs (its BBAN's fields and four), None for a country
    without IBANs."""
    found = _IBAN_REGISTRY.info(country)[0][1].get("bban")
    return 4 + sum(int(width) for width in re.findall(r"\d+", found)) if found else None


_IBAN_REGISTRY = numdb.get("iban")


@cache
def _iban_rest(length: int) -> re.Pattern[bytes]:
    """The check digits and the BBAN of an IBAN of `length` characters, from the first
    check digit."""
    return re.compile(rb"9(?:[ ./_-]?[Aa9]){%d}" % (length - 3))


def _mod97(candidate: str) -> bool:
    """ISO 7064 mod 97-10 in one integer, before `python-stdnum` checks country and format."""
    return int((candidate[4:] + candidate[:4]).translate(_IBAN_DIGITS)) % 97 == 1


def without_overlaps(hits: Iterable[Hit]) -> list[Hit]:
    """`hits` in order, each dropped that overlaps one kept before it (the longest of those
    that begin together is kept)."""
    kept: list[Hit] = []
    for hit in sorted(hits, key=lambda h: (h.start, h.start - h.end)):
        if not kept or hit.start >= kept[-1].end:
            kept.append(hit)
    return kept

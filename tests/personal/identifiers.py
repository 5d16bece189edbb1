"""Valid national identifiers, generated and checked with python-stdnum's own functions."""

from __future__ import annotations

import random
from collections.abc import Callable

from stdnum import luhn
from stdnum.at import vnr
from stdnum.be import nn
from stdnum.de import idnr
from stdnum.es import dni, nie
from stdnum.fr import nir
from stdnum.it import codicefiscale
from stdnum.nl import bsn
from stdnum.pl import pesel
from stdnum.pt import nif
from stdnum.se import personnummer

from llmeu.personal.rules import Detector


def _date(rng: random.Random) -> tuple[int, int, int]:
    return rng.randrange(40, 99), rng.randrange(1, 13), rng.randrange(1, 29)


def _first_valid(stem: str, width: int, valid: Callable[[str], bool]) -> str | None:
    for n in range(10**width):
        candidate = f"{stem}{n:0{width}d}"
        if valid(candidate):
            return candidate
    return None


def _nl_bsn(rng: random.Random) -> str | None:
    return _first_valid(f"{rng.randrange(10**7, 10**8):08d}", 1, bsn.is_valid)


def _pl_pesel(rng: random.Random) -> str:
    y, m, d = _date(rng)
    body = f"{y:02d}{m:02d}{d:02d}{rng.randrange(10**4):04d}"
    return body + pesel.calc_check_digit(body)


def _it_codice_fiscale(rng: random.Random) -> str:
    y, m, d = _date(rng)
    day = d + rng.choice((0, 40))
    body = f"RSSMRA{y:02d}{'ABCDEHLMPRST'[m - 1]}{day:02d}A562"
    return body + codicefiscale.calc_check_digit(body)


def _de_steuer_id(rng: random.Random) -> str | None:
    digits = [str(rng.randrange(1, 10))] + [str(rng.randrange(10)) for _ in range(9)]
    return _first_valid("".join(digits), 1, idnr.is_valid)


def _fr_nir(rng: random.Random) -> str:
    y, m, _ = _date(rng)
    body = (
        f"{rng.choice('12')}{y:02d}{m:02d}{rng.randrange(1, 96):02d}"
        f"{rng.randrange(1, 990):03d}{rng.randrange(1, 999):03d}"
    )
    return body + nir.calc_check_digits(body)


def _es_dni(rng: random.Random) -> str:
    body = f"{rng.randrange(10**7, 10**8):08d}"
    return body + dni.calc_check_digit(body)


def _es_nie(rng: random.Random) -> str:
    body = rng.choice("XYZ") + f"{rng.randrange(10**7):07d}"
    return body + nie.calc_check_digit(body)


def _pt_nif(rng: random.Random) -> str:
    body = rng.choice("123") + f"{rng.randrange(10**7):07d}"
    return body + nif.calc_check_digit(body)


def _be_national_number(rng: random.Random) -> str | None:
    y, m, d = _date(rng)
    return _first_valid(f"{y:02d}{m:02d}{d:02d}{rng.randrange(1, 998):03d}", 2, nn.is_valid)


def _at_social_security(rng: random.Random) -> str | None:
    y, m, d = _date(rng)
    serial = f"{rng.randrange(100, 1000)}"
    for check in "0123456789":
        candidate = f"{serial}{check}{d:02d}{m:02d}{y:02d}"
        if vnr.is_valid(candidate):
            return candidate
    return None


def _se_personnummer(rng: random.Random) -> str:
    y, m, d = _date(rng)
    body = f"{y:02d}{m:02d}{d:02d}{rng.randrange(1000):03d}"
    return f"{body[:6]}-{body[6:]}{luhn.calc_check_digit(body)}"


GENERATORS: dict[Detector, Callable[[random.Random], str | None]] = {
    Detector.NL_BSN: _nl_bsn,
    Detector.PL_PESEL: _pl_pesel,
    Detector.IT_CODICE_FISCALE: _it_codice_fiscale,
    Detector.DE_STEUER_ID: _de_steuer_id,
    Detector.FR_NIR: _fr_nir,
    Detector.ES_DNI: _es_dni,
    Detector.ES_NIE: _es_nie,
    Detector.PT_NIF: _pt_nif,
    Detector.BE_NATIONAL_NUMBER: _be_national_number,
    Detector.AT_SOCIAL_SECURITY: _at_social_security,
    Detector.SE_PERSONNUMMER: _se_personnummer,
}

VALIDATORS: dict[Detector, Callable[[str], bool]] = {
    Detector.NL_BSN: bsn.is_valid,
    Detector.PL_PESEL: pesel.is_valid,
    Detector.IT_CODICE_FISCALE: codicefiscale.is_valid,
    Detector.DE_STEUER_ID: idnr.is_valid,
    Detector.FR_NIR: nir.is_valid,
    Detector.ES_DNI: dni.is_valid,
    Detector.ES_NIE: nie.is_valid,
    Detector.PT_NIF: nif.is_valid,
    Detector.BE_NATIONAL_NUMBER: nn.is_valid,
    Detector.AT_SOCIAL_SECURITY: vnr.is_valid,
    Detector.SE_PERSONNUMMER: personnummer.is_valid,
}

# Examples in each identifier's published format (as the specifications and python-stdnum's
# documentation print them).
PUBLISHED: dict[Detector, tuple[str, ...]] = {
    Detector.NL_BSN: ("111222333", "1112.22.333"),
    Detector.PL_PESEL: ("44051401359", "02070803628"),
    Detector.IT_CODICE_FISCALE: ("RCCMNL83S18D969H", "RSSMRA85T10A562S"),
    Detector.DE_STEUER_ID: ("36 574 261 809", "36574261809"),
    Detector.FR_NIR: ("2 95 10 99 126 111 93", "295109912611193"),
    Detector.ES_DNI: ("54362315K", "54362315-K"),
    Detector.ES_NIE: ("X2482300W", "X-2482300-W"),
    Detector.PT_NIF: ("999999990", "501 964 843"),
    Detector.BE_NATIONAL_NUMBER: ("85.07.30-033.28", "85073003328"),
    Detector.AT_SOCIAL_SECURITY: ("1237 010180", "1237010180"),
    Detector.SE_PERSONNUMMER: ("880320-0016", "19880320-0016"),
}


def valid_identifiers(detector: Detector, count: int, seed: int = 19) -> list[str]:
    rng = random.Random(f"{detector.value}-{seed}")
    found: list[str] = []
    while len(found) < count:
        value = GENERATORS[detector](rng)
        if value is not None and VALIDATORS[detector](value):
            found.append(value)
    return found

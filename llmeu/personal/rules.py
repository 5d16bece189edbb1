"""A policy's `personal_data` section: which detectors run and what a hit does.

    personal_data:
      detectors: {email: mask, iban: block, nl_bsn: restrict, phone: allow}
      restrict: {allow_classes: [on_premise], allow_countries: [], allow_providers: []}
      unscanned: block        # images, audio, files: allow (default) or block
      on_error: closed        # a detector error blocks the call (503); `open` lets it pass
      max_scan_chars: 1000000 # a prompt longer than this is blocked, not passed unscanned

A detector absent from `detectors` does not run. `restrict` only narrows the
policy it belongs to (classes, countries and providers are intersected), so a
hit can never open a route the policy closes.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Detector(StrEnum):
    EMAIL = "email"
    PHONE = "phone"
    IBAN = "iban"
    PAYMENT_CARD = "payment_card"
    IP_ADDRESS = "ip_address"
    NL_BSN = "nl_bsn"
    PL_PESEL = "pl_pesel"
    IT_CODICE_FISCALE = "it_codice_fiscale"
    DE_STEUER_ID = "de_steuer_id"
    FR_NIR = "fr_nir"
    ES_DNI = "es_dni"
    ES_NIE = "es_nie"
    PT_NIF = "pt_nif"
    BE_NATIONAL_NUMBER = "be_national_number"
    AT_SOCIAL_SECURITY = "at_social_security"
    SE_PERSONNUMMER = "se_personnummer"


class Action(StrEnum):
    ALLOW = "allow"
    BLOCK = "block"
    RESTRICT = "restrict"
    MASK = "mask"


class Unscanned(StrEnum):
    ALLOW = "allow"
    BLOCK = "block"


class OnError(StrEnum):
    CLOSED = "closed"
    OPEN = "open"


DEFAULT_MAX_SCAN_CHARS = 1_000_000


@dataclass(frozen=True, slots=True)
class RestrictTo:
    """Where a call carrying a `restrict` hit may still go (empty = as the policy says)."""

    allow_classes: frozenset[str] = frozenset()
    allow_countries: frozenset[str] = frozenset()
    allow_providers: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class PersonalDataRules:
    actions: tuple[tuple[Detector, Action], ...]
    restrict: RestrictTo = RestrictTo()
    unscanned: Unscanned = Unscanned.ALLOW
    on_error: OnError = OnError.CLOSED
    max_scan_chars: int = DEFAULT_MAX_SCAN_CHARS

    def action(self, detector: Detector) -> Action:
        return dict(self.actions).get(detector, Action.ALLOW)

    def active(self) -> frozenset[Detector]:
        """The detectors whose hits change something (an `allow` is still counted)."""
        return frozenset(d for d, _ in self.actions)


def rules_document(rules: PersonalDataRules) -> dict[str, object]:
    """The section in the shape of the configuration file and the platform API."""
    return {
        "detectors": {d.value: a.value for d, a in sorted(rules.actions)},
        "restrict": {
            "allow_classes": sorted(rules.restrict.allow_classes),
            "allow_countries": sorted(rules.restrict.allow_countries),
            "allow_providers": sorted(rules.restrict.allow_providers),
        },
        "unscanned": rules.unscanned.value,
        "on_error": rules.on_error.value,
        "max_scan_chars": rules.max_scan_chars,
    }


def describe_rules(rules: PersonalDataRules) -> str:
    """One line for people: what each detector's hit does, and the switches."""
    by_action: dict[Action, list[str]] = {}
    for detector, action in sorted(rules.actions):
        by_action.setdefault(action, []).append(detector.value)
    actions = "; ".join(f"{a.value} {', '.join(d)}" for a, d in by_action.items()) or "none"
    restrict = rules.restrict
    narrowed = [
        f"{name} {', '.join(sorted(values))}"
        for name, values in (
            ("classes", restrict.allow_classes),
            ("countries", restrict.allow_countries),
            ("providers", restrict.allow_providers),
        )
        if values
    ]
    where = f"; restrict to {', '.join(narrowed)}" if narrowed else ""
    return (
        f"personal data: {actions}{where}; unscanned parts {rules.unscanned.value}; "
        f"detector errors fail {rules.on_error.value}; scans up to {rules.max_scan_chars} "
        "characters"
    )

"""Sovereignty policies: which endpoints a call may use, and how a request narrows them.

A policy admits an endpoint when its sovereignty class, country and provider
are allowed and the provider's retention fits `max_retention`. Empty country
or provider lists mean "any the classes allow". A request may narrow the
policy of its key (name a stricter policy, or give allow-lists) but never
widen it: every widening is refused with the field that widened it.

Beyond where an endpoint runs, a policy may ask who controls it and what it
has been certified for: `require_jurisdictions` (the ISO countries whose law
may reach the provider's controlling entity: `eu_resident` endpoints run in
the EU but answer to another jurisdiction), `require_certifications` (every
one listed must be held) and `min_seal` (the Cloud Sovereignty Framework's
assurance level). An endpoint whose jurisdiction, certifications or SEAL are
unknown does not meet a requirement on them: unknown is not compliant.

`limits_fail` says what happens to the key's limited calls while the shared
limits store (Redis) cannot be reached: `open` admits them unchecked (the
gateway keeps serving), `closed` refuses them (a budget is never overspent).
It governs the key's limits, not where a call runs, so a request's narrowing
never changes it: the effective policy keeps the key's.

`personal_data` (see `llmeu.personal.rules`) says what happens to a call
whose prompt carries personal data. Like `limits_fail`, it is the key's: a
request's narrowing keeps it. Its `restrict` action narrows the route with
`restricted`, which intersects and so never widens.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import StrEnum

from llmeu.errors import InvalidRequest, PermissionDenied
from llmeu.personal.rules import PersonalDataRules, RestrictTo, rules_document
from llmeu.routing.catalog import Certification, Endpoint, SovereigntyClass
from llmeu.routing.durations import Duration

DEFAULT_KEEP_METADATA = Duration.parse("P6M")
"""Six months: the least the AI Act asks deployers to keep automatically generated logs."""


class LimitsFail(StrEnum):
    OPEN = "open"
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class Policy:
    policy_id: str
    allow_classes: frozenset[SovereigntyClass]
    max_retention: Duration
    store_content: Duration
    allow_countries: frozenset[str] = frozenset()
    allow_providers: frozenset[str] = frozenset()
    fallback: bool = True
    limits_fail: LimitsFail = LimitsFail.OPEN
    require_jurisdictions: frozenset[str] = frozenset()
    require_certifications: frozenset[Certification] = frozenset()
    min_seal: int | None = None
    keep_metadata: Duration | None = None
    """How long the metadata of its calls is kept; None: the gateway's `--keep-metadata`."""
    personal_data: PersonalDataRules | None = None

    def exclusion(self, endpoint: Endpoint) -> tuple[str, str] | None:
        """(rule, reason) when the policy excludes the endpoint, else None."""
        if endpoint.sovereignty_class not in self.allow_classes:
            allowed = ", ".join(sorted(self.allow_classes))
            return (
                "allow_classes",
                f"sovereignty class {endpoint.sovereignty_class} is not in [{allowed}]",
            )
        if self.allow_countries and endpoint.country not in self.allow_countries:
            allowed = ", ".join(sorted(self.allow_countries))
            country = endpoint.country or "unknown"
            return "allow_countries", f"country {country} is not in [{allowed}]"
        if self.allow_providers and endpoint.provider not in self.allow_providers:
            allowed = ", ".join(sorted(self.allow_providers))
            return "allow_providers", f"provider {endpoint.provider} is not in [{allowed}]"
        if endpoint.retention > self.max_retention:
            return (
                "max_retention",
                f"provider retention {endpoint.retention} exceeds "
                f"max_retention {self.max_retention}",
            )
        return self._compliance_exclusion(endpoint)

    def _compliance_exclusion(self, endpoint: Endpoint) -> tuple[str, str] | None:
        if self.require_jurisdictions and endpoint.jurisdiction not in self.require_jurisdictions:
            allowed = ", ".join(sorted(self.require_jurisdictions))
            jurisdiction = endpoint.jurisdiction or "unknown"
            return (
                "require_jurisdictions",
                f"provider jurisdiction {jurisdiction} is not in [{allowed}]",
            )
        missing = self.require_certifications - endpoint.certifications
        if missing:
            return (
                "require_certifications",
                f"provider lacks certifications [{', '.join(sorted(missing))}]",
            )
        if self.min_seal is not None and (endpoint.seal is None or endpoint.seal < self.min_seal):
            seal = "unknown" if endpoint.seal is None else f"SEAL-{endpoint.seal}"
            return "min_seal", f"provider assurance level {seal} is below SEAL-{self.min_seal}"
        return None

    def admits(self, endpoint: Endpoint) -> bool:
        return self.exclusion(endpoint) is None

    def route_retention(self, endpoint: Endpoint) -> Duration:
        """The longest time any party on this route keeps content (DESIGN §3)."""
        return max(endpoint.retention, self.store_content)

    def widening_field(self, stricter: Policy) -> str | None:
        """The first field in which `stricter` is looser than this policy, or None."""
        if not stricter.allow_classes <= self.allow_classes:
            return "allow_classes"
        if self.allow_countries and not (
            stricter.allow_countries and stricter.allow_countries <= self.allow_countries
        ):
            return "allow_countries"
        if self.allow_providers and not (
            stricter.allow_providers and stricter.allow_providers <= self.allow_providers
        ):
            return "allow_providers"
        if stricter.max_retention > self.max_retention:
            return "max_retention"
        if stricter.store_content > self.store_content:
            return "store_content"
        if stricter.fallback and not self.fallback:
            return "fallback"
        if self.require_jurisdictions and not (
            stricter.require_jurisdictions
            and stricter.require_jurisdictions <= self.require_jurisdictions
        ):
            return "require_jurisdictions"
        if not self.require_certifications <= stricter.require_certifications:
            return "require_certifications"
        if self.min_seal is not None and (
            stricter.min_seal is None or stricter.min_seal < self.min_seal
        ):
            return "min_seal"
        return None


def policy_document(policy: Policy) -> dict[str, object]:
    """A policy in the shape of the configuration file (and of the platform API)."""
    return {
        "policy_id": policy.policy_id,
        "allow_classes": sorted(c.value for c in policy.allow_classes),
        "allow_countries": sorted(policy.allow_countries),
        "allow_providers": sorted(policy.allow_providers),
        "max_retention": policy.max_retention.text,
        "store_content": policy.store_content.text,
        "fallback": policy.fallback,
        "limits_fail": policy.limits_fail.value,
        "require_jurisdictions": sorted(policy.require_jurisdictions),
        "require_certifications": sorted(c.value for c in policy.require_certifications),
        "min_seal": policy.min_seal,
        "keep_metadata": policy.keep_metadata.text if policy.keep_metadata else None,
        "personal_data": rules_document(policy.personal_data) if policy.personal_data else None,
    }


@dataclass(frozen=True, slots=True)
class Narrowing:
    """What a request asked for: a named policy and/or allow-lists (empty = no narrowing)."""

    policy_id: str | None = None
    allow_classes: tuple[str, ...] = ()
    allow_countries: tuple[str, ...] = ()
    allow_providers: tuple[str, ...] = ()
    require_jurisdictions: tuple[str, ...] = ()
    require_certifications: tuple[str, ...] = ()
    min_seal: int | None = None
    source: str = "llmeu"

    def is_empty(self) -> bool:
        return not (
            self.policy_id
            or self.allow_classes
            or self.allow_countries
            or self.allow_providers
            or self.require_jurisdictions
            or self.require_certifications
            or self.min_seal is not None
        )


def narrow(base: Policy, narrowing: Narrowing, policies: dict[str, Policy]) -> Policy:
    """The effective policy: `base` narrowed by the request, or a refusal naming the field.

    A named policy brings its rules but keeps `base`'s `limits_fail`,
    `keep_metadata` and `personal_data`: how the key's limits are enforced, how
    long its calls are on record and what personal data may do are the
    admin's choice, not the request's.
    """
    policy = base
    src = narrowing.source
    if narrowing.policy_id is not None and narrowing.policy_id != base.policy_id:
        named = policies.get(narrowing.policy_id)
        if named is None:
            raise InvalidRequest(
                f"unknown policy `{narrowing.policy_id}`",
                param=f"{src}.policy_id",
                code="unknown_policy",
            )
        field = base.widening_field(named)
        if field is not None:
            raise PermissionDenied(
                f"`{src}.policy_id` names policy `{named.policy_id}`, which would widen "
                f"policy `{base.policy_id}` in `{field}`; a request may only narrow its policy",
                param=f"{src}.policy_id",
                code="policy_widening",
            )
        policy = named
        kept = (base.limits_fail, base.keep_metadata, base.personal_data)
        if (named.limits_fail, named.keep_metadata, named.personal_data) != kept:
            policy = replace(
                named,
                limits_fail=base.limits_fail,
                keep_metadata=base.keep_metadata,
                personal_data=base.personal_data,
            )
    if narrowing.allow_classes:
        classes = _parse_classes(narrowing.allow_classes, f"{src}.allow_classes")
        _refuse_outside(classes, policy.allow_classes, policy, f"{src}.allow_classes")
        policy = replace(policy, allow_classes=classes)
    if narrowing.allow_countries:
        countries = frozenset(c.upper() for c in narrowing.allow_countries)
        if policy.allow_countries:
            _refuse_outside(countries, policy.allow_countries, policy, f"{src}.allow_countries")
        policy = replace(policy, allow_countries=countries)
    if narrowing.allow_providers:
        providers = frozenset(narrowing.allow_providers)
        if policy.allow_providers:
            _refuse_outside(providers, policy.allow_providers, policy, f"{src}.allow_providers")
        policy = replace(policy, allow_providers=providers)
    return _narrow_compliance(policy, narrowing)


def restricted(policy: Policy, restrict: RestrictTo) -> Policy:
    """`policy` narrowed to where a call carrying restricted personal data may go: each list
    given is intersected with the policy's, so the result admits no endpoint `policy` does
    not (an empty intersection admits none, and routing then refuses with its reasons)."""
    changes: dict[str, object] = {}
    if restrict.allow_classes:
        wanted = frozenset(SovereigntyClass(c) for c in restrict.allow_classes)
        changes["allow_classes"] = policy.allow_classes & wanted
    for name in ("allow_countries", "allow_providers"):
        wanted = getattr(restrict, name)
        if wanted:
            current: frozenset[str] = getattr(policy, name)
            changes[name] = (current & wanted) if current else wanted
            if not changes[name]:
                # An empty list means "any": an empty intersection must exclude everything.
                changes["allow_classes"] = frozenset()
    return replace(policy, **changes) if changes else policy  # type: ignore[arg-type]


def _narrow_compliance(policy: Policy, narrowing: Narrowing) -> Policy:
    """Requirements a request adds: certifications join the policy's, jurisdictions must lie
    inside the policy's list (when it has one), a SEAL level may only rise."""
    src = narrowing.source
    if narrowing.require_jurisdictions:
        wanted = frozenset(expand_jurisdictions(narrowing.require_jurisdictions))
        bad = sorted(c for c in wanted if len(c) != 2 or not c.isalpha())
        if bad:
            raise InvalidRequest(
                f"require_jurisdictions takes two-letter ISO countries or EU, got {bad}",
                param=f"{src}.require_jurisdictions",
            )
        if policy.require_jurisdictions:
            _refuse_outside(
                wanted, policy.require_jurisdictions, policy, f"{src}.require_jurisdictions"
            )
        policy = replace(policy, require_jurisdictions=wanted)
    if narrowing.require_certifications:
        certifications = parse_certifications(
            narrowing.require_certifications, f"{src}.require_certifications"
        )
        policy = replace(
            policy, require_certifications=policy.require_certifications | certifications
        )
    if narrowing.min_seal is not None:
        if narrowing.min_seal not in range(0, 5):
            raise InvalidRequest(
                f"min_seal must be 0 to 4, got {narrowing.min_seal}", param=f"{src}.min_seal"
            )
        if policy.min_seal is None or narrowing.min_seal > policy.min_seal:
            policy = replace(policy, min_seal=narrowing.min_seal)
    return policy


EU_MEMBER_STATES = frozenset((
    "AT", "BE", "BG", "CY", "CZ", "DE", "DK", "EE", "ES", "FI", "FR", "GR", "HR", "HU",
    "IE", "IT", "LT", "LU", "LV", "MT", "NL", "PL", "PT", "RO", "SE", "SI", "SK",
))  # fmt: skip
"""The 27 member states (ISO 3166-1; Greece is GR, not the EU's own code EL)."""


def expand_jurisdictions(values: Iterable[str]) -> list[str]:
    """Upper-cased ISO countries, `EU` standing for every member state."""
    out: list[str] = []
    for value in values:
        code = value.strip().upper()
        out.extend(sorted(EU_MEMBER_STATES) if code == "EU" else [code])
    return out


def parse_certifications(values: Iterable[str], param: str) -> frozenset[Certification]:
    try:
        return frozenset(Certification(v) for v in values)
    except ValueError:
        known = ", ".join(c.value for c in Certification)
        raise InvalidRequest(
            f"unknown certification in {list(values)}; known: {known}", param=param
        ) from None


def _parse_classes(values: Iterable[str], param: str) -> frozenset[SovereigntyClass]:
    try:
        return frozenset(SovereigntyClass(v) for v in values)
    except ValueError:
        known = ", ".join(c.value for c in SovereigntyClass)
        raise InvalidRequest(
            f"unknown sovereignty class in {list(values)}; known classes: {known}", param=param
        ) from None


def _refuse_outside(
    requested: frozenset[str] | frozenset[SovereigntyClass],
    allowed: frozenset[str] | frozenset[SovereigntyClass],
    policy: Policy,
    param: str,
) -> None:
    extra = sorted(str(v) for v in requested - allowed)
    if extra:
        raise PermissionDenied(
            f"`{param}` would widen policy `{policy.policy_id}` with {', '.join(extra)}; "
            "a request may only narrow its policy",
            param=param,
            code="policy_widening",
        )

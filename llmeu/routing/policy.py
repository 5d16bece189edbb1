"""Sovereignty policies: which endpoints a call may use, and how a request narrows them.

A policy admits an endpoint when its sovereignty class, country and provider
are allowed and the provider's retention fits `max_retention`. Empty country
or provider lists mean "any the classes allow". A request may narrow the
policy of its key (name a stricter policy, or give allow-lists) but never
widen it: every widening is refused with the field that widened it.

`limits_fail` says what happens to the key's limited calls while the shared
limits store (Redis) cannot be reached: `open` admits them unchecked (the
gateway keeps serving), `closed` refuses them (a budget is never overspent).
It governs the key's limits, not where a call runs, so a request's narrowing
never changes it: the effective policy keeps the key's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import StrEnum

from llmeu.errors import InvalidRequest, PermissionDenied
from llmeu.routing.catalog import Endpoint, SovereigntyClass
from llmeu.routing.durations import Duration


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
    }


@dataclass(frozen=True, slots=True)
class Narrowing:
    """What a request asked for: a named policy and/or allow-lists (empty = no narrowing)."""

    policy_id: str | None = None
    allow_classes: tuple[str, ...] = ()
    allow_countries: tuple[str, ...] = ()
    allow_providers: tuple[str, ...] = ()
    source: str = "llmeu"

    def is_empty(self) -> bool:
        return not (
            self.policy_id or self.allow_classes or self.allow_countries or self.allow_providers
        )


def narrow(base: Policy, narrowing: Narrowing, policies: dict[str, Policy]) -> Policy:
    """The effective policy: `base` narrowed by the request, or a refusal naming the field.

    A named policy brings its rules but keeps `base`'s `limits_fail`: how the
    key's limits are enforced is the admin's choice, not the request's.
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
        if named.limits_fail is not base.limits_fail:
            policy = replace(named, limits_fail=base.limits_fail)
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
    return policy


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

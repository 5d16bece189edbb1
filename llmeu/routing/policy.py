"""Sovereignty policies: which sites a call may reach, and how a request narrows them.

A policy admits an endpoint when each of its predicates admits it: its
sovereignty class, country and provider are allowed, the provider's
retention fits `max_retention`, and, where the policy asks who controls it
and what it has been certified for, `require_jurisdictions` (the ISO
countries whose law may reach the provider's controlling entity:
`eu_resident` endpoints run in the EU but answer to another jurisdiction),
`require_certifications` (every one listed must be held) and `min_seal` (the
Cloud Sovereignty Framework's assurance level) are met. An endpoint whose
jurisdiction, certifications or SEAL are unknown does not meet a requirement
on them: unknown is not compliant. MCP tool servers are sites too, admitted by the
same predicates and by `allow_mcp_servers`; `allow_tools` then says which of their tools
(by exposed name, `crm__lookup`) a key may call. Each predicate is one row of the table in
`llmeu.routing.predicates`; this module applies the table. Empty country or
provider lists mean "any the classes allow". A request may narrow the policy
of its key (name a stricter policy, or give allow-lists) but never widen it:
every widening is refused with the field that widened it.

`limits_fail` says what happens to the key's limited calls while the shared
limits store (Redis) cannot be reached: `open` admits them unchecked (the
gateway keeps serving), `closed` refuses them (a budget is never overspent).
It governs the key's limits, not where a call runs, so a request's narrowing
never changes it: the effective policy keeps the key's.

`allow_hosted_tools` names the hosted tools (`llmeu.calls.hosted_tools`) a
call may send to a provider that runs them; `hosted_tools` says what a call
gets when one of its hosted tools cannot go: `drop` (the default) serves it
without the tool and says so, `reject` refuses it. Like `limits_fail`, that
choice is the key's: a request's narrowing keeps it.

`personal_data` (see `llmeu.personal.rules`) says what happens to a call
whose prompt carries personal data. Like `limits_fail`, it is the key's: a
request's narrowing keeps it. Its `restrict` action narrows the route with
`restricted`, which intersects and so never widens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from llmeu.errors import InvalidRequest, PermissionDenied
from llmeu.personal.rules import PersonalDataRules, RestrictTo, rules_document
from llmeu.routing.cache_rules import CacheRules, cache_document
from llmeu.routing.catalog import Certification, SovereigntyClass
from llmeu.routing.durations import Duration
from llmeu.routing.glob_rules import matches
from llmeu.routing.predicates import (
    EU_MEMBER_STATES,
    NARROWABLE,
    RULES,
    Rule,
    Site,
    expand_jurisdictions,
    parse_certifications,
)

__all__ = [
    "DEFAULT_KEEP_METADATA", "EU_MEMBER_STATES", "HostedToolsMode", "LimitsFail", "Narrowing",
    "Policy",
    "expand_jurisdictions", "narrow", "parse_certifications", "policy_document", "restricted",
]  # fmt: skip

DEFAULT_KEEP_METADATA = Duration.parse("P6M")
"""Six months: the least the AI Act asks deployers to keep automatically generated logs."""


class LimitsFail(StrEnum):
    OPEN = "open"
    CLOSED = "closed"


class HostedToolsMode(StrEnum):
    """What a call gets when a hosted tool it sends cannot go where it is served."""

    DROP = "drop"  # served without the tool, which the answer names
    REJECT = "reject"  # refused (400), naming the tool


@dataclass(frozen=True, slots=True)
class Policy:
    """A policy: one field per rule of `llmeu.routing.predicates.RULES`, plus what is the
    key's own (`limits_fail`, `keep_metadata`, `personal_data`, `hosted_tools`)."""

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
    allow_hosted_tools: frozenset[str] = frozenset()
    """The hosted tools a call may send to a provider that runs them; empty: none."""
    hosted_tools: HostedToolsMode = HostedToolsMode.DROP
    allow_mcp_servers: frozenset[str] = frozenset()
    """Patterns of the tool servers a key may reach (`llmeu.routing.glob_rules`); empty: any."""
    allow_tools: frozenset[str] = frozenset()
    """Patterns of the tools (exposed names) a key may call; empty: any."""
    keep_metadata: Duration | None = None
    """How long the metadata of its calls is kept; None: the gateway's `--keep-metadata`."""
    personal_data: PersonalDataRules | None = None
    cache: CacheRules | None = None
    """Whether calls under the policy may be answered from earlier ones
    (`llmeu.routing.cache_rules`); None: never."""
    _checks: tuple[tuple[Rule[Any], Any], ...] = field(
        default=(), init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        # The rules that can exclude a site with this policy's values, read once: routing
        # asks every candidate of every call.
        checks = tuple(
            (rule, value) for rule in RULES if not rule.admits_every_site(value := rule.value(self))
        )
        object.__setattr__(self, "_checks", checks)

    def exclusion(self, site: Site) -> tuple[str, str] | None:
        """(rule, reason) when the policy excludes the site, else None."""
        for rule, value in self._checks:
            reason = rule.exclusion(value, site)
            if reason is not None:
                return rule.name, reason
        return None

    def admits(self, site: Site) -> bool:
        return self.exclusion(site) is None

    def admits_tool(self, name: str) -> bool:
        """Whether `allow_tools` admits a tool by its exposed name (`crm__lookup`)."""
        return not self.allow_tools or matches(name, self.allow_tools)

    def route_retention(self, site: Site) -> Duration:
        """The longest time any party on this route keeps content (docs/design.md §3)."""
        return max(site.retention, self.store_content)

    def widening_field(self, stricter: Policy) -> str | None:
        """The first field in which `stricter` is looser than this policy, or None."""
        for rule in RULES:
            if rule.widens(rule.value(self), rule.value(stricter)):
                return rule.name
        return None


def policy_document(policy: Policy) -> dict[str, object]:
    """A policy in the shape of the configuration file (and of the platform API)."""
    document: dict[str, object] = {"policy_id": policy.policy_id}
    for rule in RULES:
        document[rule.name] = rule.document(rule.value(policy))
    document["limits_fail"] = policy.limits_fail.value
    document["hosted_tools"] = policy.hosted_tools.value
    document["keep_metadata"] = policy.keep_metadata.text if policy.keep_metadata else None
    document["personal_data"] = (
        rules_document(policy.personal_data) if policy.personal_data else None
    )
    document["cache"] = cache_document(policy.cache)
    return document


class Narrowing:
    """What a request asked for: a named policy and/or values of the narrowable rules, by
    their field names (`allow_classes=("on_premise",)`, `min_seal=3`); empty or None values
    ask nothing. `source` is how the refusals name the fields (`llmeu`, `x-llmeu-policy`,
    `cli`)."""

    __slots__ = ("asked", "policy_id", "source")

    def __init__(
        self, policy_id: str | None = None, *, source: str = "llmeu", **asked: object
    ) -> None:
        names = {rule.name for rule in NARROWABLE}
        unknown = set(asked) - names
        if unknown:
            raise TypeError(f"no narrowable rule named {', '.join(sorted(unknown))}")
        self.policy_id = policy_id
        self.source = source
        self.asked: dict[str, list[Any]] = {}
        for name, value in asked.items():
            if isinstance(value, Sequence) and not isinstance(value, str):
                if value:
                    self.asked[name] = list(value)
            elif value is not None:
                self.asked[name] = [value]

    @classmethod
    def of(cls, fields: object, *, policy_id: str | None, source: str) -> Narrowing:
        """The narrowing a request's field gives: each narrowable rule's value read from the
        attribute of the same name (absent, unset or empty: not asked)."""
        asked = {}
        for rule in NARROWABLE:
            value = getattr(fields, rule.name, None)
            if isinstance(value, list | int) and not isinstance(value, bool):
                asked[rule.name] = value
        return cls(policy_id, source=source, **asked)

    def is_empty(self) -> bool:
        return not (self.policy_id or self.asked)


def narrow(base: Policy, narrowing: Narrowing, policies: dict[str, Policy]) -> Policy:
    """The effective policy: `base` narrowed by the request, or a refusal naming the field.

    A named policy brings its rules but keeps `base`'s `limits_fail`,
    `keep_metadata`, `personal_data` and `hosted_tools`: how the key's limits
    are enforced, how long its calls are on record, what personal data may do
    and whether a tool that cannot go is dropped or refused are the admin's
    choice, not the request's.
    """
    policy = base
    src = narrowing.source
    if narrowing.policy_id is not None and narrowing.policy_id != base.policy_id:
        policy = _named(base, narrowing.policy_id, policies, src)
    changes: dict[str, Any] = {}
    for rule in NARROWABLE:
        requested = narrowing.asked.get(rule.name)
        if requested:
            changes[rule.name] = rule.narrow(
                rule.value(policy), requested, f"{src}.{rule.name}", policy.policy_id
            )
    return replace(policy, **changes) if changes else policy


def _named(base: Policy, policy_id: str, policies: dict[str, Policy], src: str) -> Policy:
    named = policies.get(policy_id)
    if named is None:
        raise InvalidRequest(
            f"unknown policy `{policy_id}`", param=f"{src}.policy_id", code="unknown_policy"
        )
    widened = base.widening_field(named)
    if widened is not None:
        raise PermissionDenied(
            f"`{src}.policy_id` names policy `{named.policy_id}`, which would widen "
            f"policy `{base.policy_id}` in `{widened}`; a request may only narrow its policy",
            param=f"{src}.policy_id",
            code="policy_widening",
        )
    kept = (base.limits_fail, base.keep_metadata, base.personal_data, base.hosted_tools)
    if (named.limits_fail, named.keep_metadata, named.personal_data, named.hosted_tools) == kept:
        return named
    return replace(
        named,
        limits_fail=base.limits_fail,
        keep_metadata=base.keep_metadata,
        personal_data=base.personal_data,
        hosted_tools=base.hosted_tools,
    )


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

"""The kinds of rule a policy's predicate table is made of, each one comparison.

A rule reads one field of a policy. Its kind says how that field admits a site
(`AllowedValues`: the site's value is listed; `AtMost`: a duration not
exceeded; `IncludesAll`: every listed certification held; `AtLeastSeal`: an
assurance level reached), how a stricter policy differs from a looser one,
and how a request narrows it. `NeverEnable` is a permission of the gateway's
own (fallback) that only widening reads. The rows themselves are
`llmeu.routing.predicates.RULES`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from llmeu.errors import ConfigError, InvalidRequest, PermissionDenied
from llmeu.routing import yaml_nodes as nodes
from llmeu.routing.catalog import SEAL_LEVELS, Certification, SovereigntyClass
from llmeu.routing.durations import ZERO, Duration
from llmeu.routing.yaml_nodes import Node

V = TypeVar("V")


class Site(Protocol):
    """What a policy's predicates read of the place a call's content would reach."""

    @property
    def sovereignty_class(self) -> SovereigntyClass: ...
    @property
    def country(self) -> str: ...
    @property
    def provider(self) -> str: ...
    @property
    def retention(self) -> Duration: ...
    @property
    def jurisdiction(self) -> str: ...
    @property
    def certifications(self) -> frozenset[Certification]: ...
    @property
    def seal(self) -> int | None: ...


class HasRules(Protocol):
    """A policy as the rules see it: each rule reads and replaces its own field by name."""

    @property
    def policy_id(self) -> str: ...


class Rule(ABC, Generic[V]):
    """One policy field; see the module docstring for what each method is used for."""

    name: str
    label: str

    @property
    @abstractmethod
    def kind(self) -> str:
        """The comparison, by name: the console implements each kind once."""

    @property
    def narrowable(self) -> bool:
        """Whether a request may narrow it (by a `llmeu` field of the same name)."""
        return True

    @property
    def required(self) -> bool:
        """Whether a policy must state it."""
        return False

    def value(self, policy: HasRules) -> V:
        value: V = getattr(policy, self.name)
        return value

    @property
    @abstractmethod
    def default(self) -> V:
        """The value of a policy that does not mention the field."""

    @abstractmethod
    def parse(self, node: Node) -> V:
        """The field's YAML (or JSON) node, checked; a `ConfigError` names the field."""

    @abstractmethod
    def document(self, value: V) -> object:
        """The field as the configuration file and the platform API write it."""

    def exclusion(self, value: V, site: Site) -> str | None:
        """Why a site does not meet `value`, or None when it does (or the rule is not about
        sites)."""
        return None

    def admits_every_site(self, value: V) -> bool:
        """Whether `value` excludes no site at all (routing then skips the rule)."""
        return True

    @abstractmethod
    def widens(self, base: V, other: V) -> bool:
        """Whether a policy with `other` in this field is looser than one with `base`."""

    def narrow(self, current: V, requested: list[Any], param: str, policy_id: str) -> V:
        """`current` narrowed by what a request asked (never empty), or the refusal."""
        raise InvalidRequest(f"`{self.name}` cannot be narrowed by a request", param=param)

    @abstractmethod
    def describe(self, value: V) -> str | None:
        """The field in words for `llmeu routes`; None where it says nothing worth saying."""


def widening(policy_id: str, param: str, extra: Iterable[object]) -> PermissionDenied:
    return PermissionDenied(
        f"`{param}` would widen policy `{policy_id}` with {', '.join(sorted(map(str, extra)))}; "
        "a request may only narrow its policy",
        param=param,
        code="policy_widening",
    )


@dataclass(frozen=True)
class AllowedValues(Rule[frozenset[Any]]):
    """The site's value must be one of the listed. With `empty_is_any`, an empty list admits
    every value (and an unknown one); without, it admits none. Without `read`, the list is of
    what a call may use rather than of where it goes (the hosted tools it may send): it
    excludes no site, and a policy that leaves it out allows none."""

    name: str
    label: str
    what: str
    read: Callable[[Site], object] | None
    item: Callable[[Node, str], Any]
    from_request: Callable[[str, str], Any]
    empty_is_any: bool

    @property
    def kind(self) -> str:
        return "within_or_any" if self.empty_is_any else "within"

    @property
    def required(self) -> bool:
        return not self.empty_is_any and self.read is not None

    @property
    def default(self) -> frozenset[Any]:
        return frozenset()

    def parse(self, node: Node) -> frozenset[Any]:
        items: list[Any] = []
        for item in nodes.sequence(node, self.name):
            parsed = self.item(item, self.name)
            items.extend(parsed if isinstance(parsed, list) else [parsed])
        return frozenset(items)

    def document(self, value: frozenset[Any]) -> object:
        return sorted(str(v) for v in value)

    def exclusion(self, value: frozenset[Any], site: Site) -> str | None:
        if (self.empty_is_any and not value) or self.read is None:
            return None
        got = self.read(site)
        if got in value:
            return None
        return f"{self.what} {got or 'unknown'} is not in [{', '.join(sorted(map(str, value)))}]"

    def admits_every_site(self, value: frozenset[Any]) -> bool:
        return (self.empty_is_any and not value) or self.read is None

    def widens(self, base: frozenset[Any], other: frozenset[Any]) -> bool:
        if not self.empty_is_any:
            return not other <= base
        return bool(base) and not (other and other <= base)

    def narrow(
        self, current: frozenset[Any], requested: list[Any], param: str, policy_id: str
    ) -> frozenset[Any]:
        wanted: list[Any] = []
        for value in requested:
            parsed = self.from_request(str(value), param)
            wanted.extend(parsed if isinstance(parsed, list) else [parsed])
        chosen = frozenset(wanted)
        if (current or not self.empty_is_any) and not chosen <= current:
            raise widening(policy_id, param, chosen - current)
        return chosen

    def describe(self, value: frozenset[Any]) -> str | None:
        listed = ", ".join(sorted(map(str, value)))
        return f"{self.label} {listed or ('any' if self.empty_is_any else 'none')}"


@dataclass(frozen=True)
class AtMost(Rule[Duration]):
    """A duration that may not be exceeded: by the site's retention (`read`), or, without
    `read`, a limit of the gateway's own (how long it keeps content)."""

    name: str
    label: str
    read: Callable[[Site], Duration] | None
    must_be_given: bool = False

    @property
    def kind(self) -> str:
        return "at_most_duration"

    @property
    def narrowable(self) -> bool:
        return False

    @property
    def required(self) -> bool:
        return self.must_be_given

    @property
    def default(self) -> Duration:
        return ZERO

    def parse(self, node: Node) -> Duration:
        return nodes.duration(node, self.name)

    def document(self, value: Duration) -> object:
        return value.text

    def exclusion(self, value: Duration, site: Site) -> str | None:
        if self.read is None or self.read(site) <= value:
            return None
        return f"provider retention {self.read(site)} exceeds {self.name} {value}"

    def admits_every_site(self, value: Duration) -> bool:
        return self.read is None

    def widens(self, base: Duration, other: Duration) -> bool:
        return other > base

    def describe(self, value: Duration) -> str | None:
        return f"{self.label} {value}"


@dataclass(frozen=True)
class NeverEnable(Rule[bool]):
    """A permission a stricter policy may take away but never give."""

    name: str
    label: str

    @property
    def kind(self) -> str:
        return "never_enable"

    @property
    def narrowable(self) -> bool:
        return False

    @property
    def default(self) -> bool:
        return True

    def parse(self, node: Node) -> bool:
        value: bool = nodes.scalar(node, self.name, bool)
        return value

    def document(self, value: bool) -> object:
        return value

    def widens(self, base: bool, other: bool) -> bool:
        return other and not base

    def describe(self, value: bool) -> str | None:
        return f"{self.label} {'on' if value else 'off'}"


@dataclass(frozen=True)
class IncludesAll(Rule[frozenset[Certification]]):
    """The site must hold every listed certification; a request adds to the list."""

    name: str
    label: str

    @property
    def kind(self) -> str:
        return "includes_all"

    @property
    def default(self) -> frozenset[Certification]:
        return frozenset()

    def parse(self, node: Node) -> frozenset[Certification]:
        return frozenset(
            nodes.enum(n, self.name, Certification) for n in nodes.sequence(node, self.name)
        )

    def document(self, value: frozenset[Certification]) -> object:
        return sorted(c.value for c in value)

    def exclusion(self, value: frozenset[Certification], site: Site) -> str | None:
        missing = value - site.certifications
        if not missing:
            return None
        return f"provider lacks certifications [{', '.join(sorted(missing))}]"

    def admits_every_site(self, value: frozenset[Certification]) -> bool:
        return not value

    def widens(self, base: frozenset[Certification], other: frozenset[Certification]) -> bool:
        return not base <= other

    def narrow(
        self, current: frozenset[Certification], requested: list[Any], param: str, policy_id: str
    ) -> frozenset[Certification]:
        return current | parse_certifications(requested, param)

    def describe(self, value: frozenset[Certification]) -> str | None:
        return f"{self.label} {', '.join(sorted(c.value for c in value))}" if value else None


@dataclass(frozen=True)
class AtLeastSeal(Rule["int | None"]):
    """The lowest assurance level of the Cloud Sovereignty Framework (SEAL-0 … SEAL-4); a
    site whose level is unknown does not meet it; a request may only raise it."""

    name: str
    label: str

    @property
    def kind(self) -> str:
        return "at_least"

    @property
    def default(self) -> int | None:
        return None

    def parse(self, node: Node) -> int | None:
        return seal_level(node, self.name)

    def document(self, value: int | None) -> object:
        return value

    def exclusion(self, value: int | None, site: Site) -> str | None:
        if value is None or (site.seal is not None and site.seal >= value):
            return None
        seal = "unknown" if site.seal is None else f"SEAL-{site.seal}"
        return f"provider assurance level {seal} is below SEAL-{value}"

    def admits_every_site(self, value: int | None) -> bool:
        return value is None

    def widens(self, base: int | None, other: int | None) -> bool:
        return base is not None and (other is None or other < base)

    def narrow(
        self, current: int | None, requested: list[Any], param: str, policy_id: str
    ) -> int | None:
        (level,) = requested
        if not isinstance(level, int) or isinstance(level, bool) or level not in SEAL_LEVELS:
            raise InvalidRequest(f"min_seal must be 0 to 4, got {level}", param=param)
        return level if current is None or level > current else current

    def describe(self, value: int | None) -> str | None:
        return None if value is None else f"at least SEAL-{value}"


def seal_level(node: Node | None, what: str) -> int | None:
    """A Cloud Sovereignty Framework level: 0 to 4 (SEAL-0 … SEAL-4)."""
    if node is None or nodes.is_null(node):
        return None
    value: int = nodes.scalar(node, what, int)
    if value not in SEAL_LEVELS:
        raise ConfigError(
            f"{what} must be a SEAL level from 0 to 4, got {value}",
            field=what,
            line=nodes.line(node),
        )
    return value


def parse_certifications(values: Iterable[str], param: str) -> frozenset[Certification]:
    try:
        return frozenset(Certification(v) for v in values)
    except ValueError:
        known = ", ".join(c.value for c in Certification)
        raise InvalidRequest(
            f"unknown certification in {list(values)}; known: {known}", param=param
        ) from None

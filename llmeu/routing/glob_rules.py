"""Policy rules that list names by pattern: which tool servers and which tools a key may use.

`allow_mcp_servers` lists tool-server ids, `allow_tools` the tools' exposed
names (`crm__lookup`), each as patterns where `*` stands for any run of
characters and `?` for one (`crm`, `crm-*`, `*__search`); every other
character is itself. An empty list admits every name the other rules admit.

A narrower list is one whose every pattern is one of the wider list's, or a
plain name (no `*` or `?`) a pattern of the wider list matches: `crm__lookup`
narrows `crm__*`, while `crm__get*` does not (whether one pattern covers
another is not decided beyond that, so such a request is refused as a
widening rather than let through on a guess). The console implements the
same comparison (`globs` in `policy.js`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from llmeu.errors import ConfigError, InvalidRequest
from llmeu.routing import yaml_nodes as nodes
from llmeu.routing.rule_kinds import Rule, Site, widening
from llmeu.routing.yaml_nodes import Node

_WILDCARDS = frozenset("*?")
_MAX_PATTERN = 200
_VALID = re.compile(r"^[\x21-\x7e]+$")


def is_pattern(text: str) -> bool:
    return not _WILDCARDS.isdisjoint(text)


@functools.lru_cache(maxsize=1024)
def _compiled(patterns: frozenset[str]) -> re.Pattern[str]:
    parts = (re.escape(p).replace(r"\*", ".*").replace(r"\?", ".") for p in sorted(patterns))
    return re.compile("|".join(f"(?:{p})" for p in parts), re.DOTALL)


def matches(name: str, patterns: frozenset[str]) -> bool:
    """Whether a pattern of `patterns` matches all of `name`."""
    return _compiled(patterns).fullmatch(name) is not None


def within(pattern: str, patterns: frozenset[str]) -> bool:
    """Whether `pattern` admits nothing `patterns` does not (see the module docstring)."""
    return pattern in patterns or (not is_pattern(pattern) and matches(pattern, patterns))


def check_pattern(text: str) -> str | None:
    """Why `text` is not a valid pattern, or None."""
    if not _VALID.match(text):
        return "a pattern is printable ASCII without spaces"
    if len(text) > _MAX_PATTERN:
        return f"a pattern has at most {_MAX_PATTERN} characters"
    return None


@dataclass(frozen=True)
class AllowedGlobs(Rule[frozenset[str]]):
    """The site's name (`read`) must match a listed pattern; an empty list admits every name.
    Without `read`, the rule is about something other than sites (a tool's name): it takes
    part in widening and narrowing, and whoever knows the name asks `matches`."""

    name: str
    label: str
    what: str
    read: Callable[[Site], str | None] | None

    @property
    def kind(self) -> str:
        return "globs"

    @property
    def default(self) -> frozenset[str]:
        return frozenset()

    def parse(self, node: Node) -> frozenset[str]:
        patterns = []
        for item in nodes.sequence(node, self.name):
            text = nodes.name(item, self.name)
            problem = check_pattern(text)
            if problem is not None:
                raise ConfigError(f"{problem}, got {text!r}", field=self.name,
                                  line=nodes.line(item))  # fmt: skip
            patterns.append(text)
        return frozenset(patterns)

    def document(self, value: frozenset[str]) -> object:
        return sorted(value)

    def exclusion(self, value: frozenset[str], site: Site) -> str | None:
        if self.read is None or not value:
            return None
        name = self.read(site)
        if name is None or matches(name, value):
            return None
        return f"{self.what} {name} is not in [{', '.join(sorted(value))}]"

    def admits_every_site(self, value: frozenset[str]) -> bool:
        return self.read is None or not value

    def widens(self, base: frozenset[str], other: frozenset[str]) -> bool:
        return bool(base) and not (other and all(within(p, base) for p in other))

    def narrow(
        self, current: frozenset[str], requested: list[Any], param: str, policy_id: str
    ) -> frozenset[str]:
        asked = frozenset(_requested(requested, param))
        if current:
            wider = [p for p in asked if not within(p, current)]
            if wider:
                raise widening(policy_id, param, wider)
        return asked

    def describe(self, value: frozenset[str]) -> str | None:
        return f"{self.label} {', '.join(sorted(value))}" if value else None


def _requested(values: Iterable[Any], param: str) -> Iterable[str]:
    for value in values:
        text = str(value)
        problem = check_pattern(text)
        if problem is not None:
            raise InvalidRequest(f"{problem}, got {text!r}", param=param)
        yield text

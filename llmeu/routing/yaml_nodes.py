"""Reading a configuration file's YAML nodes: each reader checks one value and names it.

Every error is a `ConfigError` carrying the field (as the caller names it,
`timeouts.idle`, `personal_data.restrict.allow_classes`) and the line of
the node it concerns, so `llmeu config check` points at the place to fix.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import yaml

from llmeu.errors import ConfigError
from llmeu.routing.durations import Duration

T = TypeVar("T")
Node = yaml.Node
NULL_TAG = "tag:yaml.org,2002:null"
_COUNTRY = re.compile(r"^[A-Za-z]{2}$")
# Control characters, line separators and bidirectional overrides: names reach
# log lines, tables and the console, where these would forge or disguise text.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def compose(text: str) -> Node | None:
    try:
        return yaml.compose(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        raise ConfigError(
            f"not valid YAML: {error}", line=mark.line + 1 if mark else None
        ) from None


def line(node: Node) -> int:
    return int(node.start_mark.line) + 1


def is_null(node: Node) -> bool:
    """Written as `null` (`~`, or nothing after the colon)."""
    return isinstance(node, yaml.ScalarNode) and node.tag == NULL_TAG


def mapping(
    node: Node, what: str, allowed: set[str], *, required: Iterable[str] = (), prefix: str = ""
) -> dict[str, Node]:
    """The fields of a mapping node; errors name the field as `prefix` + key."""
    if not isinstance(node, yaml.MappingNode):
        raise ConfigError(f"{what} must be a mapping", field=what, line=line(node))
    fields: dict[str, Node] = {}
    for key_node, value_node in node.value:
        key = str(key_node.value)
        if key not in allowed:
            raise ConfigError(
                f"unknown field `{key}` in {what} (allowed: {', '.join(sorted(allowed))})",
                field=prefix + key,
                line=line(key_node),
            )
        if key in fields:
            raise ConfigError(f"field `{key}` given twice", field=prefix + key, line=line(key_node))
        fields[key] = value_node
    for key in required:
        if key not in fields:
            raise ConfigError(
                f"missing required field in {what}", field=prefix + key, line=line(node)
            )
    return fields


def sequence(node: Node | None, what: str) -> list[Node]:
    if node is None or is_null(node):
        return []
    if not isinstance(node, yaml.SequenceNode):
        raise ConfigError(f"{what} must be a list", field=what, line=line(node))
    return list(node.value)


def scalar(node: Node, what: str, kind: type[T] | tuple[type, ...]) -> T:
    if not isinstance(node, yaml.ScalarNode):
        raise ConfigError(f"{what} must be a single value", field=what, line=line(node))
    value = yaml.constructor.SafeConstructor().construct_object(node)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds:
        raise ConfigError(f"{what} must not be a boolean", field=what, line=line(node))
    if not isinstance(value, kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise ConfigError(f"{what} must be a {names}, got {value!r}", field=what, line=line(node))
    return value  # type: ignore[return-value]


def optional(fields: dict[str, Node], name: str, kind: Any, default: Any) -> Any:
    node = fields.get(name)
    return default if node is None else scalar(node, name, kind)


def enum(node: Node | None, what: str, enum: Callable[[str], T], default: T | None = None) -> T:
    if node is None:
        if default is None:
            raise ConfigError("missing required field", field=what)
        return default
    value = scalar(node, what, str)
    try:
        return enum(value)
    except ValueError:
        known = ", ".join(m.value for m in enum)  # type: ignore[attr-defined]
        raise ConfigError(
            f"unknown {what} `{value}` (known: {known})", field=what, line=line(node)
        ) from None


def name(node: Node, what: str) -> str:
    """A non-empty string without control characters: an id, a provider, a model or region."""
    value: str = scalar(node, what, str)
    if not value.strip():
        raise ConfigError(f"{what} must not be empty", field=what, line=line(node))
    _refuse_control(value, what, node)
    return value


def text(
    fields: dict[str, Node], name: str, default: T, kind: type | tuple[type, ...] = str
) -> str | T:
    """An optional value as text, without control characters."""
    node = fields.get(name)
    if node is None:
        return default
    value = str(scalar(node, name, kind))
    _refuse_control(value, name, node)
    return value


def _refuse_control(value: str, what: str, node: Node) -> None:
    found = _CONTROL.search(value)
    if found is not None:
        raise ConfigError(
            f"{what} must not contain control characters (found {found.group()!r} at "
            f"position {found.start()})",
            field=what,
            line=line(node),
        )


def country(node: Node, what: str) -> str:
    """An ISO 3166-1 alpha-2 country code, upper-cased."""
    value: str = scalar(node, what, str)
    if not _COUNTRY.match(value):
        raise ConfigError(
            f"{what} must be a two-letter ISO country code such as FR or DE, got {value!r}",
            field=what,
            line=line(node),
        )
    return value.upper()


def duration(node: Node, what: str) -> Duration:
    value = scalar(node, what, str)
    try:
        return Duration.parse(value)
    except ValueError as error:
        raise ConfigError(str(error), field=what, line=line(node)) from None


def non_negative(node: Node, what: str) -> float:
    value = float(scalar(node, what, (int, float)))
    if value < 0:
        raise ConfigError(f"{what} must not be negative", field=what, line=line(node))
    return value


def positive(node: Node, what: str) -> float:
    value = float(scalar(node, what, (int, float)))
    if value <= 0:
        raise ConfigError(f"{what} must be positive", field=what, line=line(node))
    return value


def refuse_duplicates(
    items: list[T], node: Node | None, key: Callable[[T], str], field: str
) -> None:
    first: dict[str, int] = {}
    for item, item_node in zip(items, sequence(node, field), strict=True):
        value = key(item)
        at = next((line(v) for k, v in item_node.value if k.value == field), line(item_node))
        if value in first:
            raise ConfigError(
                f"duplicate {field} `{value}` (first defined on line {first[value]})",
                field=field,
                line=at,
            )
        first[value] = at

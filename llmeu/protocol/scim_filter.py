"""SCIM filters (RFC 7644 §3.4.2.2): parsed once, then matched against resources.

    filter   = or
    or       = and *("or" and)
    and      = unary *("and" unary)
    unary    = "not" "(" filter ")" / "(" filter ")" / attrPath "pr" / attrPath op value
    op       = eq / ne / co / sw / ew / gt / ge / lt / le
    value    = a JSON string, number, true, false or null

Attribute names and operators are case-insensitive; so are string comparisons,
except of `id` and `externalId` (case-exact in RFC 7643). A dotted path reaches a
sub-attribute (`name.familyName`), and a path through a multi-valued attribute
matches when any of its values does (`emails.value`). Bracketed value paths
(`emails[type eq "work"]`) are parsed by `scim_patch` for PATCH paths only.
What Entra ID and Okta send to find a user or a group — `userName eq "…"`,
`externalId eq "…"`, `displayName eq "…"` — `Filter.equals` names, so that a
store may look it up by index rather than match every resource.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from llmeu.errors import InvalidRequest

_TOKEN = re.compile(r'\s*(?:(?P<string>"(?:[^"\\]|\\.)*")|(?P<paren>[()])|(?P<word>[^\s()"]+))')
_OPS = frozenset({"eq", "ne", "co", "sw", "ew", "gt", "ge", "lt", "le"})
CASE_EXACT = frozenset({"id", "externalid"})


def invalid_filter(message: str) -> InvalidRequest:
    return InvalidRequest(f"invalid filter: {message}", param="filter", code="invalidFilter")


@dataclass(frozen=True, slots=True)
class Compare:
    path: str
    op: str
    value: Any


@dataclass(frozen=True, slots=True)
class Present:
    path: str


@dataclass(frozen=True, slots=True)
class Logical:
    op: str
    left: Filter
    right: Filter


@dataclass(frozen=True, slots=True)
class Not:
    inner: Filter


Filter = Compare | Present | Logical | Not


def parse_filter(text: str) -> Filter:
    tokens = _tokens(text)
    parser = _Parser(tokens)
    node = parser.or_()
    if parser.at < len(tokens):
        raise invalid_filter(f"unexpected `{tokens[parser.at]}`")
    return node


def equals(node: Filter, attribute: str) -> str | None:
    """The string `node` asks `attribute` to equal, when it asks only that."""
    if (
        isinstance(node, Compare)
        and node.op == "eq"
        and node.path.casefold() == attribute.casefold()
        and isinstance(node.value, str)
    ):
        return node.value
    return None


def matches(node: Filter, resource: dict[str, Any]) -> bool:
    if isinstance(node, Logical):
        if node.op == "and":
            return matches(node.left, resource) and matches(node.right, resource)
        return matches(node.left, resource) or matches(node.right, resource)
    if isinstance(node, Not):
        return not matches(node.inner, resource)
    values = resolve(resource, node.path)
    if isinstance(node, Present):
        return any(v not in (None, "", [], {}) for v in values)
    exact = node.path.rsplit(".", 1)[-1].casefold() in CASE_EXACT
    if node.op == "ne":
        return not any(_compare("eq", v, node.value, exact) for v in values)
    return any(_compare(node.op, v, node.value, exact) for v in values)


def resolve(resource: dict[str, Any], path: str) -> list[Any]:
    """Every value at `path` (case-insensitive names), through lists."""
    current: list[Any] = [resource]
    for name in path.split("."):
        found: list[Any] = []
        for value in current:
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, dict):
                    key = next((k for k in item if k.casefold() == name.casefold()), None)
                    if key is not None:
                        found.append(item[key])
        current = found
    flat: list[Any] = []
    for value in current:
        flat.extend(value if isinstance(value, list) else [value])
    return flat


def _compare(op: str, have: Any, want: Any, exact: bool) -> bool:
    if isinstance(have, str) and isinstance(want, str):
        if not exact:
            have, want = have.casefold(), want.casefold()
        if op == "co":
            return bool(want in have)
        if op == "sw":
            return bool(have.startswith(want))
        if op == "ew":
            return bool(have.endswith(want))
    if isinstance(have, bool) or isinstance(want, bool) or have is None or want is None:
        return op == "eq" and have == want
    if op == "eq":
        return bool(have == want)
    numbers = isinstance(have, int | float) and isinstance(want, int | float)
    if op in ("co", "sw", "ew") or not (numbers or type(have) is type(want)):
        return False
    return bool({"gt": have > want, "ge": have >= want, "lt": have < want, "le": have <= want}[op])


def _tokens(text: str) -> list[str]:
    tokens: list[str] = []
    at = 0
    text = text.rstrip()
    while at < len(text):
        found = _TOKEN.match(text, at)
        if found is None or found.end() == at:
            raise invalid_filter(f"cannot read it from position {at}")
        tokens.append(found.group(found.lastgroup or "word"))
        at = found.end()
    if not tokens:
        raise invalid_filter("it is empty")
    return tokens


class _Parser:
    def __init__(self, tokens: list[str]):
        self.tokens = tokens
        self.at = 0

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise invalid_filter("it ends too early")
        self.at += 1
        return token

    def or_(self) -> Filter:
        node = self.and_()
        while (self.peek() or "").casefold() == "or":
            self.take()
            node = Logical("or", node, self.and_())
        return node

    def and_(self) -> Filter:
        node = self.unary()
        while (self.peek() or "").casefold() == "and":
            self.take()
            node = Logical("and", node, self.unary())
        return node

    def unary(self) -> Filter:
        word = self.take()
        if word.casefold() == "not" and self.peek() == "(":
            self.take()
            return Not(self.group())
        if word == "(":
            return self.group()
        if word.startswith('"') or word == ")" or "[" in word:
            raise invalid_filter(f"expected an attribute, found `{word}`")
        op = self.take().casefold()
        if op == "pr":
            return Present(_path(word))
        if op not in _OPS:
            raise invalid_filter(f"unknown operator `{op}`")
        return Compare(_path(word), op, _value(self.take()))

    def group(self) -> Filter:
        node = self.or_()
        if self.take() != ")":
            raise invalid_filter("a `(` is not closed")
        return node


def _path(token: str) -> str:
    """The attribute path, without the core schema's URN prefix a client may send."""
    for schema in ("urn:ietf:params:scim:schemas:core:2.0:User:",
                   "urn:ietf:params:scim:schemas:core:2.0:Group:"):  # fmt: skip
        if token.casefold().startswith(schema.casefold()):
            return token[len(schema) :]
    return token


def _value(token: str) -> Any:
    lowered = token.casefold()
    if lowered in ("true", "false", "null"):
        return {"true": True, "false": False, "null": None}[lowered]
    try:
        value = json.loads(token)
    except ValueError:
        raise invalid_filter(f"`{token}` is not a value (strings are in double quotes)") from None
    if isinstance(value, str | int | float):
        return value
    raise invalid_filter(f"`{token}` is not a value")

"""SPDX licence expressions: parse them and decide them against an allow-list.

Pure: strings in, verdicts out. `MIT OR GPL-3.0-only` is acceptable when either side
is; `MIT AND GPL-3.0-only` only when both are; `Apache-2.0 WITH LLVM-exception` when
the licence and the exception both are. Matching ignores case, as SPDX does.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

_TOKEN = re.compile(r"\s*(\(|\)|[A-Za-z0-9.+:-]+)")
_OPERATORS = {"AND", "OR", "WITH"}


@dataclass(frozen=True)
class Licence:
    identifier: str
    exception: str | None = None


@dataclass(frozen=True)
class AllOf:
    parts: tuple[Expression, ...]


@dataclass(frozen=True)
class AnyOf:
    parts: tuple[Expression, ...]


Expression = Licence | AllOf | AnyOf


class SpdxSyntaxError(ValueError):
    """The text is not an SPDX licence expression."""


def parse(text: str) -> Expression:
    tokens = _tokenize(text)
    expression, rest = _any_of(tokens)
    if rest:
        raise SpdxSyntaxError(f"unexpected {rest[0]!r} in {text!r}")
    return expression


def allowed(
    expression: Expression, licences: Collection[str], exceptions: Collection[str] = ()
) -> bool:
    """Whether code under `expression` may be used under one of `licences`."""
    if isinstance(expression, AnyOf):
        return any(allowed(part, licences, exceptions) for part in expression.parts)
    if isinstance(expression, AllOf):
        return all(allowed(part, licences, exceptions) for part in expression.parts)
    lowered = {licence.lower() for licence in licences}
    if expression.identifier.lower() not in lowered:
        return False
    return expression.exception is None or expression.exception.lower() in {
        exception.lower() for exception in exceptions
    }


def _tokenize(text: str) -> list[str]:
    tokens = []
    position = 0
    while position < len(text.rstrip()):
        match = _TOKEN.match(text, position)
        if match is None:
            raise SpdxSyntaxError(f"cannot read {text[position:]!r} in {text!r}")
        tokens.append(match.group(1))
        position = match.end()
    if not tokens:
        raise SpdxSyntaxError("empty licence expression")
    return tokens


def _any_of(tokens: list[str]) -> tuple[Expression, list[str]]:
    parts = []
    part, tokens = _all_of(tokens)
    parts.append(part)
    while tokens and tokens[0].upper() == "OR":
        part, tokens = _all_of(tokens[1:])
        parts.append(part)
    return (parts[0] if len(parts) == 1 else AnyOf(tuple(parts))), tokens


def _all_of(tokens: list[str]) -> tuple[Expression, list[str]]:
    parts = []
    part, tokens = _term(tokens)
    parts.append(part)
    while tokens and tokens[0].upper() == "AND":
        part, tokens = _term(tokens[1:])
        parts.append(part)
    return (parts[0] if len(parts) == 1 else AllOf(tuple(parts))), tokens


def _term(tokens: list[str]) -> tuple[Expression, list[str]]:
    if not tokens:
        raise SpdxSyntaxError("expression ends where a licence was expected")
    head, rest = tokens[0], tokens[1:]
    if head == "(":
        inner, rest = _any_of(rest)
        if not rest or rest[0] != ")":
            raise SpdxSyntaxError("unbalanced parenthesis")
        return inner, rest[1:]
    if head == ")" or head.upper() in _OPERATORS:
        raise SpdxSyntaxError(f"{head!r} where a licence was expected")
    if len(rest) >= 2 and rest[0].upper() == "WITH":
        return Licence(head, rest[1]), rest[2:]
    return Licence(head), rest

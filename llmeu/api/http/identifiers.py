"""What a path value or a query parameter may hold, checked at the door of every route.

Identifiers and filters reach SQL as bound parameters, so nothing in them can
change a query — but PostgreSQL refuses a NUL in text outright
(`CharacterNotInRepertoireError`), and control characters have no place in
an id, a model name or a filter on either database. Refusing them here, with a
400 naming the parameter, gives SQLite and PostgreSQL one behaviour and keeps
the lookups below free of input they cannot take.
"""

from __future__ import annotations

import math
import re

from llmeu.errors import InvalidRequest

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def check_identifier(value: str, param: str) -> str:
    """`value` as an id, model name or filter; a 400 naming `param` if it cannot be one.
    (A long one is simply not found: the request head's bound keeps it finite.)"""
    if _CONTROL.search(value):
        raise InvalidRequest(
            f"`{param}` must not contain control characters (such as NUL)", param=param
        )
    return value


def check_query(query: dict[str, str]) -> dict[str, str]:
    """Every query parameter: its name and its value free of control characters."""
    for name, value in query.items():
        check_identifier(name, "query")
        check_identifier(value, name)
    return query


def check_finite(value: float, param: str) -> float:
    """A time or an offset: a number, never NaN or an infinity (SQL compares them oddly)."""
    if not math.isfinite(value):
        raise InvalidRequest(f"`{param}` must be a finite number", param=param)
    return value

"""The `[since, until)` condition every time-bounded listing of the ledger puts in its SQL."""

from __future__ import annotations

from typing import Any


def time_window(
    column: str, since: float | None, until: float | None
) -> tuple[list[str], list[Any]]:
    """The conditions and parameters that keep rows whose `column` lies in [since, until);
    an open bound adds nothing. Callers append their own conditions to both lists."""
    where: list[str] = []
    params: list[Any] = []
    if since is not None:
        where.append(f"{column} >= ?")
        params.append(since)
    if until is not None:
        where.append(f"{column} < ?")
        params.append(until)
    return where, params

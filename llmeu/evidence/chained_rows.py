"""One chained row as the verifier reads it: the bytes its link should hash, by its chain
version, and what is wrong with it that no link shows.

A row says which version chained it (`chain_version`, NULL for version 1; see
`llmeu.evidence.chain`). Nothing else it says is taken on trust where it can be
checked:

- a row whose metadata was purged (`metadata_purged_at` set) must hold nothing
  of what the purge empties (`PURGED_VALUES`): a row marked purged that still
  names an endpoint, a class or a cost is an edit, not a purge. Under version
  2 its kept columns and the stored digest of its metadata still hash to its
  link; under version 1 the link covered the emptied columns too, so it can
  only be taken as given where the row sits;
- a purge happens once the metadata's retention ran out (`metadata_expires_at`,
  chained since version 2), never before and never at a time still to come: a
  purge outside that window destroyed evidence early;
- the digest of a row not purged must be its metadata's: a wrong one would
  leave the row unverifiable once purged;
- a row the gateway chained as suspect (`chain_suspect`, version 2) is named:
  it was found in the ledger without a place in the chain, and no gateway
  process had recorded the call.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from llmeu.evidence.chain import (
    CHAIN_VERSION,
    METADATA_COLUMNS,
    PURGED_VALUES,
    VERSION_1_COLUMNS,
    chain_body,
    metadata_sha256,
    version_1_body,
)

CLOCK_SLACK_SECONDS = 86400.0
"""How far the verifier's clock may lag the gateway's before a purge looks like one to come."""
_VERSION_1_PURGED = tuple(c for c in METADATA_COLUMNS if c in VERSION_1_COLUMNS)
# Every purge since version 1 empties these.


@dataclass(frozen=True, slots=True)
class RowReading:
    """`body`: what the row's link should hash; `given`: its link cannot be recomputed (a
    purged version-1 row) and is taken as given in its place; `problem`: what is wrong
    with the row whatever its link says; `if_linked`: what is wrong with it, said only
    when its link holds (otherwise the link's finding says it); `suspect`: chained as
    suspect."""

    body: bytes
    given: bool = False
    problem: str | None = None
    if_linked: str | None = None
    suspect: bool = False


def read_row(row: Mapping[str, Any], now: float | None = None) -> RowReading:
    """How to check `row` (a trace row with its chain columns); `now`: the verifier's time."""
    version = row.get("chain_version") or 1
    purged_at = row.get("metadata_purged_at")
    moment = time.time() if now is None else now
    if version == 1:
        if purged_at is None:
            return RowReading(version_1_body(row))
        problem = _purge_problem(row, _VERSION_1_PURGED, purged_at, moment)
        return RowReading(version_1_body(row), given=True, problem=problem)
    if version != CHAIN_VERSION:
        return RowReading(b"", problem=f"unknown chain_version {version!r}")
    stored = row.get("metadata_sha256")
    suspect = bool(row.get("chain_suspect"))
    if purged_at is not None:
        # The stored digest stands for the emptied columns; a row without one cannot match.
        problem = _purge_problem(row, METADATA_COLUMNS, purged_at, moment)
        return RowReading(chain_body(row, stored or ""), problem=problem, suspect=suspect)
    digest = metadata_sha256(row)
    wrong = None
    if stored != digest:
        wrong = "its metadata_sha256 is not its metadata's digest (it was edited)"
    return RowReading(chain_body(row, digest), if_linked=wrong, suspect=suspect)


def _purge_problem(
    row: Mapping[str, Any], columns: Sequence[str], purged_at: object, now: float
) -> str | None:
    if not isinstance(purged_at, int | float):
        return f"its metadata_purged_at is not a time: {purged_at!r}"
    held = [c for c in columns if row.get(c) != PURGED_VALUES[c]]
    if held:
        shown = ", ".join(held[:6]) + (", …" if len(held) > 6 else "")
        return f"marked purged (metadata_purged_at) but still holds metadata: {shown}"
    expires = row.get("metadata_expires_at")
    if not isinstance(expires, int | float) or expires > purged_at:
        return (
            f"metadata purged at {_iso(purged_at)}, before its retention ran out "
            f"({'no expiry' if expires is None else _iso(expires)})"
        )
    if purged_at > now + CLOCK_SLACK_SECONDS:
        return f"metadata purged at {_iso(purged_at)}, a time still to come"
    return None


def _iso(moment: float) -> str:
    try:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(moment))
    except (OverflowError, OSError, ValueError):
        return repr(moment)

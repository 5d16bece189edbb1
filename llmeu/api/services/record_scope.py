"""Whose records a caller of the platform API reads, and how many at a time.

A `Viewer` reaches every key's records (or the key it asks for), its team's
keys', or only its own key's: another key's trace id is as unknown as one that
does not exist. Pages of records hold at most `MAX_PAGE`, and go on from a
cursor the gateway gave out.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmeu.calls.record import CallStatus
from llmeu.errors import InvalidRequest
from llmeu.ledger.api_keys import ApiKey
from llmeu.ledger.views import decode_cursor

MAX_PAGE = 500
STATUSES = frozenset(s.value for s in CallStatus)


@dataclass(frozen=True, slots=True)
class Viewer:
    """Whose records and keys a caller reaches: every key's (`every_key`), its team's keys'
    (`team_id`), or its own key's."""

    key_id: str
    every_key: bool
    team_id: str | None = None


def check_page(limit: int, cursor: str | None) -> None:
    """Refuse a page size out of bounds, or a cursor that is not one of the ledger's."""
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidRequest(f"limit must be between 1 and {MAX_PAGE}", param="limit")
    if cursor is not None:
        try:
            decode_cursor(cursor)
        except ValueError:
            raise InvalidRequest("invalid cursor", param="cursor") from None


def reaches(caller: Viewer, key: ApiKey) -> bool:
    """Whether the caller reaches this key (to list or revoke it)."""
    if caller.every_key:
        return True
    if caller.team_id is not None:
        return key.team_id == caller.team_id
    return key.key_id == caller.key_id


def scope(caller: Viewer, requested: str | None) -> tuple[str | None, str | None]:
    """Whose records a caller reads, as (key id, team id) filters: every key's (or the one
    asked for), its team's keys' (or the one of them asked for), else its own key's."""
    if caller.every_key:
        return requested or None, None
    if caller.team_id is not None:
        return requested or None, caller.team_id
    return caller.key_id, None

"""Admin events in the ledger: written into the hash chain, listed, read for the verifier.

An event is two rows written in one transaction (`llmeu.evidence.admin_events`
says why): the event itself in `admin_events` (migration 19), and a final row
of `traces` with route `admin` whose chained `request_sha256` is the event's
digest, linked the locked way (`TraceWrites.write_locked`) — admin events are
rare, so they never take the ahead path that calls take. The trace row has
no content, no metadata expiry (a metadata purge never empties it) and zero
tokens and cost.

Every read of `traces` that counts calls leaves these rows out (`NOT_ADMIN`):
usage, the traces listing and a trace by id, spend per key (budgets), and the
call metadata of exports and compliance reports. A release from before
migration 19 counts them as calls with no tokens and no cost while it runs
beside this one; nothing else of it changes.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import Any

from llmeu.evidence.admin_events import ADMIN_ROUTE, EVENT_FIELDS, AdminEvent
from llmeu.ledger.database import Database, Row, Statement
from llmeu.ledger.time_window import time_window
from llmeu.ledger.trace_writes import TRACE_COLUMNS, TraceWrites
from llmeu.ledger.views import decode_cursor, encode_cursor

NOT_ADMIN = f"route <> '{ADMIN_ROUTE}'"
"""The condition that leaves admin events out of a read of `traces` that counts calls."""
ADMIN_EVENTS_MIGRATION = 19
_INSERT_EVENT = (
    f"INSERT INTO admin_events ({', '.join(EVENT_FIELDS)}) "
    f"VALUES ({', '.join('?' for _ in EVENT_FIELDS)})"
)
_FILTERS = ("action", "actor")


def new_event_id() -> str:
    """`adm_` + milliseconds since the epoch (hex, sorts by time) + 64 random bits: the trace
    id of an event's row, told apart from a call's (`trc_`) at a glance."""
    return f"adm_{time.time_ns() // 1_000_000:012x}{secrets.token_hex(8)}"


def event_trace_row(event: AdminEvent, instance_id: str) -> dict[str, Any]:
    """The final row of `traces` that puts `event` in the chain."""
    row: dict[str, Any] = dict.fromkeys(TRACE_COLUMNS)
    row.update(
        trace_id=event.trace_id, key_id=event.actor, route=ADMIN_ROUTE,
        request_model=event.action, stream=0, status="completed", instance_id=instance_id,
        received_at=event.at, finished_at=event.at, input_tokens=0, output_tokens=0,
        tokens_estimated=0, cost_eur=0.0, attempts="[]", excluded="[]",
        request_sha256=event.digest(),
    )  # fmt: skip
    return row


async def write_event(writes: TraceWrites, event: AdminEvent, instance_id: str) -> None:
    """The event and its chained row, in one transaction."""
    row = event_trace_row(event, instance_id)
    values = tuple(getattr(event, f) for f in EVENT_FIELDS)
    statements: list[Statement] = [
        (_INSERT_EVENT, [values]),
        (writes.finish_trace, [tuple(row[c] for c in TRACE_COLUMNS)]),
    ]
    await writes.write_locked(statements, time.time(), {event.trace_id: row})


@dataclass(frozen=True, slots=True)
class EventPage:
    events: list[dict[str, Any]]
    next_cursor: str | None


async def list_events(
    db: Database,
    *,
    filters: dict[str, str],
    since: float | None,
    until: float | None,
    limit: int,
    cursor: str | None,
) -> EventPage:
    """A page of events, newest first, each with its place in the chain; `filters` by
    `action` and `actor`. A cursor is the traces listing's (`decode_cursor`)."""
    where, params = time_window("e.at", since, until)
    for name, value in filters.items():
        if name in _FILTERS:
            where.append(f"e.{name} = ?")
            params.append(value)
    if cursor:
        at, trace_id = decode_cursor(cursor)
        where.append("(e.at < ? OR (e.at = ? AND e.trace_id < ?))")
        params.extend([at, at, trace_id])
    params.append(limit + 1)
    rows = await db.fetch(
        f"SELECT {', '.join(f'e.{f}' for f in EVENT_FIELDS)}, t.chain_seq FROM admin_events e "
        "LEFT JOIN traces t ON t.trace_id = e.trace_id"
        f"{' WHERE ' if where else ''}{' AND '.join(where)} "
        "ORDER BY e.at DESC, e.trace_id DESC LIMIT ?",
        params,
    )
    more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = encode_cursor(float(rows[-1]["at"]), rows[-1]["trace_id"]) if more else None
    return EventPage([event_view(r) for r in rows], next_cursor)


async def all_events(
    db: Database, since: float | None = None, until: float | None = None
) -> list[Row]:
    """Every event as stored (oldest first), in [since, until) when given; none on a ledger
    from before migration 19."""
    if not await holds_admin_events(db):
        return []
    where, params = time_window("e.at", since, until)
    return await db.fetch(
        f"SELECT {', '.join(f'e.{f}' for f in EVENT_FIELDS)}, t.chain_seq FROM admin_events e "
        "LEFT JOIN traces t ON t.trace_id = e.trace_id"
        f"{' WHERE ' if where else ''}{' AND '.join(where)} ORDER BY e.at, e.trace_id",
        params,
    )


async def holds_admin_events(db: Database) -> bool:
    """Whether the ledger has the `admin_events` table (migration 19 applied)."""
    applied = await db.fetch(
        "SELECT version FROM schema_migrations WHERE version = ?", (ADMIN_EVENTS_MIGRATION,)
    )
    return bool(applied)


def event_view(row: Row) -> dict[str, Any]:
    """An event as the platform API shows it and `admin-events.jsonl` holds it."""
    seq = row.get("chain_seq")
    return AdminEvent.of_row(row).public(None if seq is None else int(seq))

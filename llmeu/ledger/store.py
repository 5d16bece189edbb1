"""Domain operations on the ledger's tables, identical for SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from llmeu.calls.record import TraceRecord
from llmeu.evidence.admin_events import AdminEvent
from llmeu.ledger import key_rows, migration_runner
from llmeu.ledger.admin_event_rows import NOT_ADMIN, EventPage, list_events, write_event
from llmeu.ledger.admission import ADMIT, FORGET_CHAINED, KEEP_ADMITTED
from llmeu.ledger.api_keys import ApiKey
from llmeu.ledger.database import Database, Row
from llmeu.ledger.schema import SCHEMA_VERSION
from llmeu.ledger.time_window import time_window
from llmeu.ledger.trace_writes import TRACE_COLUMNS, TraceWrites, trace_row
from llmeu.ledger.views import (
    STATUS_COUNTS,
    decode_cursor,
    encode_cursor,
    trace_view,
    usage_view,
)

# `model` is the model that ran: calls no model ran for (rejected, or failed on every
# endpoint) share the row '' rather than mixing into the names clients asked for,
# which `requested_model` groups by.
_GROUPS = {
    "model": "COALESCE(model_used, '')",
    "requested_model": "request_model",
    "endpoint": "COALESCE(endpoint_id, '')",
    "key": "key_id",
    "status": "status",
    "sovereignty_class": "COALESCE(sovereignty_class, '')",
    # MCP tool calls only, by their server (other calls have none and are left out).
    "mcp_server": "mcp_server",
    # The team the calling key belongs to now ("" for keys in none).
    "team": "COALESCE((SELECT team_id FROM api_keys WHERE api_keys.key_id = traces.key_id), '')",
}
_IN_TEAM = "key_id IN (SELECT key_id FROM api_keys WHERE team_id = ?)"
USAGE_GROUPS = ("day", *_GROUPS)
TRACE_FILTERS = ("status", "model", "endpoint_id", "key_id", "sovereignty_class", "mcp_server")
_INSTANCE_COLUMNS = "instance_id, started_at, heartbeat_at, schema_version"


@dataclass(frozen=True, slots=True)
class TracePage:
    traces: list[dict[str, Any]]
    next_cursor: str | None


def record_view(record: TraceRecord) -> dict[str, Any]:
    """The record as the platform API will show it once stored: what its receipt is made of."""
    return trace_view(dict(zip(TRACE_COLUMNS, trace_row(record), strict=True)))


class Store:
    def __init__(self, db: Database, *, interrupted_settle_seconds: float = 3600.0):
        """`interrupted_settle_seconds`: how long a call found `interrupted` may still be
        replaced by the final trace of a process that was only slow, before the hash chain
        takes it as it is (`llmeu.ledger.chaining`)."""
        self.writes = TraceWrites(db, interrupted_settle_seconds=interrupted_settle_seconds)

    @property
    def db(self) -> Database:
        return self.writes.db

    @db.setter
    def db(self, db: Database) -> None:
        """Another handle on a database of the same kind (the statements stay)."""
        self.writes.db = db

    @property
    def interrupted_settle_seconds(self) -> float:
        return self.writes.interrupted_settle_seconds

    @property
    def shared(self) -> bool:
        """Whether several gateway processes may share this ledger (the database's answer)."""
        return self.db.dialect.shared

    async def migrate(self, *, live_after: float | None = None) -> list[int]:
        """Apply pending migrations; returns the versions applied now
        (`llmeu.ledger.migration_runner.migrate`)."""
        return await migration_runner.migrate(self.db, live_after=live_after)

    async def schema(self) -> tuple[set[int], set[int]]:
        """The migrations applied to this ledger, and which of them are contract steps."""
        return await migration_runner.applied_schema(self.db)

    async def check_schema(self) -> None:
        """Raise `SchemaMismatch` unless this release runs on the ledger's schema as it is."""
        await migration_runner.check_schema(self.db)

    async def older_processes(self, version: int, live_after: float) -> list[str]:
        """Live gateway processes of releases that do not know migration `version`."""
        return await migration_runner.older_processes(self.db, version, live_after)

    async def has_schema(self) -> bool:
        """Whether this database holds a ledger (its migrations were applied)."""
        return await migration_runner.has_schema(self.db)

    async def write_traces(
        self,
        begins: Sequence[tuple[Any, ...]],
        finishes: Sequence[tuple[Any, ...]],
        marks: Sequence[tuple[Any, ...]] = (),
    ) -> None:
        """In-progress rows (of `open_row`), progress marks (of `progress_row`), then final
        rows (of `trace_row`), in one transaction: `TraceWrites.write`."""
        await self.writes.write(begins, finishes, marks)

    async def write_admin_event(self, event: AdminEvent, instance_id: str) -> None:
        """An administrative change, into the hash chain (`llmeu.ledger.admin_event_rows`)."""
        await write_event(self.writes, event, instance_id)

    async def list_admin_events(
        self,
        *,
        filters: dict[str, str],
        since: float | None,
        until: float | None,
        limit: int,
        cursor: str | None,
    ) -> EventPage:
        return await list_events(
            self.db, filters=filters, since=since, until=until, limit=limit, cursor=cursor
        )

    async def get_trace(
        self, trace_id: str, *, key_id: str | None = None, team_id: str | None = None
    ) -> dict[str, Any] | None:
        """The trace as stored, final, or else the call's in-progress row (of `key_id`, of a
        key of `team_id`, when given); never an admin event's row
        (`llmeu.ledger.admin_event_rows`)."""
        where = f"WHERE trace_id = ? AND {NOT_ADMIN}"
        params: list[Any] = [trace_id]
        if key_id is not None:
            where += " AND key_id = ?"
            params.append(key_id)
        if team_id is not None:
            where += f" AND {_IN_TEAM}"
            params.append(team_id)
        rows = await self.db.fetch(f"SELECT * FROM traces {where}", params)
        if not rows:
            rows = await self.db.fetch(f"SELECT * FROM open_calls {where}", params)
        return trace_view(rows[0]) if rows else None

    async def list_traces(
        self,
        *,
        filters: dict[str, str],
        since: float | None,
        until: float | None,
        limit: int,
        cursor: str | None,
        key_id: str | None,
        team_id: str | None = None,
    ) -> TracePage:
        where, params = time_window("received_at", since, until)
        where.append(NOT_ADMIN)
        for column, value in filters.items():
            if column == "model":
                where.append("(model_used = ? OR request_model = ?)")
                params.extend([value, value])
            else:
                where.append(f"{column} = ?")
                params.append(value)
        if key_id is not None:
            where.append("key_id = ?")
            params.append(key_id)
        if team_id is not None:
            where.append(_IN_TEAM)
            params.append(team_id)
        if cursor:
            received_at, trace_id = decode_cursor(cursor)
            where.append("(received_at < ? OR (received_at = ? AND trace_id < ?))")
            params.extend([received_at, received_at, trace_id])
        params.append(limit + 1)
        rows: list[Row] = []
        for table in _TRACE_TABLES.get(filters.get("status"), ("traces",)):
            sql = f"SELECT * FROM {table}{' WHERE ' if where else ''}{' AND '.join(where)}"
            rows += await self.db.fetch(f"{sql}{_NEWEST_FIRST}", params)
        if len(rows) > len(set(row["trace_id"] for row in rows)):  # final, and still open
            final = {row["trace_id"] for row in rows if row["status"] != "in_progress"}
            rows = [r for r in rows if r["status"] != "in_progress" or r["trace_id"] not in final]
        rows.sort(key=lambda row: (row["received_at"], row["trace_id"]), reverse=True)
        more = len(rows) > limit
        rows = rows[:limit]
        next_cursor = encode_cursor(rows[-1]["received_at"], rows[-1]["trace_id"]) if more else None
        return TracePage([trace_view(r, summary=True) for r in rows], next_cursor)

    async def usage(
        self,
        *,
        group_by: str,
        since: float | None,
        until: float | None,
        key_id: str | None,
        team_id: str | None = None,
    ) -> list[dict[str, Any]]:
        group = self.db.dialect.day("received_at") if group_by == "day" else _GROUPS[group_by]
        where, params = time_window("received_at", since, until)
        where.append("status <> 'in_progress'")
        where.append(NOT_ADMIN)
        if group_by == "mcp_server":
            where.append("mcp_server IS NOT NULL")
        if key_id is not None:
            where.append("key_id = ?")
            params.append(key_id)
        if team_id is not None:
            where.append(_IN_TEAM)
            params.append(team_id)
        counts = ", ".join(
            f"SUM(CASE WHEN status = '{s}' THEN 1 ELSE 0 END) AS {s}" for s in STATUS_COUNTS
        )
        sql = (
            f"SELECT {group} AS grp, COUNT(*) AS requests, {counts}, "
            "SUM(COALESCE(input_tokens, 0)) AS input_tokens, "
            "SUM(COALESCE(output_tokens, 0)) AS output_tokens, "
            "SUM(CASE WHEN tokens_estimated = 1 THEN 1 ELSE 0 END) AS estimated_requests, "
            "SUM(COALESCE(cost_eur, 0)) AS cost_eur, "
            "SUM(CASE WHEN cache_hit IS NOT NULL THEN 1 ELSE 0 END) AS cached, "
            "SUM(COALESCE(saved_eur, 0)) AS saved_eur "
            f"FROM traces WHERE {' AND '.join(where)} GROUP BY {group} ORDER BY {group}"
        )
        rows = await self.db.fetch(sql, params)
        return [usage_view(group_by, r) for r in rows]

    async def spend_by_key(self) -> dict[str, float]:
        rows = await self.db.fetch(
            f"SELECT key_id, SUM(COALESCE(cost_eur, 0)) AS cost FROM traces WHERE {NOT_ADMIN} "
            "GROUP BY key_id"
        )
        return {r["key_id"]: float(r["cost"] or 0) for r in rows}

    async def purge_content(self, now: float) -> int:
        """Drop prompts and completions whose retention ran out, and the stored responses
        (Responses API) past theirs; metadata stays. Returns the number of traces."""
        await self.db.execute("DELETE FROM stored_responses WHERE expires_at <= ?", (now,))
        return await self.db.execute(
            "UPDATE traces SET prompt = NULL, completion = NULL, content_expires_at = NULL "
            "WHERE content_expires_at IS NOT NULL AND content_expires_at <= ?",
            (now,),
        )

    async def register_instance(self, instance_id: str, now: float) -> None:
        """The process, and the schema its release knows (a contract step waits for it)."""
        await self.db.execute(
            f"INSERT INTO instances ({_INSTANCE_COLUMNS}) VALUES (?, ?, ?, ?)",
            (instance_id, now, now, SCHEMA_VERSION),
        )

    async def heartbeat(self, instance_id: str, now: float) -> None:
        """Also registers again a process whose row a sweep removed while its heartbeat
        could not be written (the database was away, or the process stalled)."""
        await self.db.execute(
            f"INSERT INTO instances ({_INSTANCE_COLUMNS}) VALUES (?, ?, ?, ?)"
            + self.db.dialect.upsert("instance_id", ("heartbeat_at",)),
            (instance_id, now, now, SCHEMA_VERSION),
        )

    async def unregister_instance(self, instance_id: str) -> None:
        """A process that stops cleanly leaves: nobody waits for it, its calls are final."""
        await self.db.execute("DELETE FROM instances WHERE instance_id = ?", (instance_id,))

    async def live_instances(self, since: float) -> set[str]:
        """Gateway processes whose heartbeat is not older than `since`."""
        rows = await self.db.fetch(
            "SELECT instance_id FROM instances WHERE heartbeat_at >= ?", (since,)
        )
        return {r["instance_id"] for r in rows}

    async def mark_interrupted(self, live_after: float, now: float) -> int:
        """Calls left in progress by gateway processes that stopped heartbeating become
        `interrupted` traces; returns how many. Also removes the in-progress rows of calls
        whose final row is there (`llmeu.ledger.trace_writes`)."""
        stopped = "instance_id IN (SELECT instance_id FROM instances WHERE heartbeat_at < ?)"
        dead = f"({stopped} OR instance_id NOT IN (SELECT instance_id FROM instances))"
        counts = await self.db.transaction(
            [
                (f"{_INTERRUPT} WHERE {dead}{_KEEP_FINAL}", [(now, live_after)]),
                (f"{ADMIT} AND {stopped}{KEEP_ADMITTED}", [(now, live_after)]),
                (f"DELETE FROM open_calls WHERE {dead}", [(live_after,)]),
                (_CLOSE_FINISHED, [()]),
                (FORGET_CHAINED, [()]),
                ("DELETE FROM instances WHERE heartbeat_at < ?", [(live_after,)]),
            ],
            self.writes.chain(now),
        )
        return counts[0]

    async def mark_instance_interrupted(self, instance_id: str, now: float) -> int:
        """The calls a process left in progress when it died (its supervisor saw it die)."""
        known = "instance_id IN (SELECT instance_id FROM instances WHERE instance_id = ?)"
        counts = await self.db.transaction(
            [
                (f"{_INTERRUPT} WHERE instance_id = ?{_KEEP_FINAL}", [(now, instance_id)]),
                (f"{ADMIT} AND {known}{KEEP_ADMITTED}", [(now, instance_id)]),
                ("DELETE FROM open_calls WHERE instance_id = ?", [(instance_id,)]),
                ("DELETE FROM instances WHERE instance_id = ?", [(instance_id,)]),
            ],
            self.writes.chain(now),
        )
        return counts[0]

    async def insert_key(self, key: ApiKey) -> None:
        await key_rows.insert_key(self.db, key)

    async def upsert_key(self, key: ApiKey) -> None:
        await key_rows.upsert_key(self.db, key)

    async def get_key(self, key_id: str) -> ApiKey | None:
        return await key_rows.get_key(self.db, key_id)

    async def list_keys(self) -> list[ApiKey]:
        return await key_rows.list_keys(self.db)

    async def revoke_key(self, key_id: str, now: float) -> bool:
        return await key_rows.revoke_key(self.db, key_id, now)

    async def put_policy(self, policy_id: str, body: dict[str, Any], now: float) -> None:
        await self.db.execute(
            "INSERT INTO policies (policy_id, body, updated_at) VALUES (?, ?, ?)"
            + self.db.dialect.upsert("policy_id", ("body", "updated_at")),
            (policy_id, json.dumps(body), now),
        )

    async def list_policies(self) -> dict[str, dict[str, Any]]:
        rows = await self.db.fetch("SELECT policy_id, body FROM policies ORDER BY policy_id")
        return {r["policy_id"]: json.loads(r["body"]) for r in rows}


# A call in progress as the trace of an interrupted call (the `?` is when it was found).
_INTERRUPTED_VALUES = {
    "status": "'interrupted'",
    "finished_at": "?",
    "error_type": "'api_error'",
    "error_code": "'gateway_interrupted'",
    "error_message": "'the gateway process stopped during the call'",
}
_INTERRUPT = (
    f"INSERT INTO traces ({', '.join(TRACE_COLUMNS)}) "
    f"SELECT {', '.join(_INTERRUPTED_VALUES.get(c, c) for c in TRACE_COLUMNS)} FROM open_calls"
)
_KEEP_FINAL = " ON CONFLICT (trace_id) DO NOTHING"  # a final row there is the call's own
_CLOSE_FINISHED = (
    "DELETE FROM open_calls "
    "WHERE EXISTS (SELECT 1 FROM traces WHERE traces.trace_id = open_calls.trace_id)"
)
# Where a trace of each status may be: a call in progress in `open_calls`, a final one in
# `traces` (or, on a ledger written before migration 11 by an older process, in progress).
_TRACE_TABLES: dict[str | None, tuple[str, ...]] = {
    None: ("traces", "open_calls"),
    "in_progress": ("traces", "open_calls"),
}
_TRACE_TABLES.update({status: ("traces",) for status in STATUS_COUNTS})
_NEWEST_FIRST = " ORDER BY received_at DESC, trace_id DESC LIMIT ?"

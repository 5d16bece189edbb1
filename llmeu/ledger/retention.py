"""What the ledger keeps and for how long: metadata retention, legal holds, erasure.

Two retentions govern a trace. Its *content* (prompt and output) is kept only
as long as the policy's `store_content` allows (`Store.purge_content`). Its
*metadata* (who called, when, where it ran, tokens, cost) is kept for
`keep_metadata` — by default six months, the minimum the AI Act asks of
deployers' logs (Art. 19, 26(6)) — and then purged here.

Purging metadata empties a row rather than deleting it: the trace id, the
time it was received and its status stay, with `metadata_purged_at`, so that
the ledger's order (and a hash chain over it) keeps its places and a purged
row is told apart from a deleted one. Everything else about the call goes.

A **legal hold** suspends that purge for one key's traces, or for the whole
ledger (`key_id` null), until it is released; holds are never deleted, so the
table is itself the record of who held what, when and why.

**Erasure by data subject** (GDPR Art. 17) removes the stored content of every
call made for one end user — the `user`, `metadata.user_id` or
`safety_identifier` a caller sent, kept only as its SHA-256 — and keeps the
metadata: what was processed, where and at what cost remains provable, what
was said does not. Each erasure is recorded (subject digest, who, when, how
many traces). A legal hold does not stop an erasure of content: a hold keeps
records of processing, and the content of a subject who asked for erasure is
not such a record; an operator who must keep content under a hold exports it
first.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass
from typing import Any

from llmeu.evidence.chain import PURGED_VALUES
from llmeu.ledger.admin_event_rows import NOT_ADMIN
from llmeu.ledger.database import Database, Row

# A metadata purge empties what the chain's digest of the metadata covers (the verifier
# checks that it did) and the content; it keeps the row's identity, place and status.
_PURGED = ", ".join(
    f"{column} = {'NULL' if value is None else repr(value)}"
    for column, value in {
        **PURGED_VALUES, "prompt": None, "completion": None, "content_expires_at": None,
    }.items()
)  # fmt: skip
_NOT_HELD = (
    "NOT EXISTS (SELECT 1 FROM legal_holds h WHERE h.released_at IS NULL "
    "AND (h.key_id IS NULL OR h.key_id = traces.key_id))"
)


_CALL_COLUMNS = (
    "trace_id", "key_id", "route", "request_model", "stream", "status", "instance_id",
    "received_at", "first_token_at", "finished_at", "policy_id", "endpoint_id", "provider",
    "model_used", "model_version", "inference_region", "sovereignty_class", "retention",
    "input_tokens", "output_tokens", "tokens_estimated", "cost_eur", "finish_reason",
    "http_status", "error_type", "error_code", "attempts", "mcp_server", "mcp_tool", "bytes_in",
    "bytes_out", "metadata_purged_at",
)  # fmt: skip
# Final traces, and the calls in progress (`open_calls`, which has no purge column) whose
# final row is not there yet.
_OPEN_COLUMNS = ", ".join("NULL" if c == "metadata_purged_at" else c for c in _CALL_COLUMNS)
_SELECT_CALLS = (
    f"SELECT {', '.join(_CALL_COLUMNS)} FROM traces "
    f"WHERE received_at >= ? AND received_at < ? AND {NOT_ADMIN} "
    f"UNION ALL SELECT {_OPEN_COLUMNS} FROM open_calls "
    "WHERE received_at >= ? AND received_at < ? "
    "AND NOT EXISTS (SELECT 1 FROM traces t WHERE t.trace_id = open_calls.trace_id) "
    "ORDER BY received_at, trace_id"
)


async def calls_between(db: Database, since: float, until: float) -> list[dict[str, Any]]:
    """The metadata (never the content) of every call received in [since, until), oldest
    first, with JSON and boolean columns decoded; admin events are not calls."""
    calls = []
    for row in await db.fetch(_SELECT_CALLS, (since, until, since, until)):
        call = dict(row)
        call["stream"] = bool(call["stream"])
        call["tokens_estimated"] = bool(call["tokens_estimated"])
        call["attempts"] = json.loads(call["attempts"] or "[]")
        calls.append(call)
    return calls


def subject_digest(subject: str) -> str:
    """How a data subject's id is kept: its SHA-256, hex."""
    return hashlib.sha256(subject.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Hold:
    hold_id: str
    key_id: str | None
    reason: str
    created_at: float
    created_by: str
    released_at: float | None = None
    released_by: str | None = None

    def public(self) -> dict[str, Any]:
        return {
            "id": self.hold_id,
            "object": "legal_hold",
            "key_id": self.key_id,
            "scope": "key" if self.key_id else "all",
            "reason": self.reason,
            "created_at": self.created_at,
            "created_by": self.created_by,
            "released_at": self.released_at,
            "released_by": self.released_by,
            "active": self.released_at is None,
        }


@dataclass(frozen=True, slots=True)
class Erasure:
    erasure_id: str
    subject_sha256: str
    requested_at: float
    requested_by: str
    traces: int

    def public(self) -> dict[str, Any]:
        return {
            "id": self.erasure_id,
            "object": "subject_erasure",
            "subject_sha256": self.subject_sha256,
            "requested_at": self.requested_at,
            "requested_by": self.requested_by,
            "traces_erased": self.traces,
        }


class Retention:
    """Metadata purge, legal holds and erasure, on either database."""

    def __init__(self, db: Database):
        self.db = db

    async def purge_metadata(self, now: float) -> int:
        """Empty the final rows whose metadata retention ran out, except under a hold."""
        return await self.db.execute(
            f"UPDATE traces SET {_PURGED}, metadata_purged_at = ? "
            "WHERE metadata_expires_at IS NOT NULL AND metadata_expires_at <= ? "
            f"AND metadata_purged_at IS NULL AND status <> 'in_progress' AND {_NOT_HELD}",
            (now, now),
        )

    async def place_hold(
        self, key_id: str | None, reason: str, created_by: str, now: float
    ) -> Hold:
        hold = Hold(f"hold_{secrets.token_hex(8)}", key_id, reason, now, created_by)
        await self.db.execute(
            "INSERT INTO legal_holds (hold_id, key_id, reason, created_at, created_by) "
            "VALUES (?, ?, ?, ?, ?)",
            (hold.hold_id, key_id, reason, now, created_by),
        )
        return hold

    async def release_hold(self, hold_id: str, released_by: str, now: float) -> Hold | None:
        """Release an active hold; None when there is no such active hold."""
        changed = await self.db.execute(
            "UPDATE legal_holds SET released_at = ?, released_by = ? "
            "WHERE hold_id = ? AND released_at IS NULL",
            (now, released_by, hold_id),
        )
        if not changed:
            return None
        rows = await self.db.fetch("SELECT * FROM legal_holds WHERE hold_id = ?", (hold_id,))
        return _hold(rows[0])

    async def holds(self) -> list[Hold]:
        rows = await self.db.fetch("SELECT * FROM legal_holds ORDER BY created_at, hold_id")
        return [_hold(r) for r in rows]

    async def erase_subject(self, subject: str, requested_by: str, now: float) -> Erasure:
        """Erase the stored content of every trace of `subject` and the responses stored for
        them (Responses API); metadata stays. Recorded with the number of traces."""
        digest = subject_digest(subject)
        erasure_id = f"era_{secrets.token_hex(8)}"
        erased = await self.db.execute(
            "UPDATE traces SET prompt = NULL, completion = NULL, content_expires_at = NULL "
            "WHERE subject_sha256 = ? AND (prompt IS NOT NULL OR completion IS NOT NULL)",
            (digest,),
        )
        await self.db.execute("DELETE FROM stored_responses WHERE subject_sha256 = ?", (digest,))
        await self.db.execute(
            "INSERT INTO erasures (erasure_id, subject_sha256, requested_at, requested_by, "
            "traces) VALUES (?, ?, ?, ?, ?)",
            (erasure_id, digest, now, requested_by, erased),
        )
        return Erasure(erasure_id, digest, now, requested_by, erased)

    async def erasures(self) -> list[Erasure]:
        rows = await self.db.fetch("SELECT * FROM erasures ORDER BY requested_at, erasure_id")
        return [
            Erasure(
                r["erasure_id"],
                r["subject_sha256"],
                float(r["requested_at"]),
                r["requested_by"],
                int(r["traces"]),
            )
            for r in rows
        ]


def _hold(row: Row) -> Hold:
    return Hold(
        hold_id=row["hold_id"],
        key_id=row["key_id"],
        reason=row["reason"],
        created_at=float(row["created_at"]),
        created_by=row["created_by"],
        released_at=None if row["released_at"] is None else float(row["released_at"]),
        released_by=row["released_by"],
    )

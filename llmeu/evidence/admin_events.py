"""Administrative changes as evidence: an admin event, its digest, and how a verifier checks it.

Every administrative change (a key created or revoked, a policy put, a legal
hold, an erasure, a reload, a signing-key rotation, a failed authentication
on the platform API …) is an `AdminEvent`: who acted (`actor`, a key id, and
its `role`), what they did (`action`, a stable dotted name such as
`key.create`), to what (`target`), the SHA-256 of the canonical JSON of the
object before and after (`object_digest`; never a secret), the request's
client address (`source`) and when (`at`).

The ledger keeps it in the same hash chain as calls, without a new chain
format (`llmeu.ledger.admin_event_rows`): each event is one final row of
`traces` — route `admin`, status `completed`, `key_id` the actor,
`request_model` the action, zero tokens and cost, no content — whose chained
`request_sha256` column holds `digest()` of the event, and the full event is
a row of `admin_events` keyed by that trace id. A release that knows nothing
of admin events still writes, chains and verifies such a ledger: to it the
row is a trace like any other. Why not a chain of its own: one chain means
one order for calls and changes together ("was the key revoked before this
call?"), one set of checkpoints, and one verifier walk; and why not new
chained columns: they would change the link of every row (a new chain
version), which the previous release could not verify.

What `check_events` adds to the chain's own findings (`llmeu.evidence.audit`):
each event in `admin_events` must hash to the digest its chained row holds
(else its record was **edited**), every chained admin row must have its
event (else the record was **deleted**), and every event must have its
chained row (else the row was **deleted** from the chain, which the chain
names as a gap too). An admin row the chain itself names (edited, deleted
around, reordered, inserted) is named with its action (`name_events`).
Pure: the caller reads the rows.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from llmeu.evidence.diagnosis import Damage, Finding
from llmeu.evidence.jcs import canonical_json

EVENT_VERSION = 1
ADMIN_ROUTE = "admin"
"""The `route` of a trace row that is an admin event, not a call."""
EVENT_FIELDS = (
    "trace_id", "at", "actor", "role", "action", "target", "before_sha256", "after_sha256",
    "source",
)  # fmt: skip


def object_digest(value: Any) -> str | None:
    """SHA-256 (hex) of the canonical JSON (RFC 8785) of an object before or after a change;
    None for no object (nothing before a creation)."""
    if value is None:
        return None
    return hashlib.sha256(canonical_json(value)).hexdigest()


@dataclass(frozen=True, slots=True)
class AdminEvent:
    trace_id: str
    at: float
    actor: str
    role: str | None
    action: str
    target: str | None
    before_sha256: str | None
    after_sha256: str | None
    source: str | None

    def document(self) -> dict[str, Any]:
        """What the digest covers: every field (nulls included) and the event version."""
        return {"event_version": EVENT_VERSION, **{f: getattr(self, f) for f in EVENT_FIELDS}}

    def digest(self) -> str:
        """The hex SHA-256 of `document()` in JCS: what the event's chained row holds."""
        return hashlib.sha256(canonical_json(self.document())).hexdigest()

    def public(self, chain_seq: int | None = None) -> dict[str, Any]:
        """The event as the platform API and `admin-events.jsonl` show it."""
        view = {f: getattr(self, f) for f in EVENT_FIELDS if f != "trace_id"}
        return {"id": self.trace_id, "object": "admin_event", **view,
                "event_sha256": self.digest(), "chain_seq": chain_seq}  # fmt: skip

    @classmethod
    def of_row(cls, row: Mapping[str, Any]) -> AdminEvent:
        """An event as `admin_events` stores it (a float time, nullable text)."""
        return cls(
            trace_id=str(row["trace_id"]), at=float(row["at"]), actor=str(row["actor"]),
            role=row.get("role"), action=str(row["action"]), target=row.get("target"),
            before_sha256=row.get("before_sha256"), after_sha256=row.get("after_sha256"),
            source=row.get("source"),
        )  # fmt: skip


def check_events(
    chained: Iterable[Mapping[str, Any]], events: Sequence[Mapping[str, Any]]
) -> list[Finding]:
    """Findings for the admin events: `chained`, the chain's rows (any; admin rows are
    those of `ADMIN_ROUTE`), `events`, the rows of `admin_events`."""
    stored = {row["trace_id"]: AdminEvent.of_row(row) for row in events}
    findings: list[Finding] = []
    seen: set[str] = set()
    for row in chained:
        if row.get("route") != ADMIN_ROUTE:
            continue
        trace_id = str(row.get("trace_id"))
        seen.add(trace_id)
        named = f"admin event {trace_id} (seq {row.get('chain_seq')}, {row.get('request_model')})"
        event = stored.get(trace_id)
        if event is None:
            detail = f"{named}: chained, but its record is gone from admin_events"
            findings.append(Finding(Damage.DELETED, detail, (trace_id,)))
        elif event.digest() != row.get("request_sha256"):
            detail = f"{named}: its record in admin_events does not match the digest chained"
            findings.append(Finding(Damage.EDITED, detail, (trace_id,)))
    for trace_id, event in stored.items():
        if trace_id not in seen:
            detail = (
                f"admin event {trace_id} ({event.action} by {event.actor}): in admin_events, "
                "but its row is gone from the chain"
            )
            findings.append(Finding(Damage.DELETED, detail, (trace_id,)))
    return findings


def name_events(findings: Iterable[Finding], actions: Mapping[str, str]) -> list[Finding]:
    """The chain's findings, each that names an admin event's row saying so, with its action
    (`actions`: action by trace id)."""
    named = []
    for finding in findings:
        events = [f"{i}: {actions[i]}" for i in finding.trace_ids if i in actions]
        if events and not finding.detail.startswith("admin event"):
            detail = f"{finding.detail} [admin event {', '.join(events)}]"
            finding = dataclasses.replace(finding, detail=detail)
        named.append(finding)
    return named

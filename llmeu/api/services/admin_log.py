"""Who made an administrative change, and its record on the evidence chain.

Each service that changes state through the platform API records one admin
event when the change is made (`llmeu.evidence.admin_events`,
`llmeu.ledger.admin_event_rows`): written right after the change and before the
answer, in a transaction of its own. A change whose event cannot be written
(the ledger went away in between) answers 503 like any route that needs the
ledger, and the change stands; the caller sees that the record is missing.
Other gateway processes applying the same change (a broadcast) record
nothing: the event is the acting process's.

`role_of` is the one place that says which role an actor acts in.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from llmeu.evidence.admin_events import AdminEvent, object_digest
from llmeu.ledger.admin_event_rows import new_event_id
from llmeu.ledger.api_keys import ApiKey
from llmeu.ledger.store import Store


def role_of(key: ApiKey) -> str:
    """The role a key acts in, as its event records it (`ApiKey.acting_role`)."""
    return key.acting_role


@dataclass(frozen=True, slots=True)
class Actor:
    """Who made a change: a key id (or, off the API, who ran a command), the role it
    acted in, and the client address it came from."""

    actor: str
    role: str | None
    source: str | None

    @classmethod
    def of_key(cls, key: ApiKey, source: str | None) -> Actor:
        return cls(key.key_id, role_of(key), source)


SIGNAL_ACTOR = Actor("signal:SIGHUP", None, None)
"""A reload asked for by a signal to the process: no key, no address."""


@dataclass(frozen=True, slots=True)
class AdminLog:
    """Writes the admin events of this gateway process."""

    store: Store
    instance_id: str

    async def record(
        self,
        by: Actor,
        action: str,
        target: str | None,
        *,
        before: Any = None,
        after: Any = None,
    ) -> AdminEvent:
        """One event: `before` and `after` are the changed object's public views (never a
        secret), kept as digests only."""
        event = AdminEvent(
            trace_id=new_event_id(), at=time.time(), actor=by.actor, role=by.role,
            action=action, target=target, before_sha256=object_digest(before),
            after_sha256=object_digest(after), source=by.source,
        )  # fmt: skip
        await self.store.write_admin_event(event, self.instance_id)
        return event

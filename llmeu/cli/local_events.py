"""Admin events of the commands that change the ledger, or the gateway's keys, on this machine.

`llmeu keys reset-admin`, `llmeu keys rotate-signing` and `llmeu ledger purge`
act without the platform API (whoever runs them can write the ledger or the data directory),
so they record their admin event straight on the ledger, in the same chain
(`llmeu.api.services.admin_log`). The actor is the local account and host
(`local:<user>@<host>`), acting as `admin`; there is no client address. A
ledger from before migration 19 gets no event (the command says so).
"""

from __future__ import annotations

import getpass
import socket
from typing import Any

from llmeu.api.services.admin_log import Actor, AdminLog
from llmeu.evidence.admin_events import AdminEvent
from llmeu.ledger.admin_event_rows import holds_admin_events
from llmeu.ledger.store import Store


def local_actor() -> Actor:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container's)
        user = "unknown"
    return Actor(f"local:{user}@{socket.gethostname()}", "admin", None)


async def record_local(
    store: Store, action: str, target: str | None, *, before: Any = None, after: Any = None
) -> AdminEvent | None:
    """The event, written; None when the ledger cannot hold admin events yet."""
    if not await holds_admin_events(store.db):
        return None
    log = AdminLog(store, f"cli:{socket.gethostname()}")
    return await log.record(local_actor(), action, target, before=before, after=after)

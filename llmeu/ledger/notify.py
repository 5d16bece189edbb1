"""Changes every gateway process must apply at once, over a notice channel.

The channel is the ledger database's own where it has one (PostgreSQL's
LISTEN/NOTIFY), else Redis's publish/subscribe (several worker processes on
one SQLite ledger need Redis anyway, for their shared limits).

Each process caches keys and policies. When one process revokes a key or
replaces a policy, it publishes the change on one channel; every other
process reloads what changed and acknowledges; the publisher waits, for at
most `ack_timeout`, until every live process (a recent heartbeat in
`instances`) has confirmed. So when the platform API answers a revocation,
the key is refused by every process that confirmed it — the answer says how
many did. A process whose listener connection broke misses changes until it
reconnects (at its next maintenance round); its periodic reload of keys and
policies is the fallback that bounds how long a missed change can last.

    {"type": "change", "kind": "key", "id": "k…", "from": "gw_…", "seq": 7}
    {"type": "ack", "to": "gw_…", "from": "gw_…", "seq": 7}
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from llmeu.errors import DatabaseError, SharedStateUnavailable
from llmeu.ledger.database import Database, Listener
from llmeu.ledger.store import Store

log = logging.getLogger("llmeu.ledger.notify")

CHANNEL = "llmeu_changes"


@dataclass(frozen=True, slots=True)
class Change:
    kind: str  # "key", "policy", "team" or "config"
    ident: str


class Subscription(Protocol):
    def is_closed(self) -> bool: ...

    async def close(self) -> None: ...


class NoticeChannel(Protocol):
    """Where change notices travel: every subscriber receives every payload sent."""

    async def subscribe(self, listener: Listener) -> Subscription: ...

    async def send(self, payload: str) -> None: ...


class DatabaseNotices:
    """The ledger database's own notices (PostgreSQL's LISTEN/NOTIFY)."""

    def __init__(self, db: Database):
        assert db.dialect.change_notices, "change notices need a database that has them"
        self._db = db

    async def subscribe(self, listener: Listener) -> Subscription:
        subscription: Subscription = await self._db.listen(CHANNEL, listener)
        return subscription

    async def send(self, payload: str) -> None:
        await self._db.notify(CHANNEL, payload)


_CHANNEL_ERRORS = (DatabaseError, SharedStateUnavailable)


@dataclass(slots=True)
class Propagation:
    """Which other live processes confirmed a change."""

    peers: set[str]
    confirmed: set[str] = field(default_factory=set)
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def as_dict(self) -> dict[str, int]:
        return {"instances": len(self.peers) + 1, "confirmed": len(self.confirmed) + 1}


Apply = Callable[[Change], Awaitable[None]]


class ChangeFeed:
    def __init__(
        self,
        channel: NoticeChannel,
        store: Store,
        instance_id: str,
        apply: Apply,
        *,
        live_window: float,
        ack_timeout: float = 2.0,
    ):
        self._channel = channel
        self._store = store
        self.instance_id = instance_id
        self._apply = apply
        self._live_window = live_window
        self._ack_timeout = ack_timeout
        self._conn: Subscription | None = None
        self._seq = itertools.count(1)
        self._waiting: dict[int, Propagation] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def listening(self) -> bool:
        return self._conn is not None and not self._conn.is_closed()

    async def start(self) -> None:
        """Listen, or listen again after the connection broke; a failure is logged, and
        retried at the next call (the periodic reload covers the gap)."""
        if self.listening:
            return
        try:
            self._conn = await self._channel.subscribe(self._received)
        except _CHANNEL_ERRORS as error:
            log.warning("cannot listen for changes from other gateway processes: %s", error)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._conn is not None:
            with contextlib.suppress(Exception):  # closing a broken connection
                await self._conn.close()
            self._conn = None

    async def publish(self, kind: str, ident: str) -> Propagation:
        """Tell the other live processes; returns once all confirmed, or at the timeout."""
        since = time.time() - self._live_window
        peers = await self._store.live_instances(since) - {self.instance_id}
        seq = next(self._seq)
        propagation = Propagation(peers)
        self._waiting[seq] = propagation
        message = {"type": "change", "kind": kind, "id": ident, "from": self.instance_id,
                   "seq": seq}  # fmt: skip
        try:
            await self._notify(message)
            if peers:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(propagation.done.wait(), self._ack_timeout)
        finally:
            self._waiting.pop(seq, None)
        missing = peers - propagation.confirmed
        if missing:
            log.warning("%s %s: no confirmation from %s; their periodic reload will apply it",
                        kind, ident, ", ".join(sorted(missing)))  # fmt: skip
        return propagation

    async def _notify(self, message: dict[str, Any]) -> None:
        await self._channel.send(json.dumps(message))

    def _received(self, payload: str) -> None:
        try:
            message = json.loads(payload)
            kind, sender, seq = message["type"], message["from"], int(message["seq"])
        except (ValueError, KeyError, TypeError):
            log.warning("ignored a malformed change notice: %.200s", payload)
            return
        if kind == "ack":
            propagation = self._waiting.get(seq)
            if message.get("to") == self.instance_id and propagation is not None:
                propagation.confirmed.add(sender)
                if propagation.confirmed >= propagation.peers:
                    propagation.done.set()
        elif kind == "change" and sender != self.instance_id:
            change = Change(str(message.get("kind")), str(message.get("id")))
            task = asyncio.get_running_loop().create_task(self._apply_and_confirm(change, message))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _apply_and_confirm(self, change: Change, message: dict[str, Any]) -> None:
        try:
            await self._apply(change)
            await self._notify({"type": "ack", "to": message["from"], "from": self.instance_id,
                                "seq": message["seq"]})  # fmt: skip
        except _CHANNEL_ERRORS as error:  # unconfirmed: the publisher says so, the reload follows
            log.warning("could not apply %s %s now: %s", change.kind, change.ident, error)
        except Exception:  # a background task: report, never lose the listener
            log.exception("applying %s %s failed", change.kind, change.ident)

"""A running gateway's rounds in the background: maintenance every heartbeat, and a signed
checkpoint of the chain every N traces or M minutes (`Settings.checkpoint_every_*`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field

from llmeu.api.services.answer_cache import CacheService
from llmeu.api.services.auth import KeyRing
from llmeu.api.services.policies import PolicyBook
from llmeu.api.services.team_quotas import TeamBook
from llmeu.config import Settings
from llmeu.ledger.chaining import Checkpoints
from llmeu.ledger.notify import ChangeFeed
from llmeu.ledger.retention import Retention
from llmeu.ledger.store import Store

log = logging.getLogger("llmeu")


@dataclass(eq=False)
class Upkeep:
    settings: Settings
    store: Store
    instance_id: str
    shared: bool
    """Other processes write this ledger too (`Gateway.shared`)."""
    keys: KeyRing
    teams: TeamBook
    policies: PolicyBook
    answers: CacheService
    checkpoints: Checkpoints
    _finals_since_checkpoint: int = field(default=0, init=False)
    _checkpoint_due: asyncio.Event = field(default_factory=asyncio.Event, init=False)

    async def maintain(self, changes: ChangeFeed | None) -> None:
        """Heartbeat, interrupted-call sweep, key refresh, content and metadata purge."""
        settings = self.settings
        last_purge = 0.0
        while True:
            await asyncio.sleep(settings.heartbeat_seconds)
            now = time.time()
            try:
                await self.store.heartbeat(self.instance_id, now)
                if self.shared:
                    await self.store.mark_interrupted(now - 3 * settings.heartbeat_seconds, now)
                    if changes is not None:
                        await changes.start()
                    await self.keys.load()
                    await self.teams.load()
                    await self.answers.policies_changed(await self.policies.load())
                if now - last_purge >= settings.purge_interval_seconds:
                    purged = await self.store.purge_content(now)
                    if purged:
                        log.info("purged stored content of %d traces", purged)
                    await self.answers.purge()
                    emptied = await Retention(self.store.db).purge_metadata(now)
                    if emptied:
                        log.info("purged the metadata of %d traces past keep_metadata", emptied)
                    last_purge = now
            except Exception:  # a maintenance round must never end the loop
                log.exception("maintenance round failed")

    async def checkpoint(self) -> None:
        """Sign the chain's head every N traces or M minutes. Every process looks; the first
        to store a checkpoint of a head exports it."""
        settings = self.settings
        interval = min(settings.checkpoint_every_seconds, settings.heartbeat_seconds)
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._checkpoint_due.wait(), interval)
            self._checkpoint_due.clear()
            self._finals_since_checkpoint = 0
            try:
                if await self.checkpoints.due(time.time()):
                    await self.checkpoints.make()
            except Exception:  # a checkpoint round must never end the loop
                log.exception("checkpoint round failed")

    def count_finals(self, written: int) -> None:
        """The ledger wrote `written` final rows: a checkpoint is due after N of them."""
        self._finals_since_checkpoint += written
        if self._finals_since_checkpoint >= self.settings.checkpoint_every_traces:
            self._checkpoint_due.set()

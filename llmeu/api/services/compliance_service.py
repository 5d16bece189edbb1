"""Legal holds, erasure by data subject and the exports a DPO works with.

What each does to the ledger is `llmeu.ledger.retention`'s; what an export
holds is `llmeu.api.services.exports`'. Each answer names the admin key that
acted, and the ledger keeps it: a hold or an erasure is itself on record, and an
admin event on the evidence chain (`hold.place`, `hold.release`, `subject.erase`;
an erasure's target is the subject's digest, never the user id). The HTTP side is
`llmeu.api.routes.compliance`'s.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from llmeu.api.services.admin_log import AdminLog
from llmeu.api.services.exports import ADMIN_EVENTS, EXPORTS, Period, admin_events_jsonl, render
from llmeu.api.services.platform_service import Actor, Platform
from llmeu.errors import InvalidRequest, NotFound
from llmeu.ledger.admin_event_rows import all_events
from llmeu.ledger.retention import Retention, calls_between
from llmeu.ledger.store import Store

__all__ = ["EXPORTS", "Compliance", "Export"]


@dataclass(frozen=True, slots=True)
class Export:
    content_type: str
    text: str


@dataclass(slots=True)
class Compliance:
    platform: Platform
    """Whose store and catalog (the catalog in force, reloads included) it works on."""

    @property
    def store(self) -> Store:
        return self.platform.store

    @property
    def _log(self) -> AdminLog:
        return self.platform.admin_log

    @property
    def _retention(self) -> Retention:
        return Retention(self.store.db)

    async def place_hold(self, key_id: str | None, reason: str, by: Actor) -> dict[str, Any]:
        if key_id is not None and await self.store.get_key(key_id) is None:
            raise NotFound(f"no key `{key_id}`", param="key_id")
        hold = await self._retention.place_hold(key_id, reason, by.actor, time.time())
        await self._log.record(by, "hold.place", hold.hold_id, after=hold.public())
        return hold.public()

    async def holds(self) -> list[dict[str, Any]]:
        return [h.public() for h in await self._retention.holds()]

    async def release_hold(self, hold_id: str, by: Actor) -> dict[str, Any]:
        held = [h for h in await self._retention.holds() if h.hold_id == hold_id]
        hold = await self._retention.release_hold(hold_id, by.actor, time.time())
        if hold is None:
            raise NotFound(f"no active legal hold `{hold_id}`", param="hold_id")
        before = held[0].public() if held else None
        await self._log.record(by, "hold.release", hold_id, before=before, after=hold.public())
        return hold.public()

    async def erase_subject(self, subject: str, by: Actor) -> dict[str, Any]:
        """Erase the stored content of every call made for this end user, the answers the
        answer cache keeps of them included; metadata stays. The cache's entries go after
        the ledger's content: an erasure that could not reach the cache (its Redis does not
        answer) fails, and is repeated as a whole."""
        if len(subject) > 256:
            raise InvalidRequest("a user id has at most 256 characters", param="user_id")
        erasure = await self._retention.erase_subject(subject, by.actor, time.time())
        cached = await self.platform.answers.erase_subject(erasure.subject_sha256)
        done = {**erasure.public(), "cache_entries_erased": cached}
        await self._log.record(by, "subject.erase", erasure.subject_sha256, after=done)
        return done

    async def erasures(self) -> list[dict[str, Any]]:
        return [e.public() for e in await self._retention.erasures()]

    async def export(self, name: str, since: float | None, until: float | None) -> Export:
        """One export for [`since`, `until`) (default: the last 30 days up to now)."""
        if name not in (*EXPORTS, ADMIN_EVENTS):
            names = ", ".join((*EXPORTS, ADMIN_EVENTS))
            raise NotFound(f"no export `{name}` (exports: {names})", param="name")
        end = until or time.time()
        period = Period(end - 30 * 86400 if since is None else since, end)
        if period.since >= period.until:
            raise InvalidRequest("`from` must be before `to`", param="from")
        if name == ADMIN_EVENTS:
            events = await all_events(self.store.db, period.since, period.until)
            return Export("application/x-ndjson", admin_events_jsonl(events))
        calls = await calls_between(self.store.db, period.since, period.until)
        keys = await self.store.list_keys()
        platform = self.platform
        catalogs = (platform.upstreams.catalog, period, platform.tool_servers.catalog)
        content_type, text = render(name, calls, keys, *catalogs)
        return Export(content_type, text)

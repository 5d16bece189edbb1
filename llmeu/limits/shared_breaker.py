"""Endpoint health shared through Redis: one circuit per endpoint for all processes.

Each process keeps deciding with its own `CircuitBreaker` (no Redis round trip
on the routing path). Failures and recoveries are also written to Redis, and
every `sync_interval` seconds each process adopts the shared state, so an
endpoint that failed `failure_threshold` times in total, whichever processes
saw the failures, is avoided by all of them until a probe succeeds.

    llmeu:health:{endpoint_id}   hash: failures, opened_at (ms, Redis clock)

Opening times are Redis's clock; each process converts them to its own
monotonic clock when it adopts them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from llmeu.routing.breaker import CircuitBreaker

log = logging.getLogger("llmeu.limits")

_FAILED = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local failures = redis.call('HINCRBY', KEYS[1], 'failures', 1)
if failures >= tonumber(ARGV[1]) or redis.call('HEXISTS', KEYS[1], 'opened_at') == 1 then
  redis.call('HSET', KEYS[1], 'opened_at', now)
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return failures
"""

_READ = """
local t = redis.call('TIME')
local result = {tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)}
for i, key in ipairs(KEYS) do
  local state = redis.call('HMGET', key, 'failures', 'opened_at')
  result[#result + 1] = state[1] or ''
  result[#result + 1] = state[2] or ''
end
return result
"""


def _key(endpoint_id: str) -> str:
    return f"llmeu:health:{endpoint_id}"


class SharedCircuitBreaker(CircuitBreaker):
    def __init__(
        self,
        redis_url: str,
        *,
        failure_threshold: int = 5,
        cooldown: float = 15.0,
        sync_interval: float = 0.5,
    ):
        super().__init__(failure_threshold=failure_threshold, cooldown=cooldown)
        self.redis: aioredis.Redis = aioredis.Redis.from_url(redis_url, socket_timeout=5)
        self.sync_interval = sync_interval
        self._failed = self.redis.register_script(_FAILED)
        self._read = self.redis.register_script(_READ)
        self._pending: set[asyncio.Task[Any]] = set()
        self._task: asyncio.Task[None] | None = None

    def failed(self, endpoint_id: str, now: float) -> None:
        super().failed(endpoint_id, now)
        # State outlives the cooldown long enough for a probe to decide it.
        ttl = int(max(self.cooldown * 10, 60) * 1000)
        self._spawn(self._failed([_key(endpoint_id)], [self.failure_threshold, ttl]))

    def succeeded(self, endpoint_id: str) -> None:
        if self.known(endpoint_id):
            self._spawn(self.redis.delete(_key(endpoint_id)))
        super().succeeded(endpoint_id)

    def _spawn(self, operation: Any) -> None:
        task = asyncio.get_running_loop().create_task(self._guarded(operation))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _guarded(self, operation: Any) -> None:
        try:
            await operation
        except (RedisError, OSError) as error:
            log.warning("health: cannot share endpoint state through Redis: %s", error)

    def start(self, endpoint_ids: Sequence[str]) -> None:
        self._task = asyncio.get_running_loop().create_task(
            self._sync_forever(list(endpoint_ids)), name="llmeu-shared-health"
        )

    async def sync(self, endpoint_ids: Sequence[str]) -> None:
        """Adopt the shared state of every endpoint."""
        if not endpoint_ids:
            return
        result = await self._read([_key(e) for e in endpoint_ids], [])
        redis_now = int(result[0]) / 1000
        offset = time.monotonic() - redis_now
        for index, endpoint_id in enumerate(endpoint_ids):
            failures, opened_at = result[1 + 2 * index], result[2 + 2 * index]
            self.adopt(
                endpoint_id,
                int(failures) if failures else 0,
                int(opened_at) / 1000 + offset if opened_at else None,
            )

    async def _sync_forever(self, endpoint_ids: list[str]) -> None:
        while True:
            try:
                await self.sync(endpoint_ids)
            except (RedisError, OSError) as error:
                log.warning("health: cannot read shared endpoint state: %s", error)
            await asyncio.sleep(self.sync_interval)

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._pending:
            await asyncio.wait(self._pending, timeout=5)
        await self.redis.aclose()

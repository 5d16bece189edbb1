"""Endpoint health shared through Redis: one circuit per endpoint for all processes.

Each process keeps deciding with its own `CircuitBreaker` (no Redis round trip
on the routing path). Failures and recoveries are also written to Redis, and
every `sync_interval` seconds each process sends the keys it saw calling each
endpoint and adopts the shared state, so an endpoint whose streak of failures
reaches `failure_threshold` in total, whichever processes saw them, is avoided
by all of them until a probe succeeds. The rule of which failures count is
`CircuitBreaker`'s (`llmeu.routing.breaker`), applied by the script below to
what all processes reported. Only there is it known whether one failing key
is the only caller, so one key's 5xx open the circuit through Redis (within a
sync interval), never through one process's partial view.

    {prefix}{endpoint_id}           hash: failures, counted, suspect,
                                    opened_at (ms, Redis clock), opened_by (key ids)
    {prefix}{endpoint_id}:keys      set: keys whose calls failed in the streak
    {prefix}{endpoint_id}:callers   sorted set: key → its last attempt (ms)

Opening times are Redis's clock; each process converts them to its own
monotonic clock when it adopts them. While Redis cannot be reached each
process decides alone; that is logged once when it starts and once when it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Sequence
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from llmeu.limits.limiter import REDIS_TIMEOUT
from llmeu.limits.redis import connect
from llmeu.routing.breaker import CALLER_WINDOW, CircuitBreaker, FailureKind

log = logging.getLogger("llmeu.limits")

PREFIX = "llmeu:health:"

_FAILED = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local failures = redis.call('HINCRBY', KEYS[1], 'failures', 1)
if ARGV[4] ~= '' then redis.call('SADD', KEYS[2], ARGV[4]) end
redis.call('HINCRBY', KEYS[1], ARGV[3] == '1' and 'suspect' or 'counted', 1)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
if redis.call('HEXISTS', KEYS[1], 'opened_at') == 1 then
  redis.call('HSET', KEYS[1], 'opened_at', now)
  return failures
end
local counted = tonumber(redis.call('HGET', KEYS[1], 'counted') or '0')
local suspect = tonumber(redis.call('HGET', KEYS[1], 'suspect') or '0')
local keys = redis.call('SMEMBERS', KEYS[2])
if suspect > 0 then
  local corroborated = #keys >= 2
  if not corroborated then
    redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - tonumber(ARGV[5]))
    local others = redis.call('ZCARD', KEYS[3])
    for _, key in ipairs(keys) do
      if redis.call('ZSCORE', KEYS[3], key) then others = others - 1 end
    end
    corroborated = others == 0
  end
  if corroborated then counted = counted + suspect end
end
if counted >= tonumber(ARGV[1]) then
  table.sort(keys)
  redis.call('HSET', KEYS[1], 'opened_at', now, 'opened_by', table.concat(keys, ','))
end
return failures
"""

_SEEN = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i, key in ipairs(KEYS) do
  for caller in string.gmatch(ARGV[i + 1], '[^,]+') do
    redis.call('ZADD', key, now, caller)
  end
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - tonumber(ARGV[1]))
  redis.call('PEXPIRE', key, ARGV[1])
end
return 1
"""

_READ = """
local t = redis.call('TIME')
local result = {tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)}
for i, key in ipairs(KEYS) do
  local state = redis.call('HMGET', key, 'failures', 'opened_at', 'opened_by')
  result[#result + 1] = state[1] or ''
  result[#result + 1] = state[2] or ''
  result[#result + 1] = state[3] or ''
end
return result
"""


class SharedCircuitBreaker(CircuitBreaker):
    def __init__(
        self,
        redis_url: str,
        *,
        failure_threshold: int = 5,
        cooldown: float = 15.0,
        caller_window: float = CALLER_WINDOW,
        sync_interval: float = 0.5,
        timeout: float = REDIS_TIMEOUT,
        prefix: str = PREFIX,
    ):
        super().__init__(
            failure_threshold=failure_threshold, cooldown=cooldown, caller_window=caller_window
        )
        self.redis: aioredis.Redis = connect(redis_url, timeout)
        self.sync_interval = sync_interval
        self.prefix = prefix
        self._failed = self.redis.register_script(_FAILED)
        self._seen = self.redis.register_script(_SEEN)
        self._read = self.redis.register_script(_READ)
        self._unsent: dict[str, set[str]] = {}  # callers not yet sent to Redis
        self._pending: set[asyncio.Task[Any]] = set()
        self._task: asyncio.Task[None] | None = None
        self._reachable = True

    def _key(self, endpoint_id: str) -> str:
        return f"{self.prefix}{endpoint_id}"

    def attempt_started(self, endpoint_id: str, now: float, *, key_id: str | None = None) -> None:
        super().attempt_started(endpoint_id, now, key_id=key_id)
        if key_id is not None:
            self._unsent.setdefault(endpoint_id, set()).add(key_id)

    def failed(
        self,
        endpoint_id: str,
        now: float,
        *,
        kind: FailureKind = FailureKind.UNCLASSIFIED,
        key_id: str | None = None,
    ) -> None:
        super().failed(endpoint_id, now, kind=kind, key_id=key_id)
        key = self._key(endpoint_id)
        # State outlives the cooldown long enough for a probe to decide it.
        ttl = int(max(self.cooldown * 10, 60) * 1000)
        suspect = "1" if kind.needs_corroboration and key_id is not None else "0"
        window = int(self.caller_window * 1000)
        args: list[str | int] = [self.failure_threshold, ttl, suspect, key_id or "", window]
        self._spawn(self._failed([key, f"{key}:keys", f"{key}:callers"], args))

    def _corroborated(self, endpoint_id: str, keys: set[str], now: float) -> bool:
        """Two failing keys corroborate here and now; whether one key is the only caller
        is for the script to say, which sees every process's callers (adopted at sync)."""
        return len(keys) >= 2

    def succeeded(self, endpoint_id: str) -> None:
        if self.known(endpoint_id):
            key = self._key(endpoint_id)
            self._spawn(self.redis.delete(key, f"{key}:keys"))
        super().succeeded(endpoint_id)

    def _spawn(self, operation: Awaitable[Any]) -> None:
        task = asyncio.get_running_loop().create_task(self._guarded(operation))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _guarded(self, operation: Awaitable[Any]) -> None:
        try:
            await operation
        except (RedisError, OSError) as error:
            self._unreachable(error)
        else:
            self._answered()

    def _unreachable(self, error: Exception) -> None:
        if self._reachable:
            self._reachable = False
            log.warning(
                "health: Redis unreachable (%s: %s); each process judges endpoint health "
                "alone until it answers",
                type(error).__name__,
                error,
            )

    def _answered(self) -> None:
        if not self._reachable:
            self._reachable = True
            log.warning("health: Redis answers again; endpoint health is shared")

    def start(self, endpoint_ids: Sequence[str]) -> None:
        self._task = asyncio.get_running_loop().create_task(
            self._sync_forever(list(endpoint_ids)), name="llmeu-shared-health"
        )

    async def sync(self, endpoint_ids: Sequence[str]) -> None:
        """Send the callers seen since the last sync, then adopt the shared state."""
        if self._unsent:
            unsent, self._unsent = self._unsent, {}
            keys = [f"{self._key(e)}:callers" for e in unsent]
            window = int(self.caller_window * 1000)
            await self._seen(keys, [window, *(",".join(sorted(k)) for k in unsent.values())])
        if not endpoint_ids:
            return
        result = await self._read([self._key(e) for e in endpoint_ids], [])
        offset = time.monotonic() - int(result[0]) / 1000
        for index, endpoint_id in enumerate(endpoint_ids):
            failures, opened_at, opened_by = result[1 + 3 * index : 4 + 3 * index]
            self.adopt(
                endpoint_id,
                int(failures) if failures else 0,
                int(opened_at) / 1000 + offset if opened_at else None,
                tuple(opened_by.decode().split(",")) if opened_by else (),
            )

    async def _sync_forever(self, endpoint_ids: list[str]) -> None:
        while True:
            try:
                await self.sync(endpoint_ids)
            except (RedisError, OSError) as error:
                self._unreachable(error)
            else:
                self._answered()
            await asyncio.sleep(self.sync_interval)

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._pending:
            await asyncio.wait(self._pending, timeout=5)
        await self.redis.aclose()

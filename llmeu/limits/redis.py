"""Limits shared by every gateway process through Redis.

The same sliding windows as in memory, kept in sorted sets and checked and
updated by one Lua script per admission, so concurrent processes never admit
more than the limit together. Time is Redis's own clock, shared by all.

    llmeu:limits:{key_id}:req   sorted set: one member per admitted call (rpm)
    llmeu:limits:{key_id}:tok   sorted set: `ticket:tokens` per admitted call (tpm)
    llmeu:limits:spend          hash: key id → EUR spent

A key's spend is copied from the ledger the first time a budget check finds
no entry for it (first use, or after Redis lost its data), then grows with
every settled call. When Redis cannot be reached, calls are admitted and the
failure is logged: an outage of the limits store does not stop the gateway.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from llmeu.limits.base import (
    WINDOW_SECONDS,
    Admission,
    Limiter,
    Quota,
    SpendSource,
    budget_exceeded,
    requests_exceeded,
    tokens_exceeded,
)

log = logging.getLogger("llmeu.limits")

SPEND_KEY = "llmeu:limits:spend"
_ERROR_LOG_INTERVAL = 30.0

_ADMIT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[7])
local rpm = tonumber(ARGV[1])
local tpm = tonumber(ARGV[2])
local tokens = tonumber(ARGV[3])
if ARGV[5] ~= '' then
  local spent = redis.call('HGET', KEYS[3], ARGV[6])
  if not spent then return {'unseeded', '0'} end
  if tonumber(spent) >= tonumber(ARGV[5]) then return {'budget', spent} end
end
if rpm > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
  if redis.call('ZCARD', KEYS[1]) >= rpm then
    local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
    return {'rpm', tostring(tonumber(oldest[2]) + window - now)}
  end
end
if tpm > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - window)
  local entries = redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')
  local used = 0
  for i = 1, #entries, 2 do
    used = used + tonumber(string.match(entries[i], ':(%d+)$'))
  end
  if used + tokens > tpm then
    if tokens > tpm then return {'tpm', tostring(window)} end
    local excess = used + tokens - tpm
    for i = 1, #entries, 2 do
      excess = excess - tonumber(string.match(entries[i], ':(%d+)$'))
      if excess <= 0 then
        return {'tpm', tostring(tonumber(entries[i + 1]) + window - now)}
      end
    end
    return {'tpm', tostring(window)}
  end
end
if rpm > 0 then
  redis.call('ZADD', KEYS[1], now, ARGV[4])
  redis.call('PEXPIRE', KEYS[1], window)
end
if tpm > 0 then
  redis.call('ZADD', KEYS[2], now, ARGV[4] .. ':' .. ARGV[3])
  redis.call('PEXPIRE', KEYS[2], window)
end
return {'ok', '0'}
"""

_SETTLE = """
if ARGV[1] ~= '' then
  local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
  if score then
    redis.call('ZREM', KEYS[1], ARGV[1])
    redis.call('ZADD', KEYS[1], score, ARGV[2])
  end
end
if tonumber(ARGV[3]) > 0 and redis.call('HEXISTS', KEYS[2], ARGV[4]) == 1 then
  redis.call('HINCRBYFLOAT', KEYS[2], ARGV[4], ARGV[3])
end
return 1
"""


class RedisLimiter(Limiter):
    def __init__(self, url: str):
        self.redis: aioredis.Redis = aioredis.Redis.from_url(url, socket_timeout=5)
        self._admit = self.redis.register_script(_ADMIT)
        self._settle = self.redis.register_script(_SETTLE)
        self._spend: SpendSource | None = None
        self._pending: set[asyncio.Task[Any]] = set()
        self._last_error_log = 0.0

    async def start(self, spend: SpendSource) -> None:
        self._spend = spend
        try:
            await self.redis.ping()
        except (RedisError, OSError) as error:
            self._unavailable(error)

    async def admit(self, quota: Quota, tokens: int) -> Admission:
        admission = Admission(quota, "", tokens)
        if quota.unlimited:
            return admission
        ticket = secrets.token_hex(8)
        keys = [f"llmeu:limits:{quota.key_id}:req", f"llmeu:limits:{quota.key_id}:tok", SPEND_KEY]
        args: list[str | int] = [
            quota.rpm or 0,
            quota.tpm or 0,
            tokens,
            ticket,
            "" if quota.budget_eur is None else repr(quota.budget_eur),
            quota.key_id,
            int(WINDOW_SECONDS * 1000),
        ]
        try:
            verdict, value = await self._admit(keys, args)
            if verdict == b"unseeded":
                await self._seed_spend(quota.key_id)
                verdict, value = await self._admit(keys, args)
        except (RedisError, OSError) as error:
            self._unavailable(error)
            return admission
        if verdict == b"budget":
            raise budget_exceeded(quota, float(value))
        if verdict == b"rpm":
            raise requests_exceeded(quota, float(value) / 1000)
        if verdict == b"tpm":
            raise tokens_exceeded(quota, tokens, float(value) / 1000)
        if quota.rpm is not None or quota.tpm is not None:
            admission.ticket = ticket
        return admission

    async def _seed_spend(self, key_id: str) -> None:
        """Copy the ledger's spend of a key into Redis, unless another process just did."""
        assert self._spend is not None, "start() first"
        spent = (await self._spend()).get(key_id, 0.0)
        await self.redis.hsetnx(SPEND_KEY, key_id, repr(spent))

    def settle(self, admission: Admission, tokens: int, cost_eur: float | None) -> None:
        quota = admission.quota
        reserved = ""
        if admission.ticket and quota.tpm is not None:
            reserved = f"{admission.ticket}:{admission.reserved_tokens}"
        charge = cost_eur if cost_eur and quota.budget_eur is not None else 0.0
        if not reserved and not charge:
            return
        keys = [f"llmeu:limits:{quota.key_id}:tok", SPEND_KEY]
        args = [reserved, f"{admission.ticket}:{tokens}", repr(charge), quota.key_id]
        task = asyncio.get_running_loop().create_task(self._run_settle(keys, args))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _run_settle(self, keys: list[str], args: list[Any]) -> None:
        try:
            await self._settle(keys, args)
        except (RedisError, OSError) as error:
            self._unavailable(error)

    def _unavailable(self, error: Exception) -> None:
        now = time.monotonic()
        if now - self._last_error_log >= _ERROR_LOG_INTERVAL:
            self._last_error_log = now
            log.error("limits: Redis unavailable, admitting calls unchecked: %s", error)

    async def aclose(self) -> None:
        if self._pending:
            await asyncio.wait(self._pending, timeout=5)
        await self.redis.aclose()

"""Limits shared by every gateway process through Redis.

The same sliding windows as in memory, kept in sorted sets and checked and
updated by one Lua script per admission, so concurrent processes never admit
more than the limit together. Time is Redis's own clock, shared by all.

    llmeu:limits:{key_id}:req   sorted set: one member per admitted call (rpm)
    llmeu:limits:{key_id}:tok   sorted set: `ticket:tokens` per admitted call (tpm)
    llmeu:limits:{key_id}:held  sorted set: `ticket:EUR` reserved per call in flight
    llmeu:limits:spend          hash: key id → EUR spent

A team's windows are its id's (`team_…`); its budget's spend and holds are
those of the team in one month (`team_…@2026-12` in place of the key id), so
each month starts from what the ledger says of it. A key's spend is copied
from the ledger the first time a budget check finds no entry for it (first
use, or after Redis lost its data), then grows with every settled call. An
admitted call's estimated cost is held apart until it settles, and a hold
lapses after `HOLD_SECONDS` on its own: a process that dies mid-call leaves
no reservation behind for longer than that, and the spend stays what the
ledger says.

A breaker on Redis itself: every command gives up after `timeout` (0.25 s by
default, against well under a millisecond when Redis is healthy) and is never
retried. The first timeout or connection error marks the limiter degraded:
from then on no call waits on Redis — limited calls are admitted unchecked or
refused (`limits_fail` of the key's policy) — and a background probe pings
Redis every `probe_interval` seconds until it answers. So a Redis that hangs
(stopped, partitioned, swapping) costs one timeout, not one per call. Each
change of state is logged once. Settlements dropped meanwhile are made good
from the ledger: the spend of their keys is copied again at the next check.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from llmeu.errors import LimitsUnavailable
from llmeu.limits.limiter import (
    REDIS_TIMEOUT,
    WINDOW_SECONDS,
    Admission,
    Limiter,
    Quota,
    SpendSource,
    budget_exceeded,
    requests_exceeded,
    tokens_exceeded,
)
from llmeu.routing.policy import LimitsFail

log = logging.getLogger("llmeu.limits")

SPEND_KEY = "llmeu:limits:spend"
HOLD_SECONDS = 3600
"""How long a call's budget reservation lasts at most if it never settles (its process died)."""
DEFAULT_PROBE_INTERVAL = 1.0

_ADMIT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[7])
local rpm = tonumber(ARGV[1])
local tpm = tonumber(ARGV[2])
local tokens = tonumber(ARGV[3])
local used = 0
if ARGV[5] ~= '' then
  local spent = redis.call('HGET', KEYS[3], ARGV[6])
  if not spent then return {'unseeded', '0'} end
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - tonumber(ARGV[10]))
  local total = tonumber(spent)
  for _, hold in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do
    total = total + tonumber(string.match(hold, ':([^:]+)$'))
  end
  if total >= tonumber(ARGV[5]) then return {'budget', tostring(total)} end
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
local held = tokens
if tpm > 0 then
  held = tokens + math.max(0, math.min(tonumber(ARGV[9]), tpm - used - tokens))
  redis.call('ZADD', KEYS[2], now, ARGV[4] .. ':' .. held)
  redis.call('PEXPIRE', KEYS[2], window)
end
if ARGV[5] ~= '' and tonumber(ARGV[8]) > 0 then
  redis.call('ZADD', KEYS[4], now, ARGV[4] .. ':' .. ARGV[8])
  redis.call('PEXPIRE', KEYS[4], tonumber(ARGV[10]))
end
return {'ok', tostring(held)}
"""

_SETTLE = """
if ARGV[1] ~= '' then
  local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
  if score then
    redis.call('ZREM', KEYS[1], ARGV[1])
    redis.call('ZADD', KEYS[1], score, ARGV[2])
  end
end
if ARGV[5] ~= '' then
  redis.call('ZREM', KEYS[3], ARGV[5])
end
if tonumber(ARGV[3]) > 0 and redis.call('HEXISTS', KEYS[2], ARGV[4]) == 1 then
  redis.call('HINCRBYFLOAT', KEYS[2], ARGV[4], ARGV[3])
end
return 1
"""


def _held(spend_id: str) -> str:
    """The sorted set of the budget reservations of a key, or of a team in a month."""
    return f"llmeu:limits:{spend_id}:held"


def connect(url: str, timeout: float) -> aioredis.Redis:
    """A client that gives up after `timeout` seconds and never retries by itself:
    its callers decide what a Redis that does not answer means."""
    return aioredis.Redis.from_url(
        url,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        retry=Retry(NoBackoff(), 0),
    )


class RedisLimiter(Limiter):
    def __init__(
        self,
        url: str,
        *,
        timeout: float = REDIS_TIMEOUT,
        probe_interval: float = DEFAULT_PROBE_INTERVAL,
    ):
        super().__init__()
        self.redis: aioredis.Redis = connect(url, timeout)
        self.probe_interval = probe_interval
        self._admit = self.redis.register_script(_ADMIT)
        self._settle = self.redis.register_script(_SETTLE)
        self._spend: SpendSource | None = None
        self._pending: set[asyncio.Task[Any]] = set()
        self._probe: asyncio.Task[None] | None = None
        self._unsettled: set[str] = set()  # keys whose spend Redis missed while degraded

    async def start(self, spend: SpendSource) -> None:
        self._spend = spend
        try:
            await self.redis.ping()
        except (RedisError, OSError) as error:
            self._degrade(error)

    async def admit(
        self,
        quota: Quota,
        tokens: int,
        *,
        output_tokens: int = 0,
        reserve_eur: float = 0.0,
        limits_fail: LimitsFail = LimitsFail.OPEN,
    ) -> Admission:
        admission = Admission(quota, "", tokens)
        if quota.unlimited:
            return admission
        if self.state.degraded:
            return self._unchecked(admission, limits_fail)
        ticket = secrets.token_hex(8)
        prefix = f"llmeu:limits:{quota.key_id}"
        keys = [f"{prefix}:req", f"{prefix}:tok", SPEND_KEY, _held(quota.spend_id)]
        args: list[str | int] = [
            quota.rpm or 0,
            quota.tpm or 0,
            tokens,
            ticket,
            "" if quota.budget_eur is None else repr(quota.budget_eur),
            quota.spend_id,
            int(WINDOW_SECONDS * 1000),
            repr(reserve_eur),
            output_tokens,
            HOLD_SECONDS * 1000,
        ]
        try:
            verdict, value = await self._admit(keys, args)
            if verdict == b"unseeded":
                await self._seed_spend(quota.spend_id)
                verdict, value = await self._admit(keys, args)
        except (RedisError, OSError) as error:
            self._degrade(error)
            return self._unchecked(admission, limits_fail)
        if verdict == b"budget":
            raise budget_exceeded(quota, float(value))
        if verdict == b"rpm":
            raise requests_exceeded(quota, float(value) / 1000)
        if verdict == b"tpm":
            raise tokens_exceeded(quota, tokens, float(value) / 1000)
        if quota.rpm is not None or quota.tpm is not None:
            admission.ticket = ticket
            admission.reserved_tokens = int(value)
        if quota.budget_eur is not None and reserve_eur > 0:
            admission.reserved_eur = reserve_eur
            admission.hold = f"{ticket}:{reserve_eur!r}"
        return admission

    def _unchecked(self, admission: Admission, limits_fail: LimitsFail) -> Admission:
        if limits_fail is LimitsFail.CLOSED:
            self.state.unchecked_refused += 1
            raise LimitsUnavailable(
                f"The limits of key {admission.quota.key_id} cannot be checked right now and "
                "its policy refuses calls it cannot check (limits_fail: closed). Retry later.",
                retry_after=self.probe_interval,
            )
        self.state.unchecked_admitted += 1
        return admission

    async def _seed_spend(self, spend_id: str) -> None:
        """Copy the ledger's spend of a key (or a team's in a month) into Redis, unless
        another process just did."""
        assert self._spend is not None, "start() first"
        spent = (await self._spend()).get(spend_id, 0.0)
        await self.redis.hsetnx(SPEND_KEY, spend_id, repr(spent))

    def settle(self, admission: Admission, tokens: int, cost_eur: float | None) -> None:
        quota = admission.quota
        reserved = ""
        if admission.ticket and quota.tpm is not None:
            reserved = f"{admission.ticket}:{admission.reserved_tokens}"
        charge = cost_eur if cost_eur and quota.budget_eur is not None else 0.0
        hold, admission.hold = admission.hold, ""
        if not reserved and not charge and not hold:
            return
        if self.state.degraded:
            # A reservation lapses with its window or its hold's time; a charge is recovered
            # from the ledger.
            if charge or hold:
                self._unsettled.add(quota.spend_id)
            return
        keys = [f"llmeu:limits:{quota.key_id}:tok", SPEND_KEY, _held(quota.spend_id)]
        args = [reserved, f"{admission.ticket}:{tokens}", repr(charge), quota.spend_id, hold]
        task = asyncio.get_running_loop().create_task(
            self._run_settle(keys, args, bool(charge or hold))
        )
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def release(self, admission: Admission) -> None:
        quota = admission.quota
        hold, admission.hold = admission.hold, ""
        if self.state.degraded or not (admission.ticket or hold):
            return  # what it holds lapses with its window, or its hold's time
        prefix = f"llmeu:limits:{quota.key_id}"
        try:
            async with self.redis.pipeline(transaction=False) as pipe:
                if admission.ticket:
                    pipe.zrem(f"{prefix}:req", admission.ticket)
                    pipe.zrem(f"{prefix}:tok", f"{admission.ticket}:{admission.reserved_tokens}")
                if hold:
                    pipe.zrem(_held(quota.spend_id), hold)
                await pipe.execute()
        except (RedisError, OSError) as error:
            self._degrade(error)
        admission.reserved_eur = 0.0

    async def _run_settle(self, keys: list[str], args: list[Any], charged: bool) -> None:
        try:
            await self._settle(keys, args)
        except (RedisError, OSError) as error:
            if charged:
                self._unsettled.add(args[3])
            self._degrade(error)

    def _degrade(self, error: Exception) -> None:
        """Stop waiting on Redis until a probe finds it answering."""
        state = self.state
        if state.degraded:
            return
        state.degraded = True
        state.degraded_since = time.monotonic()
        log.error(
            "limits: Redis does not answer (%s: %s); limited calls are admitted unchecked, "
            "or refused under policies with limits_fail: closed, until it answers "
            "(probing every %g s)",
            type(error).__name__,
            error,
            self.probe_interval,
        )
        self._probe = asyncio.get_running_loop().create_task(
            self._probe_until_answered(state.unchecked_admitted, state.unchecked_refused),
            name="llmeu-limits-probe",
        )

    async def _probe_until_answered(self, admitted: int, refused: int) -> None:
        """Ping until Redis answers; `admitted` and `refused` are the counts at the trip."""
        state = self.state
        while True:
            await asyncio.sleep(self.probe_interval)
            try:
                await self.redis.ping()
                await self._forget_unsettled_spend()
            except (RedisError, OSError):
                continue
            break
        since = state.degraded_since or time.monotonic()
        state.degraded, state.degraded_since = False, None
        log.warning(
            "limits: Redis answers again after %.1f s; limits are checked again "
            "(meanwhile %d limited calls were admitted unchecked and %d refused)",
            time.monotonic() - since,
            state.unchecked_admitted - admitted,
            state.unchecked_refused - refused,
        )

    async def _forget_unsettled_spend(self) -> None:
        """Drop the spend and holds Redis keeps for keys whose settlements it missed: the
        next budget check copies the spend afresh from the ledger, which missed nothing."""
        while self._unsettled:
            keys = set(self._unsettled)
            await self.redis.hdel(SPEND_KEY, *keys)
            await self.redis.delete(*map(_held, keys))
            self._unsettled -= keys

    async def aclose(self) -> None:
        if self._probe is not None:
            self._probe.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._probe
        if self._pending:
            await asyncio.wait(self._pending, timeout=5)
        await self.redis.aclose()

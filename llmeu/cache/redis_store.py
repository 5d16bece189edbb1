"""Entries in Redis, shared by every gateway process and replica, encrypted at rest.

    llmeu:cache:e:{name}    an entry, sealed (`llmeu.cache.sealing`), expiring with its ttl
    llmeu:cache:lru         sorted set: name → its last use's tick; the bound evicts from its bottom
    llmeu:cache:clock       the tick: a counter every use advances, so uses are never tied
    llmeu:cache:sizes       hash: name → bytes; llmeu:cache:bytes their sum
    llmeu:cache:t:{tag}     set: the names of a policy's or a data subject's entries
    llmeu:cache:v:{scope}   hash: name → its prompt's embedding, sealed, with its expiry
    llmeu:cache:vs          hash: name → the key of the hash holding its embedding

Names are HMACs (nothing in Redis says which prompt, key, policy or subject an
entry is of). One Lua script stores an entry and evicts the least recently
used until the entries fit `max_bytes`; an entry that expired sinks to the
bottom of the LRU order (nothing uses it) and is accounted for when evicted.
The script names keys it derives from its arguments, so the cache needs one
Redis, not a cluster.

A Redis that does not answer makes the cache miss, never the call fail: after
a failed command the cache is bypassed for `pause` seconds (logged once per
outage), so a Redis that hangs costs one timeout, not one per call.
"""

from __future__ import annotations

import logging
import struct
import time
from array import array
from collections.abc import Sequence
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from llmeu.cache.entry import Entry, decode_entry, encode_entry
from llmeu.cache.sealing import Sealer
from llmeu.cache.similarity import Vector, nearest
from llmeu.cache.stores import Placed, Size
from llmeu.errors import ServiceUnavailable

log = logging.getLogger("llmeu.cache")

PREFIX = "llmeu:cache:"
_LRU, _SIZES, _BYTES, _SCOPES, _CLOCK = (
    PREFIX + n for n in ("lru", "sizes", "bytes", "vs", "clock")
)

_GET = """
local blob = redis.call('GET', KEYS[1])
if blob then redis.call('ZADD', KEYS[2], 'XX', redis.call('INCR', KEYS[3]), ARGV[1]) end
return blob
"""

_PUT = """
local name, blob, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3])
local max_bytes, prefix = tonumber(ARGV[4]), ARGV[6]
local now = redis.call('INCR', ARGV[5])
local old = redis.call('HGET', KEYS[3], name)
if old then redis.call('DECRBY', KEYS[4], old) end
redis.call('SET', KEYS[1], blob, 'PX', ttl)
redis.call('ZADD', KEYS[2], now, name)
redis.call('HSET', KEYS[3], name, #blob)
local total = redis.call('INCRBY', KEYS[4], #blob)
local first_tag = 6
if ARGV[7] ~= '' then
  redis.call('HSET', KEYS[6], name, ARGV[7])
  redis.call('PEXPIRE', KEYS[6], ttl, 'GT')
  redis.call('PEXPIRE', KEYS[6], ttl, 'NX')
  redis.call('HSET', KEYS[5], name, KEYS[6])
  if redis.call('HLEN', KEYS[6]) > tonumber(ARGV[8]) then
    local other = redis.call('HRANDFIELD', KEYS[6])
    if other ~= name then redis.call('HDEL', KEYS[6], other) end
  end
  first_tag = 7
end
for i = first_tag, #KEYS do
  redis.call('SADD', KEYS[i], name)
  redis.call('PEXPIRE', KEYS[i], ttl, 'GT')
  redis.call('PEXPIRE', KEYS[i], ttl, 'NX')
end
local evicted = 0
while total > max_bytes do
  local oldest = redis.call('ZPOPMIN', KEYS[2])
  if #oldest == 0 then break end
  local victim = oldest[1]
  local size = redis.call('HGET', KEYS[3], victim)
  redis.call('HDEL', KEYS[3], victim)
  redis.call('DEL', prefix .. 'e:' .. victim)
  local scope = redis.call('HGET', KEYS[5], victim)
  if scope then
    redis.call('HDEL', scope, victim)
    redis.call('HDEL', KEYS[5], victim)
  end
  if size then total = redis.call('DECRBY', KEYS[4], size) end
  if victim ~= name then evicted = evicted + 1 end
end
return {evicted, total, redis.call('ZCARD', KEYS[2])}
"""

_DROP = """
local names = redis.call('SMEMBERS', KEYS[1])
local dropped = 0
for _, name in ipairs(names) do
  dropped = dropped + redis.call('DEL', ARGV[1] .. 'e:' .. name)
  redis.call('ZREM', KEYS[2], name)
  local size = redis.call('HGET', KEYS[3], name)
  if size then
    redis.call('HDEL', KEYS[3], name)
    redis.call('DECRBY', KEYS[4], size)
  end
  local scope = redis.call('HGET', KEYS[5], name)
  if scope then
    redis.call('HDEL', scope, name)
    redis.call('HDEL', KEYS[5], name)
  end
end
redis.call('DEL', KEYS[1])
return dropped
"""

_EXPIRY = struct.Struct(">d")
SCOPE_VECTORS = 256
"""Prompts the semantic cache compares in one scope at most: every look-up reads them all
(about 1.6 kB each, sealed); past it a new one takes the place of one picked at random."""


def connect(url: str, timeout: float) -> aioredis.Redis:
    """A client that gives up after `timeout` seconds and never retries by itself."""
    return aioredis.Redis.from_url(
        url, socket_timeout=timeout, socket_connect_timeout=timeout, retry=Retry(NoBackoff(), 0)
    )


class RedisStore:
    backend = "redis"

    def __init__(
        self, url: str, sealer: Sealer, max_bytes: int, *, timeout: float, pause: float = 5.0
    ):
        self.redis: aioredis.Redis = connect(url, timeout)
        self.max_bytes = max_bytes
        self._sealer = sealer
        self._pause = pause
        self._get = self.redis.register_script(_GET)
        self._put = self.redis.register_script(_PUT)
        self._drop = self.redis.register_script(_DROP)
        self._bypass_until = 0.0
        self.evictions = 0
        self.errors = 0
        self._known = Size(0, 0, max_bytes)

    async def get(self, key: str) -> Entry | None:
        return await self._read(self._sealer.name(key))

    async def _read(self, name: str) -> Entry | None:
        sealed = await self._run(self._get([PREFIX + "e:" + name, _LRU, _CLOCK], [name]), None)
        data = self._sealer.open(sealed, name) if sealed is not None else None
        return decode_entry(data) if data is not None else None

    async def put(
        self, key: str, entry: Entry, ttl: float, tags: Sequence[str], placed: Placed | None
    ) -> None:
        name = self._sealer.name(key)
        ttl_ms = max(1, int(ttl * 1000))
        keys = [PREFIX + "e:" + name, _LRU, _SIZES, _BYTES, _SCOPES]
        vector = b""
        if placed is not None:
            keys.append(self._scope_key(placed.scope))
            expiry = _EXPIRY.pack(time.time() + ttl)
            vector = self._sealer.seal(expiry + placed.vector.tobytes(), name)
        keys += [PREFIX + "t:" + self._sealer.name(tag) for tag in tags]
        blob = self._sealer.seal(encode_entry(entry), name)
        args: list[Any] = [name, blob, ttl_ms, self.max_bytes, _CLOCK, PREFIX, vector,
                           SCOPE_VECTORS]  # fmt: skip
        evicted, used, entries = await self._run(self._put(keys, args), [0, None, None])
        self.evictions += int(evicted)
        if used is not None:
            self._known = Size(int(entries), int(used), self.max_bytes)

    async def nearest(self, scope: str, vector: Vector, threshold: float) -> Entry | None:
        found: dict[bytes, bytes] = await self._run(self.redis.hgetall(self._scope_key(scope)), {})
        now = time.time()
        candidates: list[tuple[str, Vector]] = []
        for raw_name, sealed in found.items():
            name = raw_name.decode()
            data = self._sealer.open(sealed, name)
            if data is None or _EXPIRY.unpack_from(data)[0] <= now:
                continue
            stored: Vector = array("f")
            stored.frombytes(data[_EXPIRY.size :])
            candidates.append((name, stored))
        best = nearest(vector, candidates, threshold)
        return None if best is None else await self._read(best[0])

    async def drop(self, tag: str) -> int:
        keys = [PREFIX + "t:" + self._sealer.name(tag), _LRU, _SIZES, _BYTES, _SCOPES]
        return int(await self._run(self._drop(keys, [PREFIX]), 0, raise_=True))

    async def purge(self) -> int:
        """Expired entries expire in Redis by themselves (their accounting goes with the next
        eviction); the upkeep reads the size again for the metrics."""
        await self.size()
        return 0

    async def clear(self) -> int:
        count = int(await self._run(self.redis.zcard(_LRU), 0, raise_=True))
        names = [name async for name in self.redis.scan_iter(match=PREFIX + "*", count=1000)]
        for start in range(0, len(names), 1000):
            await self._run(self.redis.delete(*names[start : start + 1000]), 0, raise_=True)
        return count

    async def size(self) -> Size:
        pipe = self.redis.pipeline(transaction=False)
        pipe.zcard(_LRU)
        pipe.get(_BYTES)
        entries, used = await self._run(pipe.execute(), [None, None])
        if entries is not None:
            self._known = Size(int(entries), int(used or 0), self.max_bytes)
        return self._known

    def known_size(self) -> Size:
        return self._known

    async def aclose(self) -> None:
        await self.redis.aclose()

    def _scope_key(self, scope: str) -> str:
        return PREFIX + "v:" + self._sealer.name(scope)

    async def _run(self, command: Any, default: Any, *, raise_: bool = False) -> Any:
        """`command`'s result; on a failure (or while bypassed after one) `default`, or the
        error for an administrative command (`raise_`), whose caller must say it failed."""
        if not raise_ and time.monotonic() < self._bypass_until:
            command.close()
            return default
        try:
            return await command
        except (RedisError, OSError) as error:
            self.errors += 1
            if time.monotonic() >= self._bypass_until:
                log.error("cache: Redis does not answer (%s: %s); calls go uncached for %g s",
                          type(error).__name__, error, self._pause)  # fmt: skip
            self._bypass_until = time.monotonic() + self._pause
            if raise_:
                raise ServiceUnavailable(
                    f"the answer cache's Redis does not answer ({error}): nothing was removed "
                    "from it; repeat the request",
                    code="cache_unavailable",
                ) from None
            return default

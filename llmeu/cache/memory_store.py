"""Entries in this process: the default, when the gateway has no Redis.

Bounded by the bytes the entries take encoded; past the bound the least
recently used go first. Entries are kept as objects (a hit decodes nothing);
their size is what they would take in Redis. A gateway of several processes
sharing a ledger without Redis has one such cache per process: an erasure, a
policy change or a clear reaches the others as a change notice
(`llmeu.ledger.notify`), like a revoked key.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from llmeu.cache.entry import Entry, encode_entry
from llmeu.cache.similarity import Vector, nearest
from llmeu.cache.stores import Placed, Size

SCOPE_VECTORS = 1024
"""Prompts the semantic cache compares in one scope at most; the oldest go first."""


@dataclass(slots=True)
class _Kept:
    entry: Entry
    size: int
    expires_at: float
    tags: tuple[str, ...]
    scope: str | None


class MemoryStore:
    backend = "memory"

    def __init__(self, max_bytes: int, clock: Callable[[], float] = time.monotonic):
        self.max_bytes = max_bytes
        self._clock = clock
        self._entries: OrderedDict[str, _Kept] = OrderedDict()
        self._tags: dict[str, set[str]] = {}
        self._vectors: dict[str, OrderedDict[str, Vector]] = {}
        self._bytes = 0
        self.evictions = 0
        self.errors = 0

    async def get(self, key: str) -> Entry | None:
        kept = self._entries.get(key)
        if kept is None:
            return None
        if kept.expires_at <= self._clock():
            self._remove(key)
            return None
        self._entries.move_to_end(key)
        return kept.entry

    async def put(
        self, key: str, entry: Entry, ttl: float, tags: Sequence[str], placed: Placed | None
    ) -> None:
        size = len(encode_entry(entry)) + (4 * len(placed.vector) if placed else 0)
        if size > self.max_bytes:
            return
        self._remove(key)
        scope = placed.scope if placed is not None else None
        self._entries[key] = _Kept(entry, size, self._clock() + ttl, tuple(tags), scope)
        self._bytes += size
        for tag in tags:
            self._tags.setdefault(tag, set()).add(key)
        if placed is not None:
            vectors = self._vectors.setdefault(placed.scope, OrderedDict())
            vectors[key] = placed.vector
            while len(vectors) > SCOPE_VECTORS:
                vectors.popitem(last=False)
        while self._bytes > self.max_bytes:
            self._remove(next(iter(self._entries)))
            self.evictions += 1

    async def nearest(self, scope: str, vector: Vector, threshold: float) -> Entry | None:
        vectors = self._vectors.get(scope)
        if not vectors:
            return None
        now, entries = self._clock(), self._entries
        live = ((key, v) for key, v in vectors.items() if entries[key].expires_at > now)
        found = nearest(vector, live, threshold)
        return None if found is None else await self.get(found[0])

    async def drop(self, tag: str) -> int:
        keys = self._tags.pop(tag, set())
        for key in keys:
            self._remove(key)
        return len(keys)

    async def purge(self) -> int:
        now = self._clock()
        expired = [key for key, kept in self._entries.items() if kept.expires_at <= now]
        for key in expired:
            self._remove(key)
        return len(expired)

    async def clear(self) -> int:
        count = len(self._entries)
        self._entries.clear()
        self._tags.clear()
        self._vectors.clear()
        self._bytes = 0
        return count

    async def size(self) -> Size:
        return self.known_size()

    def known_size(self) -> Size:
        return Size(len(self._entries), self._bytes, self.max_bytes)

    async def aclose(self) -> None:
        await self.clear()

    def _remove(self, key: str) -> None:
        kept = self._entries.pop(key, None)
        if kept is None:
            return
        self._bytes -= kept.size
        for tag in kept.tags:
            keys = self._tags.get(tag)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._tags[tag]
        if kept.scope is not None:
            vectors = self._vectors.get(kept.scope)
            if vectors is not None:
                vectors.pop(key, None)
                if not vectors:
                    del self._vectors[kept.scope]

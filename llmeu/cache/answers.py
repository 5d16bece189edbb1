"""The answer cache as a call sees it: look up, keep, and remove what no longer may be kept.

`AnswerCache.look_up` tries the exact key, then — where the policy asks for it
and the request may be served that way — the nearest prompt of the same scope
(`llmeu.cache.lookups`), embedded by the bundled model (`Embed`). A miss returns
what the call needs to keep its answer afterwards (`keep`): its place, and the
embedding already computed. Every entry is tagged with its policy and, where
the call named one, its data subject, so that a policy change, an erasure or
`llmeu cache clear` removes exactly what they concern.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from msgspec import Struct

from llmeu.cache.entry import Entry
from llmeu.cache.lookups import Cacheable, Lookup
from llmeu.cache.similarity import WINDOW_TOKENS, Vector, normalized
from llmeu.cache.stores import Placed, Store, policy_tag, subject_tag
from llmeu.routing.cache_rules import CacheRules, SemanticRules

log = logging.getLogger("llmeu.cache")

Embed = Callable[[str], Awaitable[tuple[Sequence[float], int | None] | None]]
"""The bundled embedding model: a text's vector and its token count, or None when the model
is not available in this gateway (then the cache answers exact matches only)."""

MAX_SEMANTIC_CHARACTERS = 8 * WINDOW_TOKENS
"""Longer texts are not embedded: the model would read only their beginning."""


class HitKind(StrEnum):
    EXACT = "exact"
    SEMANTIC = "semantic"


class Consulted(Struct, frozen=True):
    """What a look-up found: an entry and how (`hit`), or a miss and how to keep its answer."""

    lookup: Lookup
    hit: Entry | None = None
    kind: HitKind | None = None
    placed: Placed | None = None


@dataclass(slots=True)
class Counts:
    """This process's traffic through the cache, for `/metrics` and `llmeu cache stats`."""

    hits: dict[HitKind, int] = field(default_factory=lambda: dict.fromkeys(HitKind, 0))
    misses: int = 0
    stores: int = 0
    skipped: int = 0
    """Calls under a caching policy that asked not to be served from the cache."""

    @property
    def ratio(self) -> float:
        hits = sum(self.hits.values())
        return hits / (hits + self.misses) if hits + self.misses else 0.0


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The cache's numbers as the metrics read them (`llmeu.observability.cache_metrics`)."""

    backend: str
    entries: int
    bytes: int
    max_bytes: int
    exact_hits: int
    semantic_hits: int
    misses: int
    stores: int
    evictions: int
    errors: int
    hit_ratio: float


def semantic_applies(rules: SemanticRules | None, request: Cacheable) -> bool:
    if rules is None or request.text is None or len(request.text) > MAX_SEMANTIC_CHARACTERS:
        return False
    return (rules.tools or not request.tools) and (rules.temperature or not request.sampled)


class AnswerCache:
    def __init__(self, store: Store, embed: Embed):
        self.store = store
        self._embed = embed
        self.counts = Counts()

    async def look_up(self, lookup: Lookup, rules: CacheRules, *, read: bool) -> Consulted:
        """The entry answering `lookup`, if any; `read` false (the request said `no-cache`):
        none is read, the answer is kept afresh."""
        if read:
            entry = await self.store.get(lookup.exact)
            if entry is not None:
                return self._hit(lookup, entry, HitKind.EXACT)
        semantic = rules.semantic
        placed = None
        if semantic is not None and semantic_applies(semantic, lookup.request):
            placed = await self._placed(lookup)
            if placed is not None and read:
                entry = await self.store.nearest(placed.scope, placed.vector, semantic.threshold)
                if entry is not None:
                    return self._hit(lookup, entry, HitKind.SEMANTIC)
        self.counts.misses += 1
        return Consulted(lookup, placed=placed)

    def skipped(self) -> None:
        self.counts.skipped += 1

    async def keep(
        self, consulted: Consulted, entry: Entry, ttl: float, subject_sha256: str | None
    ) -> None:
        """Keep a completed call's answer for `ttl` seconds (never longer: the policy's)."""
        lookup = consulted.lookup
        tags = [policy_tag(lookup.partition.policy_id)]
        if subject_sha256:
            tags.append(subject_tag(subject_sha256))
        await self.store.put(lookup.exact, entry, ttl, tags, consulted.placed)
        self.counts.stores += 1

    async def erase_subject(self, subject_sha256: str) -> int:
        return await self.store.drop(subject_tag(subject_sha256))

    async def drop_policy(self, policy_id: str) -> int:
        return await self.store.drop(policy_tag(policy_id))

    async def clear(self) -> int:
        return await self.store.clear()

    async def stats(self) -> dict[str, Any]:
        size = await self.store.size()
        counts = self.counts
        return {
            "object": "cache.stats",
            "backend": self.store.backend,
            "entries": size.entries,
            "bytes": size.bytes,
            "max_bytes": size.max_bytes,
            "hits": {kind.value: n for kind, n in counts.hits.items()},
            "misses": counts.misses,
            "stores": counts.stores,
            "skipped": counts.skipped,
            "evictions": self.store.evictions,
            "hit_ratio": round(counts.ratio, 4),
        }

    def snapshot(self) -> Snapshot:
        store, counts = self.store, self.counts
        size = store.known_size()
        return Snapshot(
            store.backend, size.entries, size.bytes, size.max_bytes,
            counts.hits[HitKind.EXACT], counts.hits[HitKind.SEMANTIC], counts.misses,
            counts.stores, store.evictions, store.errors, counts.ratio,
        )  # fmt: skip

    def _hit(self, lookup: Lookup, entry: Entry, kind: HitKind) -> Consulted:
        self.counts.hits[kind] += 1
        return Consulted(lookup, hit=entry, kind=kind)

    async def _placed(self, lookup: Lookup) -> Placed | None:
        """The prompt's embedding in its scope; None when the model cannot read it whole."""
        text = lookup.request.text
        assert text is not None
        embedded = await self._embed(text)
        if embedded is None:
            return None
        values, tokens = embedded
        if tokens is not None and tokens >= WINDOW_TOKENS:
            return None
        vector: Vector = normalized(values)
        return Placed(lookup.scope, vector)

"""The gateway's answer cache: where it lives, what embeds its prompts, and its upkeep.

Built once by the gateway (`CacheService.build`): in this process by default,
in Redis when the gateway has `--redis-url` and `LLMEU_CACHE_KEY` (the secret
its entries are encrypted with, the same in every process that shares them).
With Redis but without the secret the cache stays in each process, and the
start says so: entries are never written to Redis unencrypted.

Prompts are embedded for the semantic cache by the bundled embedding model,
through its provider's `embed` — whichever process runs it — and by nothing
else: a policy asking for a semantic cache in a gateway without that model
(`--no-local`) is served exact matches only.

What must reach every process goes out as a change notice (`cache` changes,
like a revoked key) while the cache is per process: a clear, an erasure, a
changed policy. With Redis every process shares the one cache, and the
process that took the change removes the entries itself.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from llmeu.api.services.upstreams import Upstreams
from llmeu.cache.answers import AnswerCache
from llmeu.cache.memory_store import MemoryStore
from llmeu.cache.redis_store import RedisStore
from llmeu.cache.sealing import KEY_ENV, Sealer
from llmeu.cache.stores import Store
from llmeu.calls.hangup import Hangup
from llmeu.calls.output import Embeddings
from llmeu.config import Settings
from llmeu.errors import ApiError
from llmeu.ledger.notify import Propagation
from llmeu.routing.catalog import LOCAL_EMBEDDING_MODEL, EndpointKind
from llmeu.routing.policy import Policy

log = logging.getLogger("llmeu.cache")

CHANGE = "cache"
"""The kind of change notice the cache's upkeep sends to the other processes."""

Broadcast = Callable[[str, str], Any]


class CacheService:
    def __init__(
        self,
        store: Store,
        upstreams: Callable[[], Upstreams],
        broadcast: Broadcast,
        *,
        unshared: str | None = None,
    ) -> None:
        self._upstreams = upstreams
        self._broadcast = broadcast
        self._unshared = unshared
        self.cache = AnswerCache(store, self._embed)

    @classmethod
    def build(
        cls, settings: Settings, upstreams: Callable[[], Upstreams], broadcast: Broadcast
    ) -> CacheService:
        if settings.redis_url is not None and settings.cache_key:
            sealer = Sealer(settings.cache_key)
            store = RedisStore(settings.redis_url, sealer, settings.cache_max_bytes,
                               timeout=settings.redis_timeout_seconds)  # fmt: skip
            return cls(store, upstreams, broadcast)
        unshared = None
        if settings.redis_url is not None:
            unshared = (
                f"{KEY_ENV} is not set, and entries are never written to Redis unencrypted: "
                "the answer cache stays in each gateway process"
            )
        return cls(MemoryStore(settings.cache_max_bytes), upstreams, broadcast, unshared=unshared)

    @property
    def shared(self) -> bool:
        """Every gateway process reads and writes the same entries (Redis)."""
        return self.cache.store.backend == "redis"

    def announce(self, policies: Iterable[Policy]) -> None:
        """At start: which policies cache, and the semantic caches that cannot be semantic."""
        caching = [p for p in policies if p.cache is not None]
        if not caching:
            return
        log.info("answer cache (%s) on for policies %s", self.cache.store.backend,
                 ", ".join(p.policy_id for p in caching))  # fmt: skip
        if self._unshared is not None:
            log.warning(self._unshared)
        semantic = [p.policy_id for p in caching if p.cache and p.cache.semantic]
        if semantic and self._embedder() is None:
            log.warning(
                "policies %s ask for a semantic cache, but the bundled embedding model (%s) "
                "is not loaded here: they are answered from exact matches only",
                ", ".join(semantic), LOCAL_EMBEDDING_MODEL,
            )  # fmt: skip

    async def stats(self) -> dict[str, Any]:
        return {**await self.cache.stats(), "shared": self.shared}

    async def clear(self, *, tell_others: bool = True) -> dict[str, Any]:
        cleared = await self.cache.clear()
        propagation = await self._tell("clear") if tell_others else None
        return {
            "object": "cache.cleared",
            "entries": cleared,
            "propagation": propagation.as_dict() if propagation is not None else None,
        }

    async def erase_subject(self, subject_sha256: str, *, tell_others: bool = True) -> int:
        """Remove the entries of the calls made for a data subject (their erasure)."""
        erased = await self.cache.erase_subject(subject_sha256)
        if tell_others:
            await self._tell(f"subject:{subject_sha256}")
        return erased

    async def policies_changed(self, policy_ids: Sequence[str]) -> None:
        """Entries kept under policies that changed: their partition is no longer read (it
        is the old policy's digest), and they go now rather than with their ttl. The other
        processes learn of the change itself (a `policy` or `config` notice)."""
        for policy_id in policy_ids:
            await self.cache.drop_policy(policy_id)

    async def apply(self, change: str) -> None:
        """A change another gateway process made (a `cache` notice)."""
        if self.shared:
            return
        if change == "clear":
            await self.clear(tell_others=False)
        elif change.startswith("subject:"):
            await self.erase_subject(change.removeprefix("subject:"), tell_others=False)

    async def purge(self) -> int:
        return await self.cache.store.purge()

    async def aclose(self) -> None:
        await self.cache.store.aclose()

    async def _tell(self, change: str) -> Propagation | None:
        if self.shared:
            return None
        propagation: Propagation | None = await self._broadcast(CHANGE, change)
        return propagation

    def _embedder(self) -> Callable[[str], Awaitable[Embeddings]] | None:
        upstreams = self._upstreams()
        for endpoint in upstreams.catalog.endpoints:
            if endpoint.kind is EndpointKind.LOCAL and endpoint.model == LOCAL_EMBEDDING_MODEL:
                provider = upstreams.providers.get(endpoint.endpoint_id)
                if provider is not None:
                    return lambda text: provider.embed([text], None, Hangup())
        return None

    async def _embed(self, text: str) -> tuple[Sequence[float], int | None] | None:
        embed = self._embedder()
        if embed is None:
            return None
        try:
            result = await embed(text)
        except ApiError as error:  # the cache answers exact matches while the model fails
            log.warning("cache: the embedding model failed (%s); semantic look-up skipped",
                        error)  # fmt: skip
            return None
        return result.vectors[0], result.prompt_tokens

"""Metrics of the answer cache, read at scrape time from what the cache counts anyway.

Size is the store's: the whole shared cache when it lives in Redis (as last
seen by this process: after its last write, or its upkeep every purge
interval), this process's own in memory. Look-ups, stores and evictions are
this process's: Prometheus sums the processes. No label carries a key, a
policy or a prompt.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric


class CacheSnapshot(Protocol):
    """What the metrics read of the cache (`llmeu.cache.answers.Snapshot`)."""

    @property
    def backend(self) -> str: ...

    @property
    def entries(self) -> int: ...

    @property
    def bytes(self) -> int: ...

    @property
    def max_bytes(self) -> int: ...

    @property
    def exact_hits(self) -> int: ...

    @property
    def semantic_hits(self) -> int: ...

    @property
    def misses(self) -> int: ...

    @property
    def stores(self) -> int: ...

    @property
    def evictions(self) -> int: ...

    @property
    def errors(self) -> int: ...

    @property
    def hit_ratio(self) -> float: ...


class CacheState(Protocol):
    def snapshot(self) -> CacheSnapshot: ...


class CacheCollector:
    def __init__(self, state: CacheState):
        self._state = state

    def collect(self) -> Iterator[Metric]:
        cache = self._state.snapshot()
        labels = ("backend",)
        for name, text, value in (
            ("llmeu_cache_entries", "Answers the cache holds.", cache.entries),
            ("llmeu_cache_bytes", "What the cache's entries take, encoded.", cache.bytes),
            ("llmeu_cache_max_bytes", "The cache's bound; past it the least recently used go.",
             cache.max_bytes),
            ("llmeu_cache_hit_ratio", "Hits over look-ups in this process since it started.",
             cache.hit_ratio),
        ):  # fmt: skip
            gauge = GaugeMetricFamily(name, text, labels=labels)
            gauge.add_metric((cache.backend,), value)
            yield gauge
        lookups = CounterMetricFamily(
            "llmeu_cache_lookups",
            "Calls under a caching policy looked up: answered from an identical prompt, from a "
            "near one (semantic), or not.",
            labels=("outcome",),
        )
        lookups.add_metric(("exact",), cache.exact_hits)
        lookups.add_metric(("semantic",), cache.semantic_hits)
        lookups.add_metric(("miss",), cache.misses)
        yield lookups
        for name, text, value in (
            ("llmeu_cache_stores", "Answers kept.", cache.stores),
            ("llmeu_cache_evictions", "Answers evicted to stay within the bound.", cache.evictions),
            ("llmeu_cache_errors", "Commands the cache's Redis did not answer.", cache.errors),
        ):
            yield CounterMetricFamily(name, text, value=value)

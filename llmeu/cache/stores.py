"""Where entries live: the interface both stores implement, and what they say of themselves.

An entry is put under its exact key with a time to live and tags (its policy,
its data subject) by which it is removed again; an entry that the semantic
cache may find is put with its scope and the embedding of its prompt. A store
is bounded: past `max_bytes` it evicts what was used least recently. Expiry
is the entry's own: nothing (a legal hold included) extends it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from llmeu.cache.entry import Entry
from llmeu.cache.similarity import Vector


def policy_tag(policy_id: str) -> str:
    return f"policy:{policy_id}"


def subject_tag(subject_sha256: str) -> str:
    return f"subject:{subject_sha256}"


@dataclass(frozen=True, slots=True)
class Placed:
    """Where the semantic cache finds an entry: its scope and its prompt's embedding."""

    scope: str
    vector: Vector


@dataclass(frozen=True, slots=True)
class Size:
    entries: int
    bytes: int
    max_bytes: int


class Store(Protocol):
    backend: str
    """`memory` or `redis`: what `llmeu cache stats` and the metrics say."""
    evictions: int
    """Entries this process evicted to stay within the bound."""
    errors: int
    """Commands that failed (Redis not answering)."""

    def known_size(self) -> Size:
        """The size as last seen, without I/O (for the metrics, read at scrape time)."""

    async def get(self, key: str) -> Entry | None:
        """The entry under `key` unless it expired; counts as a use (LRU)."""

    async def put(
        self, key: str, entry: Entry, ttl: float, tags: Sequence[str], placed: Placed | None
    ) -> None: ...

    async def nearest(self, scope: str, vector: Vector, threshold: float) -> Entry | None:
        """The entry of `scope` whose prompt is nearest `vector`, at least `threshold`
        similar; None when there is none."""

    async def drop(self, tag: str) -> int:
        """Remove every entry tagged `tag`; returns how many there were. Raises
        `ServiceUnavailable` when it cannot: the caller must say so."""

    async def purge(self) -> int:
        """Remove what expired (a store may also leave that to its own expiry)."""

    async def clear(self) -> int: ...

    async def size(self) -> Size: ...

    async def aclose(self) -> None: ...

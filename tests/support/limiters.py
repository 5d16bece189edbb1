"""Both limiters, the in-memory one and one on the real Redis, for tests that hold them to
the same behaviour."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

import pytest

from llmeu.limits import Limiter, MemoryLimiter
from llmeu.limits.redis import SPEND_KEY, RedisLimiter

LIMITER_KINDS = ["memory", pytest.param("redis", marks=pytest.mark.redis)]
"""The params of a fixture that gives each kind in turn."""


@asynccontextmanager
async def running_limiter(kind: str, spend: Mapping[str, float]) -> AsyncIterator[Limiter]:
    """A started limiter of `kind` whose ledger holds `spend`; in Redis the spend it loaded
    is removed after."""

    async def ledger_spend() -> Mapping[str, float]:
        return spend

    built: Limiter = (
        MemoryLimiter() if kind == "memory" else RedisLimiter("redis://127.0.0.1:6379/0")
    )
    await built.start(ledger_spend)
    try:
        yield built
    finally:
        if isinstance(built, RedisLimiter):
            await built.redis.hdel(SPEND_KEY, *spend)
        await built.aclose()


async def settled(limiter: Limiter) -> None:
    """Once the Redis limiter's writes in the background are done (the memory one has none)."""
    if isinstance(limiter, RedisLimiter) and limiter._pending:
        await asyncio.wait(limiter._pending)

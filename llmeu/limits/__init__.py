"""State that gateway processes share: per-key limits and budgets, and endpoint health.

In one process everything is exact and in memory (`MemoryLimiter`); with
`--redis-url`, limits, budgets and circuit-breaker state live in Redis so
that N processes behind a load balancer enforce one limit together.
"""

from __future__ import annotations

from llmeu.limits.limiter import REDIS_TIMEOUT, Admission, Limiter, LimitsState, Quota
from llmeu.limits.memory import MemoryLimiter


def build_limiter(redis_url: str | None, *, redis_timeout: float = REDIS_TIMEOUT) -> Limiter:
    if redis_url is None:
        return MemoryLimiter()
    from llmeu.limits.redis import RedisLimiter

    return RedisLimiter(redis_url, timeout=redis_timeout)


__all__ = [
    "REDIS_TIMEOUT",
    "Admission",
    "Limiter",
    "LimitsState",
    "MemoryLimiter",
    "Quota",
    "build_limiter",
]

"""Both limiters behave the same: the in-memory one and the one in the real Redis."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Mapping

import pytest

from llmeu.errors import RateLimited
from llmeu.limits import Limiter, MemoryLimiter, Quota
from llmeu.limits.redis import SPEND_KEY
from tests.support.limiters import LIMITER_KINDS, running_limiter, settled

LEDGER_SPEND = {"k-spent": 5.0}


async def ledger_spend() -> Mapping[str, float]:
    return LEDGER_SPEND


@pytest.fixture(params=LIMITER_KINDS)
async def limiter(request: pytest.FixtureRequest) -> AsyncIterator[Limiter]:
    async with running_limiter(request.param, LEDGER_SPEND) as built:
        yield built


def quota(**limits: float) -> Quota:
    return Quota("k" + secrets.token_hex(6), **limits)  # type: ignore[arg-type]


async def test_requests_per_minute_are_exact(limiter: Limiter) -> None:
    q = quota(rpm=3)
    for _ in range(3):
        await limiter.admit(q, 1)
    with pytest.raises(RateLimited) as refused:
        await limiter.admit(q, 1)
    assert 0 < refused.value.retry_after <= 60
    assert refused.value.code == "rate_limit_exceeded"


async def test_concurrent_admissions_never_exceed_the_limit(limiter: Limiter) -> None:
    q = quota(rpm=7)
    results = await asyncio.gather(
        *(limiter.admit(q, 1) for _ in range(20)), return_exceptions=True
    )
    assert sum(not isinstance(r, BaseException) for r in results) == 7


async def test_tokens_are_reserved_then_settled_to_what_was_used(limiter: Limiter) -> None:
    q = quota(tpm=100)
    first = await limiter.admit(q, 60)
    with pytest.raises(RateLimited):
        await limiter.admit(q, 50)  # 60 reserved + 50 > 100
    limiter.settle(first, 20, None)  # it really used 20
    await settled(limiter)
    await limiter.admit(q, 50)  # 20 + 50 fits
    with pytest.raises(RateLimited) as too_large:
        await limiter.admit(q, 101)
    assert too_large.value.code == "request_too_large"


async def test_budget_starts_from_the_ledger_and_grows_with_each_call(limiter: Limiter) -> None:
    with pytest.raises(RateLimited) as spent:
        await limiter.admit(Quota("k-spent", budget_eur=5.0), 1)
    assert spent.value.code == "insufficient_quota"
    q = quota(budget_eur=1.0)
    admission = await limiter.admit(q, 1)
    limiter.settle(admission, 10, 0.6)
    await settled(limiter)
    second = await limiter.admit(q, 1)  # 0.6 < 1.0
    limiter.settle(second, 10, 0.6)
    await settled(limiter)
    with pytest.raises(RateLimited):
        await limiter.admit(q, 1)  # 1.2 >= 1.0


async def test_unlimited_keys_pass_without_bookkeeping(limiter: Limiter) -> None:
    q = quota()
    for _ in range(100):
        limiter.settle(await limiter.admit(q, 10_000), 10_000, 1.0)


async def test_the_window_slides() -> None:
    now = [1000.0]
    limiter = MemoryLimiter(clock=lambda: now[0])
    await limiter.start(ledger_spend)
    q = quota(rpm=2, tpm=100)
    await limiter.admit(q, 10)
    now[0] += 30
    await limiter.admit(q, 10)
    with pytest.raises(RateLimited) as refused:
        await limiter.admit(q, 10)
    assert refused.value.retry_after == pytest.approx(30)
    now[0] += 30.001
    await limiter.admit(q, 10)  # the first call left the window


async def test_calls_admitted_together_reserve_their_output_up_to_the_minute(
    limiter: Limiter,
) -> None:
    q = quota(tpm=100)
    first = await limiter.admit(q, 10, output_tokens=50)  # holds 60
    second = await limiter.admit(q, 10, output_tokens=50)  # 60 + 10 fits; holds 10 + 30
    assert (first.reserved_tokens, second.reserved_tokens) == (60, 40)
    with pytest.raises(RateLimited):
        await limiter.admit(q, 1, output_tokens=50)  # the minute is held in full
    limiter.settle(first, 15, None)
    limiter.settle(second, 15, None)
    await settled(limiter)
    third = await limiter.admit(q, 10, output_tokens=50)  # 30 used: holds 60 more
    assert third.reserved_tokens == 60


async def test_a_budget_counts_the_estimated_cost_of_calls_in_flight(limiter: Limiter) -> None:
    q = quota(budget_eur=1.0)
    first = await limiter.admit(q, 10, reserve_eur=0.7)
    second = await limiter.admit(q, 10, reserve_eur=0.7)  # 0.7 < 1.0: admitted
    for _ in range(5):  # 1.4 reserved: every other call waits for them to settle
        with pytest.raises(RateLimited) as refused:
            await limiter.admit(q, 10, reserve_eur=0.7)
        assert refused.value.code == "insufficient_quota"
    limiter.settle(first, 10, 0.1)  # they cost far less than feared
    limiter.settle(second, 10, 0.1)
    await settled(limiter)
    third = await limiter.admit(q, 10, reserve_eur=0.7)  # 0.2 spent
    limiter.settle(third, 10, None)  # refused downstream: nothing spent, nothing held
    await settled(limiter)
    if isinstance(limiter, MemoryLimiter):
        assert limiter.spent(q.key_id) == pytest.approx(0.2)
    else:
        assert float(await limiter.redis.hget(SPEND_KEY, q.key_id)) == pytest.approx(0.2)
        await limiter.redis.hdel(SPEND_KEY, q.key_id)

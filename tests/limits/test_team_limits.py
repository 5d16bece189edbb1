"""A team's limits in both limiters: its month's budget, a refused call given back, the
calendar month (UTC) a team's spend is counted in."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from llmeu.errors import RateLimited
from llmeu.limits import Limiter, MemoryLimiter, Quota
from llmeu.limits.limiter import calendar_month
from llmeu.limits.redis import SPEND_KEY
from tests.support.limiters import LIMITER_KINDS, running_limiter, settled

TEAM = "team_" + secrets.token_hex(6)
LEDGER_SPEND = {f"{TEAM}@2026-11": 9.0, f"{TEAM}@2026-12": 0.5}


@pytest.fixture(params=LIMITER_KINDS)
async def limiter(request: pytest.FixtureRequest) -> AsyncIterator[Limiter]:
    async with running_limiter(request.param, LEDGER_SPEND) as built:
        yield built


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("moment", "label", "start"),
    [
        ("2026-12-07T02:30:00", "2026-12", "2026-12-01T00:00:00"),
        ("2026-12-01T00:00:00", "2026-12", "2026-12-01T00:00:00"),
        ("2026-11-30T23:59:59.999", "2026-11", "2026-11-01T00:00:00"),
        ("2028-02-29T12:00:00", "2028-02", "2028-02-01T00:00:00"),
        ("2026-12-31T23:59:59", "2026-12", "2026-12-01T00:00:00"),
    ],
    ids=["mid-month", "first-instant", "last-instant-before", "leap-day", "new-years-eve"],
)
def test_the_calendar_month_is_utcs(moment: str, label: str, start: str) -> None:
    assert calendar_month(at(moment)) == (label, at(start))


@pytest.mark.parametrize(
    ("q", "spend_id", "subject"),
    [
        (Quota("kabc"), "kabc", "key kabc"),
        (Quota("team_x", scope="team", period="2026-12"), "team_x@2026-12", "team team_x"),
    ],
    ids=["key", "team"],
)
def test_whose_spend_a_quota_is_checked_against(q: Quota, spend_id: str, subject: str) -> None:
    assert (q.spend_id, q.subject) == (spend_id, subject)


async def test_a_teams_budget_is_its_months_spend(limiter: Limiter) -> None:
    november = Quota(TEAM, budget_eur=1.0, scope="team", period="2026-11")
    with pytest.raises(RateLimited) as spent:
        await limiter.admit(november, 1)
    assert spent.value.code == "insufficient_quota"
    assert str(spent.value).startswith(f"Budget exhausted for team {TEAM} in 2026-11: spent 9")
    december = Quota(TEAM, budget_eur=1.0, scope="team", period="2026-12")
    first = await limiter.admit(december, 1, reserve_eur=0.3)  # 0.5 spent + 0.3 held
    second = await limiter.admit(december, 1, reserve_eur=0.3)  # 0.8 < 1.0
    with pytest.raises(RateLimited):
        await limiter.admit(december, 1, reserve_eur=0.3)  # 1.1 spent or held
    limiter.settle(first, 10, 0.1)
    limiter.settle(second, 10, 0.1)
    await settled(limiter)
    third = await limiter.admit(december, 1, reserve_eur=0.3)  # 0.7 spent
    limiter.settle(third, 10, 0.3)
    await settled(limiter)
    with pytest.raises(RateLimited):
        await limiter.admit(december, 1)  # 1.0 spent


async def test_a_released_admission_holds_nothing(limiter: Limiter) -> None:
    windows = Quota("k" + secrets.token_hex(6), rpm=2, tpm=100)
    kept = await limiter.admit(windows, 10, output_tokens=40)  # holds 50 tokens
    given_back = await limiter.admit(windows, 10, output_tokens=40)  # holds the other 50
    with pytest.raises(RateLimited):
        await limiter.admit(windows, 10)  # two requests in the minute
    await limiter.release(given_back)
    again = await limiter.admit(windows, 10, output_tokens=40)  # its request and tokens free
    assert again.reserved_tokens == 50
    await limiter.release(again)
    await limiter.release(kept)
    whole = await limiter.admit(windows, 10, output_tokens=90)
    assert whole.reserved_tokens == 100  # nothing else is held in the minute

    budget = Quota("k" + secrets.token_hex(6), budget_eur=1.0)
    kept = await limiter.admit(budget, 1, reserve_eur=0.5)
    given_back = await limiter.admit(budget, 1, reserve_eur=0.5)
    with pytest.raises(RateLimited):
        await limiter.admit(budget, 1, reserve_eur=0.5)  # 1.0 held
    await limiter.release(given_back)
    await limiter.admit(budget, 1, reserve_eur=0.5)  # 0.5 held before it
    with pytest.raises(RateLimited):
        await limiter.admit(budget, 1, reserve_eur=0.5)
    if isinstance(limiter, MemoryLimiter):
        assert limiter.spent(budget.spend_id) == pytest.approx(1.0)
    else:
        await limiter.redis.hdel(SPEND_KEY, budget.spend_id)


async def test_a_teams_rate_limit_is_named_as_the_teams(limiter: Limiter) -> None:
    team = Quota("team_" + secrets.token_hex(6), rpm=3, scope="team", period="2026-12")
    for _ in range(3):
        await limiter.admit(team, 1)
    with pytest.raises(RateLimited) as refused:
        await limiter.admit(team, 1)
    assert str(refused.value).startswith(f"Rate limit reached for team {team.key_id}: 3 ")

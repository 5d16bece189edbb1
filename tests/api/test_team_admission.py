"""A call of a key in a team, admitted under both quotas (`Accounting` with the teams as
calls see them), and what the limits are seeded with; on SQLite and PostgreSQL."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from llmeu.api.call.accounting import Accounting, CallCeiling
from llmeu.api.services.team_quotas import TeamBook, ledger_spend
from llmeu.calls.record import TraceRecord
from llmeu.errors import RateLimited
from llmeu.ledger.api_keys import ApiKey
from llmeu.ledger.store import Store
from llmeu.ledger.teams import Team, insert_team
from llmeu.limits import MemoryLimiter
from llmeu.limits.limiter import calendar_month
from llmeu.routing.catalog import Prices
from llmeu.routing.policy import LimitsFail
from tests.ledger.conftest import database_url, db, store, trace, write  # noqa: F401

TEAM = Team("team_t", "t", "eu-strict", None, (), 0.0, 0.0, rpm_limit=1)
KEY = ApiKey("kt", "kt", "x", "eu-strict", False, 0.0, rpm_limit=1, team_id="team_t")
NOTHING = CallCeiling(0, ())


def answered(cost: float | None) -> TraceRecord:
    return trace(key_id=KEY.key_id, cost_eur=cost)


async def admit(limits: MemoryLimiter, teams: TeamBook, key: ApiKey = KEY) -> Accounting:
    accounting = Accounting(limits, key, teams)
    await accounting.admit(lambda: 10, NOTHING, LimitsFail.OPEN)
    return accounting


async def test_a_call_its_team_refuses_gives_back_what_its_key_held(store: Store) -> None:  # noqa: F811
    limits = MemoryLimiter()
    await limits.start(lambda: ledger_spend(store))
    await insert_team(store.db, TEAM)
    teams = TeamBook(store)
    await teams.load()
    other = replace(KEY, key_id="kother")
    (await admit(limits, teams, other)).settle(answered(None))  # the team's one request
    with pytest.raises(RateLimited) as refused:
        await admit(limits, teams)
    assert str(refused.value).startswith("Rate limit reached for team team_t: 1 requests")
    teams.put(replace(TEAM, rpm_limit=None))  # the team is lifted; the key's request is free
    (await admit(limits, teams)).settle(answered(None))
    with pytest.raises(RateLimited) as own:
        await admit(limits, teams)
    assert str(own.value).startswith("Rate limit reached for key kt: 1 requests")


async def test_a_teams_budget_counts_every_keys_cost_and_a_key_in_no_team_is_free(
    store: Store,  # noqa: F811
) -> None:
    limits = MemoryLimiter()
    await limits.start(lambda: ledger_spend(store))
    teams = TeamBook(store)  # the team is made after the book was loaded: read on first use
    await insert_team(store.db, replace(TEAM, rpm_limit=None, budget_eur_month=1.0))
    key = replace(KEY, rpm_limit=None, budget_eur=5.0)
    ceiling = CallCeiling(10, (Prices(10_000.0, 10_000.0),))  # a call reserves 0.2 EUR
    first = Accounting(limits, key, teams)
    await first.admit(lambda: 10, ceiling, LimitsFail.OPEN)
    first.settle(answered(0.6))
    second = Accounting(limits, replace(key, key_id="kt2"), teams)
    await second.admit(lambda: 10, ceiling, LimitsFail.OPEN)
    second.settle(answered(0.6))  # 1.2 spent by the team, 0.6 by each key
    with pytest.raises(RateLimited) as refused:
        await Accounting(limits, key, teams).admit(lambda: 10, ceiling, LimitsFail.OPEN)
    month = calendar_month(time.time())[0]
    assert str(refused.value).startswith(f"Budget exhausted for team team_t in {month}")
    assert limits.spent(key.key_id) == pytest.approx(0.6)  # its reservation was given back
    alone = replace(key, team_id=None)
    await Accounting(limits, alone, teams).admit(lambda: 10, ceiling, LimitsFail.OPEN)


async def test_the_limits_are_seeded_with_each_key_and_each_teams_month(
    store: Store,  # noqa: F811
) -> None:
    await insert_team(store.db, TEAM)
    await store.upsert_key(KEY)
    month, start = calendar_month(time.time())
    await write(
        store,
        trace(key_id=KEY.key_id, received_at=start - 1, cost_eur=1.0),  # last month
        trace(key_id=KEY.key_id, received_at=time.time(), cost_eur=0.5),
        trace(key_id="kalone", received_at=time.time(), cost_eur=2.0),
    )
    assert await ledger_spend(store) == {"kt": 1.5, "kalone": 2.0, f"team_t@{month}": 0.5}

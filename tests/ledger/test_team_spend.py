"""A team's spend in a month: what its keys' calls received in it cost, on SQLite and
PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

from llmeu.ledger.api_keys import ApiKey
from llmeu.ledger.store import Store
from llmeu.ledger.teams import Team, insert_team, spend_by_team
from tests.ledger.conftest import trace, write


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


async def keys_in_teams(store: Store) -> None:
    for team_id in ("team_a", "team_b"):
        await insert_team(store.db, Team(team_id, team_id, "eu-strict", 1.0, (), 0.0, 0.0))
    for key_id, team_id in (("ka1", "team_a"), ("ka2", "team_a"), ("kb", "team_b"),
                            ("kalone", None)):  # fmt: skip
        await store.upsert_key(ApiKey(key_id, key_id, "x", "eu-strict", False, 0.0,
                                      team_id=team_id))  # fmt: skip


async def test_a_teams_spend_is_its_keys_calls_received_in_the_month(store: Store) -> None:
    await keys_in_teams(store)
    await write(
        store,
        trace(key_id="ka1", received_at=at("2026-11-30T23:59:59"), cost_eur=1.0),
        trace(key_id="ka1", received_at=at("2026-12-01T00:00:00"), cost_eur=0.25),
        trace(key_id="ka2", received_at=at("2026-12-05T10:00:00"), cost_eur=0.5),
        trace(key_id="ka2", received_at=at("2026-12-05T10:00:01"), cost_eur=None),
        trace(key_id="kb", received_at=at("2026-12-06T10:00:00"), cost_eur=0.125),
        trace(key_id="kalone", received_at=at("2026-12-06T10:00:00"), cost_eur=2.0),
    )
    december = at("2026-12-01T00:00:00")
    assert await spend_by_team(store.db, december) == {"team_a": 0.75, "team_b": 0.125}
    assert await spend_by_team(store.db, december, "team_b") == {"team_b": 0.125}
    assert await spend_by_team(store.db, at("2026-11-01T00:00:00"), "team_a") == {"team_a": 1.75}
    assert await spend_by_team(store.db, at("2027-01-01T00:00:00")) == {}

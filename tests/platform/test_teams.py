"""Teams: their keys' policies, a team admin scoped to its team, usage by team, the
team's budget and rate limits over all its keys.

On SQLite and on PostgreSQL: the team scope, the grouping by team and a team's spend
this month are SQL.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from llmeu.api.app import App
from tests.platform.conftest import Client, TenantFactory, chat, client_for


async def make_team(admin: Client, name: str, **spec: Any) -> dict[str, Any]:
    made = await admin.post("/v1/platform/teams", json={"name": name, **spec})
    assert made.status_code == 201, made.text
    team: dict[str, Any] = made.json()
    return team


async def test_a_team_is_created_read_changed_and_deleted(
    admin: Client, tenant: TenantFactory
) -> None:
    team = await make_team(admin, "search", policy_id="team", budget_eur_month=200,
                           members=["ana@example.eu"])  # fmt: skip
    assert (team["policy_id"], team["budget_eur_month"], team["members"], team["keys"]) == (
        "team", 200, ["ana@example.eu"], [])  # fmt: skip
    _, key = await tenant("search bot", team_id=team["id"])
    assert (key["team_id"], key["policy_id"]) == (team["id"], "team")

    changed = await admin.patch(f"/v1/platform/teams/{team['id']}",
                                json={"members": ["ana@example.eu", "bo@example.eu"]})  # fmt: skip
    assert changed.status_code == 200, changed.text
    body = changed.json()
    assert body["members"] == ["ana@example.eu", "bo@example.eu"]
    assert (body["budget_eur_month"], body["keys"]) == (200, [key["id"]])
    cleared = await admin.patch(f"/v1/platform/teams/{team['id']}", json={"budget_eur_month": None})
    assert cleared.json()["budget_eur_month"] is None
    listed = (await admin.get("/v1/platform/teams")).json()["data"]
    assert [t["id"] for t in listed] == [team["id"]]

    kept = await admin.delete(f"/v1/platform/teams/{team['id']}")
    assert kept.status_code == 400 and kept.json()["error"]["code"] == "team_has_keys"
    assert (await admin.delete(f"/v1/platform/keys/{key['id']}")).status_code == 200
    gone = await admin.delete(f"/v1/platform/teams/{team['id']}")
    assert gone.status_code == 200 and gone.json()["deleted"] is True
    assert (await admin.get(f"/v1/platform/teams/{team['id']}")).status_code == 404


async def test_a_keys_policy_is_at_least_as_strict_as_its_teams(
    admin: Client, tenant: TenantFactory
) -> None:
    team = await make_team(admin, "strict", policy_id="team")
    wider = await admin.post("/v1/platform/keys", json={"team_id": team["id"],
                                                        "policy_id": "eu-store"})  # fmt: skip
    assert wider.status_code == 400
    error = wider.json()["error"]
    assert (error["code"], error["param"]) == ("policy_wider_than_team", "policy_id")

    loose = await make_team(admin, "loose", policy_id="eu-store")
    await tenant("narrow key", team_id=loose["id"], policy_id="team")
    tightened = await admin.patch(f"/v1/platform/teams/{loose['id']}", json={"policy_id": "team"})
    assert tightened.status_code == 200, tightened.text
    _, defaulted = await tenant("defaulted", team_id=loose["id"])
    assert defaulted["policy_id"] == "team"
    unknown = await admin.post("/v1/platform/keys", json={"team_id": "team_none"})
    assert unknown.status_code == 400 and unknown.json()["error"]["param"] == "team_id"


async def test_a_team_policy_change_that_would_leave_a_key_wider_is_refused(
    admin: Client, tenant: TenantFactory
) -> None:
    team = await make_team(admin, "platform", policy_id="eu-store")
    await tenant("broad", team_id=team["id"], policy_id="eu-store")
    refused = await admin.patch(f"/v1/platform/teams/{team['id']}", json={"policy_id": "team"})
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "policy_wider_than_team"
    assert (await admin.get(f"/v1/platform/teams/{team['id']}")).json()["policy_id"] == "eu-store"


async def test_a_team_admin_manages_and_reads_its_own_team_only(
    app: App, admin: Client, tenant: TenantFactory
) -> None:
    ours = await make_team(admin, "ours", policy_id="team")
    theirs = await make_team(admin, "theirs", policy_id="team")
    lead, lead_key = await tenant("lead", role="team_admin", team_id=ours["id"])
    outsider, outsider_key = await tenant("outsider", team_id=theirs["id"])

    made = await lead.post("/v1/platform/keys", json={"name": "ours bot"})
    assert made.status_code == 201, made.text
    bot_key = made.json()
    assert (bot_key["team_id"], bot_key["role"]) == (ours["id"], "member")
    elsewhere = await lead.post("/v1/platform/keys", json={"team_id": theirs["id"]})
    assert elsewhere.status_code == 403 and elsewhere.json()["error"]["param"] == "team_id"
    promoted = await lead.post("/v1/platform/keys", json={"role": "operator"})
    assert promoted.status_code == 403 and promoted.json()["error"]["code"] == "role_forbidden"

    ids = {k["id"] for k in (await lead.get("/v1/platform/keys")).json()["data"]}
    assert ids == {lead_key["id"], bot_key["id"]}
    teams = (await lead.get("/v1/platform/teams")).json()["data"]
    assert [t["id"] for t in teams] == [ours["id"]]
    assert (await lead.get(f"/v1/platform/teams/{theirs['id']}")).status_code == 404

    async with client_for(app, bot_key["key"]) as bot:
        ours_trace = (await chat(bot)).headers["x-llmeu-trace-id"]
    theirs_trace = (await chat(outsider)).headers["x-llmeu-trace-id"]
    await app.gateway.ledger.flush()
    listed = {t["id"] for t in (await lead.get("/v1/platform/traces")).json()["data"]}
    assert listed == {ours_trace}
    assert (await lead.get(f"/v1/platform/traces/{ours_trace}")).status_code == 200
    assert (await lead.get(f"/v1/platform/traces/{theirs_trace}")).status_code == 404
    asked = await lead.get("/v1/platform/traces", params={"key_id": outsider_key["id"]})
    assert asked.json()["data"] == []
    usage = (await lead.get("/v1/platform/usage", params={"group_by": "key"})).json()
    assert [row["key"] for row in usage["data"]] == [bot_key["id"]]

    foreign = await lead.delete(f"/v1/platform/keys/{outsider_key['id']}")
    assert foreign.status_code == 404
    assert (await lead.delete(f"/v1/platform/keys/{bot_key['id']}")).status_code == 200


async def test_usage_and_exports_group_by_team(
    app: App, admin: Client, tenant: TenantFactory
) -> None:
    ours = await make_team(admin, "ours", policy_id="team")
    in_team, in_team_key = await tenant("in team", team_id=ours["id"])
    alone, alone_key = await tenant("in no team")
    for client in (in_team, in_team, alone):
        assert (await chat(client)).status_code == 200
    await app.gateway.ledger.flush()
    usage = (await admin.get("/v1/platform/usage", params={"group_by": "team"})).json()
    assert {row["team"]: row["requests"] for row in usage["data"]} == {"": 1, ours["id"]: 2}
    calls = (await admin.get("/v1/platform/exports/calls.jsonl")).text.splitlines()
    teams = [json.loads(line)["team_id"] for line in calls]
    assert sorted(teams, key=str) == sorted([None, ours["id"], ours["id"]], key=str)
    records = (await admin.get("/v1/platform/exports/records-of-processing.json")).json()
    by_key = {a["key_id"]: a["team_id"] for a in records["activities"]}
    assert by_key[in_team_key["id"]] == ours["id"] and by_key[alone_key["id"]] is None


async def test_a_teams_budget_is_checked_with_its_keys_and_shown_with_its_spend(
    app: App, admin: Client, tenant: TenantFactory
) -> None:
    # One call costs 0.000023 EUR (11 + 6 tokens at 1 and 2 EUR/Mtok): two fit under 0.00004.
    team = await make_team(admin, "spenders", policy_id="team", budget_eur_month=0.00004)
    first, _ = await tenant("first", team_id=team["id"], budget_eur=1.0)
    second, _ = await tenant("second", team_id=team["id"], budget_eur=1.0)
    assert (await chat(first)).status_code == 200
    assert (await chat(second)).status_code == 200
    refused = await chat(first)
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert (error["type"], error["code"]) == ("rate_limit_error", "insufficient_quota")
    assert error["message"].startswith(f"Budget exhausted for team {team['id']} in ")
    assert int(refused.headers["retry-after"]) >= 1
    await app.gateway.ledger.flush()
    found = await admin.get(f"/v1/platform/traces/{refused.headers['x-llmeu-trace-id']}")
    assert (found.json()["status"], found.json()["error"]["code"]) == (
        "rejected", "insufficient_quota")  # fmt: skip
    shown = (await admin.get(f"/v1/platform/teams/{team['id']}")).json()
    assert shown["spent_eur_month"] == pytest.approx(0.000046)
    assert shown["remaining_eur_month"] == 0
    alone, _ = await tenant("in no team", budget_eur=1.0)
    assert (await chat(alone)).status_code == 200  # only the team's keys are refused

    raised = await admin.patch(f"/v1/platform/teams/{team['id']}",
                               json={"budget_eur_month": 0.0001})  # fmt: skip
    assert raised.json()["remaining_eur_month"] == pytest.approx(0.000054)
    assert (await chat(first)).status_code == 200  # the change holds for the next call


async def test_a_teams_rate_limits_count_all_its_keys(admin: Client, tenant: TenantFactory) -> None:
    team = await make_team(admin, "busy", policy_id="team", rpm_limit=2, tpm_limit=10_000)
    assert (team["rpm_limit"], team["tpm_limit"]) == (2, 10_000)
    first, _ = await tenant("first", team_id=team["id"])
    second, _ = await tenant("second", team_id=team["id"], rpm_limit=100)
    assert (await chat(first)).status_code == 200
    assert (await chat(second)).status_code == 200
    refused = await chat(second)
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert error["code"] == "rate_limit_exceeded"
    assert error["message"].startswith(f"Rate limit reached for team {team['id']}: 2 requests")
    cleared = await admin.patch(f"/v1/platform/teams/{team['id']}", json={"rpm_limit": None})
    assert (cleared.json()["rpm_limit"], cleared.json()["tpm_limit"]) == (None, 10_000)
    assert (await chat(second)).status_code == 200
    tiny = await admin.patch(f"/v1/platform/teams/{team['id']}", json={"tpm_limit": 50})
    assert tiny.status_code == 200
    too_large = await chat(first, "word " * 200)  # ~250 tokens, more than a team's minute
    assert (too_large.status_code, too_large.json()["error"]["code"]) == (
        429, "request_too_large")  # fmt: skip
    bad = await admin.post("/v1/platform/teams", json={"name": "x", "rpm_limit": 0})
    assert bad.status_code == 400


NARROW = {"allow_classes": ["eu_sovereign"], "max_retention": "P0D"}


async def test_a_policy_put_that_would_leave_a_key_wider_than_its_team_is_refused(
    admin: Client, tenant: TenantFactory
) -> None:
    assert (await admin.put("/v1/platform/policies/narrow", json=NARROW)).status_code == 200
    team = await make_team(admin, "guarded", policy_id="team")
    await tenant("narrow key", team_id=team["id"], policy_id="narrow")

    widened = {**NARROW, "allow_classes": ["on_premise", "eu_sovereign"]}
    refused = await admin.put("/v1/platform/policies/narrow", json=widened)
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error["code"] == "policy_wider_than_team"
    assert "`allow_classes`" in error["message"] and team["id"] in error["message"]
    kept = (await admin.get("/v1/platform/policies/narrow")).json()
    assert kept["allow_classes"] == ["eu_sovereign"]

    tightened = {**NARROW, "allow_classes": ["on_premise"]}
    below = await admin.put("/v1/platform/policies/team", json=tightened)
    assert below.status_code == 400
    assert below.json()["error"]["code"] == "policy_wider_than_team"

    assert (await admin.put("/v1/platform/policies/narrow", json=NARROW)).status_code == 200

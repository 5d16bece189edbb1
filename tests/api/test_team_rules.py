"""A replaced policy against the teams using it: every key stays at least as strict as its
team, whichever side of the pair the replaced policy is."""

from __future__ import annotations

import json

import pytest

from llmeu.api.services.team_rules import replaced_within_teams
from llmeu.errors import InvalidRequest
from llmeu.ledger.api_keys import ApiKey
from llmeu.ledger.teams import Team
from llmeu.routing.config_file import parse_policy
from llmeu.routing.policy import Policy

SOVEREIGN = ["eu_sovereign"]
BOTH = ["on_premise", "eu_sovereign"]


def policy(policy_id: str, classes: list[str]) -> Policy:
    document = {"policy_id": policy_id, "allow_classes": classes, "max_retention": "P0D"}
    return parse_policy(json.dumps(document))


POLICIES = {"team-p": policy("team-p", BOTH), "key-p": policy("key-p", SOVEREIGN)}
TEAMS = [Team("team_a", "a", "team-p", None, (), 0.0, 0.0)]
KEYS = [
    ApiKey("k1", "k1", "x", "key-p", False, 0.0, team_id="team_a"),
    ApiKey("k2", "k2", "x", "team-p", False, 0.0, team_id="team_a"),
    ApiKey("k3", "k3", "x", "other", False, 0.0),
]


@pytest.mark.parametrize(
    ("replaced", "wider"),
    [
        (policy("key-p", BOTH), None),  # as wide as its team: allowed
        (policy("key-p", ["on_premise"]), None),  # narrower still
        (policy("team-p", SOVEREIGN), None),  # the team narrows to its narrowest key
        (policy("team-p", ["on_premise"]), "allow_classes"),  # below key-p
        (policy("other", BOTH), None),  # a policy no team's key uses
    ],
    ids=[
        "key-widened-to-team",
        "key-narrowed",
        "team-narrowed-to-keys",
        "team-below-key",
        "unrelated",
    ],
)
def test_a_replaced_policy_keeps_every_key_within_its_team(
    replaced: Policy, wider: str | None
) -> None:
    if wider is None:
        replaced_within_teams(POLICIES.get, replaced, TEAMS, KEYS)
        return
    with pytest.raises(InvalidRequest) as refused:
        replaced_within_teams(POLICIES.get, replaced, TEAMS, KEYS)
    assert refused.value.code == "policy_wider_than_team"
    assert f"`{wider}`" in refused.value.message


def test_a_revoked_key_no_longer_binds_its_team() -> None:
    revoked = [ApiKey("k1", "k1", "x", "key-p", False, 0.0, team_id="team_a", revoked_at=1.0)]
    replaced_within_teams(POLICIES.get, policy("team-p", ["on_premise"]), TEAMS, revoked)

"""A key's policy is at least as strict as its team's: the one check, wherever it can break.

It is checked when a key is created in a team, when a team's policy changes
(`llmeu.api.services.teams_service`), and when a policy is replaced (`PUT
/v1/platform/policies/{id}`): the new policy must stay within the policy of
every team one of its keys is in, and every key of a team under it must stay
within it. A change that breaks it is refused, 400 `policy_wider_than_team`
naming the first rule (`Policy.widening_field`) it would leave wider.
"""

from __future__ import annotations

from collections.abc import Callable

from llmeu.errors import InvalidRequest
from llmeu.ledger.api_keys import ApiKey
from llmeu.ledger.teams import Team
from llmeu.routing.policy import Policy

PolicyLookup = Callable[[str], Policy | None]


def within_team(policies: PolicyLookup, team: Team, policy: Policy) -> None:
    """400 `policy_wider_than_team` unless `policy` is at least as strict as the team's."""
    team_policy = policies(team.policy_id)
    wider = team_policy.widening_field(policy) if team_policy is not None else None
    if wider is not None:
        raise InvalidRequest(
            f"policy `{policy.policy_id}` is wider than team `{team.team_id}`'s policy "
            f"`{team.policy_id}` in `{wider}`: a team's keys are at least as strict as it",
            param="policy_id",
            code="policy_wider_than_team",
        )


def replaced_within_teams(
    policies: PolicyLookup, replaced: Policy, teams: list[Team], keys: list[ApiKey]
) -> None:
    """Raise as `within_team` does if putting `replaced` in place of the policy of its id
    would leave any active key of `keys` wider than its team (one of `teams`)."""

    def lookup(policy_id: str) -> Policy | None:
        return replaced if policy_id == replaced.policy_id else policies(policy_id)

    by_id = {t.team_id: t for t in teams}
    for key in keys:
        team = by_id.get(key.team_id or "")
        if team is None or key.revoked_at is not None:
            continue
        if replaced.policy_id not in (key.policy_id, team.policy_id):
            continue
        policy = lookup(key.policy_id)
        if policy is not None:
            within_team(lookup, team, policy)

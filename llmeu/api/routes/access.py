"""Who may call which platform route: the roles, and the one table that grants them.

Every key acts in one role (`ApiKey.acting_role`): the admin key is `admin`; a key
created with a `role` acts in it; a key created without one — every key made before
roles — acts as `member`, which may do exactly what such a key could do before:
read its own key, the policies and the catalog, and its own usage, traces and
receipts. Roles govern the platform API only: a call to the inference routes is
held to the key's policy, limits and budget whatever its role.

`ACCESS` maps each platform route (method, path template) to the roles that may
call it and, for the routes that read records of calls or manage keys and teams,
how far each reaches: `EVERY` key, its `TEAM`'s keys, or its `OWN` key only
(another key's trace then answers 404, as one that does not exist). A role
missing from a route's row is refused with 403 `role_forbidden`, naming the
role and the route. `tests/platform/test_roles.py`
calls every route in every role against this table, and checks that the table in
docs/platform.md is the one `markdown_table` writes from it.

Granting: a key may create (or revoke) a key of a role only if that role may do
nothing its own role may not — on every route it is allowed at most the reach the
granting role has (`may_grant`). So an operator can mint `operator` and `member`
keys but never `admin`, `auditor`, `dpo` or `team_admin` keys, whose reads or
erasures it does not have itself; a team admin mints `team_admin` and `member`
keys in its own team; only `admin` can mint every role.

`team_admin` manages its team's keys and reads its team's records and the team
itself (`Reach.TEAM`); a `team_admin` key in no team reaches only its own key.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum, StrEnum

from llmeu.errors import PermissionDenied


class Role(StrEnum):
    ADMIN = "admin"
    OPERATOR = "operator"
    AUDITOR = "auditor"
    DPO = "dpo"
    TEAM_ADMIN = "team_admin"
    MEMBER = "member"


class Reach(Enum):
    """Whose records a role reads (and, on the key routes, whose keys it manages) on a
    route: its own key's, its team's keys' (`team_admin`), or every key's."""

    OWN = 1
    TEAM = 2
    EVERY = 3


_EVERY_ROLE = tuple(Role)


def only(*roles: Role) -> dict[Role, Reach]:
    """A route these roles may call (it reads no key's records, or every key's)."""
    return dict.fromkeys(roles, Reach.EVERY)


def records(*every: Role) -> dict[Role, Reach]:
    """A route every role may call: `every` reads every key's records, `team_admin` its
    team's, the others their own key's."""
    return {role: Reach.EVERY if role in every else _TEAM_OR_OWN[role] for role in _EVERY_ROLE}


def team(*every: Role) -> dict[Role, Reach]:
    """A route `every` may call on every key or team, and `team_admin` on its own team."""
    return {**only(*every), Role.TEAM_ADMIN: Reach.TEAM}


_TEAM_OR_OWN = {role: Reach.TEAM if role is Role.TEAM_ADMIN else Reach.OWN for role in Role}
_A, _OP, _AU, _DPO = Role.ADMIN, Role.OPERATOR, Role.AUDITOR, Role.DPO

ACCESS: dict[tuple[str, str], dict[Role, Reach]] = {
    ("POST", "/v1/platform/keys"): team(_A, _OP),
    ("GET", "/v1/platform/keys"): team(_A, _OP, _AU),
    ("DELETE", "/v1/platform/keys/{key_id}"): team(_A, _OP),
    ("GET", "/v1/platform/me"): only(*_EVERY_ROLE),
    ("GET", "/v1/platform/policies"): only(*_EVERY_ROLE),
    ("GET", "/v1/platform/policies/{policy_id}"): only(*_EVERY_ROLE),
    ("PUT", "/v1/platform/policies/{policy_id}"): only(_A, _OP),
    ("GET", "/v1/platform/endpoints"): records(_A, _AU),
    ("POST", "/v1/platform/reload"): only(_A, _OP),
    ("GET", "/v1/platform/usage"): records(_A, _AU),
    ("GET", "/v1/platform/traces"): records(_A, _AU),
    ("GET", "/v1/platform/traces/{trace_id}"): records(_A, _AU),
    ("GET", "/v1/platform/traces/{trace_id}/receipt"): records(_A, _AU),
    ("GET", "/v1/platform/cache"): only(_A, _OP, _AU),
    ("DELETE", "/v1/platform/cache"): only(_A, _OP),
    ("POST", "/v1/platform/holds"): only(_A, _DPO),
    ("GET", "/v1/platform/holds"): only(_A, _DPO, _AU),
    ("DELETE", "/v1/platform/holds/{hold_id}"): only(_A, _DPO),
    ("DELETE", "/v1/platform/subjects/{user_id}"): only(_A, _DPO),
    ("GET", "/v1/platform/erasures"): only(_A, _DPO, _AU),
    ("GET", "/v1/platform/exports/{name}"): only(_A, _DPO, _AU),
    ("GET", "/v1/platform/admin-events"): only(_A, _AU, _DPO),
    ("POST", "/v1/platform/teams"): only(_A, _OP),
    ("GET", "/v1/platform/teams"): team(_A, _OP, _AU),
    ("GET", "/v1/platform/teams/{team_id}"): team(_A, _OP, _AU),
    ("PATCH", "/v1/platform/teams/{team_id}"): only(_A, _OP),
    ("DELETE", "/v1/platform/teams/{team_id}"): only(_A, _OP),
    ("GET", "/v1/platform/users"): only(_A, _OP, _AU),
    ("PUT", "/v1/platform/users/{user_id}/role"): only(_A, _OP),
}
"""(method, path template) → the roles that may call it, and whose records each reads.
`GET /v1/platform/endpoints` reads records in that every key's reach adds which keys'
calls opened a circuit (`circuit_keys`)."""


def role_of(acting_role: str) -> Role:
    """The role a stored key acts in (a value this release does not know acts as `member`:
    a newer release's role never widens what this one grants)."""
    try:
        return Role(acting_role)
    except ValueError:
        return Role.MEMBER


def reach(role: Role, method: str, path: str) -> Reach:
    """Whose records `role` reads on the route; 403 `role_forbidden` if it may not call it."""
    allowed = ACCESS[(method, path)]
    granted = allowed.get(role)
    if granted is None:
        names = ", ".join(f"`{r}`" for r in allowed)
        raise PermissionDenied(
            f"the `{role}` role may not call {method} {path} (allowed for {names})",
            code="role_forbidden",
        )
    return granted


def widest(roles: tuple[Role, ...], method: str, path: str) -> tuple[Role, Reach]:
    """The role of several (a user signed in with the organisation may hold more than one)
    that reaches furthest on the route, and its reach; 403 if none may call it."""
    allowed = ACCESS[(method, path)]
    # In the table's order, so of roles reaching as far the first (`admin` first) is named.
    granted = [(allowed[role], role) for role in Role if role in roles and role in allowed]
    if not granted:
        reach(roles[0], method, path)
    best = max(granted, key=lambda pair: pair[0].value)
    return best[1], best[0]


def may_grant(holder: Role, role: Role) -> bool:
    """Whether a key acting as `holder` may create or revoke a key of `role`: `role` reaches
    no further than `holder` on any route."""
    return all(_within(row.get(role), row.get(holder)) for row in ACCESS.values())


def refuse_grant(holder: Role, role: Role, verb: str) -> None:
    if not may_grant(holder, role):
        raise PermissionDenied(
            f"the `{holder}` role may not {verb} a key of role `{role}`: it would reach "
            "further than the role itself",
            param="role",
            code="role_forbidden",
        )


def _within(granted: Reach | None, held: Reach | None) -> bool:
    if granted is None:
        return True
    return held is not None and granted.value <= held.value


def markdown_table(rows: Mapping[tuple[str, str], Mapping[Role, Reach]] = ACCESS) -> str:
    """The table as docs/platform.md shows it: ✓ allowed, `all`/`team`/`own` whose records
    or keys, — 403."""
    lines = [
        "| route | " + " | ".join(f"`{r}`" for r in Role) + " |",
        "| --- |" + " --- |" * len(Role),
    ]
    for (method, path), allowed in rows.items():
        scoped = any(reach is not Reach.EVERY for reach in allowed.values())
        cells = [_cell(allowed.get(role), scoped) for role in Role]
        lines.append(f"| `{method} {path}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _cell(granted: Reach | None, scoped: bool) -> str:
    if granted is None:
        return "—"
    if not scoped:
        return "✓"
    return {Reach.EVERY: "all", Reach.TEAM: "team", Reach.OWN: "own"}[granted]

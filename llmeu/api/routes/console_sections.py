"""Which console sections and controls a caller sees: derived from the access table.

The console shows a section when the caller's roles may call a route the section
reads (`SECTIONS`), as far as the section needs; every control on a page is shown
only when the route it calls is in `routes_of(roles)` (and a key only of a role in
`grantable(roles)`). So the console hides exactly what the API would refuse with
403 `role_forbidden`, and nothing here grants anything: the API stays the one place
that enforces it (`llmeu.api.routes.access`).

The playground is the exception: it makes calls, not platform requests, and a call
is held to the key's policy whatever its role. It shows for whoever signed in with a
key; a console session (single sign-on) holds no key to call with.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmeu.api.routes.access import ACCESS, Reach, Role, may_grant


@dataclass(frozen=True, slots=True)
class Section:
    name: str
    reads: tuple[tuple[str, str], ...]
    """Routes of which one must be allowed for the section to show."""
    reach: Reach = Reach.OWN
    """How far the caller must reach on that route."""


PLAYGROUND = "playground"
SECTIONS = (
    Section(PLAYGROUND, ()),
    Section("usage", (("GET", "/v1/platform/usage"),)),
    Section("traces", (("GET", "/v1/platform/traces"),)),
    Section("routing", (("GET", "/v1/platform/endpoints"),)),
    Section("policies", (("GET", "/v1/platform/policies"),)),
    Section("keys", (("GET", "/v1/platform/keys"),)),
    Section("teams", (("GET", "/v1/platform/teams"),)),
    Section("users", (("GET", "/v1/platform/users"),)),
    Section("compliance", (("GET", "/v1/platform/holds"), ("GET", "/v1/platform/erasures"))),
    Section("exports", (("GET", "/v1/platform/exports/{name}"),)),
    Section("verification", (("GET", "/v1/platform/traces/{trace_id}/receipt"),), Reach.EVERY),
    Section("events", (("GET", "/v1/platform/admin-events"),)),
)
"""In the order of the console's navigation."""

_REACH_NAMES = {Reach.EVERY: "all", Reach.TEAM: "team", Reach.OWN: "own"}


def granted(roles: tuple[Role, ...], method: str, path: str) -> Reach | None:
    """How far the widest of `roles` reaches on the route; None: every one is refused."""
    allowed = ACCESS[(method, path)]
    reaches = [allowed[role] for role in roles if role in allowed]
    return max(reaches, key=lambda r: r.value) if reaches else None


def routes_of(roles: tuple[Role, ...]) -> dict[str, str]:
    """`"METHOD path"` → `all`, `team` or `own` for every route one of `roles` may call."""
    routes = {}
    for method, path in ACCESS:
        reach = granted(roles, method, path)
        if reach is not None:
            routes[f"{method} {path}"] = _REACH_NAMES[reach]
    return routes


def sections_of(roles: tuple[Role, ...], *, with_key: bool) -> list[str]:
    """The sections the console shows to a caller in `roles` (`with_key`: signed in with a
    key rather than a console session)."""
    shown = []
    for section in SECTIONS:
        if section.name == PLAYGROUND:
            visible = with_key
        else:
            visible = any(
                _reaches(granted(roles, *route), section.reach) for route in section.reads
            )
        if visible:
            shown.append(section.name)
    return shown


def grantable(roles: tuple[Role, ...]) -> list[str]:
    """The roles of the keys a caller in `roles` may create and revoke."""
    return [str(role) for role in Role if any(may_grant(held, role) for held in roles)]


def _reaches(reach: Reach | None, needed: Reach) -> bool:
    return reach is not None and reach.value >= needed.value

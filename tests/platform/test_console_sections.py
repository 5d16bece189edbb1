"""The console's sections per role, derived from the access table (`console_sections`).

What each role sees is the table's consequence, checked here role by role; the
console's navigation and views must name exactly these sections, and every route a
section reads must be one the access table knows.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from llmeu.api.routes.access import ACCESS, Role
from llmeu.api.routes.console_sections import (
    SECTIONS,
    grantable,
    routes_of,
    sections_of,
)
from tests.platform.conftest import TenantFactory

STATIC = Path(__file__).resolve().parents[2] / "llmeu" / "console" / "static"
EVERY = ["playground", "usage", "traces", "routing", "policies", "keys", "teams", "users",
         "compliance", "exports", "verification", "events"]  # fmt: skip
READS = ["playground", "usage", "traces", "routing", "policies"]

SEEN = {
    Role.ADMIN: EVERY,
    Role.AUDITOR: EVERY,
    Role.OPERATOR: [*READS, "keys", "teams", "users"],
    Role.DPO: [*READS, "compliance", "exports", "events"],
    Role.TEAM_ADMIN: [*READS, "keys", "teams"],
    Role.MEMBER: READS,
}


@pytest.mark.parametrize("role", list(Role), ids=str)
def test_each_role_sees_its_sections(role: Role) -> None:
    assert sections_of((role,), with_key=True) == SEEN[role]


@pytest.mark.parametrize("role", list(Role), ids=str)
def test_a_console_session_has_no_playground(role: Role) -> None:
    """A session holds no key to make calls with; everything else is the role's."""
    assert sections_of((role,), with_key=False) == [s for s in SEEN[role] if s != "playground"]


def test_several_roles_see_what_any_of_them_sees() -> None:
    both = sections_of((Role.DPO, Role.TEAM_ADMIN), with_key=False)
    assert both == ["usage", "traces", "routing", "policies", "keys", "teams",
                    "compliance", "exports", "events"]  # fmt: skip


@pytest.mark.parametrize("role", list(Role), ids=str)
def test_the_routes_are_the_access_table_row_by_row(role: Role) -> None:
    names = {"all": "EVERY", "team": "TEAM", "own": "OWN"}
    routes = {route: names[reach] for route, reach in routes_of((role,)).items()}
    expected = {f"{m} {p}": row[role].name for (m, p), row in ACCESS.items() if role in row}
    assert routes == expected


def test_several_roles_reach_as_far_as_the_widest() -> None:
    routes = routes_of((Role.MEMBER, Role.TEAM_ADMIN, Role.AUDITOR))
    assert routes["GET /v1/platform/traces"] == "all"
    assert routes["POST /v1/platform/keys"] == "team"
    assert "POST /v1/platform/reload" not in routes


@pytest.mark.parametrize(
    ("roles", "grants"),
    [
        ((Role.ADMIN,), [str(r) for r in Role]),
        ((Role.OPERATOR,), ["operator", "member"]),
        ((Role.TEAM_ADMIN,), ["team_admin", "member"]),
        ((Role.AUDITOR,), ["auditor", "member"]),
        ((Role.MEMBER,), ["member"]),
        ((Role.OPERATOR, Role.DPO), ["operator", "dpo", "member"]),
    ],
    ids=["admin", "operator", "team_admin", "auditor", "member", "operator+dpo"],
)
def test_the_roles_a_caller_may_grant(roles: tuple[Role, ...], grants: list[str]) -> None:
    assert grantable(roles) == grants


def test_every_section_reads_a_route_of_the_access_table() -> None:
    for section in SECTIONS:
        assert all(route in ACCESS for route in section.reads), section.name


def test_the_console_names_exactly_these_sections() -> None:
    """A nav item per section, and a view module for each."""
    html = (STATIC / "index.html").read_text()
    assert re.findall(r'data-section="([a-z]+)"', html) == [s.name for s in SECTIONS]
    app = (STATIC / "app.js").read_text()
    views = re.findall(r'^  ([a-z]+): \(\) => import\("\./([a-z]+)\.js"\)', app, re.MULTILINE)
    assert {name for name, _ in views} == {s.name for s in SECTIONS} | {"trace"}
    assert all((STATIC / f"{module}.js").is_file() for _, module in views)


async def test_me_tells_the_console_what_to_show(tenant: TenantFactory) -> None:
    """`GET /v1/platform/me` of a key with a role: the key, and what its role may use."""
    client, created = await tenant("an auditor", role="auditor")
    me = (await client.get("/v1/platform/me")).json()
    assert me["id"] == created["id"] and me["role"] == "auditor"
    assert me["roles"] == ["auditor"] and me["subject"] is None
    assert me["signed_in_with"] == "key"
    assert me["sections"] == SEEN[Role.AUDITOR]
    assert me["routes"] == routes_of((Role.AUDITOR,))
    assert me["routes"]["GET /v1/platform/traces"] == "all"
    assert "POST /v1/platform/keys" not in me["routes"]
    assert me["grants"] == ["auditor", "member"]

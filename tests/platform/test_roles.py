"""Roles on the platform API: every route in every role, against the access table.

Each role's key calls every platform route of the real app (in process, over
ASGI) with a request that succeeds when the role may make it: the route then
answers what it answers the admin (201, 200, or 404 for an id that does not
exist), and a role the table refuses gets 403 `role_forbidden` naming the role
and the route. The rules do not depend on the database, so these run on SQLite;
a role surviving a restart is checked on both in `test_role_ledger.py`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llmeu.api.app import App
from llmeu.api.routes.access import ACCESS, Role, markdown_table, may_grant, widest
from llmeu.errors import PermissionDenied
from llmeu.evidence.receipts import verify_receipt
from tests.platform.conftest import Client, TenantFactory, chat

REPO = Path(__file__).resolve().parents[2]

# A request for each route of the access table that succeeds for a role allowed to make it:
# (path with its `{…}` segments filled in, body, the status an allowed role gets).
REQUESTS: dict[tuple[str, str], tuple[str, dict[str, Any] | None, int]] = {
    ("POST", "/v1/platform/keys"): ("/v1/platform/keys", {"name": "made"}, 201),
    ("GET", "/v1/platform/keys"): ("/v1/platform/keys", None, 200),
    ("DELETE", "/v1/platform/keys/{key_id}"): ("/v1/platform/keys/knone", None, 404),
    ("GET", "/v1/platform/me"): ("/v1/platform/me", None, 200),
    ("GET", "/v1/platform/policies"): ("/v1/platform/policies", None, 200),
    ("GET", "/v1/platform/policies/{policy_id}"): ("/v1/platform/policies/team", None, 200),
    ("PUT", "/v1/platform/policies/{policy_id}"): ("/v1/platform/policies/put-by-role",
        {"allow_classes": ["eu_sovereign"], "max_retention": "P0D"}, 200),
    ("GET", "/v1/platform/endpoints"): ("/v1/platform/endpoints", None, 200),
    ("POST", "/v1/platform/reload"): ("/v1/platform/reload", None, 200),
    ("GET", "/v1/platform/usage"): ("/v1/platform/usage", None, 200),
    ("GET", "/v1/platform/traces"): ("/v1/platform/traces", None, 200),
    ("GET", "/v1/platform/traces/{trace_id}"): ("/v1/platform/traces/trc_none", None, 404),
    ("GET", "/v1/platform/traces/{trace_id}/receipt"): (
        "/v1/platform/traces/trc_none/receipt", None, 404),
    ("GET", "/v1/platform/cache"): ("/v1/platform/cache", None, 200),
    ("DELETE", "/v1/platform/cache"): ("/v1/platform/cache", None, 200),
    ("POST", "/v1/platform/holds"): ("/v1/platform/holds", {"reason": "litigation"}, 201),
    ("GET", "/v1/platform/holds"): ("/v1/platform/holds", None, 200),
    ("DELETE", "/v1/platform/holds/{hold_id}"): ("/v1/platform/holds/hold_none", None, 404),
    ("DELETE", "/v1/platform/subjects/{user_id}"): ("/v1/platform/subjects/user-1", None, 200),
    ("GET", "/v1/platform/erasures"): ("/v1/platform/erasures", None, 200),
    ("GET", "/v1/platform/exports/{name}"): ("/v1/platform/exports/subprocessors.csv", None, 200),
    ("GET", "/v1/platform/admin-events"): ("/v1/platform/admin-events", None, 200),
    ("POST", "/v1/platform/teams"): ("/v1/platform/teams", {"name": "made"}, 201),
    ("GET", "/v1/platform/teams"): ("/v1/platform/teams", None, 200),
    ("GET", "/v1/platform/teams/{team_id}"): ("/v1/platform/teams/team_none", None, 404),
    ("PATCH", "/v1/platform/teams/{team_id}"): ("/v1/platform/teams/team_none", {"name": "x"}, 404),
    ("DELETE", "/v1/platform/teams/{team_id}"): ("/v1/platform/teams/team_none", None, 404),
    ("GET", "/v1/platform/users"): ("/v1/platform/users", None, 200),
    ("PUT", "/v1/platform/users/{user_id}/role"): ("/v1/platform/users/nobody/role",
        {"role": "member"}, 404),
}  # fmt: skip


@pytest.fixture
def database_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ledger.db'}"


async def role_key(
    admin: Client, tenant: TenantFactory, role: Role
) -> tuple[Client, dict[str, Any]]:
    """A key of the role (a team admin's in a team of its own)."""
    if role is not Role.TEAM_ADMIN:
        return await tenant(f"{role} key", role=role.value)
    made = await admin.post("/v1/platform/teams", json={"name": "the team", "policy_id": "team"})
    assert made.status_code == 201, made.text
    return await tenant(f"{role} key", role=role.value, team_id=made.json()["id"])


def test_the_access_table_covers_every_platform_route_of_the_app(app: App) -> None:
    served = {(r.method, r.path) for r in app.routes if r.path.startswith("/v1/platform/")}
    assert set(ACCESS) == served
    assert set(REQUESTS) == served


def test_the_docs_show_the_access_table_of_the_code() -> None:
    """docs/platform.md carries the table `markdown_table` writes; regenerate it with
    `python -c 'from llmeu.api.routes.access import markdown_table; print(markdown_table())'`."""
    assert markdown_table() in (REPO / "docs/platform.md").read_text()


@pytest.mark.parametrize("role", list(Role), ids=str)
async def test_every_route_in_every_role_is_allowed_or_403_as_the_table_says(
    admin: Client, tenant: TenantFactory, role: Role
) -> None:
    client, created = await role_key(admin, tenant, role)
    assert created["role"] == role.value
    wrong = []
    for (method, template), (path, body, status) in REQUESTS.items():
        response = await client.request(method, path, json=body)
        allowed = role in ACCESS[(method, template)]
        if allowed and response.status_code != status:
            wrong.append(f"{method} {template}: {response.status_code} {response.text}")
        elif not allowed:
            error = response.json()["error"] if response.status_code == 403 else {}
            named = f"`{role}`" in error.get("message", "") and template in error["message"]
            if error.get("code") != "role_forbidden" or not named:
                wrong.append(f"{method} {template}: {response.status_code} {response.text}")
    assert wrong == []


async def test_a_key_without_a_role_acts_as_member(tenant: TenantFactory) -> None:
    client, created = await tenant("made before roles")
    assert created["role"] == "member" and created["admin"] is False
    refused = await client.get("/v1/platform/keys")
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "role_forbidden"
    assert (await client.get("/v1/platform/me")).json()["role"] == "member"


async def test_an_auditor_reads_and_verifies_every_trace_and_changes_nothing(
    app: App, admin: Client, tenant: TenantFactory
) -> None:
    alice, alice_key = await tenant("alice")
    bob, _ = await tenant("bob")
    trace_ids = []
    for client in (alice, bob):
        answered = await chat(client)
        assert answered.status_code == 200, answered.text
        trace_ids.append(answered.headers["x-llmeu-trace-id"])
    auditor, _ = await tenant("audit automation", role="auditor")
    await app.gateway.ledger.flush()

    listed = (await auditor.get("/v1/platform/traces")).json()["data"]
    assert set(trace_ids) <= {t["id"] for t in listed}
    by_key = (await auditor.get("/v1/platform/traces", params={"key_id": alice_key["id"]})).json()
    assert [t["id"] for t in by_key["data"]] == [trace_ids[0]]
    usage = (await auditor.get("/v1/platform/usage", params={"group_by": "key"})).json()
    assert usage["totals"]["requests"] >= 2
    jwks = (await auditor.get("/.well-known/llmeu/jwks.json")).json()
    for trace_id in trace_ids:
        assert (await auditor.get(f"/v1/platform/traces/{trace_id}")).status_code == 200
        receipt = (await auditor.get(f"/v1/platform/traces/{trace_id}/receipt")).json()
        check = verify_receipt(receipt["receipt"], jwks)
        assert check.valid and check.payload is not None, check.line
        assert check.payload["trace_id"] == trace_id
    export = await auditor.get("/v1/platform/exports/calls.jsonl")
    assert {json.loads(line)["trace_id"] for line in export.text.splitlines()} >= set(trace_ids)

    before = await state(admin)
    writes = [(m, t) for m, t in REQUESTS if m != "GET"]
    for method, template in writes:
        path, body, _ = REQUESTS[(method, template)]
        response = await auditor.request(method, path, json=body)
        assert response.status_code == 403, f"{method} {template}: {response.text}"
        assert response.json()["error"]["code"] == "role_forbidden"
    assert await state(admin) == before


async def state(admin: Client) -> list[Any]:
    """What a refused write would have changed: keys, policies, holds, erasures."""
    reads = ["/v1/platform/keys", "/v1/platform/policies", "/v1/platform/holds",
             "/v1/platform/erasures", "/v1/platform/teams"]  # fmt: skip
    return [(await admin.get(path)).json() for path in reads]


@pytest.mark.parametrize("granted", list(Role), ids=str)
async def test_an_operator_mints_only_roles_that_reach_no_further_than_its_own(
    admin: Client, tenant: TenantFactory, granted: Role
) -> None:
    operator, _ = await role_key(admin, tenant, Role.OPERATOR)
    response = await operator.post("/v1/platform/keys", json={"role": granted.value})
    if granted in (Role.OPERATOR, Role.MEMBER):
        assert response.status_code == 201, response.text
        assert response.json()["role"] == granted.value
    else:
        assert response.status_code == 403, response.text
        error = response.json()["error"]
        assert (error["code"], error["param"]) == ("role_forbidden", "role")
        assert f"role `{granted}`" in error["message"]
    assert may_grant(Role.OPERATOR, granted) is (response.status_code == 201)


async def test_an_operator_revokes_a_member_key_but_not_an_auditor_key(
    admin: Client, tenant: TenantFactory
) -> None:
    operator, _ = await role_key(admin, tenant, Role.OPERATOR)
    auditor, auditor_key = await role_key(admin, tenant, Role.AUDITOR)
    _, member_key = await tenant("member")
    refused = await operator.delete(f"/v1/platform/keys/{auditor_key['id']}")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "role_forbidden"
    assert (await auditor.get("/v1/platform/me")).status_code == 200
    revoked = await operator.delete(f"/v1/platform/keys/{member_key['id']}")
    assert revoked.status_code == 200 and revoked.json()["revoked"] is True


GRANTS = {
    Role.ADMIN: list(Role),
    Role.OPERATOR: [Role.OPERATOR, Role.MEMBER],
    Role.AUDITOR: [Role.AUDITOR, Role.MEMBER],
    Role.DPO: [Role.DPO, Role.MEMBER],
    Role.TEAM_ADMIN: [Role.TEAM_ADMIN, Role.MEMBER],
    Role.MEMBER: [Role.MEMBER],
}


@pytest.mark.parametrize(("holder", "grantable"), GRANTS.items(), ids=str)
def test_a_role_grants_the_roles_that_reach_no_further(holder: Role, grantable: list[Role]) -> None:
    """Only `admin`, `operator` and `team_admin` may call the key routes at all; the rule is
    the table's."""
    assert [role for role in Role if may_grant(holder, role)] == grantable


async def test_an_unknown_role_is_400_naming_the_field(admin: Client) -> None:
    response = await admin.post("/v1/platform/keys", json={"role": "superuser"})
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "role"


async def test_a_role_never_widens_the_keys_policy_for_calls(
    admin: Client, tenant: TenantFactory
) -> None:
    put = await admin.put("/v1/platform/policies/on-premise-only",
                          json={"allow_classes": ["on_premise"], "max_retention": "P0D"})  # fmt: skip
    assert put.status_code == 200, put.text
    admin_role, _ = await tenant("admin by role", role="admin", policy_id="on-premise-only")
    assert (await admin_role.get("/v1/platform/keys")).status_code == 200
    refused = await chat(admin_role)
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "no_compliant_route"


@pytest.mark.parametrize(
    ("roles", "method", "path", "expected"),
    [
        (("auditor", "operator"), "POST", "/v1/platform/reload", ("operator", "EVERY")),
        (("member", "auditor"), "GET", "/v1/platform/traces", ("auditor", "EVERY")),
        (("member", "team_admin"), "GET", "/v1/platform/traces", ("team_admin", "TEAM")),
        (("auditor", "admin"), "GET", "/v1/platform/me", ("admin", "EVERY")),
    ],
    ids=["the-one-allowed", "every-over-own", "team-over-own", "admin-named-first-on-ties"],
)
def test_a_user_with_several_roles_acts_in_the_widest(
    roles: tuple[str, ...], method: str, path: str, expected: tuple[str, str]
) -> None:
    role, granted = widest(tuple(Role(r) for r in roles), method, path)
    assert (role.value, granted.name) == expected


def test_a_user_none_of_whose_roles_may_call_a_route_is_refused() -> None:
    with pytest.raises(PermissionDenied) as refused:
        widest((Role.AUDITOR, Role.MEMBER), "POST", "/v1/platform/reload")
    assert refused.value.code == "role_forbidden"

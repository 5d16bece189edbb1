"""SCIM 2.0 in process, on SQLite and PostgreSQL: what Entra ID and Okta send, answered in
SCIM's shape; deprovisioning ends the user's sessions and revokes their keys; every change
an admin event of actor `scim`; roles granted to users on the platform API."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from llmeu.api.app import App, create_app
from llmeu.ledger.console_sessions import ConsoleSession, get_session, insert_session
from llmeu.ledger.directory_rows import get_user, update_user
from tests.platform.conftest import Client, TenantFactory, client_for, settings_for
from tests.support.processes import ADMIN_KEY, FakeUpstream

TOKEN = "scim-token-for-tests"
ERROR = "urn:ietf:params:scim:api:messages:2.0:Error"
PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
USERS = "/scim/v2/Users"
GROUPS = "/scim/v2/Groups"


@pytest.fixture
async def scim_app(
    tmp_path: Path, database_url: str, fake_upstream: FakeUpstream
) -> AsyncIterator[App]:
    settings = settings_for(tmp_path, database_url, fake_upstream, scim_token=TOKEN,
                            oidc_role_map=(("Gateway Operators", "operator"),))  # fmt: skip
    application = create_app(settings)
    await application.gateway.start()
    yield application
    await application.gateway.stop()


@pytest.fixture
async def scim(scim_app: App) -> AsyncIterator[Client]:
    async with client_for(scim_app, TOKEN) as client:
        yield client


@pytest.fixture
async def admin_of(scim_app: App) -> AsyncIterator[Client]:
    async with client_for(scim_app, ADMIN_KEY) as client:
        yield client


def patch(*operations: dict[str, Any]) -> dict[str, Any]:
    return {"schemas": [PATCH], "Operations": list(operations)}


async def new_user(scim: Client, user_name: str, **extra: Any) -> dict[str, Any]:
    made = await scim.post(USERS, json={"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
                                        "userName": user_name, **extra})  # fmt: skip
    assert made.status_code == 201, made.text
    assert made.headers["content-type"] == "application/scim+json"
    return dict(made.json())


def scim_error(response: httpx.Response, status: int, scim_type: str | None = None) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/scim+json"
    body = response.json()
    assert body["schemas"] == [ERROR] and body["status"] == str(status) and body["detail"]
    assert body.get("scimType") == scim_type


async def scim_events(admin: Client) -> list[tuple[str, str | None]]:
    answer = await admin.get("/v1/platform/admin-events", params={"actor": "scim", "limit": 500})
    assert answer.status_code == 200, answer.text
    return [(e["action"], e["target"]) for e in reversed(answer.json()["data"])]


async def test_without_a_token_configured_scim_is_not_there(app: App) -> None:
    async with client_for(app, TOKEN) as client:
        scim_error(await client.get(USERS), 404)
        assert (await client.get(USERS)).json()["detail"].endswith("(`--scim-token-env`)")


async def test_the_bearer_token_is_required(scim_app: App) -> None:
    for token in ("", "wrong", TOKEN + "x", ADMIN_KEY):
        async with client_for(scim_app, token) as client:
            refused = await client.get(USERS)
            scim_error(refused, 401)
            assert refused.headers["www-authenticate"].startswith("Bearer")


async def test_a_user_provisioned_found_changed_and_deleted(scim: Client, admin_of: Client):
    made = await new_user(scim, "Alice@Example.org", externalId="e-1",
                          name={"givenName": "Alice", "familyName": "A"})  # fmt: skip
    user_id = made["id"]
    assert made["active"] is True and made["meta"]["resourceType"] == "User"
    assert made["meta"]["location"] == f"http://gateway/scim/v2/Users/{user_id}"
    scim_error(await scim.post(USERS, json={"userName": "alice@example.ORG"}), 409, "uniqueness")
    scim_error(await scim.post(USERS, json={"active": True}), 400, "invalidValue")

    found = await scim.get(USERS, params={"filter": 'userName eq "alice@example.org"'})
    assert found.json()["totalResults"] == 1 and found.json()["Resources"][0]["id"] == user_id
    none = await scim.get(USERS, params={"filter": 'userName eq "nobody@example.org"'})
    assert none.json() == {"schemas": ["urn:ietf:params:scim:api:messages:2.0:ListResponse"],
                           "totalResults": 0, "startIndex": 1, "itemsPerPage": 0,
                           "Resources": []}  # fmt: skip
    by_external = await scim.get(USERS, params={"filter": 'externalId eq "e-1"'})
    assert by_external.json()["totalResults"] == 1
    scim_error(await scim.get(USERS, params={"filter": "userName eq"}), 400, "invalidFilter")

    replaced = await scim.put(
        f"{USERS}/{user_id}", json={"userName": "alice@example.org", "displayName": "Alice"}
    )
    assert replaced.status_code == 200 and replaced.json()["displayName"] == "Alice"
    assert "name" not in replaced.json()
    off = await scim.patch(
        f"{USERS}/{user_id}", json=patch({"op": "Replace", "path": "active", "value": "False"})
    )
    assert off.status_code == 200 and off.json()["active"] is False
    on = await scim.patch(
        f"{USERS}/{user_id}", json=patch({"op": "replace", "value": {"active": True}})
    )
    assert on.json()["active"] is True
    bad = await scim.patch(f"{USERS}/{user_id}", json=patch({"op": "remove"}))
    scim_error(bad, 400, "noTarget")
    scim_error(await scim.patch(f"{USERS}/{user_id}", json={"Operations": "x"}), 400,
               "invalidSyntax")  # fmt: skip

    gone = await scim.delete(f"{USERS}/{user_id}")
    assert gone.status_code == 204 and gone.content == b""
    scim_error(await scim.get(f"{USERS}/{user_id}"), 404)
    scim_error(await scim.delete(f"{USERS}/{user_id}"), 404)
    assert await scim_events(admin_of) == [
        ("user.create", user_id), ("user.update", user_id), ("user.deactivate", user_id),
        ("user.reactivate", user_id), ("user.delete", user_id),
    ]  # fmt: skip


async def test_users_are_paged(scim: Client) -> None:
    for n in range(5):
        await new_user(scim, f"user{n}@example.org")
    page = (await scim.get(USERS, params={"startIndex": 2, "count": 2})).json()
    assert (page["totalResults"], page["startIndex"], page["itemsPerPage"]) == (5, 2, 2)
    assert [u["userName"] for u in page["Resources"]] == ["user1@example.org", "user2@example.org"]
    filtered = await scim.get(USERS, params={"filter": 'userName sw "USER3"', "attributes": "id"})
    assert [set(u) for u in filtered.json()["Resources"]] == [{"schemas", "id", "meta"}]
    scim_error(await scim.get(USERS, params={"count": "many"}), 400, "invalidValue")


async def test_groups_and_their_members(scim: Client, admin_of: Client) -> None:
    alice, bob = (await new_user(scim, "alice@example.org"))["id"], (
        await new_user(scim, "bob@example.org"))["id"]  # fmt: skip
    made = await scim.post(GROUPS, json={"displayName": "Gateway Operators",
                                         "members": [{"value": alice}]})  # fmt: skip
    assert made.status_code == 201, made.text
    group_id = made.json()["id"]
    assert [m["value"] for m in made.json()["members"]] == [alice]
    add = patch({"op": "Add", "path": "members", "value": [{"value": bob}]})
    assert len((await scim.patch(f"{GROUPS}/{group_id}", json=add)).json()["members"]) == 2
    remove = patch({"op": "remove", "path": f'members[value eq "{alice}"]'})
    after = (await scim.patch(f"{GROUPS}/{group_id}", json=remove)).json()
    assert [m["value"] for m in after["members"]] == [bob]
    stranger = patch({"op": "add", "path": "members", "value": [{"value": "nobody"}]})
    scim_error(await scim.patch(f"{GROUPS}/{group_id}", json=stranger), 400, "invalidValue")

    listed = await scim.get(GROUPS, params={"filter": 'displayName eq "gateway operators"',
                                            "excludedAttributes": "members"})  # fmt: skip
    assert [set(g) for g in listed.json()["Resources"]] == [{"schemas", "id", "displayName",
                                                             "meta"}]  # fmt: skip
    users = {u["user_name"]: u for u in (await admin_of.get("/v1/platform/users")).json()["data"]}
    assert set(users) == {"alice@example.org", "bob@example.org"}
    assert all(u["provisioned"] and u["subject"] is None for u in users.values())

    assert (await scim.delete(f"{GROUPS}/{group_id}")).status_code == 204
    scim_error(await scim.get(f"{GROUPS}/{group_id}"), 404)
    assert [e for e in await scim_events(admin_of) if e[0].startswith("group.")] == [
        ("group.create", group_id), ("group.update", group_id), ("group.update", group_id),
        ("group.delete", group_id),
    ]  # fmt: skip


async def test_the_discovery_documents(scim: Client) -> None:
    config = (await scim.get("/scim/v2/ServiceProviderConfig")).json()
    assert config["patch"]["supported"] and config["filter"]["supported"]
    assert not config["bulk"]["supported"]
    types = (await scim.get("/scim/v2/ResourceTypes")).json()["Resources"]
    assert [(t["name"], t["endpoint"]) for t in types] == [("User", "/Users"), ("Group", "/Groups")]
    schemas = (await scim.get("/scim/v2/Schemas")).json()["Resources"]
    assert {s["id"] for s in schemas} == {t["schema"] for t in types}


async def test_deprovisioning_ends_sessions_and_revokes_personal_keys(
    scim_app: App, scim: Client, admin_of: Client
) -> None:
    """A user who signed in (their subject linked) and made a key with their session."""
    db = scim_app.gateway.platform.store.db
    made = await new_user(scim, "carol@example.org")
    user = await get_user(db, made["id"])
    assert user is not None
    await update_user(db, replace(user, subject="carol-sub"))
    now = time.time()
    for n in range(2):
        await insert_session(
            db,
            ConsoleSession(
                f"hash-{n}",
                "carol-sub",
                "carol@example.org",
                ("member",),
                "csrf",
                "token",
                now,
                now,
            ),
        )
    personal, token = await scim_app.gateway.keys.create(
        name="carol's", policy_id="team", owner_subject="carol-sub"
    )
    assert personal.public()["owner"] == "carol-sub"
    async with client_for(scim_app, token) as carol:
        assert (await carol.get("/v1/platform/me")).status_code == 200
        off = patch({"op": "Replace", "path": "active", "value": "False"})
        assert (await scim.patch(f"{USERS}/{made['id']}", json=off)).status_code == 200
        assert await get_session(db, "hash-0") is None and await get_session(db, "hash-1") is None
        refused = await carol.get("/v1/platform/me")
        assert refused.status_code == 401
    assert await scim_events(admin_of) == [("user.create", made["id"]),
                                           ("key.revoke", personal.key_id),
                                           ("user.deactivate", made["id"])]  # fmt: skip


async def test_an_admin_grants_a_role_an_operator_may_not_grant_admin(
    scim: Client, admin_of: Client, scim_app: App, tenant_of: TenantFactory
) -> None:
    user_id = (await new_user(scim, "dave@example.org"))["id"]
    granted = await admin_of.put(f"/v1/platform/users/{user_id}/role", json={"role": "auditor"})
    assert granted.status_code == 200 and granted.json()["role"] == "auditor"
    operator, _ = await tenant_of("ops", role="operator")
    refused = await operator.put(f"/v1/platform/users/{user_id}/role", json={"role": "admin"})
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "role_forbidden"
    taken_back = await operator.put(f"/v1/platform/users/{user_id}/role", json={"role": None})
    assert taken_back.status_code == 403, "an operator may not take back an auditor's role"
    assert (await admin_of.put(f"/v1/platform/users/{user_id}/role",
                               json={"role": "operator"})).status_code == 200  # fmt: skip
    cleared = await operator.put(f"/v1/platform/users/{user_id}/role", json={"role": None})
    assert cleared.status_code == 200 and cleared.json()["role"] is None
    bad = await admin_of.put(f"/v1/platform/users/{user_id}/role", json={"role": "king"})
    assert bad.status_code == 400
    missing = await admin_of.put("/v1/platform/users/nobody/role", json={"role": "member"})
    assert missing.status_code == 404
    events = (await admin_of.get("/v1/platform/admin-events",
                                 params={"action": "user.role"})).json()["data"]  # fmt: skip
    assert [e["target"] for e in events] == [user_id] * 3


@pytest.fixture
async def tenant_of(scim_app: App, admin_of: Client) -> AsyncIterator[TenantFactory]:
    clients: list[Client] = []

    async def create(name: str, **spec: Any) -> tuple[Client, dict[str, Any]]:
        response = await admin_of.post("/v1/platform/keys", json={"name": name, **spec})
        assert response.status_code == 201, response.text
        client = client_for(scim_app, response.json()["key"])
        clients.append(client)
        return client, response.json()

    yield create
    for client in clients:
        await client.aclose()


async def test_a_method_scim_does_not_have_is_a_405_in_scims_shape(scim: Client) -> None:
    for method, path in (("POST", f"{USERS}/some-id"), ("DELETE", USERS),
                         ("PATCH", "/scim/v2/ServiceProviderConfig")):  # fmt: skip
        answer = await scim.request(method, path)
        assert answer.status_code == 405
        assert answer.json()["schemas"] == [ERROR] and answer.json()["status"] == "405"


async def test_a_body_that_is_no_json_object_is_invalid_syntax(scim: Client) -> None:
    deep: Any = "x"
    for _ in range(200):
        deep = [deep]
    for body in (b"{not json", b"[1, 2]", b'{"userName": "a", "x": ' + json.dumps(deep).encode()
                 + b"}"):  # fmt: skip
        answer = await scim.post(USERS, content=body,
                                 headers={"content-type": "application/scim+json"})  # fmt: skip
        scim_error(answer, 400, "invalidSyntax")


async def test_the_users_list_shows_groups_roles_team_and_personal_keys(
    scim_app: App, scim: Client, admin_of: Client
) -> None:
    erin = (await new_user(scim, "erin@example.org", displayName="Erin E"))["id"]
    finn = (await new_user(scim, "finn@example.org"))["id"]
    group = {"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"],
             "displayName": "Gateway Operators", "members": [{"value": erin}]}  # fmt: skip
    assert (await scim.post(GROUPS, json=group)).status_code == 201
    team = await admin_of.post("/v1/platform/teams", json={"name": "search",
                                                          "members": ["FINN@example.org"]})  # fmt: skip
    db = scim_app.gateway.platform.store.db
    user = await get_user(db, finn)
    assert user is not None
    await update_user(db, replace(user, subject="finn-sub"))
    await scim_app.gateway.keys.create(name="finn's", policy_id="team", owner_subject="finn-sub")
    granted = await admin_of.put(f"/v1/platform/users/{erin}/role", json={"role": "auditor"})
    assert granted.json()["roles"] == ["operator", "auditor"]

    listed = (await admin_of.get("/v1/platform/users")).json()["data"]
    shown = {u["user_name"]: u for u in listed}
    assert {k: shown["erin@example.org"][k] for k in ("display_name", "groups", "group_roles",
                                                      "role", "roles", "team_id",
                                                      "personal_keys")} == {
        "display_name": "Erin E", "groups": ["Gateway Operators"], "group_roles": ["operator"],
        "role": "auditor", "roles": ["operator", "auditor"], "team_id": None, "personal_keys": 0,
    }  # fmt: skip
    finn_shown = shown["finn@example.org"]
    assert (finn_shown["groups"], finn_shown["roles"]) == ([], [])
    assert (finn_shown["team_id"], finn_shown["team_name"]) == (team.json()["id"], "search")
    assert finn_shown["personal_keys"] == 1

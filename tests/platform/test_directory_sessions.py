"""A console session acts in the roles the directory gives its user now, on SQLite and
PostgreSQL: a role granted by an admin, a SCIM group joined or left, a team that lists the
user, all at the user's next request; a user deactivated is signed out at it; who may
sign in at all (`Directory.signing_in`).

Sessions are made as a sign-in makes them (a row of `console_sessions` and the cookie's
id); the sign-in itself, through a real issuer, is `tests/e2e/test_scim_deprovisioning.py`'s.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from llmeu.api.app import App, create_app
from llmeu.api.services.directory import Directory
from llmeu.errors import PermissionDenied
from llmeu.ledger.console_sessions import ConsoleSession, insert_session, session_hash
from llmeu.ledger.database import Database
from tests.platform.conftest import Client, client_for, settings_for
from tests.support.processes import ADMIN_KEY, FakeUpstream

TOKEN = "scim-token-of-the-session-tests"
ROLE_MAP = (("Gateway Operators", "operator"), ("auditors", "auditor"))
PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp"


@pytest.fixture
async def app_sso(
    tmp_path: Path, database_url: str, fake_upstream: FakeUpstream
) -> AsyncIterator[App]:
    """Sign-in set up with an issuer nobody answers at: sessions never ask it."""
    settings = settings_for(
        tmp_path, database_url, fake_upstream, scim_token=TOKEN, oidc_role_map=ROLE_MAP,
        oidc_issuer="http://127.0.0.1:9", oidc_client_id="console", console_auth="both",
    )  # fmt: skip
    application = create_app(settings)
    await application.gateway.start()
    yield application
    await application.gateway.stop()


@pytest.fixture
async def clients(app_sso: App) -> AsyncIterator[tuple[Client, Client]]:
    async with client_for(app_sso, TOKEN) as scim, client_for(app_sso, ADMIN_KEY) as admin:
        yield scim, admin


def db_of(app: App) -> Database:
    return app.gateway.platform.store.db


def directory_of(app: App) -> Directory:
    directory = app.gateway.platform.directory
    assert directory is not None
    return directory


async def session_for(app: App, subject: str, name: str, *roles: str) -> tuple[Client, str]:
    """A client holding a fresh session of the user, and its CSRF token."""
    session_id, csrf, now = secrets.token_urlsafe(16), secrets.token_urlsafe(16), time.time()
    await insert_session(db_of(app), ConsoleSession(session_hash(session_id), subject, name,
                                                    roles, csrf, "id-token", now, now))  # fmt: skip
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gateway",
                               cookies={"llmeu_session": session_id})  # fmt: skip
    return client, csrf


async def provision(scim: Client, app: App, user_name: str, subject: str) -> str:
    """A user provisioned by SCIM who then signed in as `subject` (linked by e-mail)."""
    made = await scim.post("/scim/v2/Users", json={"userName": user_name})
    assert made.status_code == 201, made.text
    claims: dict[str, object] = {"sub": subject, "email": user_name.upper()}
    assert await directory_of(app).signing_in(claims) == ()
    return str(made.json()["id"])


async def test_a_granted_role_applies_at_the_next_request(
    app_sso: App, clients: tuple[Client, Client]
) -> None:
    scim, admin = clients
    user_id = await provision(scim, app_sso, "dave@example.org", "dave")
    dave, _ = await session_for(app_sso, "dave", "dave@example.org", "member")
    async with dave:
        assert (await dave.get("/v1/platform/keys")).status_code == 403
        granted = await admin.put(f"/v1/platform/users/{user_id}/role", json={"role": "auditor"})
        assert granted.status_code == 200, granted.text
        assert (await dave.get("/v1/platform/keys")).status_code == 200
        assert (await dave.get("/auth/session")).json()["roles"] == ["member", "auditor"]
        await admin.put(f"/v1/platform/users/{user_id}/role", json={"role": None})
        assert (await dave.get("/v1/platform/keys")).status_code == 403


async def test_a_scim_group_gives_its_role_and_its_team(
    app_sso: App, clients: tuple[Client, Client]
) -> None:
    scim, admin = clients
    user_id = await provision(scim, app_sso, "erin@example.org", "erin")
    erin, csrf = await session_for(app_sso, "erin", "erin@example.org", "member")
    operators = await scim.post("/scim/v2/Groups", json={"displayName": "gateway operators"})
    group_id = operators.json()["id"]
    join = {"schemas": [PATCH], "Operations": [{"op": "add", "path": "members",
                                                "value": [{"value": user_id}]}]}  # fmt: skip
    leave = {"schemas": [PATCH], "Operations": [{"op": "remove", "path": "members"}]}
    with_csrf = {"x-csrf-token": csrf}
    async with erin:
        assert (await erin.post("/v1/platform/reload", headers=with_csrf)).status_code == 403
        assert (await scim.patch(f"/scim/v2/Groups/{group_id}", json=join)).status_code == 200
        assert (await erin.post("/v1/platform/reload", headers=with_csrf)).status_code == 200
        assert (await scim.patch(f"/scim/v2/Groups/{group_id}", json=leave)).status_code == 200
        assert (await erin.post("/v1/platform/reload", headers=with_csrf)).status_code == 403

        team = await admin.post("/v1/platform/teams", json={"name": "Search"})
        search = await scim.post(
            "/scim/v2/Groups", json={"displayName": "search", "members": [{"value": user_id}]}
        )
        assert search.status_code == 201, search.text
        await admin.put(f"/v1/platform/users/{user_id}/role", json={"role": "team_admin"})
        key = await erin.post("/v1/platform/keys", json={"name": "erin's"}, headers=with_csrf)
        assert key.status_code == 201, key.text
        assert key.json()["team_id"] == team.json()["id"], "the group's team is erin's"
        assert key.json()["owner"] == "erin"


async def test_a_team_lists_a_signed_in_user_by_e_mail(
    app_sso: App, clients: tuple[Client, Client]
) -> None:
    _, admin = clients
    team = (
        await admin.post(
            "/v1/platform/teams", json={"name": "search", "members": ["Fay@Example.org"]}
        )
    ).json()
    other = (await admin.post("/v1/platform/teams", json={"name": "other"})).json()
    fay, _ = await session_for(app_sso, "fay", "fay@example.org", "team_admin")
    async with fay:
        listed = (await fay.get("/v1/platform/teams")).json()["data"]
        assert [t["id"] for t in listed] == [team["id"]]
        assert (await fay.get(f"/v1/platform/teams/{other['id']}")).status_code == 404


async def test_a_deactivated_user_is_signed_out_at_their_next_request(
    app_sso: App, clients: tuple[Client, Client]
) -> None:
    scim, _ = clients
    user_id = await provision(scim, app_sso, "gil@example.org", "gil")
    off = {"schemas": [PATCH], "Operations": [{"op": "replace", "value": {"active": False}}]}
    assert (await scim.patch(f"/scim/v2/Users/{user_id}", json=off)).status_code == 200
    # A session the deprovisioning did not see (written meanwhile by another process).
    gil, _ = await session_for(app_sso, "gil", "gil@example.org", "auditor")
    async with gil:
        refused = await gil.get("/v1/platform/me")
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "user_deactivated"
        assert (await gil.get("/auth/session")).json()["signed_in"] is False
    with pytest.raises(PermissionDenied) as again:
        await directory_of(app_sso).signing_in({"sub": "gil", "email": "gil@example.org"})
    assert again.value.code == "user_deactivated"


async def test_who_may_sign_in(app_sso: App, clients: tuple[Client, Client]) -> None:
    scim, admin = clients
    required = Directory(db_of(app_sso), ROLE_MAP, scim_required=True)
    with pytest.raises(PermissionDenied) as refused:
        await required.signing_in({"sub": "hal", "email": "hal@example.org"})
    assert refused.value.code == "user_not_provisioned"
    made = await scim.post("/scim/v2/Users", json={"userName": "hal@example.org",
                                                   "externalId": "oid-hal"})  # fmt: skip
    assert await required.signing_in({"sub": "pairwise-hal", "oid": "oid-hal"}) == ()

    directory = directory_of(app_sso)
    assert await directory.signing_in({"sub": "ivy", "preferred_username": "ivy@x.org"}) == ()
    users: dict[str, Any] = {u["user_name"]: u for u in
                             (await admin.get("/v1/platform/users")).json()["data"]}  # fmt: skip
    assert users["hal@example.org"]["subject"] == "pairwise-hal"
    assert users["hal@example.org"]["id"] == made.json()["id"]
    assert (users["ivy@x.org"]["provisioned"], users["ivy@x.org"]["subject"]) == (False, "ivy")
    found = await scim.get("/scim/v2/Users", params={"filter": 'userName eq "ivy@x.org"'})
    assert found.json()["totalResults"] == 1, "SCIM finds, and may adopt, a user who signed in"

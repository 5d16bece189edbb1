"""Provisioning and deprovisioning a console user with SCIM, end to end, on SQLite and
PostgreSQL: `llmeu serve` with a real OpenID provider (`oidc-provider`, npm) in a process.

The directory provisions carol and puts her in its `operators` group, which gives her the
`operator` role (her token's own groups give none); she signs in through the provider's
login and consent forms (driven over HTTP) and makes a personal key with her session.
The directory then deactivates her the way Entra ID does (`"value": "False"`): her session
is refused at once, her key answers 401, and a new sign-in is refused. Each step is an
admin event on the chain.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from html import unescape
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.databases import postgres_database_sync
from tests.support.oidc_issuer import CLIENT_SECRET, oidc_issuer, sso_args
from tests.support.processes import ADMIN_KEY, Gateway, free_port, start_gateway

TOKEN = "scim-bearer-token-e2e"
PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
_FORM = re.compile(r'<form[^>]*action="([^"]+)"[^>]*>(.*?)</form>', re.S)
_HIDDEN = re.compile(r'<input[^>]*type="hidden"[^>]*name="([^"]+)"[^>]*value="([^"]*)"')


def sign_in(gateway: Gateway, user: str) -> tuple[httpx.Client, httpx.Response]:
    """The browser's sign-in, over HTTP: the provider's login form, then its consent form,
    redirects followed. The client (holding the gateway's cookie) and the last answer: the
    console's page, or the gateway's refusal at the callback."""
    browser = httpx.Client(follow_redirects=True, timeout=30)
    page = browser.get(f"{gateway.url}/auth/login")
    for fields in ({"login": user, "password": "any password"}, {}):
        assert page.status_code == 200, page.text[:500]
        form = _FORM.search(page.text)
        assert form is not None, page.text[:500]
        action, inner = form.groups()
        hidden = {name: unescape(value) for name, value in _HIDDEN.findall(inner)}
        page = browser.post(page.url.join(unescape(action)), data={**hidden, **fields})
    return browser, page


@contextmanager
def gateway_with_scim(tmp_path: Path, database_url: str | None) -> Iterator[Gateway]:
    port = free_port()
    database = ["--database-url", database_url] if database_url else []
    with oidc_issuer(tmp_path, port) as issuer:
        gateway = start_gateway(
            tmp_path, port=port,
            args=sso_args(issuer, "--console-auth", "both", "--scim-token-env", "SCIM_TOKEN",
                          *database),
            env={"OIDC_SECRET": CLIENT_SECRET, "SCIM_TOKEN": TOKEN},
        )  # fmt: skip
        try:
            yield gateway
        finally:
            gateway.stop()


@pytest.fixture(params=["sqlite", "postgres"])
def gateway(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Gateway]:
    if request.param == "sqlite":
        with gateway_with_scim(tmp_path, None) as started:
            yield started
    else:
        with postgres_database_sync() as url, gateway_with_scim(tmp_path, url) as started:
            yield started


def events(admin: httpx.Client) -> list[tuple[str, str, str | None]]:
    answer = admin.get("/v1/platform/admin-events", params={"limit": 500})
    assert answer.status_code == 200, answer.text
    return [(e["actor"], e["action"], e["target"]) for e in reversed(answer.json()["data"])]


def test_a_user_provisioned_signs_in_and_is_deprovisioned(gateway: Gateway) -> None:
    scim = httpx.Client(base_url=f"{gateway.url}/scim/v2", timeout=30,
                        headers={"authorization": f"Bearer {TOKEN}"})  # fmt: skip
    admin = httpx.Client(base_url=gateway.url, timeout=30,
                         headers={"authorization": f"Bearer {ADMIN_KEY}"})  # fmt: skip
    made = scim.post(
        "/Users",
        json={
            "userName": "Carol@Example.org",
            "externalId": "c-1",
            "name": {"givenName": "Carol"},
            "active": True,
        },
    )
    assert made.status_code == 201, made.text
    carol = made.json()["id"]
    group = scim.post("/Groups", json={"displayName": "operators", "members": [{"value": carol}]})
    assert group.status_code == 201, group.text

    browser, signed_in = sign_in(gateway, "carol")
    assert signed_in.status_code == 200 and signed_in.url.path == "/console", signed_in.text
    state = browser.get(f"{gateway.url}/auth/session").json()
    assert state["signed_in"] and state["subject"] == "carol" and state["roles"] == ["operator"]
    users = admin.get("/v1/platform/users").json()["data"]
    assert [(u["id"], u["subject"], u["provisioned"]) for u in users] == [(carol, "carol", True)]

    csrf = {"x-csrf-token": state["csrf_token"]}
    key = browser.post(f"{gateway.url}/v1/platform/keys", json={"name": "carol's"}, headers=csrf)
    assert key.status_code == 201, key.text
    assert key.json()["owner"] == "carol"
    personal = httpx.Client(base_url=gateway.url, timeout=30,
                            headers={"authorization": f"Bearer {key.json()['key']}"})  # fmt: skip
    assert personal.get("/v1/platform/me").status_code == 200

    off = {"schemas": [PATCH], "Operations": [{"op": "Replace", "path": "active",
                                               "value": "False"}]}  # fmt: skip
    deactivated = scim.patch(f"/Users/{carol}", json=off)
    assert deactivated.status_code == 200 and deactivated.json()["active"] is False

    ended = browser.get(f"{gateway.url}/v1/platform/me")
    assert ended.status_code == 401 and ended.json()["error"]["code"] == "session_expired"
    assert personal.get("/v1/platform/me").status_code == 401
    other_browser, again = sign_in(gateway, "carol")
    assert again.url.path == "/auth/callback"
    assert again.status_code == 403 and again.json()["error"]["code"] == "user_deactivated"

    seen = events(admin)
    expected: list[Any] = [
        ("scim", "user.create", carol), ("scim", "group.create", group.json()["id"]),
        ("user:carol", "auth.sign_in", "carol"),
        ("user:carol", "key.create", key.json()["id"]),
        ("scim", "key.revoke", key.json()["id"]), ("scim", "user.deactivate", carol),
        ("unauthenticated", "auth.sign_in_failed", None),
    ]  # fmt: skip
    assert [e for e in seen if e in expected] == expected, seen
    for client in (scim, admin, browser, other_browser, personal):
        client.close()

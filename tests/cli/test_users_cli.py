"""`llmeu users` against a real gateway process whose directory SCIM provisions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.cli.test_platform_cli import as_json, llmeu
from tests.support.processes import FakeUpstream, Gateway, config_yaml, fake_endpoint

SCIM_TOKEN = "scim-token-for-the-cli"
USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group"


@pytest.fixture
def gateway(gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream) -> Gateway:
    return gateway_factory(
        config=config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream)),
        env={"SCIM_TOKEN": SCIM_TOKEN},
        args=["--scim-token-env", "SCIM_TOKEN", "--oidc-role-map", "Gateway Operators=operator"],
    )


@pytest.fixture
def env(gateway: Gateway) -> dict[str, str]:
    return {"LLMEU_BASE_URL": gateway.base_url, "LLMEU_API_KEY": gateway.admin_key}


def scim(gateway: Gateway, path: str, body: dict[str, Any]) -> dict[str, Any]:
    made = httpx.post(f"{gateway.url}/scim/v2/{path}", json=body,
                      headers={"authorization": f"Bearer {SCIM_TOKEN}"})  # fmt: skip
    assert made.status_code == 201, made.text
    return dict(made.json())


def role_key(gateway: Gateway, role: str) -> str:
    made = httpx.post(f"{gateway.base_url}/platform/keys", json={"name": role, "role": role},
                      headers={"authorization": f"Bearer {gateway.admin_key}"})  # fmt: skip
    assert made.status_code == 201, made.text
    return str(made.json()["key"])


def test_users_listed_granted_and_taken_back(gateway: Gateway, env: dict[str, str]) -> None:
    ana = scim(gateway, "Users", {"schemas": [USER_SCHEMA], "userName": "ana@example.eu",
                                  "displayName": "Ana A"})["id"]  # fmt: skip
    scim(gateway, "Users", {"schemas": [USER_SCHEMA], "userName": "bo@example.eu"})
    scim(gateway, "Groups", {"schemas": [GROUP_SCHEMA], "displayName": "Gateway Operators",
                             "members": [{"value": ana}]})  # fmt: skip

    table = llmeu("users", "list", env=env)
    assert table.returncode == 0, table.stderr
    ana_row = next(line for line in table.stdout.splitlines() if "ana@example.eu" in line)
    assert "Ana A" in ana_row and "Gateway Operators" in ana_row and "scim" in ana_row

    granted = llmeu("users", "grant", "ANA@example.eu", "auditor", env=env)
    assert granted.returncode == 0, granted.stderr
    assert (
        granted.stdout.strip() == "granted auditor to ana@example.eu; roles now: operator, auditor"
    )
    listed = as_json(llmeu("users", "list", "--json", env=env))["data"]
    shown = {u["user_name"]: u for u in listed}
    assert shown["ana@example.eu"]["role"] == "auditor"
    assert shown["ana@example.eu"]["group_roles"] == ["operator"]
    assert shown["bo@example.eu"]["role"] is None and shown["bo@example.eu"]["provisioned"]

    # The API's refusals, as the CLI reports them: exit status 1, the message on stderr.
    operator = {**env, "LLMEU_API_KEY": role_key(gateway, "operator")}
    refused = llmeu("users", "revoke-role", ana, env=operator)
    assert refused.returncode == 1 and refused.stdout == ""
    assert (
        "403" in refused.stderr and "`operator` role may not grant or take back" in refused.stderr
    )
    unknown = llmeu("users", "grant", ana, "king", env=env)
    assert unknown.returncode == 1 and "400" in unknown.stderr and "role" in unknown.stderr
    missing = llmeu("users", "grant", "nobody@example.eu", "member", env=env)
    assert missing.returncode == 1 and "no user `nobody@example.eu`" in missing.stderr
    member = {**env, "LLMEU_API_KEY": role_key(gateway, "member")}
    forbidden = llmeu("users", "list", env=member)
    assert forbidden.returncode == 1 and "may not call GET /v1/platform/users" in forbidden.stderr

    taken_back = as_json(llmeu("users", "revoke-role", ana, "--json", env=env))
    assert taken_back["role"] is None and taken_back["roles"] == ["operator"]
    events = httpx.get(f"{gateway.base_url}/platform/admin-events",
                       params={"action": "user.role"},
                       headers={"authorization": f"Bearer {gateway.admin_key}"}).json()["data"]  # fmt: skip
    assert [e["target"] for e in events] == [ana, ana]

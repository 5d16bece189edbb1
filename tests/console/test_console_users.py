"""The Users page in Chromium against a real gateway whose directory SCIM provisions: an
admin grants a role and sees it listed, the gateway's refusal shown; an operator grants only
roles within its own; an auditor reads the page and changes nothing; a member has no page,
and the API refuses the roles the page is not shown to."""

from __future__ import annotations

import uuid
from typing import Any

from playwright.sync_api import Locator, Page, expect

from tests.console.conftest import OPERATORS_GROUP, Console, screenshot, sign_in
from tests.console.test_console_e2e import (
    assert_every_control_is_labelled,
    assert_fits_phone_width,
    assert_text_contrast,
)
from tests.console.test_console_roles import role_key, status_of

USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group"


def provision(console: Console, prefix: str, **extra: Any) -> dict[str, Any]:
    """A user SCIM provisions, with a userName no other test of the session uses."""
    body = {"schemas": [USER_SCHEMA], "userName": f"{prefix}-{uuid.uuid4().hex[:8]}@example.eu"}
    return dict(console.scim("POST", "Users", {**body, **extra}))


def in_group(console: Console, name: str, *user_ids: str) -> None:
    console.scim("POST", "Groups", {"schemas": [GROUP_SCHEMA], "displayName": name,
                                    "members": [{"value": u} for u in user_ids]})  # fmt: skip


def user_row(page: Page, user_name: str) -> Locator:
    return page.locator("#user-list tbody tr", has_text=user_name)


def open_users(page: Page) -> None:
    page.get_by_role("link", name="Users").click()
    expect(page.get_by_role("heading", name="Users", level=1)).to_be_visible()


def test_an_admin_grants_auditor_to_a_provisioned_user(page: Page, console: Console) -> None:
    ana = provision(console, "ana", displayName="Ana Alves")
    in_group(console, OPERATORS_GROUP, ana["id"])
    team = console.api("POST", "/v1/platform/teams",
                       body={"name": f"search-{ana['id'][:6]}", "members": [ana["userName"]]})  # fmt: skip
    gone = provision(console, "gone")
    sign_in(page, console, console.gateway.admin_key)
    open_users(page)
    row = user_row(page, ana["userName"])
    cells = row.locator("td")
    expect(cells.nth(1)).to_have_text("Ana Alves")
    expect(cells.nth(2)).to_have_text("active")
    expect(cells.nth(3)).to_have_text("SCIM")
    expect(cells.nth(4)).to_have_text(OPERATORS_GROUP)
    expect(cells.nth(5)).to_have_text("operator")  # the roles its groups give
    expect(cells.nth(7)).to_have_text(team["name"])
    expect(cells.nth(8)).to_have_text("0")
    role = row.get_by_label(f"Role granted to {ana['userName']}")
    expect(role).to_have_value("")
    expect(role.locator("option")).to_have_text(
        ["none", "admin", "operator", "auditor", "dpo", "team_admin", "member"]
    )
    role.select_option("auditor")
    row.get_by_role("button", name=f"Save the role of {ana['userName']}").click()
    expect(page.get_by_role("status")).to_have_text(f"{ana['userName']} is granted auditor.")
    expect(user_row(page, ana["userName"]).get_by_label(f"Role granted to {ana['userName']}")).to_have_value("auditor")  # fmt: skip
    listed = {u["id"]: u for u in console.api("GET", "/v1/platform/users")["data"]}
    assert listed[ana["id"]]["role"] == "auditor"
    assert listed[ana["id"]]["roles"] == ["operator", "auditor"]
    assert_every_control_is_labelled(page)
    assert_text_contrast(page)
    assert_fits_phone_width(page)
    screenshot(page, "users")

    # The directory deprovisions a user while the page shows them: the gateway's 404 is shown.
    console.scim("DELETE", f"Users/{gone['id']}")
    stale = user_row(page, gone["userName"])
    stale.get_by_label(f"Role granted to {gone['userName']}").select_option("member")
    stale.get_by_role("button", name=f"Save the role of {gone['userName']}").click()
    expect(page.get_by_role("alert")).to_have_text(f"no user `{gone['id']}`")

    page.get_by_role("link", name="Admin events").click()
    granted = page.locator("#event-list tbody tr", has_text="user.role").filter(has_text=ana["id"])
    expect(granted).to_have_count(1)


def test_an_operator_grants_only_roles_within_its_own(page: Page, console: Console) -> None:
    bo = provision(console, "bo")
    cy = provision(console, "cy")
    console.api("PUT", f"/v1/platform/users/{cy['id']}/role", body={"role": "auditor"})
    key = role_key(console, "operator")
    sign_in(page, console, key)
    open_users(page)
    role = user_row(page, bo["userName"]).get_by_label(f"Role granted to {bo['userName']}")
    expect(role.locator("option")).to_have_text(["none", "operator", "member"])
    # An auditor's grant reaches further than an operator: shown, not offered to change.
    held = user_row(page, cy["userName"])
    expect(held.locator("td").nth(6)).to_have_text("auditor")
    expect(held.get_by_role("button")).to_have_count(0)
    path = f"/v1/platform/users/{cy['id']}/role"
    assert status_of(console, "PUT", path, key, {"role": None}) == 403
    role.select_option("member")
    user_row(page, bo["userName"]).get_by_role("button").click()
    expect(page.get_by_role("status")).to_have_text(f"{bo['userName']} is granted member.")


def test_an_auditor_reads_the_users_and_may_grant_nothing(page: Page, console: Console) -> None:
    dee = provision(console, "dee")
    key = role_key(console, "auditor")
    sign_in(page, console, key)
    open_users(page)
    expect(user_row(page, dee["userName"])).to_contain_text("SCIM")
    expect(page.locator("#user-list select, #user-list button")).to_have_count(0)
    path = f"/v1/platform/users/{dee['id']}/role"
    assert status_of(console, "PUT", path, key, {"role": "member"}) == 403


def test_a_member_has_no_users_page_and_the_api_refuses_it(page: Page, console: Console) -> None:
    eve = provision(console, "eve")
    key = role_key(console, "member")
    sign_in(page, console, key)
    expect(page.get_by_role("link", name="Users")).to_have_count(0)
    page.goto(f"{console.url}#/users")
    expect(page.get_by_role("heading", name="Playground", level=1)).to_be_visible()
    assert status_of(console, "GET", "/v1/platform/users", key) == 403
    path = f"/v1/platform/users/{eve['id']}/role"
    assert status_of(console, "PUT", path, key, {"role": "member"}) == 403

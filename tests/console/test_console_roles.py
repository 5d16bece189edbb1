"""The console per role, in Chromium against a real gateway: which pages each role sees,
that what a page hides the API refuses too, teams made, changed and deleted through the
Teams page, and the admin-event log showing those changes, filtered.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.console.conftest import Console, screenshot, sign_in
from tests.console.test_console_e2e import (
    assert_every_control_is_labelled,
    assert_fits_phone_width,
    assert_text_contrast,
    call,
)

NAV = {
    "playground": "Playground", "usage": "Usage", "traces": "Traces", "routing": "Routing map",
    "policies": "Policies", "keys": "Keys", "teams": "Teams", "users": "Users",
    "compliance": "Holds & erasure",
    "exports": "Exports", "verification": "Verification", "events": "Admin events",
}  # fmt: skip
READS = ["playground", "usage", "traces", "routing", "policies"]
SEEN = {
    "admin": list(NAV),
    "auditor": list(NAV),
    "operator": [*READS, "keys", "teams", "users"],
    "dpo": [*READS, "compliance", "exports", "events"],
    "team_admin": [*READS, "keys", "teams"],
    "member": READS,
}
# What each hidden section would read: the API answers the role 403 there.
SECTION_READS = {
    "keys": "/v1/platform/keys",
    "teams": "/v1/platform/teams",
    "users": "/v1/platform/users",
    "compliance": "/v1/platform/holds",
    "exports": "/v1/platform/exports/subprocessors.csv",
    "events": "/v1/platform/admin-events",
}


def status_of(console: Console, method: str, path: str, key: str, body: Any = None) -> int:
    """The HTTP status the gateway answers; a refusal must name `role_forbidden`."""
    request = urllib.request.Request(
        f"{console.gateway.url}{path}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"authorization": f"Bearer {key}", "content-type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        refusal = json.loads(error.read())["error"]["code"]
        status = error.code
    assert status != 403 or refusal == "role_forbidden"
    return status


def role_key(console: Console, role: str, team_id: str | None = None) -> str:
    body: dict[str, Any] = {"name": f"console-{role}", "role": role}
    if team_id is not None:
        body["team_id"] = team_id
    return str(console.api("POST", "/v1/platform/keys", body=body)["key"])


def make_team(console: Console, name: str) -> str:
    return str(console.api("POST", "/v1/platform/teams", body={"name": name})["id"])


def nav_sections(page: Page) -> list[str]:
    labels = {label: section for section, label in NAV.items()}
    shown = page.locator("#nav li:visible a").all_inner_texts()
    return [labels[text.strip()] for text in shown]


@pytest.mark.parametrize("role", list(SEEN))
def test_each_role_sees_its_pages_and_the_api_refuses_the_others(
    page: Page, console: Console, role: str
) -> None:
    team_id = make_team(console, f"pages-{role}") if role == "team_admin" else None
    key = role_key(console, role, team_id)
    sign_in(page, console, key)
    expect(page.locator("#who [data-role]")).to_have_text([role])
    assert nav_sections(page) == SEEN[role]
    for section, path in SECTION_READS.items():
        if section not in SEEN[role]:
            assert status_of(console, "GET", path, key) == 403, section
            page.get_by_role("link", name="Usage").click()
            expect(page.get_by_role("heading", name="Usage", level=1)).to_be_visible()
            page.goto(f"{console.url}#/{section}")  # a link to a hidden page: the first one
            expect(page.get_by_role("heading", name="Playground", level=1)).to_be_visible()
        else:
            assert status_of(console, "GET", path, key) == 200, section


def test_the_auditor_reads_every_page_and_is_offered_no_change(
    page: Page, console: Console
) -> None:
    key = role_key(console, "auditor")
    sign_in(page, console, key)
    # (page, its heading, the control an admin sees there, the request it would make)
    checks = [
        ("keys", "Keys", "Create key", "POST", "/v1/platform/keys", {"name": "x"}),
        ("routing", "Routing map", "Reload configuration", "POST", "/v1/platform/reload", None),
        ("teams", "Teams", "Create team", "POST", "/v1/platform/teams", {"name": "x"}),
        ("compliance", "Holds & erasure", "Place hold", "POST", "/v1/platform/holds",
         {"reason": "x"}),
        ("compliance", "Holds & erasure", "Erase", "DELETE", "/v1/platform/subjects/someone",
         None),
        ("policies", "Policies", "Create policy", "PUT", "/v1/platform/policies/x",
         {"allow_classes": ["eu_sovereign"]}),
        ("policies", "Policies", re.compile("^Edit "), "PUT", "/v1/platform/policies/eu-store",
         {"allow_classes": ["eu_sovereign"]}),
    ]  # fmt: skip
    for section, heading, control, method, path, body in checks:
        page.goto(f"{console.url}#/{section}")
        expect(page.get_by_role("heading", name=heading, level=1)).to_be_visible()
        expect(page.get_by_role("button", name=control)).to_have_count(0)
        assert status_of(console, method, path, key, body) == 403, control
    page.goto(f"{console.url}#/traces")
    expect(page.get_by_label("Key", exact=True)).to_be_visible()  # it reads every key's calls
    page.goto(f"{console.url}#/keys")
    expect(page.locator("#key-list tr").first).to_be_visible()
    expect(page.get_by_role("button", name=re.compile("^Revoke"))).to_have_count(0)
    call(console, console.new_key("verified-caller"))
    page.goto(f"{console.url}#/verification")
    page.get_by_role("button", name=re.compile("^Check the last")).click()
    summary = page.get_by_text(re.compile(r"^\d+ of \d+ receipts verify\.$"))
    expect(summary).to_be_visible()
    valid, shown = re.findall(r"\d+", summary.inner_text())
    assert valid == shown and int(shown) >= 1
    expect(page.locator("#receipt-results .badge.receipt-valid").first).to_be_visible()
    assert_every_control_is_labelled(page)
    assert_text_contrast(page)
    screenshot(page, "verification")


def test_the_operator_grants_only_roles_within_its_own(page: Page, console: Console) -> None:
    key = role_key(console, "operator")
    sign_in(page, console, key)
    page.get_by_role("link", name="Keys").click()
    expect(page.locator("#key-role option")).to_have_text(["operator", "member"])
    created = console.api(
        "POST", "/v1/platform/keys", body={"name": "an-auditor", "role": "auditor"}
    )
    page.reload()
    row = page.locator("#key-list tr", has_text="an-auditor")
    expect(row).to_contain_text("auditor")
    expect(row.get_by_role("button", name=re.compile("^Revoke"))).to_have_count(0)
    assert status_of(console, "DELETE", f"/v1/platform/keys/{created['id']}", key) == 403
    page.get_by_role("link", name="Routing map").click()
    page.get_by_role("button", name="Reload configuration").click()
    expect(page.get_by_text("Configuration read again")).to_be_visible()
    # It reads its own key's calls only: no filter by key that the API would ignore.
    page.get_by_role("link", name="Traces").click()
    expect(page.get_by_label("Status")).to_be_visible()
    expect(page.get_by_label("Key", exact=True)).to_have_count(0)


def test_a_team_admin_sees_its_team_and_manages_its_keys(page: Page, console: Console) -> None:
    team_id = make_team(console, "team-admin-own")
    make_team(console, "someone-elses")
    key = role_key(console, "team_admin", team_id)
    sign_in(page, console, key)
    page.get_by_role("link", name="Teams").click()
    rows = page.locator("table tbody tr")
    expect(rows).to_have_count(1)
    expect(rows).to_contain_text("team-admin-own")
    expect(page.get_by_role("button", name="Create team")).to_have_count(0)
    rows.get_by_role("link", name="team-admin-own").click()
    expect(page.get_by_role("heading", name="Team team-admin-own")).to_be_visible()
    expect(page.locator("#team-edit")).to_have_count(0)
    expect(page.locator("#team-delete")).to_have_count(0)
    assert status_of(console, "PATCH", f"/v1/platform/teams/{team_id}", key, {"name": "x"}) == 403
    assert status_of(console, "DELETE", f"/v1/platform/teams/{team_id}", key) == 403
    page.get_by_role("link", name="Keys", exact=True).click()
    expect(page.locator("#key-role option")).to_have_text(["team_admin", "member"])
    page.get_by_label("Name").fill("made-by-team-admin")
    page.get_by_role("button", name="Create key").click()
    expect(page.get_by_label("Secret")).to_have_value(re.compile(r"^sk-llmeu-"))
    row = page.locator("#key-list tr", has_text="made-by-team-admin")
    expect(row).to_contain_text(team_id)


def test_teams_are_made_changed_and_deleted_on_the_page_and_logged(
    page: Page, console: Console
) -> None:
    admin_id = console.api("GET", "/v1/platform/me")["id"]
    sign_in(page, console, console.gateway.admin_key)
    page.get_by_role("link", name="Teams").click()
    new = page.get_by_role("form", name="New team")
    new.get_by_label("Name").fill("Payments")
    new.get_by_label("Policy").select_option("eu-strict")
    new.get_by_label("Budget per month (EUR)").fill("250")
    new.get_by_label("Members").fill("ana@example.eu\nbo@example.eu")
    new.get_by_role("button", name="Create team").click()
    expect(page.get_by_role("heading", name="Team Payments", level=1)).to_be_visible()
    expect(page.locator("#team-members li")).to_have_text(["ana@example.eu", "bo@example.eu"])
    team_id = page.locator(".facts code").first.inner_text()
    assert_every_control_is_labelled(page)
    assert_text_contrast(page)
    assert_fits_phone_width(page)
    screenshot(page, "team")

    page.locator("#team-edit").click()
    edit = page.get_by_role("form", name="Change Payments")
    edit.get_by_label("Name").fill("Payments EU")
    edit.get_by_label("Budget per month (EUR)").fill("")
    edit.get_by_label("Members").fill("ana@example.eu")
    edit.get_by_role("button", name="Save team").click()
    expect(page.get_by_role("heading", name="Team Payments EU", level=1)).to_be_visible()
    expect(page.locator("#team-members li")).to_have_text(["ana@example.eu"])
    stored = console.api("GET", f"/v1/platform/teams/{team_id}")
    assert stored["name"] == "Payments EU" and stored["budget_eur_month"] is None
    assert stored["members"] == ["ana@example.eu"] and stored["policy_id"] == "eu-strict"

    # The gateway's refusal is shown: a team with an active key cannot be deleted.
    key = console.api("POST", "/v1/platform/keys", body={"name": "in-team", "team_id": team_id,
                                                          "policy_id": "eu-strict"})  # fmt: skip
    page.reload()
    expect(page.locator("table", has_text=key["id"])).to_be_visible()
    page.on("dialog", lambda dialog: dialog.accept())
    page.locator("#team-delete").click()
    expect(page.get_by_role("alert")).to_contain_text("key")
    console.api("DELETE", f"/v1/platform/keys/{key['id']}")
    page.locator("#team-delete").click()
    expect(page.get_by_role("heading", name="Teams", level=1)).to_be_visible()
    expect(page.locator("table", has_text="Payments EU")).to_have_count(0)

    page.get_by_role("link", name="Admin events").click()
    rows = page.locator("#event-list tbody tr")
    expect(rows.first).to_be_visible()
    for action in ("team.create", "team.update", "team.delete"):
        expect(rows.filter(has_text=action).filter(has_text=team_id)).to_have_count(1)
    page.get_by_label("Action").fill("team.delete")
    page.get_by_label("Actor").fill(admin_id)
    page.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(r"#/events\?action=team\.delete"))
    expect(rows.filter(has_not_text="team.delete")).to_have_count(0)  # the filtered list
    expect(rows.filter(has_text=team_id)).to_have_count(1)
    for text in rows.all_inner_texts():
        assert "team.delete" in text and admin_id in text
    newest = rows.first.inner_text()
    assert team_id in newest  # newest first: the delete just made
    assert_every_control_is_labelled(page)
    assert_text_contrast(page)
    assert_fits_phone_width(page)
    screenshot(page, "admin-events")


def test_the_event_log_pages_with_the_cursor(page: Page, console: Console) -> None:
    for n in range(5):
        make_team(console, f"paged-{n}")
    sign_in(page, console, console.gateway.admin_key)
    page.goto(f"{console.url}#/events?action=team.create&limit=2")
    rows = page.locator("#event-list tbody tr")
    expect(rows).to_have_count(2)
    page.get_by_role("button", name="Load more").click()
    expect(rows).to_have_count(4)
    texts = rows.all_inner_texts()
    assert all("team.create" in t for t in texts)
    assert len(set(texts)) == 4  # the second page follows the first, no row twice


def test_the_dpo_places_and_releases_a_hold_and_reads_the_records(
    page: Page, console: Console
) -> None:
    key = role_key(console, "dpo")
    sign_in(page, console, key)
    page.get_by_role("link", name="Holds & erasure").click()
    page.get_by_label("Reason").fill("case 2026-17")
    page.get_by_role("button", name="Place hold").click()
    row = page.locator("#hold-list tr", has_text="case 2026-17")
    expect(row).to_contain_text("every trace")
    page.on("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name=re.compile("^Release hold")).click()
    expect(row.get_by_role("button")).to_have_count(0)
    expect(row.locator("td").nth(3)).to_contain_text("by ")
    assert_every_control_is_labelled(page)
    assert_text_contrast(page)
    assert_fits_phone_width(page)
    screenshot(page, "holds")
    page.get_by_role("link", name="Exports").click()
    page.get_by_role("button", name="Show the records of processing").click()
    expect(page.locator("#records-text")).to_contain_text("processing")
    assert_every_control_is_labelled(page)
    assert_fits_phone_width(page)
    screenshot(page, "exports")
    page.get_by_role("link", name="Admin events").click()
    expect(page.locator("#event-list tbody tr", has_text="hold.release").first).to_be_visible()

"""The console shows a call answered from the answer cache as such: a flag beside its status in
the trace list and on the trace page, where it came from and what it saved; usage counts it."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.console.conftest import Console, sign_in
from tests.console.test_console_e2e import call

CACHING = {
    "allow_classes": ["on_premise", "eu_sovereign"], "max_retention": "P0D",
    "store_content": "P1D", "cache": {"ttl": "PT1H"},
}  # fmt: skip


def test_a_cached_call_is_flagged_beside_its_status(page: Page, console: Console) -> None:
    console.api("PUT", "/v1/platform/policies/console-cached", body=CACHING)
    key = console.new_key("e2e-cached", policy_id="console-cached")
    source = call(console, key, "asked twice")
    hit = call(console, key, "asked twice")
    sign_in(page, console, key)
    page.get_by_role("link", name="Traces").click()
    rows = page.locator("#trace-list tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0).locator(".badge.cached")).to_have_text("cached")
    expect(rows.nth(0).locator(".badge.status-completed")).to_be_visible()
    expect(rows.nth(1).locator(".badge.cached")).to_have_count(0)
    page.goto(f"{console.url}#/traces/{hit}")
    expect(page.locator(".trace-title .badge.cached")).to_be_visible()
    link = page.get_by_role("link", name=f"exact match of {source}")
    expect(link).to_be_visible()
    link.click()
    expect(page.get_by_role("heading", level=1)).to_contain_text(source)
    expect(page.locator(".trace-title .badge.cached")).to_have_count(0)
    page.get_by_role("link", name="Usage").click()
    expect(page.locator("#usage-totals")).to_contain_text("Answered from the cache")
    expect(page.locator("#usage-totals")).to_contain_text("1 (saved")

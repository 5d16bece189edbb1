"""The trace page checks the call's signed receipt in the browser and offers it for download."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.console.conftest import Console, sign_in
from tests.console.test_console_e2e import call


def test_the_trace_page_shows_the_receipt_verified_and_downloads_it(
    page: Page, console: Console
) -> None:
    key = console.new_key("e2e-receipt")
    trace_id = call(console, key, "receipt please")
    sign_in(page, console, key)
    page.goto(f"{console.url}#/traces/{trace_id}")
    status = page.locator("#receipt-status")
    expect(status).to_contain_text("Signature valid")
    with page.expect_download() as download:
        page.get_by_role("link", name="Download receipt (JWS)").click()
    assert download.value.suggested_filename == f"{trace_id}.jws"
    saved = download.value.path().read_text().strip()
    stored = console.api("GET", f"/v1/platform/traces/{trace_id}/receipt", key=key)
    assert saved == stored["receipt"]

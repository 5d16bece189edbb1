"""Signing in to the console with a real OpenID provider, in Chromium, through its login form.

The provider is `oidc-provider` (npm) in its own process; the gateway is `llmeu serve`.
After the browser signs in, the session cookie it holds acts on the platform API in the
role the user's group maps to: the auditor reads traces but may not reload, the operator
reloads with the CSRF token and is refused without it; the session ends at sign-out and
after its idle timeout.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.support.oidc_issuer import CLIENT_SECRET, Issuer, oidc_issuer, sso_args
from tests.support.processes import ADMIN_KEY, Gateway, free_port, start_gateway


@contextmanager
def sso_gateway(tmp_path: Path, *extra: str) -> Iterator[tuple[Issuer, Gateway]]:
    """A provider and a gateway signing in with it, `extra` added to its options."""
    port = free_port()
    with oidc_issuer(tmp_path, port) as issuer:
        gateway = start_gateway(
            tmp_path, port=port, args=sso_args(issuer, *extra), env={"OIDC_SECRET": CLIENT_SECRET}
        )
        try:
            yield issuer, gateway
        finally:
            gateway.stop()


@pytest.fixture
def signed_in(tmp_path: Path) -> Iterator[tuple[Issuer, Gateway]]:
    with sso_gateway(tmp_path, "--console-auth", "both") as pair:
        yield pair


def log_in(page: Page, user: str) -> None:
    """Fill and send the provider's login form; its consent form comes next."""
    page.locator("input[name=login]").fill(user)
    page.locator("input[name=password]").fill("any password")
    page.locator("button[type=submit]").click()


def to_login(browser: Browser, gateway: Gateway, user: str) -> Page:
    """A new browser context through the gateway's sign-in to the provider's consent form."""
    page = browser.new_context().new_page()
    page.goto(f"{gateway.url}/auth/login")
    log_in(page, user)
    return page


def sign_in(browser: Browser, gateway: Gateway, user: str) -> tuple[Page, str]:
    """Through the provider's own login and consent forms; the page and its session cookie."""
    page = to_login(browser, gateway, user)
    context = page.context
    page.locator("button[type=submit]").click()  # the consent form: "Continue"
    page.wait_for_url(f"{gateway.url}/console")
    cookies = {c["name"]: c for c in context.cookies(gateway.url)}
    cookie = cookies["llmeu_session"]
    assert cookie["httpOnly"] and cookie["sameSite"] == "Lax" and not cookie["secure"]
    return page, cookie["value"]


def session_of(gateway: Gateway, cookie: str) -> httpx.Client:
    return httpx.Client(base_url=gateway.url, cookies={"llmeu_session": cookie}, timeout=30)


def test_auditor_reads_and_may_not_change(browser: Browser, signed_in: tuple[Issuer, Gateway]):
    _, gateway = signed_in
    page, cookie = sign_in(browser, gateway, "alice")
    state = page.request.get(f"{gateway.url}/auth/session").json()
    assert state["signed_in"] and state["subject"] == "alice" and state["roles"] == ["auditor"]
    assert state["methods"] == ["key", "oidc"]
    with session_of(gateway, cookie) as api:
        assert api.get("/v1/platform/traces").status_code == 200
        me = api.get("/v1/platform/me").json()
        assert me["id"] == "user:alice" and me["role"] == "auditor"
        assert me["subject"] == "alice" and me["signed_in_with"] == "organisation"
        # No playground: a session holds no key to make calls with.
        assert me["sections"][0] == "usage" and "playground" not in me["sections"]
        assert "POST /v1/platform/reload" not in me["routes"]
        refused = api.post("/v1/platform/reload", headers={"x-csrf-token": state["csrf_token"]})
        assert refused.status_code == 403
        assert refused.json()["error"]["code"] == "role_forbidden"
    page.context.close()


def test_operator_changes_with_the_csrf_token_only(
    browser: Browser, signed_in: tuple[Issuer, Gateway]
):
    _, gateway = signed_in
    page, cookie = sign_in(browser, gateway, "bob")
    csrf = page.request.get(f"{gateway.url}/auth/session").json()["csrf_token"]
    with session_of(gateway, cookie) as api:
        without = api.post("/v1/platform/reload")
        assert without.status_code == 403 and without.json()["error"]["code"] == "csrf_failed"
        wrong = api.post("/v1/platform/reload", headers={"x-csrf-token": csrf + "x"})
        assert wrong.status_code == 403 and wrong.json()["error"]["code"] == "csrf_failed"
        elsewhere = api.post(
            "/v1/platform/reload",
            headers={"x-csrf-token": csrf, "origin": "https://attacker.example"},
        )
        assert elsewhere.status_code == 403 and elsewhere.json()["error"]["code"] == "csrf_failed"
        done = api.post(
            "/v1/platform/reload", headers={"x-csrf-token": csrf, "origin": gateway.url}
        )
        assert done.status_code == 200, done.text
        # An operator reads no traces but its own key's: none, as a user holds no key.
        assert api.get("/v1/platform/traces").json()["data"] == []
    # The console shows the operator's pages (no playground without a key), and its
    # reload button sends the session's CSRF token.
    expect(page.get_by_role("heading", name="Usage", level=1)).to_be_visible()
    nav = ["Usage", "Traces", "Routing map", "Policies", "Keys", "Teams"]
    expect(page.locator("#nav li:visible a")).to_have_text(nav)
    page.get_by_role("link", name="Routing map").click()
    page.get_by_role("button", name="Reload configuration").click()
    expect(page.get_by_text("Configuration read again")).to_be_visible()
    page.context.close()


def test_sign_out_ends_the_session_and_offers_the_issuers_logout(
    browser: Browser, signed_in: tuple[Issuer, Gateway]
):
    issuer, gateway = signed_in
    page, cookie = sign_in(browser, gateway, "bob")
    csrf = page.request.get(f"{gateway.url}/auth/session").json()["csrf_token"]
    out = page.request.post(f"{gateway.url}/auth/logout", headers={"x-csrf-token": csrf})
    assert out.status == 200
    assert out.json()["logout_url"].startswith(f"{issuer.url}/session/end?id_token_hint=")
    with session_of(gateway, cookie) as api:
        ended = api.get("/v1/platform/me")
        assert ended.status_code == 401 and ended.json()["error"]["code"] == "session_expired"
    assert page.request.get(f"{gateway.url}/auth/session").json()["signed_in"] is False
    page.context.close()


def test_a_user_whose_groups_map_to_no_role_is_not_signed_in(
    browser: Browser, signed_in: tuple[Issuer, Gateway]
):
    _, gateway = signed_in
    page = to_login(browser, gateway, "carol")
    context = page.context
    with page.expect_response(lambda r: "/auth/callback" in r.url) as answer:
        page.locator("button[type=submit]").click()
    assert answer.value.status == 403
    assert answer.value.json()["error"]["code"] == "no_role"
    assert not [c for c in context.cookies(gateway.url) if c["name"] == "llmeu_session"]
    context.close()


def test_the_callback_takes_each_state_once(browser: Browser, signed_in: tuple[Issuer, Gateway]):
    _, gateway = signed_in
    page = to_login(browser, gateway, "alice")
    with page.expect_request(lambda r: "/auth/callback" in r.url) as callback:
        page.locator("button[type=submit]").click()
    page.wait_for_url(f"{gateway.url}/console")
    replayed = httpx.get(callback.value.url, timeout=30)
    assert replayed.status_code == 400 and replayed.json()["error"]["code"] == "invalid_state"
    page.context.close()
    bad = {
        "?state=made-up&code=x": (400, "invalid_state"),
        "": (400, None),
        "?error=access_denied&error_description=the+user+said+no": (401, "sign_in_failed"),
    }
    for query, (status, code) in bad.items():
        answer = httpx.get(f"{gateway.url}/auth/callback{query}", timeout=30)
        assert answer.status_code == status, (query, answer.text)
        assert code is None or answer.json()["error"]["code"] == code


def test_an_idle_session_ends(browser: Browser, tmp_path: Path):
    with sso_gateway(tmp_path, "--session-idle-timeout", "3") as (_, gateway):
        page, cookie = sign_in(browser, gateway, "alice")
        with session_of(gateway, cookie) as api:
            assert api.get("/v1/platform/me").status_code == 200
            time.sleep(4.5)
            ended = api.get("/v1/platform/me")
            assert ended.status_code == 401
            assert ended.json()["error"]["code"] == "session_expired"
        page.context.close()


def test_the_console_signs_in_and_out_with_the_organisation(
    browser: Browser, signed_in: tuple[Issuer, Gateway]
):
    """The console's own button, the provider's forms, the console signed in as the user
    (its calls carry the cookie) showing the user's role's pages, and its Sign out through
    the issuer's logout."""
    issuer, gateway = signed_in
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{gateway.url}/console")
    page.get_by_role("link", name="Sign in with your organisation").click()
    log_in(page, "alice")
    page.locator("button[type=submit]").click()
    # An auditor's first page: a session holds no key to call the playground with.
    page.get_by_role("heading", name="Usage", level=1).wait_for()
    expect(page.get_by_role("link", name="Playground")).to_be_hidden()
    expect(page.get_by_role("link", name="Admin events")).to_be_visible()
    page.get_by_text("alice@example.org").wait_for()
    page.get_by_role("link", name="Admin events").click()
    expect(page.locator("#event-list tbody tr", has_text="auth.sign_in").first).to_be_visible()
    page.goto(f"{gateway.url}/console#/traces")
    page.get_by_role("heading", name="Traces", level=1).wait_for()
    with page.expect_request(lambda r: r.url.startswith(f"{issuer.url}/session/end")):
        page.get_by_role("button", name="Sign out").click()
    assert page.request.get(f"{gateway.url}/auth/session").json()["signed_in"] is False
    context.close()


def test_console_auth_oidc_offers_no_key_form(browser: Browser, tmp_path: Path):
    with sso_gateway(tmp_path, "--console-auth", "oidc") as (_, gateway):
        context = browser.new_context()
        page = context.new_page()
        page.goto(f"{gateway.url}/console")
        page.get_by_role("link", name="Sign in with your organisation").wait_for()
        assert page.get_by_label("API key").count() == 0
        context.close()
        # The admin key still works on the API: the break-glass way in.
        me = httpx.get(f"{gateway.url}/v1/platform/me",
                       headers={"authorization": f"Bearer {ADMIN_KEY}"}, timeout=30)  # fmt: skip
        assert me.status_code == 200 and me.json()["role"] == "admin"


def test_sign_in_sign_out_and_a_failed_sign_in_are_admin_events(
    browser: Browser, signed_in: tuple[Issuer, Gateway]
):
    _, gateway = signed_in
    page, _ = sign_in(browser, gateway, "bob")
    csrf = page.request.get(f"{gateway.url}/auth/session").json()["csrf_token"]
    assert page.request.post(f"{gateway.url}/auth/logout", headers={"x-csrf-token": csrf}).ok
    page.context.close()
    made_up = httpx.get(f"{gateway.url}/auth/callback?state=made-up&code=x", timeout=30)
    assert made_up.status_code == 400
    admin = {"authorization": f"Bearer {ADMIN_KEY}"}
    listed = httpx.get(f"{gateway.url}/v1/platform/admin-events", headers=admin, timeout=30)
    events = [e for e in listed.json()["data"] if e["action"].startswith("auth.")]
    by_action = {e["action"]: e for e in events}
    assert sorted(by_action) == ["auth.sign_in", "auth.sign_in_failed", "auth.sign_out"]
    signed = by_action["auth.sign_in"]
    assert signed["actor"].startswith("user:") and signed["role"] == "operator"
    assert signed["target"] == signed["actor"].removeprefix("user:")
    assert signed["after_sha256"] and signed["source"] == "127.0.0.1"
    assert by_action["auth.sign_out"]["actor"] == signed["actor"]
    failed = by_action["auth.sign_in_failed"]
    assert (failed["actor"], failed["role"], failed["target"]) == ("unauthenticated", None, None)

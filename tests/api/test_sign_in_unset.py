"""A gateway without `--oidc-issuer`: the console offers keys only, the sign-in routes say
it is not set up, and a session cookie is no way in."""

from __future__ import annotations

import httpx

from llmeu.api.app import App


async def test_without_an_issuer_the_console_offers_keys_only(client: httpx.AsyncClient) -> None:
    state = (await client.get("/auth/session", headers={"cookie": "llmeu_session=x"})).json()
    assert state == {"object": "console_session", "methods": ["key"], "signed_in": False}
    for method, path in (("GET", "/auth/login"), ("GET", "/auth/callback"),
                         ("POST", "/auth/logout")):  # fmt: skip
        answer = await client.request(method, path)
        assert answer.status_code == 404
        assert answer.json()["error"]["code"] == "sso_not_configured"


async def test_a_cookie_is_not_a_key(app: App) -> None:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as anonymous:
        answer = await anonymous.get("/v1/platform/me", headers={"cookie": "llmeu_session=x"})
    assert answer.status_code == 401
    assert answer.json()["error"]["code"] == "missing_api_key"

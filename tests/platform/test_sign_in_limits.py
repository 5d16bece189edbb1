"""Starting a console sign-in stores a login under way, so it is bounded, on SQLite and
PostgreSQL: per client address (a 429 with Retry-After past its bucket, other addresses
unaffected), and in all (the logins under way are capped; expired ones are purged first).

The issuer is a real HTTP server in the test answering its discovery document."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from llmeu.api.app import App, create_app
from llmeu.api.services.sso import LOGIN_STARTS, LOGIN_TTL_SECONDS, Sso
from tests.platform.conftest import settings_for
from tests.support.processes import FakeUpstream


async def _discovery(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    issuer = f"http://127.0.0.1:{writer.get_extra_info('sockname')[1]}"
    document = json.dumps({"issuer": issuer, "authorization_endpoint": f"{issuer}/auth",
                           "token_endpoint": f"{issuer}/token", "jwks_uri": f"{issuer}/jwks"})  # fmt: skip
    try:
        while True:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                         b"content-length: %d\r\n\r\n%s" % (len(document), document.encode()))  # fmt: skip
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()


@pytest.fixture
async def app_sso(
    tmp_path: Path, database_url: str, fake_upstream: FakeUpstream
) -> AsyncIterator[App]:
    issuer = await asyncio.start_server(_discovery, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{issuer.sockets[0].getsockname()[1]}"
    settings = settings_for(tmp_path, database_url, fake_upstream, oidc_issuer=url,
                            oidc_client_id="console", console_auth="both")  # fmt: skip
    application = create_app(settings)
    await application.gateway.start()
    await application.gateway.platform.store.db.execute("DELETE FROM console_logins")
    yield application
    await application.gateway.stop()
    issuer.close()


def browser(app: App, address: str) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=(address, 50000))
    return httpx.AsyncClient(transport=transport, base_url="http://gateway")


def sso_of(app: App) -> Sso:
    sso = app.gateway.platform.sso
    assert sso is not None
    return sso


async def stored(app: App) -> int:
    rows = await app.gateway.platform.store.db.fetch("SELECT COUNT(*) AS n FROM console_logins")
    return int(rows[0]["n"])


async def test_one_address_starts_a_bounded_number_of_sign_ins(app_sso: App) -> None:
    async with browser(app_sso, "203.0.113.7") as flood, browser(app_sso, "198.51.100.2") as other:
        for _ in range(LOGIN_STARTS.burst):
            started = await flood.get("/auth/login")
            assert started.status_code == 302, started.text
        refused = await flood.get("/auth/login")
        assert refused.status_code == 429
        assert refused.json()["error"]["code"] == "too_many_sign_ins"
        assert refused.headers["retry-after"] in ("1", "2"), "one start every 2 s"
        assert (await other.get("/auth/login")).status_code == 302, "another address signs in"
    assert await stored(app_sso) == LOGIN_STARTS.burst + 1, "a refused start stores nothing"


async def test_the_logins_under_way_are_capped_until_they_expire(app_sso: App) -> None:
    sso_of(app_sso).max_pending = 3
    for n in range(3):
        async with browser(app_sso, f"192.0.2.{n}") as client:
            assert (await client.get("/auth/login")).status_code == 302
    async with browser(app_sso, "192.0.2.9") as late:
        refused = await late.get("/auth/login")
        assert refused.status_code == 429
        assert refused.json()["error"]["code"] == "too_many_sign_ins"
        assert 590 <= int(refused.headers["retry-after"]) <= LOGIN_TTL_SECONDS, (
            "the oldest's expiry"
        )
        expired = time.time() - LOGIN_TTL_SECONDS - 1
        await app_sso.gateway.platform.store.db.execute(
            "UPDATE console_logins SET created_at = ?", (expired,)
        )
        assert (await late.get("/auth/login")).status_code == 302, "expired logins purged"
    assert await stored(app_sso) == 1

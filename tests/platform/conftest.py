"""The platform API in process (httpx.ASGITransport), on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from llmeu.api.app import App, create_app
from llmeu.config import Settings
from tests.ledger.conftest import database_url  # noqa: F401  (the parametrized fixture)
from tests.support.processes import ADMIN_KEY, FakeUpstream, config_yaml, fake_endpoint

TEAM_POLICY = """
  - policy_id: eu-store
    allow_classes: [on_premise, eu_sovereign]
    max_retention: P0D
    store_content: P1D
  - policy_id: team
    allow_classes: [eu_sovereign]
    max_retention: P0D
"""
CHAT = "/v1/chat/completions"

Client = httpx.AsyncClient
TenantFactory = Callable[..., Awaitable[tuple[Client, dict[str, Any]]]]


def settings_for(tmp_path: Path, url: str, upstream: FakeUpstream, **overrides: Any) -> Settings:
    config = tmp_path / "config.yaml"
    config.write_text(config_yaml(fake_endpoint("fakeprov-fr-a", upstream), policies=TEAM_POLICY))
    return Settings(
        data_dir=tmp_path, database_url=None if url.startswith("sqlite") else url,
        config_file=config, admin_key=ADMIN_KEY, load_local_models=False, **overrides,
    )  # fmt: skip


@pytest.fixture
async def app(
    tmp_path: Path,
    database_url: str,  # noqa: F811
    fake_upstream: FakeUpstream,
) -> AsyncIterator[App]:
    application = create_app(settings_for(tmp_path, database_url, fake_upstream))
    await application.gateway.start()
    yield application
    await application.gateway.stop()


def client_for(app: App, token: str) -> Client:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://gateway",
        headers={"authorization": f"Bearer {token}"},
    )


@pytest.fixture
async def admin(app: App) -> AsyncIterator[Client]:
    async with client_for(app, ADMIN_KEY) as client:
        yield client


@pytest.fixture
async def tenant(app: App, admin: Client) -> AsyncIterator[TenantFactory]:
    """Create a key through the API; returns a client using it and the created key."""
    clients: list[Client] = []

    async def create(name: str, **spec: Any) -> tuple[Client, dict[str, Any]]:
        response = await admin.post("/v1/platform/keys", json={"name": name, **spec})
        assert response.status_code == 201, response.text
        created = response.json()
        client = client_for(app, created["key"])
        clients.append(client)
        return client, created

    yield create
    for client in clients:
        await client.aclose()


async def chat(client: Client, content: str = "hi", **extra: Any) -> httpx.Response:
    body = {"model": "fake-model", "messages": [{"role": "user", "content": content}], **extra}
    return await client.post(CHAT, json=body)

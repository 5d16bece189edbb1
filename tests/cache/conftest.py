"""A gateway in process whose policies cache answers, with tenants to call it: the fixtures of
the answer cache's API tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from llmeu.api.app import App, create_app
from llmeu.config import Settings
from tests.support.processes import ADMIN_KEY, FakeUpstream, config_yaml, fake_endpoint

POLICIES = """
  - policy_id: cached
    allow_classes: [on_premise, eu_sovereign]
    max_retention: P0D
    store_content: P1D
    cache: {ttl: PT1H}
  - policy_id: shared
    allow_classes: [on_premise, eu_sovereign]
    max_retention: P0D
    store_content: P1D
    cache: {ttl: PT1H, scope: policy}
  - policy_id: uncached
    allow_classes: [on_premise, eu_sovereign]
    max_retention: P0D
    store_content: P1D
  - policy_id: masked
    allow_classes: [on_premise, eu_sovereign]
    max_retention: P0D
    store_content: P1D
    personal_data: {detectors: {email: mask}}
    cache: {ttl: PT1H}
  - policy_id: brief
    allow_classes: [on_premise, eu_sovereign]
    max_retention: P0D
    store_content: P1D
    cache: {ttl: PT1S}
"""
CHAT = "/v1/chat/completions"

Client = httpx.AsyncClient
Tenant = Callable[[str], Awaitable[tuple[Client, str]]]


@pytest.fixture
async def app(tmp_path: Path, fake_upstream: FakeUpstream) -> AsyncIterator[App]:
    config = tmp_path / "config.yaml"
    config.write_text(config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream),
                                  policies=POLICIES, default_policy="cached"))  # fmt: skip
    settings = Settings(data_dir=tmp_path, config_file=config, admin_key=ADMIN_KEY,
                        load_local_models=False)  # fmt: skip
    application = create_app(settings)
    await application.gateway.start()
    yield application
    await application.gateway.stop()


def client_for(app: App, token: str) -> Client:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gateway",
                             headers={"authorization": f"Bearer {token}"})  # fmt: skip


@pytest.fixture
async def admin(app: App) -> AsyncIterator[Client]:
    async with client_for(app, ADMIN_KEY) as client:
        yield client


@pytest.fixture
async def tenant(app: App, admin: Client) -> AsyncIterator[Tenant]:
    clients: list[Client] = []

    async def create(policy_id: str) -> tuple[Client, str]:
        made = await admin.post(
            "/v1/platform/keys", json={"name": policy_id, "policy_id": policy_id}
        )
        assert made.status_code == 201, made.text
        clients.append(client_for(app, made.json()["key"]))
        return clients[-1], made.json()["id"]

    yield create
    for client in clients:
        await client.aclose()


def body(text: str, **extra: Any) -> dict[str, Any]:
    return {"model": "fake-model", "messages": [{"role": "user", "content": text}], **extra}


async def chat(client: Client, text: str, **extra: Any) -> httpx.Response:
    response = await client.post(CHAT, json=body(text, **extra))
    assert response.status_code == 200, response.text
    return response


def upstream_calls(upstream: FakeUpstream) -> int:
    return len([r for r in upstream.stats() if r["path"].endswith("/chat/completions")])

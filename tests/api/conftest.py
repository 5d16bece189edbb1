"""In-process API fixtures: the ASGI app on httpx.ASGITransport, its lifespan run by hand."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from llmeu.api.app import App, create_app
from llmeu.config import Settings
from tests.support.processes import ADMIN_KEY, FakeUpstream, config_yaml, fake_endpoint

SCIM_TOKEN = "scim-token-of-the-api-tests"


@pytest.fixture
async def app(tmp_path: Path, fake_upstream: FakeUpstream) -> AsyncIterator[App]:
    config = tmp_path / "config.yaml"
    config.write_text(config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream)))
    settings = Settings(
        data_dir=tmp_path, config_file=config, admin_key=ADMIN_KEY, load_local_models=False,
        max_body_bytes=64 * 1024, scim_token=SCIM_TOKEN,
    )  # fmt: skip
    application = create_app(settings)
    await application.gateway.start()
    yield application
    await application.gateway.stop()


@pytest.fixture
async def client(app: App) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(
        transport=transport,
        base_url="http://gateway",
        headers={"authorization": f"Bearer {ADMIN_KEY}"},
    ) as client:
        yield client

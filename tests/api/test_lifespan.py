"""The ASGI lifespan: the gateway starts, the `on_started` hook runs, then the server is told."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llmeu.api.app import create_app
from llmeu.config import Settings
from tests.support.processes import ADMIN_KEY, FakeUpstream, config_yaml, fake_endpoint


async def test_on_started_runs_once_the_gateway_started_and_before_the_server_hears(
    tmp_path: Path, fake_upstream: FakeUpstream
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream)))
    settings = Settings(
        data_dir=tmp_path, config_file=config, admin_key=ADMIN_KEY, load_local_models=False
    )
    app = create_app(settings)
    events: list[str] = []
    app.on_started = lambda: events.append(f"started, gateway loaded={app.gateway.loaded}")
    incoming = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])

    async def receive() -> dict[str, Any]:
        return next(incoming)

    async def send(message: dict[str, Any]) -> None:
        events.append(message["type"])

    await app({"type": "lifespan"}, receive, send)
    assert events == [
        "started, gateway loaded=True",
        "lifespan.startup.complete",
        "lifespan.shutdown.complete",
    ]

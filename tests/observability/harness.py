"""The gateway in process (httpx.ASGITransport) with its spans kept in memory.

The fake upstream is a real process; the gateway is `create_app(settings)`
started by hand (ASGITransport runs no lifespan). `hang_up` drives the ASGI
app directly to play a client that disconnects mid-stream, which
ASGITransport cannot.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from llmeu.api.app import App, create_app
from llmeu.config import Settings
from llmeu.observability.tracing import TracingObserver
from tests.support.processes import ADMIN_KEY

AUTH = {"authorization": f"Bearer {ADMIN_KEY}"}


@dataclass
class Harness:
    app: App
    exporter: InMemorySpanExporter
    client: httpx.AsyncClient

    def spans(self) -> list[ReadableSpan]:
        return sorted(self.exporter.get_finished_spans(), key=lambda s: s.start_time or 0)

    async def chat(
        self,
        content: str,
        *,
        model: str = "fake-model",
        headers: dict[str, str] | None = None,
        **body: Any,
    ) -> httpx.Response:
        payload = {"model": model, "messages": [{"role": "user", "content": content}], **body}
        return await self.client.post(
            "/v1/chat/completions", json=payload, headers={**AUTH, **(headers or {})}
        )

    async def metrics(self) -> str:
        response = await self.client.get("/metrics")
        assert response.status_code == 200
        return response.text


@asynccontextmanager
async def in_process(
    tmp: Path, config: str, *, otel_content: bool = False
) -> AsyncIterator[Harness]:
    config_path = tmp / "config.yaml"
    config_path.write_text(config)
    settings = Settings(
        data_dir=tmp / "data",
        config_file=config_path,
        admin_key=ADMIN_KEY,
        load_local_models=False,
        otel_content=otel_content,
    )
    app = create_app(settings)
    exporter = InMemorySpanExporter()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    gateway = app.gateway
    tracer = provider.get_tracer("tests")
    gateway.observers.add(TracingObserver(tracer, gateway.config.catalog, content=otel_content))
    await gateway.start()
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
            yield Harness(app, exporter, client)
    finally:
        await gateway.stop()
        provider.shutdown()


async def hang_up(app: App, content: str, *, after_deltas: int) -> list[dict[str, Any]]:
    """Stream a chat and disconnect once `after_deltas` content frames arrived."""
    body = json.dumps(
        {"model": "fake-model", "stream": True, "messages": [{"role": "user", "content": content}]}
    ).encode()
    sent: list[dict[str, Any]] = []
    enough = asyncio.Event()
    requested = False

    async def receive() -> dict[str, Any]:
        nonlocal requested
        if not requested:
            requested = True
            return {"type": "http.request", "body": body, "more_body": False}
        await enough.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        frames = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
        if frames.count(b'"content"') >= after_deltas:
            enough.set()

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "path": "/v1/chat/completions",
        "raw_path": b"/v1/chat/completions",
        "query_string": b"",
        "headers": [
            (b"authorization", AUTH["authorization"].encode()),
            (b"content-type", b"application/json"),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8080),
    }
    await asyncio.wait_for(app(scope, receive, send), 30)
    return sent

"""The routes operators and orchestrators call: liveness, readiness, metrics. No key needed,
and no tenant data in any of them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llmeu.api.http.asgi import Request
from llmeu.observability.telemetry import Telemetry
from llmeu.protocol.json_codec import encoder

State = Callable[[], tuple[bool, dict[str, Any]]]


async def handle_healthz(health: State, request: Request) -> None:
    """Alive: 200 while the process takes calls, 503 while it shuts down."""
    alive, body = health()
    await request.respond(200 if alive else 503, encoder.encode(body))


async def handle_readyz(readiness: State, request: Request) -> None:
    """Ready for traffic: 200 once started with its ledger answering, else 503."""
    ready, body = readiness()
    await request.respond(200 if ready else 503, encoder.encode(body))


async def handle_metrics(telemetry: Telemetry, request: Request) -> None:
    """Prometheus metrics (docs/operations.md, Observability)."""
    body, content_type = telemetry.exposition(request.header(b"accept"))
    await request.respond(200, body, [(b"content-type", content_type.encode())])


POINTER = {
    "object": "llmeu.pointer",
    "message": "llmeu: an OpenAI-compatible gateway that keeps inference where your policy "
    "allows. The API is under /v1 (send your key as `Authorization: Bearer`); the console "
    "is at /console; the documentation is the docs/ folder of the llmeu repository "
    "(`make docs` builds it as a site).",
    "console": "/console",
    "models": "/v1/models",
    "openapi": "/openapi.json",
    "health": "/healthz",
}


async def handle_pointer(request: Request) -> None:
    """`GET /` and `GET /v1`: where to go next, for a person who tried the bare address."""
    await request.respond(200, encoder.encode(POINTER))

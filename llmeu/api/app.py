"""The ASGI application: a route table, the lifespan, and the outermost error guard."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from llmeu.api.calls import shutting_down
from llmeu.api.chat import handle_chat
from llmeu.api.console import handle_console, handle_console_asset, handle_console_slash
from llmeu.api.cors import CorsMiddleware
from llmeu.api.embeddings import handle_embeddings
from llmeu.api.errors import send_error
from llmeu.api.gateway import Gateway
from llmeu.api.http import Receive, Request, Scope, Send, send_response
from llmeu.api.models import handle_models
from llmeu.api.openapi import handle_openapi
from llmeu.api.platform import PLATFORM_PREFIX_ROUTES, PLATFORM_ROUTES
from llmeu.config import Settings
from llmeu.errors import ApiError, MethodNotAllowed, NotFound
from llmeu.ledger.records import CallStatus
from llmeu.protocol.wire import encoder

log = logging.getLogger("llmeu.api")

Handler = Callable[[Gateway, Request], Awaitable[None]]
PrefixHandler = Callable[[Gateway, Request, str], Awaitable[None]]


async def handle_healthz(gw: Gateway, request: Request) -> None:
    body = {
        "status": "ok" if gw.accepting else "shutting_down",
        "ledger": "ok" if gw.ledger.healthy else "degraded",
        "ledger_queue": gw.ledger.depth,
        "instance_id": gw.instance_id,
    }
    await send_response(request.send, 200 if gw.accepting else 503, encoder.encode(body))


async def handle_metrics(gw: Gateway, request: Request) -> None:
    """Prometheus metrics; no key needed, and no tenant data in them (README, Observability)."""
    body, content_type = gw.telemetry.exposition(request.header(b"accept"))
    await send_response(request.send, 200, body, [(b"content-type", content_type.encode())])


ROUTES: dict[tuple[str, str], Handler] = {
    ("POST", "/v1/chat/completions"): handle_chat,
    ("POST", "/v1/embeddings"): handle_embeddings,
    ("GET", "/v1/models"): handle_models,
    ("GET", "/healthz"): handle_healthz,
    ("GET", "/console"): handle_console,
    ("GET", "/console/"): handle_console_slash,
    ("GET", "/openapi.json"): handle_openapi,
    ("GET", "/metrics"): handle_metrics,
    **PLATFORM_ROUTES,
}
PREFIX_ROUTES: dict[tuple[str, str], PrefixHandler] = {
    ("GET", "/v1/models/"): handle_models,
    ("GET", "/console/"): handle_console_asset,
    **PLATFORM_PREFIX_ROUTES,
}


class App:
    """`create_app(settings)` builds this; uvicorn (or any ASGI server) runs it."""

    def __init__(self, gateway: Gateway):
        self.gateway = gateway
        origins = gateway.settings.cors_origins
        self._handle_http = CorsMiddleware(self._http, origins) if origins else self._http
        self.routes = dict(ROUTES)
        self.prefix_routes: dict[tuple[str, str], PrefixHandler] = dict(PREFIX_ROUTES)
        self.paths = {path for _, path in self.routes}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self._handle_http(scope, receive, send)
        elif scope["type"] == "lifespan":
            await self._lifespan(receive, send)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive, send)
        started = False

        async def tracking_send(message: dict[str, object]) -> None:
            nonlocal started
            started = True
            await send(message)

        request.send = tracking_send  # type: ignore[assignment]
        try:
            await self._dispatch(request)
        except asyncio.CancelledError:  # the server ended the request: the trace says so
            call = request.call
            if call is not None and call.open:
                call.finish(CallStatus.INTERRUPTED, error=shutting_down())
            raise
        except ApiError as error:
            if not started:
                await send_error(send, error)
        except Exception:  # the outermost layer: never let a bug become a dropped connection
            log.exception("unhandled error on %s %s", request.method, request.path)
            internal = ApiError("internal error", code="internal_error")
            call = request.call
            if call is not None and call.open:
                call.finish(CallStatus.FAILED, error=internal)
            if not started:
                trace_id = call.trace_id if call is not None else None
                await send_error(send, internal, trace_id=trace_id)

    async def _dispatch(self, request: Request) -> None:
        handler = self.routes.get((request.method, request.path))
        if handler is not None:
            await handler(self.gateway, request)
            return
        for (method, prefix), prefix_handler in self.prefix_routes.items():
            if request.method == method and request.path.startswith(prefix):
                rest = request.path[len(prefix) :]
                if rest and "/" not in rest:
                    await prefix_handler(self.gateway, request, rest)
                    return
        if request.path in self.paths or any(
            _one_segment_under(request.path, prefix) for _, prefix in self.prefix_routes
        ):
            raise MethodNotAllowed(f"method {request.method} is not allowed on {request.path}")
        raise NotFound(f"no route {request.method} {request.path}", code="unknown_route")

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self.gateway.start()
                except Exception as error:  # reported to the server, which exits
                    log.exception("startup failed")
                    await send({"type": "lifespan.startup.failed", "message": str(error)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.gateway.stop()
                await send({"type": "lifespan.shutdown.complete"})
                return


def _one_segment_under(path: str, prefix: str) -> bool:
    rest = path[len(prefix) :] if path.startswith(prefix) else ""
    return bool(rest) and "/" not in rest


def create_app(settings: Settings) -> App:
    return App(Gateway.build(settings))

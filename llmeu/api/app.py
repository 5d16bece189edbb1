"""The ASGI application: the route table, the lifespan, and the outermost error guard."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from urllib.parse import unquote

from llmeu.api.gateway import Gateway
from llmeu.api.health import health, readiness
from llmeu.api.http.asgi import Receive, Request, Scope, Send
from llmeu.api.http.body_intake import BodyBounds, BodyIntake
from llmeu.api.http.cors import CorsMiddleware
from llmeu.api.http.error_responses import OPENAI_ERRORS, ErrorShape, as_api_error, send_error
from llmeu.api.http.identifiers import check_identifier
from llmeu.api.routes import compliance, console, platform, receipt_keys, service
from llmeu.api.routes.chat_completions import handle_chat
from llmeu.api.routes.embeddings import handle_embeddings
from llmeu.api.routes.messages import ANTHROPIC_ERRORS, handle_count_tokens, handle_messages
from llmeu.api.routes.models import handle_models
from llmeu.api.routes.openapi import handle_openapi
from llmeu.api.routes.responses import (
    handle_delete_response,
    handle_get_response,
    handle_input_items,
    handle_responses,
)
from llmeu.config import Settings
from llmeu.errors import ClientDisconnected, MethodNotAllowed, NotFound
from llmeu.ledger.stored_responses import StoredResponses

log = logging.getLogger("llmeu.api")

Handler = Callable[..., Awaitable[None]]
"""`handler(request, *segments)`: one argument for each `{name}` segment of the path."""


@dataclass(frozen=True, slots=True)
class Route:
    """One route. `path` is a template: a segment written `{name}` matches any one non-empty
    segment, passed to the handler in order. `documented` routes are the API, described by
    `GET /openapi.json` (a test holds the two together); `shape` is how the surface writes
    its errors."""

    method: str
    path: str
    handler: Handler
    shape: ErrorShape = OPENAI_ERRORS
    documented: bool = True

    @property
    def templated(self) -> bool:
        return "{" in self.path

    @property
    def params(self) -> list[str]:
        """The names of the `{name}` segments, in order."""
        return [s[1:-1] for s in self.path.split("/") if s.startswith("{")]

    def match(self, segments: list[str]) -> list[str] | None:
        """The values of the `{name}` segments if `segments` (the path split on `/`) fit."""
        pattern = self.path.split("/")
        if len(pattern) != len(segments):
            return None
        values = []
        for want, got in zip(pattern, segments, strict=True):
            if want.startswith("{"):
                if not got:
                    return None
                values.append(got)
            elif want != got:
                return None
        return values


def route_table(gw: Gateway) -> list[Route]:
    calls = gw.calls
    stored = StoredResponses(gw.store.db)
    platform_routes = [
        Route(method, path, partial(handler, gw.platform))
        for method, path, handler in (*platform.PLATFORM_ROUTES, *compliance.COMPLIANCE_ROUTES)
    ]
    return [
        Route("POST", "/v1/chat/completions", partial(handle_chat, calls)),
        Route("POST", "/v1/responses", partial(handle_responses, calls, stored)),
        Route("GET", "/v1/responses/{response_id}", partial(handle_get_response, calls, stored)),
        Route(
            "DELETE", "/v1/responses/{response_id}", partial(handle_delete_response, calls, stored)
        ),
        Route(
            "GET",
            "/v1/responses/{response_id}/input_items",
            partial(handle_input_items, calls, stored),
        ),
        Route("POST", "/v1/embeddings", partial(handle_embeddings, calls)),
        Route("POST", "/v1/messages", partial(handle_messages, calls), ANTHROPIC_ERRORS),
        Route(
            "POST",
            "/v1/messages/count_tokens",
            partial(handle_count_tokens, calls),
            ANTHROPIC_ERRORS,
        ),
        Route("GET", "/v1/models", partial(handle_models, calls, gw.started_at)),
        Route("GET", "/v1/models/{model}", partial(handle_models, calls, gw.started_at)),
        *platform_routes,
        Route(
            "GET",
            "/v1/platform/traces/{trace_id}/receipt",
            partial(receipt_keys.get_receipt, gw.evidence),
        ),
        Route("GET", "/.well-known/llmeu/jwks.json", partial(receipt_keys.get_jwks, gw.evidence)),
        Route("GET", "/healthz", partial(service.handle_healthz, partial(health, gw))),
        Route("GET", "/readyz", partial(service.handle_readyz, partial(readiness, gw))),
        Route("GET", "/metrics", partial(service.handle_metrics, gw.telemetry)),
        Route("GET", "/openapi.json", handle_openapi),
        Route("GET", "/console", console.handle_console, documented=False),
        Route("GET", "/console/", console.handle_console_slash, documented=False),
        Route("GET", "/console/{name}", console.handle_console_asset, documented=False),
    ]


class App:
    """`create_app(settings)` builds this; uvicorn (or any ASGI server) runs it."""

    def __init__(self, gateway: Gateway):
        self.gateway = gateway
        origins = gateway.settings.cors_origins
        self._handle_http = CorsMiddleware(self._http, origins) if origins else self._http
        self.routes = route_table(gateway)
        settings = gateway.settings
        self._intake = BodyIntake(
            BodyBounds(
                timeout=settings.body_timeout_seconds,
                min_rate=settings.min_body_rate,
                memory=settings.max_body_memory_bytes,
            )
        )
        self._exact = {(r.method, r.path): r for r in self.routes if not r.templated}
        # A path's own error shape, also for a method it does not have (405).
        self._shapes = {r.path: r.shape for r in self.routes if not r.templated}
        self._templated = [r for r in self.routes if r.templated]
        self.on_started: Callable[[], None] | None = None
        """Called once the gateway has started, before the server takes calls."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self._handle_http(scope, receive, send)
        elif scope["type"] == "lifespan":
            await self._lifespan(receive, send)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive, send, self._intake)
        shape: ErrorShape = self._shapes.get(request.path, OPENAI_ERRORS)
        try:
            route, values = self._find(request.method, request.path, request.scope.get("raw_path"))
            shape = route.shape
            for name, value in zip(route.params, values, strict=True):
                check_identifier(value, name)
            await route.handler(request, *values)
        except ClientDisconnected:
            return  # nobody is left to answer; a call records its own hang-up
        except Exception as exc:  # the outermost layer: never let a bug become a dropped connection
            await _answer_error(request, exc, shape)

    def _find(
        self, method: str, path: str, raw_path: bytes | None = None
    ) -> tuple[Route, list[str]]:
        """The route and its path values; 405 when only another method has the path.
        A value is one segment of the path as sent, percent-decoded on its own, so an
        encoded `/` (`%2F`) stays inside the value it belongs to."""
        route = self._exact.get((method, path))
        if route is not None:
            return route, []
        other_method = any(path == r.path for r in self._exact.values())
        if raw_path:
            segments = [unquote(s) for s in raw_path.decode("latin-1").split("/")]
        else:
            segments = path.split("/")
        for route in self._templated:
            values = route.match(segments)
            if values is None:
                continue
            if route.method == method:
                return route, values
            other_method = True
        if other_method:
            raise MethodNotAllowed(f"method {method} is not allowed on {path}")
        raise NotFound(f"no route {method} {path}", code="unknown_route")

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
                if self.on_started is not None:
                    self.on_started()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.gateway.stop()
                await send({"type": "lifespan.shutdown.complete"})
                return


async def _answer_error(request: Request, exc: Exception, shape: ErrorShape) -> None:
    """The error response, from a frame of its own: a local of `App._http` holding the
    error would be held by the error's traceback in turn, a cycle for the collector."""
    error = as_api_error(exc)
    if error.status == 500:
        log.error("unhandled error on %s %s", request.method, request.path, exc_info=exc)
    if not request.response_started:
        await send_error(request, error, shape=shape)


def create_app(settings: Settings, instance_id: str | None = None) -> App:
    """The app on the settings; `instance_id` names this process in the ledger (a worker's
    supervisor chooses it, to record the calls of a worker that died)."""
    return App(Gateway.build(settings, instance_id))


def documented_routes(app: App) -> set[tuple[str, str]]:
    """The (method, path) of every route the OpenAPI document must describe."""
    return {(r.method, r.path) for r in app.routes if r.documented}

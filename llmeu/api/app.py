"""The ASGI application: the route table, the lifespan, and the outermost error guard."""

from __future__ import annotations

import logging
from collections.abc import Callable
from urllib.parse import unquote

from llmeu.api.gateway import Gateway
from llmeu.api.http.asgi import ROUTE_KEY, Receive, Request, Scope, Send
from llmeu.api.http.body_intake import BodyBounds, BodyIntake
from llmeu.api.http.cors import CorsMiddleware
from llmeu.api.http.error_responses import OPENAI_ERRORS, ErrorShape, as_api_error, send_error
from llmeu.api.http.identifiers import check_identifier
from llmeu.api.http.route import Route
from llmeu.api.routes.route_table import route_table
from llmeu.config import Settings
from llmeu.errors import ClientDisconnected, MethodNotAllowed, NotFound, SchemaMismatch

log = logging.getLogger("llmeu.api")


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
            scope[ROUTE_KEY] = route.path
            await route.handler(request, *values)
        except ClientDisconnected:
            return  # nobody is left to answer; a call records its own hang-up
        except Exception as exc:  # the outermost layer: never let a bug become a dropped connection
            if isinstance(exc, MethodNotAllowed):
                shape = self._shape_of(request.path, shape)
            await _answer_error(request, exc, shape)

    def _shape_of(self, path: str, found: ErrorShape) -> ErrorShape:
        """The error shape of a templated path (`/scim/v2/Users/{user_id}`) a method it does
        not have was sent to; `found` for any other path."""
        segments = path.split("/")
        return next((r.shape for r in self._templated if r.match(segments) is not None), found)

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
                except SchemaMismatch as error:  # the message says it all: no traceback
                    log.error("startup failed: %s", error)
                    await send({"type": "lifespan.startup.failed", "message": str(error)})
                    return
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

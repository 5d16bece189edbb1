"""CORS, off unless origins are configured (`llmeu serve --cors-origin URL`, repeatable).

Without configured origins no response carries a CORS header, so browsers
refuse cross-origin calls and an `OPTIONS` preflight is answered like any
unknown method (405). With them, a preflight from an allowed origin gets a
204 naming the methods and the headers it asked for, one from any other
origin a 403; responses to allowed origins carry `access-control-allow-origin`
and expose the gateway's own headers (trace id, retry-after, overhead). API
keys travel in the `Authorization` header, never in cookies, so credentials
are not allowed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from llmeu.api.http.asgi import Headers, Message, Receive, Request, Scope, Send
from llmeu.api.http.error_responses import send_error
from llmeu.errors import PermissionDenied

ASGIHandler = Callable[[Scope, Receive, Send], Awaitable[None]]

_METHODS = b"GET, POST, PUT, PATCH, DELETE, OPTIONS"
_EXPOSED = b"x-llmeu-trace-id, retry-after, x-llmeu-overhead-ms, server-timing"
_MAX_AGE = b"600"
_MAX_REQUESTED_HEADERS = 1024


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key == name:
            value_bytes: bytes = value
            return value_bytes
    return None


class CorsMiddleware:
    def __init__(self, app: ASGIHandler, origins: Sequence[str]):
        self.app = app
        self.any_origin = "*" in origins
        self.origins = frozenset(o.rstrip("/").encode("latin-1") for o in origins if o != "*")

    def allowed(self, origin: bytes) -> bool:
        return self.any_origin or origin in self.origins

    def _allow_origin(self, origin: bytes) -> Headers:
        if self.any_origin:
            return [(b"access-control-allow-origin", b"*")]
        return [(b"access-control-allow-origin", origin), (b"vary", b"origin")]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        origin = _header(scope, b"origin")
        if origin is None:
            await self.app(scope, receive, send)
            return
        requested = _header(scope, b"access-control-request-method")
        if scope["method"] == "OPTIONS" and requested is not None:
            await self._preflight(Request(scope, receive, send), origin)
            return
        if not self.allowed(origin):
            await self.app(scope, receive, send)
            return
        extra = [*self._allow_origin(origin), (b"access-control-expose-headers", _EXPOSED)]

        async def send_with_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        await self.app(scope, receive, send_with_cors)

    async def _preflight(self, request: Request, origin: bytes) -> None:
        if not self.allowed(origin):
            await send_error(
                request,
                PermissionDenied(
                    "this origin may not call the gateway (see --cors-origin)",
                    code="cors_origin_not_allowed",
                ),
            )
            return
        headers = [
            *self._allow_origin(origin),
            (b"access-control-allow-methods", _METHODS),
            (b"access-control-max-age", _MAX_AGE),
        ]
        asked = _header(request.scope, b"access-control-request-headers")
        if asked is not None and len(asked) <= _MAX_REQUESTED_HEADERS:
            headers.append((b"access-control-allow-headers", asked))
        await request.respond(204, b"", headers)

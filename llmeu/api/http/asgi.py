"""The little HTTP the API needs on top of raw ASGI: a typed request view that also sends.

No framework: a request handler reads parse → route → call → record →
respond, and every byte it sends goes through `Request.start`/`write`, which
is how the app knows whether a response has begun.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any
from urllib.parse import parse_qsl

from llmeu.api.http.body_intake import BodyBounds, BodyIntake
from llmeu.api.http.identifiers import check_query
from llmeu.calls.hangup import Hangup
from llmeu.errors import InvalidRequest

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Headers = list[tuple[bytes, bytes]]

JSON_HEADERS: Headers = [(b"content-type", b"application/json")]
SSE_HEADERS: Headers = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"connection", b"keep-alive"),
    (b"x-accel-buffering", b"no"),
]


class Request:
    """One HTTP request: what the client sent, and the one way to answer it."""

    __slots__ = ("_intake", "_query", "_send", "headers", "method", "path", "receive",
                 "response_started", "scope")  # fmt: skip

    def __init__(
        self, scope: Scope, receive: Receive, send: Send, intake: BodyIntake | None = None
    ):
        self.scope = scope
        self._intake = intake if intake is not None else BodyIntake(BodyBounds())
        self.receive = receive
        self._send = send
        self.method: str = scope["method"]
        self.path: str = scope["path"]
        self.headers: Sequence[tuple[bytes, bytes]] = scope["headers"]
        self._query: dict[str, str] | None = None
        self.response_started = False

    @property
    def hangup_hook(self) -> HangupHook | None:
        """The server's hang-up hook for this request, when the server gives one."""
        extensions = self.scope.get("extensions")
        return extensions.get(HANGUP_EXTENSION) if extensions else None

    def header(self, name: bytes) -> str | None:
        for key, value in self.headers:
            if key == name:
                return value.decode("latin-1")
        return None

    @property
    def route(self) -> str:
        """The path template of the route the app dispatched this request to
        (`/v1/platform/keys/{key_id}`): what the platform's access table is keyed by."""
        return str(self.scope[ROUTE_KEY])

    @property
    def client(self) -> str | None:
        """The client's address (no port), where the server knows it."""
        client = self.scope.get("client")
        return str(client[0]) if client else None

    @property
    def query(self) -> dict[str, str]:
        if self._query is None:
            raw = self.scope.get("query_string", b"").decode("latin-1")
            try:
                query = dict(parse_qsl(raw, keep_blank_values=True, max_num_fields=64))
            except ValueError:
                raise InvalidRequest("too many query parameters", param="query") from None
            self._query = check_query(query)
        return self._query

    async def body(self, limit: int) -> bytes:
        """The whole request body, within `limit` bytes and the intake's bounds of time and
        memory (`llmeu.api.http.body_intake`)."""
        declared = self.header(b"content-length")
        size = int(declared) if declared is not None and declared.isdigit() else None
        return await self._intake.read(self.receive, size, limit)

    async def start(self, status: int, headers: Headers) -> None:
        self.response_started = True
        await self._send({"type": "http.response.start", "status": status, "headers": headers})

    async def write(self, body: bytes, *, more: bool = True) -> None:
        await self._send({"type": "http.response.body", "body": body, "more_body": more})

    async def respond(self, status: int, body: bytes, headers: Headers = JSON_HEADERS) -> None:
        """A whole response: status, headers (with the body's length, so that no response but
        a stream is chunked and an HTTP/1.0 client can read every one) and body."""
        if status not in (204, 304):
            headers = [*headers, (b"content-length", str(len(body)).encode())]
        await self.start(status, headers)
        await self.write(body, more=False)


def with_header(headers: Headers, name: bytes, value: str) -> Headers:
    return [*headers, (name, value.encode("latin-1"))]


HANGUP_EXTENSION = "llmeu.hangup"
ROUTE_KEY = "llmeu.route"
"""The scope key under which the app puts the matched route's path template."""


class HangupHook:
    """Put on a request's scope (`extensions["llmeu.hangup"]`) by llmeu's own HTTP server,
    which calls `lost()` when the connection goes while the response is incomplete: a
    call learns of its hang-up without a task waiting on `receive()` for the whole call."""

    __slots__ = ("gone", "listener")

    def __init__(self) -> None:
        self.gone = False
        self.listener: Callable[[], None] | None = None

    def lost(self) -> None:
        self.gone = True
        if self.listener is not None:
            self.listener()


class DisconnectWatch:
    """Fires a call's `Hangup` the moment its client disconnects, between `start` and `stop`.

    Under llmeu's server the connection says so itself (`HangupHook`). Under
    any other ASGI server, once the request body is read, ASGI's `receive()`
    returns only `http.disconnect`: a task waiting on it learns of a hang-up
    at once. Either way the hang-up aborts whatever the call's upstream is
    waiting on. `stop()` before recording the outcome, so a late hang-up cannot
    turn a finished call into a cancelled one.
    """

    __slots__ = ("_hangup", "_hook", "_receive", "_task")

    def __init__(self, receive: Receive, hangup: Hangup, hook: HangupHook | None = None):
        self._receive = receive
        self._hangup = hangup
        self._hook = hook
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        hook = self._hook
        if hook is not None:
            if hook.gone:
                self._hangup.fire()
            else:
                hook.listener = self._hangup.fire
        elif self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._watch())

    def stop(self) -> None:
        if self._hook is not None:
            self._hook.listener = None
        elif self._task is not None:
            # Let go of the task: its coroutine refers to this watch, and a watch that kept
            # its task would be a cycle for the garbage collector to find.
            self._task.cancel()
            self._task = None

    async def _watch(self) -> None:
        while (await self._receive())["type"] != "http.disconnect":
            pass
        self._hangup.fire()

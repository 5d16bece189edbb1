"""The little HTTP the API needs on top of raw ASGI: a request view and responders.

No framework: a request handler reads parse → route → call → record →
respond, and every byte it sends is visible here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any
from urllib.parse import parse_qsl

from llmeu.errors import InvalidRequest, PayloadTooLarge

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
    __slots__ = ("_query", "call", "headers", "method", "path", "receive", "scope", "send")

    def __init__(self, scope: Scope, receive: Receive, send: Send):
        self.scope = scope
        self.receive = receive
        self.send = send
        self.method: str = scope["method"]
        self.path: str = scope["path"]
        self.headers: Sequence[tuple[bytes, bytes]] = scope["headers"]
        self._query: dict[str, str] | None = None
        self.call: Any = None  # the call this request opened, if any (see api.calls)

    def header(self, name: bytes) -> str | None:
        for key, value in self.headers:
            if key == name:
                return value.decode("latin-1")
        return None

    @property
    def query(self) -> dict[str, str]:
        if self._query is None:
            raw = self.scope.get("query_string", b"").decode("latin-1")
            try:
                self._query = dict(parse_qsl(raw, keep_blank_values=True, max_num_fields=64))
            except ValueError:
                raise InvalidRequest("too many query parameters", param="query") from None
        return self._query

    async def body(self, limit: int) -> bytes:
        """The whole request body; 413 past `limit` bytes (checked before reading when declared)."""
        declared = self.header(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise PayloadTooLarge(
                f"request body of {declared} bytes exceeds the limit of {limit} bytes"
            )
        parts: list[bytes] = []
        size = 0
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                raise asyncio.CancelledError("client disconnected while sending the body")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise PayloadTooLarge(f"request body exceeds the limit of {limit} bytes")
            parts.append(chunk)
            if not message.get("more_body", False):
                return b"".join(parts) if len(parts) != 1 else parts[0]


async def send_response(
    send: Send, status: int, body: bytes, headers: Headers = JSON_HEADERS
) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def with_header(headers: Headers, name: bytes, value: str) -> Headers:
    return [*headers, (name, value.encode("latin-1"))]


class DisconnectWatch:
    """Cancels the request's task when the client goes away, while armed.

    After the request body is read, ASGI's `receive()` returns only
    `http.disconnect`: a task waiting on it learns of a hang-up at once, and
    cancelling the handler closes the upstream connection (or stops local
    generation) without waiting for the next token. Disarm before recording
    the outcome, so a late hang-up cannot turn a finished call into a
    cancelled one.
    """

    __slots__ = ("_receive", "_target", "_task", "armed", "disconnected")

    def __init__(self, receive: Receive):
        self._receive = receive
        self._target = asyncio.current_task()
        self._task: asyncio.Task[None] | None = None
        self.armed = False
        self.disconnected = False

    def arm(self) -> None:
        self.armed = True
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._watch())

    def disarm(self) -> None:
        self.armed = False

    def handled(self) -> None:
        """The hang-up was dealt with: undo its cancellation so recording runs normally."""
        if self._target is not None:
            self._target.uncancel()

    def close(self) -> None:
        self.armed = False
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def _watch(self) -> None:
        while True:
            message = await self._receive()
            if message["type"] == "http.disconnect":
                self.disconnected = True
                if self.armed and self._target is not None:
                    self._target.cancel()
                return

"""How a response goes out: its head with its body in one write, and in a form
an HTTP/1.0 client can read.

uvicorn writes a response's status line and headers, then each part of its
body, each with a write of its own: a whole response costs two system calls
and two TCP segments, and the client wakes twice. `OneWriteCycle` holds the
head back until the body's first part and writes both at once; a head whose
body does not follow in the same turn of the event loop goes out alone at
the next turn, so a stream's headers are never held waiting for a token.

HTTP/1.0 has no chunked transfer coding, yet uvicorn chunks every response
that declares no length, whatever the request's version. Every whole response
of the app carries its length (`Request.respond`); what remains is a stream,
which for an HTTP/1.0 client is sent close-delimited: no length, no chunking,
the body as it is produced, and the end of the body is the end of the
connection (RFC 9112 §6.3). uvicorn's HTTP/1.0 connections never stay open
after a response, so nothing else changes.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import RequestResponseCycle


class _Capture:
    """A transport whose writes are kept rather than sent (everything else is the real one's)."""

    __slots__ = ("parts", "transport")

    def __init__(self, transport: asyncio.Transport):
        self.transport = transport
        self.parts: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.parts.append(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


class _Prefixed:
    """A transport that writes a held head in front of the first write (or before closing)."""

    __slots__ = ("head", "transport")

    def __init__(self, transport: asyncio.Transport, head: bytes):
        self.transport = transport
        self.head: bytes | None = head

    def write(self, data: bytes) -> None:
        head, self.head = self.head, None
        self.transport.write(data if head is None else head + data)

    def close(self) -> None:
        self.release()
        self.transport.close()

    def release(self) -> None:
        head, self.head = self.head, None
        if head is not None and not self.transport.is_closing():
            self.transport.write(head)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


class OneWriteCycle(RequestResponseCycle):
    """uvicorn's request-response cycle, writing a response's head with its body's first part."""

    _held: bytes | None = None

    async def send(self, message: Any) -> None:
        kind = message["type"]
        if kind == "http.response.start" and not self.response_started:
            capture = _Capture(self.transport)
            self.transport = capture  # type: ignore[assignment]
            try:
                await super().send(message)
            finally:
                self.transport = capture.transport
            if capture.parts:
                self._held = b"".join(capture.parts)
                asyncio.get_running_loop().call_soon(self.release_head)
            return
        if kind == "http.response.body" and self._held is not None:
            prefixed = _Prefixed(self.transport, self._held)
            self._held = None
            self.transport = prefixed  # type: ignore[assignment]
            try:
                await super().send(message)
            finally:
                self.transport = prefixed.transport
                prefixed.release()  # a body that wrote nothing (HEAD) still gets its head
            return
        await super().send(message)

    def release_head(self) -> None:
        """Write a held head now (the body did not follow in the same turn)."""
        head, self._held = self._held, None
        if head is not None and not self.disconnected and not self.transport.is_closing():
            self.transport.write(head)


class Http10Cycle(OneWriteCycle):
    """uvicorn's request-response cycle, sending a response of no declared length
    close-delimited instead of chunked."""

    _close_delimited = False

    async def send(self, message: Any) -> None:
        if message["type"] == "http.response.start" and not self.response_started:
            if _unsized(message, self.scope["method"]):
                self._close_delimited = True
                self.keep_alive = False
                self.chunked_encoding = False  # uvicorn adds chunking only while this is None
                headers = [
                    (n, v) for n, v in message.get("headers", []) if n.lower() != b"connection"
                ]
                message = {**message, "headers": headers}
        elif self._close_delimited and message["type"] == "http.response.body":
            await self._send_close_delimited(message)
            return
        await super().send(message)

    async def _send_close_delimited(self, message: Any) -> None:
        if self.flow.write_paused and not self.disconnected:
            await self.flow.drain()
        if self.disconnected or self.response_complete:
            return
        self.release_head()
        body = message.get("body", b"")
        if body:
            self.transport.write(body)
        if not message.get("more_body", False):
            self.response_complete = True
            self.message_event.set()
            self.transport.close()
            self.on_response()


def _unsized(start: Any, method: str) -> bool:
    if method == "HEAD" or start["status"] in (204, 304):
        return False
    return not any(
        name.lower() in (b"content-length", b"transfer-encoding")
        for name, _ in start.get("headers", [])
    )

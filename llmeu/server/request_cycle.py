"""Responses an HTTP/1.0 client can read.

HTTP/1.0 has no chunked transfer coding, yet uvicorn chunks every response
that declares no length, whatever the request's version. Every whole response
of the app carries its length (`Request.respond`); what remains is a stream,
which for an HTTP/1.0 client is sent close-delimited: no length, no chunking,
the body as it is produced, and the end of the body is the end of the
connection (RFC 9112 §6.3). uvicorn's HTTP/1.0 connections never stay open
after a response, so nothing else changes.
"""

from __future__ import annotations

from typing import Any

from uvicorn.protocols.http.httptools_impl import RequestResponseCycle


class Http10Cycle(RequestResponseCycle):
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

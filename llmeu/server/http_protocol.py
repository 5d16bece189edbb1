"""uvicorn's httptools protocol with the request head bounded.

httptools takes a request head of any size, and uvicorn's
`h11_max_incomplete_event_size` applies to h11 only, so `BoundedHttpToolsProtocol`
answers a head over `MAX_HEAD_BYTES` with a 431 (a 414 for a request line
alone that long) before the app sees it. uvicorn takes the protocol class as
`Config(http=...)`.
"""

from __future__ import annotations

import asyncio
from http import HTTPStatus
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from llmeu.protocol.error_shape import encode_error

MAX_HEAD_BYTES = 64 * 1024
_LINGER_SECONDS = 5.0


class _HeadTooLarge(Exception):
    """Stops the parser inside one of its callbacks; uvicorn then calls `send_400_response`."""


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, refusing request heads over `MAX_HEAD_BYTES`.

    The parser reports the request line and each header once complete, and
    those are counted exactly; a line that never ends is caught by counting
    the bytes received while the head is still incomplete. Either way the
    client gets an OpenAI-shaped error and the connection is closed — once the
    client has read it: closing a socket with unread input sends a reset,
    which can destroy the answer before it is read, so the gateway ends its
    side first and drops what still arrives until the client closes (at most
    `_LINGER_SECONDS`).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._in_head = True
        self._head_bytes = 0  # request line and headers the parser reported
        self._head_received = 0  # bytes received while the head was incomplete
        self._message_ended = False
        self._refusal: tuple[int, str] | None = None
        self._refused = False
        self._linger: asyncio.TimerHandle | None = None

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        self._message_ended = False
        super().data_received(data)
        # With a message ended in this read, part of `data` was not head: not counted.
        if self._in_head and not self._message_ended and not self._refused:
            self._head_received += len(data)
            if self._head_received > MAX_HEAD_BYTES:
                self._refuse(431, "request headers")

    def connection_lost(self, exc: Exception | None) -> None:
        if self._linger is not None:
            self._linger.cancel()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True
        self._head_bytes = 0

    def on_url(self, url: bytes) -> None:
        self._head_bytes += len(url)
        if self._head_bytes > MAX_HEAD_BYTES:
            self._refusal = (414, "request URL")
            raise _HeadTooLarge
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_bytes += len(name) + len(value) + 4
        if self._head_bytes > MAX_HEAD_BYTES:
            self._refusal = (431, "request headers")
            raise _HeadTooLarge
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._head_received = 0
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_head = True
        self._message_ended = True

    def send_400_response(self, msg: str) -> None:
        if self._refusal is None:
            super().send_400_response(msg)
        else:
            self._refuse(*self._refusal)

    def _refuse(self, status: int, what: str) -> None:
        self._refused = True
        body = encode_error(
            f"{what} too large: the request head may be at most {MAX_HEAD_BYTES} bytes",
            "invalid_request_error",
            code="request_header_fields_too_large" if status == 431 else "request_uri_too_long",
        )
        head = (
            f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
            "content-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
        )
        self.transport.write(head.encode("latin-1") + body)
        if self.transport.can_write_eof():
            self.transport.write_eof()
            self._linger = self.loop.call_later(_LINGER_SECONDS, self.transport.close)
        else:
            self.transport.close()

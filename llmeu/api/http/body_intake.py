"""Reading request bodies within bounds of time and of memory.

A body must never pause longer than `timeout` and, once its first `timeout`
seconds are over, must keep up with `min_rate` bytes per second: a client
that sends a body a byte at a time, or stops halfway, gets a 408 (and the
connection is closed) instead of holding a connection and the bytes already
sent for ever. Every process gives the bodies it is reading at once at most
`memory` bytes together; a body that would take more is a 503 `server_busy`
(Retry-After: 1). A call whose body times out is refused before any work:
its trace is `rejected`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from llmeu.errors import ClientDisconnected, PayloadTooLarge, RequestTimeout, ServerBusy

Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]


@dataclass(frozen=True, slots=True)
class BodyBounds:
    timeout: float = 10.0
    min_rate: int = 8 << 10
    memory: int = 64 << 20


class BodyIntake:
    """The bounds, and the bytes of the bodies being read right now (one per process)."""

    __slots__ = ("bounds", "held")

    def __init__(self, bounds: BodyBounds):
        self.bounds = bounds
        self.held = 0

    async def read(self, receive: Receive, declared: int | None, limit: int) -> bytes:
        """The whole body; 413 past `limit` bytes (before reading, when `declared` says so),
        408 when it comes too slowly, 503 when the process has no room for it,
        `ClientDisconnected` when the client leaves while sending it."""
        if declared is not None and declared > limit:
            raise PayloadTooLarge(
                f"request body of {declared} bytes exceeds the limit of {limit} bytes"
            )
        held = self._reserve(declared or 0, 0)
        started = time.monotonic()
        parts: list[bytes] = []
        size = 0
        try:
            while True:
                message = await self._next(receive, started, size)
                chunk: bytes = message.get("body", b"")
                size += len(chunk)
                if size > limit:
                    raise PayloadTooLarge(f"request body exceeds the limit of {limit} bytes")
                held = self._reserve(size, held)
                parts.append(chunk)
                if not message.get("more_body", False):
                    return b"".join(parts) if len(parts) != 1 else parts[0]
        finally:
            self.held -= held

    async def _next(self, receive: Receive, started: float, size: int) -> MutableMapping[str, Any]:
        """The next piece, due by the end of the longest pause or when `size` bytes fall
        behind the minimum rate, whichever comes first."""
        bounds = self.bounds
        now = time.monotonic()
        due = min(now + bounds.timeout, started + bounds.timeout + size / bounds.min_rate)
        try:
            async with asyncio.timeout(max(0.0, due - now)):
                message = await receive()
        except TimeoutError:
            raise RequestTimeout(
                f"the request body came too slowly: it may pause at most {bounds.timeout:g} s "
                f"and must average {bounds.min_rate} bytes/s after its first "
                f"{bounds.timeout:g} s ({size} bytes received)",
            ) from None
        if message["type"] == "http.disconnect":
            raise ClientDisconnected("the client disconnected while sending the body")
        return message

    def _reserve(self, size: int, held: int) -> int:
        """Hold `size` bytes for one body that holds `held` already; what it holds now."""
        if size <= held:
            return held
        more = size - held
        if self.held + more > max(self.bounds.memory, size):
            raise ServerBusy(
                "the gateway is reading as many request bodies as it has memory for; retry shortly"
            )
        self.held += more
        return size

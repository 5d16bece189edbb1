"""A raw-socket HTTP server that answers with exactly the bytes a test scripts.

Real servers are too well behaved to test a client with: this one can drop
`[DONE]`, cut a chunked body in the middle, write a UTF-8 character in two
TCP segments, use CR line endings, keep the connection open after the end,
and it notices when the client hangs up. It runs its own event loop in a
thread, so synchronous and asynchronous clients can both talk to it.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Self

SSE = "text/event-stream; charset=utf-8"


@dataclass(frozen=True)
class Reply:
    """One scripted answer; each piece of `body` goes out as its own TCP write."""

    body: Sequence[bytes] = ()
    status: int = 200
    content_type: str = SSE
    headers: Sequence[tuple[str, str]] = ()
    framing: Literal["chunked", "close", "length"] = "chunked"
    cut: bool = False
    """Close the connection without finishing the body (no final empty chunk)."""
    hold: float = 0.0
    """Before ending the body, keep it open up to this long, or until the client leaves."""
    pause: float = 0.005
    """Between pieces, so that each one reaches the client as a read of its own."""


@dataclass
class Seen:
    """A request as it arrived, and what became of its connection."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    client_left: threading.Event = field(default_factory=threading.Event)
    """Set when the client closed the connection before the reply was over."""
    reply_over: threading.Event = field(default_factory=threading.Event)


class WireServer:
    """`with WireServer(reply) as server:` then point a client at `server.url`."""

    def __init__(self, reply: Reply | Callable[[Seen], Reply]) -> None:
        self._reply = reply
        self.requests: list[Seen] = []
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._server: asyncio.Server | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> Self:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the wire server did not start")
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._handle, "127.0.0.1", 0)
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            self._server.close()
            tasks = asyncio.all_tasks(self._loop)
            for task in tasks:
                task.cancel()
            self._loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            self._loop.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            seen = await _read_request(reader)
            if seen is None:
                return
            self.requests.append(seen)
            reply = self._reply(seen) if callable(self._reply) else self._reply
            await _answer(reply, seen, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


async def _read_request(reader: asyncio.StreamReader) -> Seen | None:
    head = await reader.readuntil(b"\r\n\r\n")
    request_line, *header_lines = head.decode("latin-1").split("\r\n")
    if not request_line:
        return None
    method, path, _ = request_line.split(" ", 2)
    headers = {}
    for line in header_lines:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return Seen(method, path, headers, body)


async def _answer(
    reply: Reply, seen: Seen, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    # The client sends nothing more after its request, so EOF here means it hung up.
    hung_up = asyncio.ensure_future(reader.read(1))
    lines = [f"HTTP/1.1 {reply.status} Scripted", f"content-type: {reply.content_type}"]
    lines += [f"{name}: {value}" for name, value in reply.headers]
    if reply.framing == "chunked":
        lines.append("transfer-encoding: chunked")
    elif reply.framing == "length":
        lines.append(f"content-length: {sum(len(piece) for piece in reply.body)}")
    lines.append("connection: close")
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
    try:
        for piece in reply.body:
            if hung_up.done():
                seen.client_left.set()
                return
            if reply.framing == "chunked":
                writer.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            else:
                writer.write(piece)
            await writer.drain()
            await asyncio.sleep(reply.pause)
        if reply.hold:
            done, _ = await asyncio.wait({hung_up}, timeout=reply.hold)
            if done:
                seen.client_left.set()
                return
        if reply.framing == "chunked" and not reply.cut:
            writer.write(b"0\r\n\r\n")
            await writer.drain()
    finally:
        seen.reply_over.set()
        hung_up.cancel()


def sse(*payloads: bytes | str, newline: bytes = b"\n") -> list[bytes]:
    """One `data:` frame per payload, as separate pieces; `str` payloads are encoded."""
    frames = []
    for payload in payloads:
        data = payload.encode() if isinstance(payload, str) else payload
        frames.append(b"data: " + data + newline + newline)
    return frames

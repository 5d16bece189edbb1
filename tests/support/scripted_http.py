"""An in-process HTTP/1.1 server that answers each request with scripted bytes.

For unit tests of a provider against a real socket: every request is
recorded (method, path, headers, body), and answered with the parts of the
next `Script` — written one by one, each as its own write, so a test decides
exactly how the bytes arrive (several events in one read, one event split
across reads). `closed` tells whether the client closed the connection, and
how many parts had been written by then.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Script:
    parts: Sequence[bytes]
    pause: float = 0.0  # seconds before each part after the first
    hold: bool = False  # keep the connection open after the last part


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class ScriptedServer:
    scripts: list[Script] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)
    parts_written: list[int] = field(default_factory=list)
    closed_by_client: asyncio.Event = field(default_factory=asyncio.Event)
    port: int = 0
    _server: asyncio.Server | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def __aenter__(self) -> ScriptedServer:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while self.scripts:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    if value:
                        headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                self.received.append(Received(method, path, headers, body))
                script = self.scripts.pop(0)
                self.parts_written.append(0)
                for index, part in enumerate(script.parts):
                    if index and script.pause:
                        await asyncio.sleep(script.pause)
                    if reader.at_eof() or writer.transport.is_closing():
                        break
                    writer.write(part)
                    await writer.drain()
                    self.parts_written[-1] = index + 1
                if script.hold:
                    await reader.read()  # until the client closes
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.closed_by_client.set()
            writer.close()


def sse_response(*events: bytes, status: int = 200) -> bytes:
    """The head of a chunked event-stream response; `events` are its chunks' payloads."""
    head = (
        f"HTTP/1.1 {status} OK\r\ncontent-type: text/event-stream\r\n"
        "transfer-encoding: chunked\r\n\r\n"
    ).encode()
    return head + b"".join(chunk(e) for e in events)


def chunk(payload: bytes) -> bytes:
    return f"{len(payload):x}\r\n".encode() + payload + b"\r\n"


LAST_CHUNK = b"0\r\n\r\n"


def json_response(status: int, body: object) -> bytes:
    raw = json.dumps(body).encode()
    return (
        f"HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n"
        f"content-length: {len(raw)}\r\n\r\n"
    ).encode() + raw

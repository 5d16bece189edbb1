"""The HTTP/1.1 side the native fake upstreams share (Azure OpenAI, Bedrock, Vertex).

Each fake is a real process (`python -m tests.support.fake_<kind> --port N`)
built on `serve(handler)`: keep-alive connections, `GET /_stats` (every
request seen: path, directives, when its connection closed, how many chunks
were sent, whether it completed) and `POST /_reset`. Directives come from
`[[key=value;...]]` in the request's text and from `;key=value` suffixes of
the model name, as for the OpenAI-compatible fake.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import unquote

_DIRECTIVE = re.compile(r"\[\[([^\]]*)\]\]")


@dataclass
class Request:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes
    raw_target: str

    def json(self) -> Any:
        return json.loads(self.body or b"{}")


@dataclass
class Seen:
    id: int
    path: str
    directives: dict[str, str]
    received_at: float
    connection: int
    closed_at: float | None = None
    completed: bool = False
    chunks_sent: int = 0
    status: int = 200
    auth: str = ""


@dataclass
class State:
    requests: list[Seen] = field(default_factory=list)
    connections: dict[int, list[Seen]] = field(default_factory=dict)
    next_connection: int = 0
    counters: dict[str, int] = field(default_factory=dict)


def directives(model: str, texts: Iterable[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for part in unquote(model).split(";")[1:]:
        key, _, value = part.partition("=")
        found[key.strip()] = value.strip()
    for text in texts:
        for match in _DIRECTIVE.finditer(text):
            for part in match.group(1).split(";"):
                key, _, value = part.partition("=")
                if key.strip():
                    found[key.strip()] = value.strip()
    return found


class Reply:
    """Writes one response on the connection; a chunked body stops when the peer hung up."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, seen: Seen):
        self.reader = reader
        self.writer = writer
        self.seen = seen
        self.keep_alive = True

    async def json(self, status: int, body: Any, headers: Iterable[tuple[str, str]] = ()) -> None:
        data = json.dumps(body).encode()
        extra = "".join(f"{k}: {v}\r\n" for k, v in headers)
        self.writer.write(
            f"HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n{extra}"
            f"content-length: {len(data)}\r\n\r\n".encode()
            + data
        )
        self.seen.status = status
        self.seen.completed = True
        await self.writer.drain()

    async def start(self, content_type: str) -> None:
        self.writer.write(
            f"HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\n"
            "transfer-encoding: chunked\r\n\r\n".encode()
        )

    async def chunk(self, data: bytes) -> None:
        if self.reader.at_eof() or self.writer.transport.is_closing():
            raise ConnectionResetError("the client closed the connection")
        self.writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        await self.writer.drain()
        self.seen.chunks_sent += 1

    async def end(self) -> None:
        self.writer.write(b"0\r\n\r\n")
        await self.writer.drain()
        self.seen.completed = True

    def reset(self) -> None:
        self.writer.transport.abort()
        self.keep_alive = False


Handler = Callable[[Request, Reply, State], Awaitable[None]]
Describe = Callable[[Request], dict[str, str]]


class Server:
    def __init__(self, handler: Handler, describe: Describe):
        self.state = State()
        self.handler = handler
        self.describe = describe

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        state = self.state
        conn_id = state.next_connection
        state.next_connection += 1
        state.connections[conn_id] = []
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        name, _, value = line.partition(":")
                        headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length", "0"))
                body = await reader.readexactly(length) if length else b""
                path, _, query = target.partition("?")
                request = Request(method, path, query, headers, body, target)
                if not await self.respond(request, reader, writer, conn_id):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            now = time.time()
            for seen in state.connections.pop(conn_id, []):
                if seen.closed_at is None:
                    seen.closed_at = now
            writer.close()

    async def respond(
        self,
        request: Request,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        conn_id: int,
    ) -> bool:
        state = self.state
        placeholder = Seen(-1, request.path, {}, time.time(), conn_id)
        if request.path == "/_stats":
            body = {"requests": [asdict(s) for s in state.requests], "counters": state.counters}
            await Reply(reader, writer, placeholder).json(200, body)
            return True
        if request.path == "/_reset":
            state.requests.clear()
            state.counters.clear()
            await Reply(reader, writer, placeholder).json(200, {})
            return True
        seen = Seen(len(state.requests), request.path, self.describe(request), time.time(), conn_id)
        state.requests.append(seen)
        state.connections[conn_id].append(seen)
        reply = Reply(reader, writer, seen)
        await self.handler(request, reply, state)
        return reply.keep_alive


def run(handler: Handler, describe: Describe, port: int) -> None:
    async def main() -> None:
        server = Server(handler, describe)
        listener = await asyncio.start_server(server.handle, "127.0.0.1", port)
        print(f"fake upstream on 127.0.0.1:{listener.sockets[0].getsockname()[1]}", flush=True)
        async with listener:
            await listener.serve_forever()

    asyncio.run(main())


def arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    return parser

"""The one HTTP/1.1 server loop every fake upstream runs on, as a real process.

    python -m tests.support.fake_<kind> --port N

A fake is a `FakeServer` whose `answer` speaks its own wire; the rest is
shared: keep-alive connections read one request after another, `GET /_stats`
returns every request the fake logged and `POST /_reset` forgets them, and a
logged request is stamped with `closed_at` when its connection closes, which
is what the disconnect tests measure.

Fault injection is driven by directives, `key=value` pairs separated by `;`,
taken from the model name after its first `;` and from `[[...]]` in the
request's text (`directives`); a `Reply` stops writing a chunked body once the
peer hung up and can `reset` the connection mid-answer.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import Field, asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol
from urllib.parse import unquote

DIRECTIVES = re.compile(r"\[\[([^\]]*)\]\]")


def directives(model: str, texts: Iterable[str]) -> dict[str, str]:
    """The directives of a model name and of some texts; the texts win.

    The model name is percent-decoded: the native fakes read it from a URL path.
    """
    found: dict[str, str] = {}
    for part in unquote(model).split(";")[1:]:
        key, _, value = part.partition("=")
        found[key.strip()] = value.strip()
    for text in texts:
        for match in DIRECTIVES.finditer(text):
            for part in match.group(1).split(";"):
                key, _, value = part.partition("=")
                if key.strip():
                    found[key.strip()] = value.strip()
    return found


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


async def read_request(reader: asyncio.StreamReader) -> Request:
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
    return Request(method, path, query, headers, body, target)


class Reply:
    """Writes the response to one request; a chunked body stops when the peer hung up."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader = reader
        self.writer = writer
        self.keep_alive = True

    async def json(self, status: int, body: Any, headers: Iterable[tuple[str, str]] = ()) -> None:
        await self.encoded_json(status, json.dumps(body).encode(), headers)

    async def encoded_json(
        self, status: int, data: bytes, headers: Iterable[tuple[str, str]] = ()
    ) -> None:
        extra = "".join(f"{k}: {v}\r\n" for k, v in headers)
        self.writer.write(
            f"HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n{extra}"
            f"content-length: {len(data)}\r\n\r\n".encode()
            + data
        )
        await self.writer.drain()

    async def start(self, content_type: str) -> None:
        self.writer.write(
            f"HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\n"
            "transfer-encoding: chunked\r\n\r\n".encode()
        )

    async def chunk(self, data: bytes) -> None:
        """One chunk of the body; `b""` ends it, unless the peer already hung up."""
        if self.reader.at_eof() or self.writer.transport.is_closing():
            raise ConnectionResetError("the client closed the connection")
        self.writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        await self.writer.drain()

    async def end(self) -> None:
        """The end of a chunked body, written even if the peer hung up."""
        self.writer.write(b"0\r\n\r\n")
        await self.writer.drain()

    def reset(self) -> None:
        """Drops the connection at once, as a failing upstream does mid-answer."""
        self.writer.transport.abort()
        self.keep_alive = False


class Record(Protocol):
    """What a fake logs of a request: a dataclass, shown as JSON by `/_stats`."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]
    closed_at: float | None


class FakeServer(ABC):
    """A fake upstream: `answer` speaks its wire, the loop around it is shared."""

    label = "fake upstream"  # what the process prints once it listens

    def __init__(self) -> None:
        self.requests: list[Record] = []
        self._open: dict[int, list[Record]] = {}
        self._connections = itertools.count()

    @abstractmethod
    async def answer(self, request: Request, reply: Reply, connection: int) -> None:
        """Answers one request; `connection` numbers the connection it came on, for `log`."""

    def log(self, record: Record, connection: int) -> None:
        """Keeps `record` for `/_stats`, to be stamped `closed_at` when `connection` closes."""
        self.requests.append(record)
        self._open[connection].append(record)

    def stats(self) -> dict[str, Any]:
        return {"requests": [asdict(record) for record in self.requests]}

    def reset(self) -> None:
        self.requests.clear()

    async def serve_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        connection = next(self._connections)
        self._open[connection] = []
        try:
            while True:
                request = await read_request(reader)
                reply = Reply(reader, writer)
                if request.path == "/_stats":
                    await reply.json(200, self.stats())
                elif request.path == "/_reset":
                    self.reset()
                    await reply.json(200, {})
                else:
                    await self.answer(request, reply, connection)
                if not reply.keep_alive:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            now = time.time()
            for record in self._open.pop(connection):
                if record.closed_at is None:
                    record.closed_at = now
            writer.close()


def arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    return parser


def run(server: FakeServer, port: int, port_file: Path | None = None) -> None:
    """Serves on 127.0.0.1 until the process is stopped; port 0 takes a free one, which is
    printed and, with `port_file`, written there."""

    async def main() -> None:
        listener = await asyncio.start_server(server.serve_connection, "127.0.0.1", port)
        bound = listener.sockets[0].getsockname()[1]
        if port_file is not None:
            port_file.write_text(str(bound))
        print(f"{server.label} on 127.0.0.1:{bound}", flush=True)
        async with listener:
            await listener.serve_forever()

    asyncio.run(main())

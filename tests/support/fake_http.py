"""What the native fake upstreams (Azure OpenAI, Bedrock, Vertex) add to the shared server loop.

Each is a real process (`python -m tests.support.fake_<kind> --port N`)
built on `run(handler, describe, port)`: `describe` reads a request's
directives (from `[[key=value;...]]` in its text and `;key=value` suffixes of
the model name), `handler` answers it. Every request is logged as a `Seen`
(path, directives, status, chunks sent, whether it completed, when its
connection closed) that the handler's `Reply` keeps up to date; `/_stats`
adds the handlers' `counters`, which `/_reset` clears with the log.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from tests.support import fake_server
from tests.support.fake_server import FakeServer, Request


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
    counters: dict[str, int] = field(default_factory=dict)


class Reply(fake_server.Reply):
    """A reply that notes on its request's `Seen` the status, each chunk and completion."""

    def __init__(self, reply: fake_server.Reply, seen: Seen):
        super().__init__(reply.reader, reply.writer)
        self.seen = seen

    async def json(self, status: int, body: Any, headers: Iterable[tuple[str, str]] = ()) -> None:
        self.seen.status = status
        self.seen.completed = True
        await super().json(status, body, headers)

    async def chunk(self, data: bytes) -> None:
        await super().chunk(data)
        self.seen.chunks_sent += 1

    async def end(self) -> None:
        await super().end()
        self.seen.completed = True


Handler = Callable[[Request, Reply, State], Awaitable[None]]
Describe = Callable[[Request], dict[str, str]]


class NativeServer(FakeServer):
    def __init__(self, handler: Handler, describe: Describe):
        super().__init__()
        self.state = State()
        self.handler = handler
        self.describe = describe

    async def answer(self, request: Request, reply: fake_server.Reply, connection: int) -> None:
        seen = Seen(
            len(self.requests), request.path, self.describe(request), time.time(), connection
        )
        self.log(seen, connection)
        recording = Reply(reply, seen)
        await self.handler(request, recording, self.state)
        reply.keep_alive = recording.keep_alive  # the loop reads it from the reply it made

    def stats(self) -> dict[str, Any]:
        return {**super().stats(), "counters": self.state.counters}

    def reset(self) -> None:
        super().reset()
        self.state.counters.clear()


def run(handler: Handler, describe: Describe, port: int) -> None:
    fake_server.run(NativeServer(handler, describe), port)

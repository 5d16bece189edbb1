"""The pooled HTTP/1.1 client against small asyncio servers with scripted replies."""

from __future__ import annotations

import asyncio
import resource
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from llmeu.providers.transport import (
    HttpClient,
    Origin,
    TransportError,
    TransportTimeout,
    idle_per_origin,
)

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return head + await reader.readexactly(length)


class Server:
    def __init__(self, handler: Handler):
        self.handler = handler
        self.connections = 0
        self.requests: list[bytes] = []
        self.server: asyncio.Server | None = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await self.handler(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    @property
    def origin(self) -> Origin:
        assert self.server is not None
        port = self.server.sockets[0].getsockname()[1]
        return Origin.parse(f"http://127.0.0.1:{port}/v1")


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Handler], Awaitable[Server]]]:
    servers: list[Server] = []

    async def start(handler: Handler) -> Server:
        server = Server(handler)
        server.server = await asyncio.start_server(server._serve, "127.0.0.1", 0)
        servers.append(server)
        return server

    yield start
    for server in servers:
        assert server.server is not None
        server.server.close()


def keep_alive_json(body: bytes, requests: list[bytes]) -> Handler:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            requests.append(await read_request(reader))
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))
            await writer.drain()

    return handler


async def post(client: HttpClient, origin: Origin, body: bytes = b"{}") -> tuple[int, bytes]:
    response = await client.request(
        origin, b"POST", "/chat/completions", [(b"content-type", b"application/json")], body,
        connect_timeout=2, response_timeout=2,
    )  # fmt: skip
    data = await response.read(2)
    response.release()
    return response.status, data


async def test_requests_reuse_one_kept_alive_connection(serve) -> None:  # type: ignore[no-untyped-def]
    requests: list[bytes] = []
    server = await serve(keep_alive_json(b'{"ok":1}', requests))
    client = HttpClient()
    for _ in range(5):
        assert await post(client, server.origin) == (200, b'{"ok":1}')
    assert server.connections == 1
    assert requests[0].startswith(b"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:")
    assert b"content-length: 2\r\n" in requests[0]
    await client.aclose()


async def test_a_burst_of_calls_keeps_its_connections_for_the_next_burst(serve) -> None:  # type: ignore[no-untyped-def]
    """200 calls at once hold 200 connections; all of them stay in the pool, and the next
    200 calls at once open none."""
    burst = 200
    held: list[asyncio.Future[None]] = []
    arrived = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await read_request(reader)
            gate = asyncio.get_running_loop().create_future()
            held.append(gate)
            if len(held) == burst:
                arrived.set()
            await gate
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}")
            await writer.drain()

    server = await serve(handler)
    client = HttpClient()
    for round_ in (1, 2):
        calls = [asyncio.ensure_future(post(client, server.origin)) for _ in range(burst)]
        await asyncio.wait_for(arrived.wait(), 30)
        arrived.clear()
        for gate in held:
            gate.set_result(None)
        held.clear()
        assert [await call for call in calls] == [(200, b"{}")] * burst
        assert server.connections == burst, f"round {round_}"
    await client.aclose()


@pytest.mark.parametrize(
    ("soft", "kept"), [(20_000, 1024), (1024, 256), (40, 16), (resource.RLIM_INFINITY, 1024)]
)
def test_the_idle_pool_leaves_most_descriptors_to_clients(
    monkeypatch: pytest.MonkeyPatch, soft: int, kept: int
) -> None:
    monkeypatch.setattr(resource, "getrlimit", lambda _: (soft, resource.RLIM_INFINITY))
    assert idle_per_origin() == kept


@pytest.mark.parametrize(
    ("before", "after", "buffered", "rest"),
    [
        (b"5\r\nfirst\r\n", b"6\r\nsecond\r\n0\r\n\r\n", None, [b"second"]),
        # A stream's events often come several to a read of the socket: a joined read of
        # what is buffered hands over all of them, not one chunk at a time.
        (b"5\r\nfirst\r\n6\r\nsecond\r\n5\r\nthird\r\n", b"0\r\n\r\n", b"secondthird", []),
    ],
    ids=["chunk by chunk", "chunks that arrived together, joined"],
)
async def test_a_chunked_body_is_read_as_it_arrives(  # type: ignore[no-untyped-def]
    serve, before: bytes, after: bytes, buffered: bytes | None, rest: list[bytes]
) -> None:
    release = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n" + before)
        await writer.drain()
        await release.wait()
        writer.write(after)
        await writer.drain()
        await reader.read()

    server = await serve(handler)
    client = HttpClient()
    response = await client.request(
        server.origin, b"POST", "/x", [], b"", connect_timeout=2, response_timeout=2
    )
    assert await response.read_chunk(2) == b"first"
    assert response.read_buffered(joined=True) == buffered
    assert response.read_buffered(joined=True) is None
    release.set()
    assert [await response.read_chunk(2) for _ in rest] == rest
    assert await response.read_chunk(2) is None
    response.release()
    await client.aclose()


async def test_a_connection_the_server_closed_is_not_reused_and_the_call_succeeds(serve) -> None:  # type: ignore[no-untyped-def]
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        await writer.drain()
        # keep-alive advertised, but the server closes right after answering

    server = await serve(handler)
    client = HttpClient()
    assert await post(client, server.origin) == (200, b"ok")
    await asyncio.sleep(0.05)  # let the server's close reach the idle connection
    assert await post(client, server.origin) == (200, b"ok")
    assert server.connections == 2
    await client.aclose()


async def test_no_headers_within_the_timeout_raises_transport_timeout(serve) -> None:  # type: ignore[no-untyped-def]
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await asyncio.sleep(10)

    server = await serve(handler)
    client = HttpClient()
    with pytest.raises(TransportTimeout):
        await client.request(
            server.origin, b"POST", "/x", [], b"", connect_timeout=2, response_timeout=0.1
        )
    await client.aclose()


async def test_idle_body_timeout_and_reset_mid_body(serve) -> None:  # type: ignore[no-untyped-def]
    async def stalls(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\na\r\n")
        await writer.drain()
        await asyncio.sleep(10)

    async def resets(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\na\r\n")
        await writer.drain()
        writer.transport.abort()

    client = HttpClient()
    stalling = await serve(stalls)
    response = await client.request(
        stalling.origin, b"POST", "/x", [], b"", connect_timeout=2, response_timeout=2
    )
    assert await response.read_chunk(1) == b"a"
    with pytest.raises(TransportTimeout):
        await response.read_chunk(0.1)
    response.abort()

    resetting = await serve(resets)
    response = await client.request(
        resetting.origin, b"POST", "/x", [], b"", connect_timeout=2, response_timeout=2
    )
    assert await response.read_chunk(1) == b"a"
    with pytest.raises(TransportError):
        await response.read_chunk(1)
    await client.aclose()


async def test_refused_connection_and_invalid_http(serve) -> None:  # type: ignore[no-untyped-def]
    client = HttpClient()
    with pytest.raises(TransportError, match="could not connect"):
        await client.request(Origin.parse("http://127.0.0.1:1/v1"), b"POST", "/x", [], b"",
                             connect_timeout=2, response_timeout=2)  # fmt: skip

    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"NOT HTTP AT ALL\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(1)

    server = await serve(garbage)
    with pytest.raises(TransportError, match="invalid HTTP"):
        await client.request(
            server.origin, b"POST", "/x", [], b"", connect_timeout=2, response_timeout=2
        )
    await client.aclose()


async def test_abort_closes_the_socket_at_once(serve) -> None:  # type: ignore[no-untyped-def]
    closed = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\na\r\n")
        await writer.drain()
        await reader.read()  # returns when the client's side is gone
        closed.set()

    server = await serve(handler)
    client = HttpClient()
    response = await client.request(
        server.origin, b"POST", "/x", [], b"", connect_timeout=2, response_timeout=2
    )
    assert await response.read_chunk(1) == b"a"
    response.abort()
    await asyncio.wait_for(closed.wait(), 1)
    await client.aclose()


@pytest.mark.parametrize(
    ("url", "host_header", "path"),
    [
        ("http://api.example.eu/v1", b"api.example.eu", "/v1"),
        ("https://api.example.eu:8443/v1/", b"api.example.eu:8443", "/v1"),
        ("https://api.example.eu", b"api.example.eu", ""),
    ],
    ids=["http-default-port", "https-custom-port", "no-path"],
)
def test_origin_parsing(url: str, host_header: bytes, path: str) -> None:
    origin = Origin.parse(url)
    assert origin.host_header == host_header
    assert origin.path == path


def test_origin_refuses_other_schemes() -> None:
    with pytest.raises(ValueError, match="not an http"):
        Origin.parse("ftp://example.eu")

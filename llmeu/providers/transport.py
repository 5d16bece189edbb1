"""A small pooled HTTP/1.1 client for upstream calls, on asyncio and httptools.

Why not a general-purpose client: the gateway needs three things from its
upstream transport and little else — keep-alive connections reused across
calls, body chunks handed over the moment they arrive (no buffering, so one
upstream delta becomes one frame), and an abort that closes the socket at once
when the caller goes away. Doing only that keeps the per-call CPU cost a few
tens of microseconds. Every transport failure surfaces as `TransportError` (or
`TransportTimeout`); providers translate those at their edge. A call's
`Hangup` aborts the connection it is waiting on, and that wait raises
`ClientDisconnected` instead.
"""

from __future__ import annotations

import asyncio
import copy
import resource
import ssl
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast
from urllib.parse import urlsplit

import httptools

from llmeu.calls.hangup import Hangup

_MAX_BUFFERED = 1 << 20
_MOST_IDLE_PER_ORIGIN = 1024


def idle_per_origin() -> int:
    """How many idle connections the pool keeps per origin: as many as the busiest moment
    used, so that the next burst of calls does not connect again, up to 1,024 and no more
    than a quarter of the process's descriptors (the rest are the clients' connections').

    With 64, a load of 256 concurrent calls closed three of every four connections as they
    came back and opened them again for the next calls: 0.41-0.53 ms of gateway CPU per call
    against 0.35-0.46 ms with all of them kept, in turns (bench/README.md, 2026-12-02)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return _MOST_IDLE_PER_ORIGIN
    return max(16, min(_MOST_IDLE_PER_ORIGIN, soft // 4))


class TransportError(Exception):
    """The connection failed: refused, reset, closed early or spoke invalid HTTP."""


class TransportTimeout(TransportError):
    """No connection, or no data, within the allotted time."""


@dataclass(frozen=True, slots=True)
class Origin:
    scheme: str
    host: str
    port: int
    path: str
    host_header: bytes = field(init=False, repr=False, compare=False)
    """The `host` header's value, IDNA-encoded once rather than on every request."""

    def __post_init__(self) -> None:
        default = 443 if self.scheme == "https" else 80
        host = self.host if self.port == default else f"{self.host}:{self.port}"
        object.__setattr__(self, "host_header", host.encode("idna"))

    @classmethod
    def parse(cls, url: str) -> Origin:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return cls(parts.scheme, parts.hostname, port, parts.path.rstrip("/"))


class _Connection(asyncio.Protocol):
    """One HTTP/1.1 connection; holds the state of the response in progress.

    A failed connection keeps its `error` and raises a copy of it at every later wait,
    never the kept one: a raised exception's traceback holds the frames it passed, which
    hold this connection, so a kept and raised error would be a reference cycle that
    keeps the whole call (request, trace, frames) alive until the collector runs."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._parser = httptools.HttpResponseParser(self)
        self._waiter: asyncio.Future[None] | None = None
        self._reset()

    def _reset(self) -> None:
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.headers_done = False
        self.keep_alive = False
        self.message_done = False
        self.error: BaseException | None = None
        self._chunks: deque[bytes] = deque()
        self._buffered = 0
        self._paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as error:
            self._fail(TransportError(f"invalid HTTP from upstream: {error}"))
            self.abort()

    def eof_received(self) -> bool | None:
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        # The parser holds this connection's callbacks, and this connection the parser: a
        # cycle, left for the collector once the connection is gone, unless cut here.
        self._parser = _DETACHED
        if not self.message_done and self.error is None:
            if self.headers_done and not self._has_framing():
                self.message_done = True  # body delimited by connection close
            else:
                self.error = TransportError(
                    "upstream closed the connection" + (f": {exc}" if exc else "")
                )
        self._wake()

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name.lower(), value))

    def on_headers_complete(self) -> None:
        self.status = self._parser.get_status_code()
        # llhttp forgets keep-alive once the message completes: read it now.
        self.keep_alive = self._parser.should_keep_alive()
        self.headers_done = True
        self._wake()

    def on_body(self, body: bytes) -> None:
        self._chunks.append(bytes(body))
        self._buffered += len(body)
        if self._buffered > _MAX_BUFFERED and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def on_message_complete(self) -> None:
        self.message_done = True
        self._wake()

    def reusable(self) -> bool:
        return (
            self.message_done
            and self.error is None
            and not self.closed
            and self.keep_alive
            and self.transport is not None
            and not self.transport.is_closing()
        )

    def start_request(self, data: bytes) -> None:
        self._reset()
        self._parser = httptools.HttpResponseParser(self)
        assert self.transport is not None
        self.transport.write(data)

    async def wait_headers(self, timeout: float) -> None:
        while not self.headers_done:
            await self._wait(timeout, "response headers")

    async def read_chunk(self, timeout: float) -> bytes | None:
        """The next body chunk, or None at the end of the body."""
        while not self._chunks:
            if self.message_done:
                return None
            await self._wait(timeout, "response data")
        return self.read_buffered()

    def read_buffered(self, *, joined: bool = False) -> bytes | None:
        """A body chunk already received, without waiting; None when there is none.
        `joined`: every chunk received and not read yet, as one — one read of the socket
        often carries many (a stream's events), for a reader that takes them apart itself
        and raises an upstream's error only once it reaches it (the SSE streams)."""
        chunks = self._chunks
        if not chunks:
            return None
        if len(chunks) == 1 or not joined:
            chunk = chunks.popleft()
        else:
            chunk = b"".join(chunks)
            chunks.clear()
        self._buffered -= len(chunk)
        if self._paused and self._buffered < _MAX_BUFFERED // 2 and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        return chunk

    def abort(self, error: BaseException | None = None) -> None:
        """Close at once; a pending or later wait raises `error` when one is given."""
        if error is not None:
            self._fail(error)
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    async def _wait(self, timeout: float, what: str) -> None:
        if self.error is not None:
            raise copy.copy(self.error)
        loop = asyncio.get_running_loop()
        waiter = self._waiter = loop.create_future()
        timer = loop.call_later(timeout, _expire, waiter, what, timeout)
        try:
            await waiter
        finally:
            timer.cancel()
            # A timeout's exception, kept by the waiter, holds this frame in its traceback.
            self._waiter = None
            del waiter
        if self.error is not None:
            raise copy.copy(self.error)

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _fail(self, error: BaseException) -> None:
        if self.error is None:
            self.error = error
        self._wake()

    def _has_framing(self) -> bool:
        return any(n in (b"content-length", b"transfer-encoding") for n, _ in self.headers)


_DETACHED = httptools.HttpResponseParser(None)
"""A closed connection's parser: no callbacks, so it refers to no connection."""


def _expire(waiter: asyncio.Future[None], what: str, timeout: float) -> None:
    if not waiter.done():
        waiter.set_exception(TransportTimeout(f"no {what} from upstream within {timeout:g} s"))


class Response:
    """A response whose body is read chunk by chunk; `release()` or `abort()` when done.

    `abort(error)` may come from outside the reader (a hang-up): the read in
    progress, and every later one, raises `error`.
    """

    __slots__ = ("_client", "_conn", "_origin", "headers", "status")

    def __init__(self, client: HttpClient, origin: Origin, conn: _Connection):
        self._client = client
        self._origin = origin
        self._conn = conn
        self.status = conn.status
        self.headers = conn.headers

    def header(self, name: bytes) -> bytes | None:
        for key, value in self.headers:
            if key == name:
                return value
        return None

    async def read_chunk(self, timeout: float) -> bytes | None:
        return await self._conn.read_chunk(timeout)

    def read_buffered(self, *, joined: bool = False) -> bytes | None:
        return self._conn.read_buffered(joined=joined)

    async def read(self, timeout: float, limit: int = 64 << 20) -> bytes:
        parts: list[bytes] = []
        size = 0
        while (chunk := await self._conn.read_chunk(timeout)) is not None:
            parts.append(chunk)
            size += len(chunk)
            if size > limit:
                raise TransportError(f"upstream response larger than {limit} bytes")
        return b"".join(parts)

    def release(self) -> None:
        """Return the connection to the pool if the body was read to its end, else close it."""
        self._client._release(self._origin, self._conn)

    def abort(self, error: BaseException | None = None) -> None:
        self._conn.abort(error)


class HttpClient:
    """Keep-alive connection pools per origin, the most recently used connection first (the
    others age out where the upstream closes idle connections); `idle_per_origin()` each."""

    def __init__(self, ssl_context: ssl.SSLContext | None = None):
        self._idle: dict[tuple[str, str, int], deque[_Connection]] = {}
        self._max_idle = idle_per_origin()
        self._ssl = ssl_context
        self._closed = False

    async def request(
        self,
        origin: Origin,
        method: bytes,
        path: str,
        headers: Sequence[tuple[bytes, bytes]],
        body: bytes,
        *,
        connect_timeout: float,
        response_timeout: float,
        hangup: Hangup | None = None,
    ) -> Response:
        """Send a request and wait for the response headers (not the body); a hang-up while
        waiting aborts the connection and raises `ClientDisconnected`."""
        head = b"".join(
            [
                method, b" ", (origin.path + path).encode(), b" HTTP/1.1\r\nhost: ",
                origin.host_header, b"\r\ncontent-length: ", str(len(body)).encode(), b"\r\n",
                *(name + b": " + value + b"\r\n" for name, value in headers),
                b"\r\n",
            ]
        )  # fmt: skip
        for reused in (True, False):
            conn = self._take_idle(origin) if reused else None
            if reused and conn is None:
                continue
            if conn is None:
                conn = await self._connect(origin, connect_timeout)
            conn.start_request(head + body)
            if hangup is not None:
                hangup.bind(conn.abort)
            try:
                await conn.wait_headers(response_timeout)
            except TransportTimeout:
                conn.abort()
                raise
            except TransportError:
                conn.abort()
                if reused and not conn.headers_done:
                    continue  # a kept-alive connection the server had closed: retry once, fresh
                raise
            except BaseException:
                conn.abort()
                raise
            finally:
                if hangup is not None:
                    hangup.unbind(conn.abort)
            return Response(self, origin, conn)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _connect(self, origin: Origin, timeout: float) -> _Connection:
        loop = asyncio.get_running_loop()
        ssl_context: ssl.SSLContext | None = None
        if origin.scheme == "https":
            ssl_context = self._ssl or ssl.create_default_context()
        try:
            async with asyncio.timeout(timeout):
                _, conn = await loop.create_connection(
                    _Connection,
                    origin.host,
                    origin.port,
                    ssl=ssl_context,
                    server_hostname=origin.host if ssl_context else None,
                )
        except TimeoutError:
            raise TransportTimeout(
                f"could not connect to {origin.host}:{origin.port} within {timeout:g} s"
            ) from None
        except OSError as error:
            raise TransportError(
                f"could not connect to {origin.host}:{origin.port}: {error}"
            ) from None
        return conn

    def _take_idle(self, origin: Origin) -> _Connection | None:
        idle = self._idle.get((origin.scheme, origin.host, origin.port))
        while idle:
            conn = idle.pop()
            if not conn.closed and conn.transport is not None and not conn.transport.is_closing():
                return conn
        return None

    def _release(self, origin: Origin, conn: _Connection) -> None:
        if self._closed or not conn.reusable():
            conn.abort()
            return
        idle = self._idle.setdefault((origin.scheme, origin.host, origin.port), deque())
        if len(idle) >= self._max_idle:
            conn.abort()
        else:
            idle.append(conn)

    async def aclose(self) -> None:
        self._closed = True
        for idle in self._idle.values():
            while idle:
                idle.pop().abort()

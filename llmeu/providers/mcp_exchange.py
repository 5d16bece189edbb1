"""One Streamable HTTP exchange with an MCP tool server: a POST, and its answer read.

A server answers a request with one JSON object or with a stream of
server-sent events scoped to that request: notifications about it
(`notifications/progress`), perhaps requests of its own, then the response.
`Exchange.send` reads either within the server's timeouts — `first_token`
until the answer begins, `idle` between two pieces of a stream, `total` for
the whole exchange — and within `max_result_bytes`: a larger answer is not
read on (the connection is closed), so a 10 MB result costs the gateway no
more memory than the limit. The call's hang-up closes the connection at once:
on Streamable HTTP that is the cancellation of the request.

Every failure leaves as an `UpstreamError` saying what the server did: it
could not be reached (`UpstreamUnavailable`), did not answer in time
(`UpstreamTimeout`), broke its stream, answered too much, or answered what is
not MCP.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from llmeu.calls.hangup import Hangup
from llmeu.errors import UpstreamError, UpstreamTimeout, UpstreamUnavailable
from llmeu.protocol.mcp_wire import UpstreamMessage, read_upstream
from llmeu.protocol.sse import SSEDecoder
from llmeu.providers.transport import HttpClient, Origin, Response, TransportError, TransportTimeout
from llmeu.providers.upstream_http import error_text, finish_body, status_error
from llmeu.routing.tool_servers import ToolServer

Headers = Sequence[tuple[bytes, bytes]]
Notice = Callable[[UpstreamMessage], Awaitable[None]]
"""What a stream carries besides the response: a notification, or a request of the server's."""

_ACCEPT = (b"accept", b"application/json, text/event-stream")
_JSON = (b"content-type", b"application/json")


@dataclass(frozen=True, slots=True)
class Answer:
    """The server's response (None: the POST was a notification, answered 202), the
    session id it assigned, and how many bytes its answer had."""

    message: UpstreamMessage | None
    session_id: str | None
    received: int
    status: int = 200


class Exchange:
    """The HTTP side of one tool server: its origin, its credentials, the pooled client."""

    __slots__ = ("_client", "_credentials", "_finishing", "origin", "server")

    def __init__(self, server: ToolServer, client: HttpClient, credentials: Headers):
        self.server = server
        self.origin = Origin.parse(server.url)
        self._client = client
        self._credentials = (_ACCEPT, _JSON, *credentials)
        self._finishing: set[asyncio.Task[None]] = set()

    async def send(
        self,
        body: bytes,
        headers: Headers,
        hangup: Hangup,
        *,
        request_id: int | None,
        on_notice: Notice | None = None,
    ) -> Answer:
        """POST `body`; the answer to `request_id` (None: a notification)."""
        timeouts = self.server.timeouts
        deadline = time.monotonic() + timeouts.total
        try:
            response = await self._client.request(
                self.origin, b"POST", "", [*self._credentials, *headers], body,
                connect_timeout=timeouts.connect,
                response_timeout=min(timeouts.first_token, timeouts.total), hangup=hangup,
            )  # fmt: skip
        except TransportTimeout as error:
            if "connect" in str(error):
                raise UpstreamTimeout(f"tool server {self.server.server_id}: {error}") from None
            raise UpstreamTimeout(
                f"tool server {self.server.server_id} did not begin its answer within its "
                f"first_token timeout of {min(timeouts.first_token, timeouts.total):g} s"
            ) from None
        except TransportError as error:
            raise UpstreamUnavailable(f"tool server {self.server.server_id}: {error}") from None
        session = response.header(b"mcp-session-id")
        session_id = session.decode("latin-1") if session else None
        reader = _Reader(self.server, response, deadline, hangup, self._finishing)
        try:
            if response.status == 202:
                await reader.body()
                return Answer(None, session_id, 0, 202)
            kind = (response.header(b"content-type") or b"").split(b";")[0].strip().lower()
            if response.status != 200:
                return await self._refused(reader, kind, session_id)
            if kind == b"text/event-stream":
                message = await reader.events(request_id, on_notice)
            elif kind == b"application/json":
                message = _message(self.server, await reader.body())
            else:
                raise self.broken(f"answered with content type {kind.decode('latin-1')!r}")
        finally:
            reader.close()
        return Answer(message, session_id, reader.received)

    async def _refused(self, reader: _Reader, kind: bytes, session_id: str | None) -> Answer:
        """A status other than 200: a JSON-RPC error when the body is one (a modern server
        answers 400 or 404 with one), else the status as an upstream error."""
        status = reader.response.status
        raw = await reader.body(limit=64 << 10)
        if kind == b"application/json":
            try:
                message = read_upstream(raw)
            except ValueError:
                message = None
            if message is not None and message.error is not None:
                return Answer(message, session_id, reader.received, status)
        error = status_error(status, error_text(raw))
        error.message = f"tool server {self.server.server_id}: {error.message}"
        raise error

    def broken(self, what: str) -> UpstreamError:
        return UpstreamError(f"tool server {self.server.server_id} {what}", retryable=True)

    def aclose(self) -> None:
        """Stop reading the ends of streams whose answer was already taken."""
        for task in list(self._finishing):
            task.cancel()


def _message(server: ToolServer, raw: bytes | str) -> UpstreamMessage:
    try:
        return read_upstream(raw)
    except ValueError as error:
        raise UpstreamError(
            f"tool server {server.server_id} answered what is not MCP: {error}", retryable=True
        ) from None


class _Reader:
    """The body of one answer, read within the deadlines and the size limit."""

    __slots__ = ("_deadline", "_done", "_finishing", "_hangup", "_server", "received", "response")

    def __init__(
        self,
        server: ToolServer,
        response: Response,
        deadline: float,
        hangup: Hangup,
        finishing: set[asyncio.Task[None]],
    ):
        self._server = server
        self.response = response
        self._deadline = deadline
        self._hangup = hangup
        self._finishing = finishing
        self._done = False
        self.received = 0
        hangup.bind(response.abort)

    async def _chunk(self, limit: int) -> bytes | None:
        server = self._server
        remaining = self._deadline - time.monotonic()
        try:
            if remaining <= 0:
                raise TransportTimeout("")
            chunk = await self.response.read_chunk(min(server.timeouts.idle, remaining))
        except TransportTimeout:
            what = "total" if remaining <= server.timeouts.idle else "idle"
            seconds = getattr(server.timeouts, what)
            raise UpstreamTimeout(
                f"tool server {server.server_id} did not finish its answer within its {what} "
                f"timeout of {seconds:g} s"
            ) from None
        except TransportError as error:
            raise UpstreamError(
                f"tool server {server.server_id} broke its answer: {error}", retryable=True
            ) from None
        if chunk is not None:
            self.received += len(chunk)
            if self.received > limit:
                raise UpstreamError(
                    f"tool server {server.server_id} answered more than "
                    f"{server.max_result_bytes} bytes (max_result_bytes); the answer was not "
                    "read further",
                    code="tool_result_too_large",
                )
        return chunk

    async def body(self, limit: int | None = None) -> bytes:
        most = limit if limit is not None else self._server.max_result_bytes
        parts = []
        while (chunk := await self._chunk(most)) is not None:
            parts.append(chunk)
        self._done = True
        self.response.release()
        return b"".join(parts)

    async def events(self, request_id: int | None, on_notice: Notice | None) -> UpstreamMessage:
        decoder = SSEDecoder()
        while True:
            chunk = await self._chunk(self._server.max_result_bytes)
            events = decoder.feed(chunk) if chunk is not None else decoder.close()
            for event in events:
                if not event.data.strip():
                    continue  # a priming event (an id to resume from): nothing to read
                message = _message(self._server, event.data)
                if message.is_response and message.id == request_id:
                    self._finish()
                    return message
                if on_notice is not None and not message.is_response:
                    await on_notice(message)
            if chunk is None:
                raise UpstreamError(
                    f"tool server {self._server.server_id} ended its stream before its answer",
                    retryable=True,
                )

    def _finish(self) -> None:
        """The answer is in: the stream's end (the server closes it after its answer) is read
        in the background, so that the connection goes back to the pool without the call
        waiting for it."""
        self._done = True
        self._hangup.unbind(self.response.abort)
        task = asyncio.get_running_loop().create_task(
            _drain(self.response, self._server.timeouts.idle)
        )
        self._finishing.add(task)
        task.add_done_callback(self._finishing.discard)

    def close(self) -> None:
        self._hangup.unbind(self.response.abort)
        if not self._done:
            self.response.abort()


async def _drain(response: Response, seconds: float) -> None:
    """Read a stream to its end for at most `seconds`, then give up on the connection."""
    try:
        async with asyncio.timeout(seconds):
            await finish_body(response, seconds)
    except TimeoutError:
        response.abort()
    except asyncio.CancelledError:  # the gateway stops: the connection goes with it
        response.abort()
        raise

"""What every HTTP upstream kind shares: posting under the endpoint's timeouts, reading a
body within the call's deadline, and turning an upstream's HTTP status into the error tree.

Which statuses another endpoint can fix decides fallback (docs/design.md §4): a
connection error, a timeout, 429 and 5xx can; so can 401/403/404, which
concern our credentials or the endpoint rather than the request; a 400, 413
or 422 describes the request itself and is answered as it is.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence

import msgspec
from msgspec import Struct

from llmeu.calls.hangup import Hangup
from llmeu.errors import UpstreamError, UpstreamRejected, UpstreamTimeout, UpstreamUnavailable
from llmeu.providers.transport import (
    HttpClient,
    Origin,
    Response,
    TransportError,
    TransportTimeout,
)
from llmeu.routing.catalog import Endpoint

ERROR_BODY_LIMIT = 64 << 10
BODY_LIMIT = 64 << 20
Headers = Sequence[tuple[bytes, bytes]]
ErrorText = Callable[[bytes], str]
"""Finds the human-readable message in an upstream's error body."""


class _Detail(Struct):
    message: str = ""
    code: str | int | None = None


class _ErrorBody(Struct):
    error: _Detail | str | None = None
    message: str | None = None


_error_body = msgspec.json.Decoder(_ErrorBody)


def error_text(raw: bytes) -> str:
    """The message of the usual error bodies — `{"error": {"message"}}` (OpenAI, Azure,
    Vertex, Anthropic), `{"error": "…"}`, `{"message": "…"}` (Bedrock) — else the raw text."""
    try:
        body = _error_body.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return raw[:300].decode("utf-8", "replace").strip()
    if isinstance(body.error, _Detail) and body.error.message:
        return body.error.message[:500]
    if isinstance(body.error, str) and body.error:
        return body.error[:500]
    return (body.message or "").strip()[:500]


def status_error(status: int, message: str) -> UpstreamError:
    """The error of an upstream answer with HTTP `status` (not 200)."""
    text = f"upstream answered {status}: {message or f'HTTP {status}'}"
    if status == 429 or status >= 500:
        return UpstreamUnavailable(text, upstream_status=status)
    if status == 408:
        return UpstreamTimeout(text, upstream_status=status)
    if status in (400, 413, 422):
        return UpstreamRejected(text, upstream_status=status)
    return UpstreamError(text, upstream_status=status, retryable=True)


class HttpUpstream:
    """One endpoint's HTTP side: its origin, its timeouts, the pooled client."""

    __slots__ = ("_client", "endpoint", "error_text", "origin")

    def __init__(
        self,
        endpoint: Endpoint,
        client: HttpClient,
        *,
        base_url: str | None = None,
        error_text: ErrorText = error_text,
    ):
        self.endpoint = endpoint
        self.origin = Origin.parse(base_url or endpoint.base_url)
        self.error_text = error_text
        self._client = client

    async def post(self, path: str, body: bytes, headers: Headers, hangup: Hangup) -> Response:
        """Send the request and wait for a 200's headers; any other status is raised."""
        timeouts = self.endpoint.timeouts
        try:
            response = await self._client.request(
                self.origin,
                b"POST",
                path,
                headers,
                body,
                connect_timeout=timeouts.connect,
                response_timeout=timeouts.first_token,
                hangup=hangup,
            )
        except TransportTimeout as error:
            raise UpstreamTimeout(str(error)) from None
        except TransportError as error:
            raise UpstreamUnavailable(str(error)) from None
        if response.status != 200:
            raise await self.status_error(response)
        return response

    async def status_error(self, response: Response) -> UpstreamError:
        try:
            raw = await response.read(self.endpoint.timeouts.idle, limit=ERROR_BODY_LIMIT)
            response.release()
        except TransportError:
            response.abort()
            raw = b""
        error = status_error(response.status, self.error_text(raw) + _error_hints(response))
        if _filtered(raw):
            error.code = CONTENT_FILTER  # Azure's refusal of a prompt its filters flagged
        return error

    async def read_all(self, response: Response, started: float, hangup: Hangup) -> bytes:
        """The whole body, before the call's total timeout (counted from `started`)."""
        deadline = started + self.endpoint.timeouts.total
        parts: list[bytes] = []
        size = 0
        hangup.bind(response.abort)
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TransportTimeout(
                        f"upstream call exceeded its total timeout of "
                        f"{self.endpoint.timeouts.total:g} s"
                    )
                chunk = await response.read_chunk(remaining)
                if chunk is None:
                    break
                size += len(chunk)
                if size > BODY_LIMIT:
                    raise TransportError(f"upstream response larger than {BODY_LIMIT} bytes")
                parts.append(chunk)
        except TransportTimeout as error:
            response.abort()
            raise UpstreamTimeout(str(error)) from None
        except TransportError as error:
            response.abort()
            raise UpstreamUnavailable(str(error)) from None
        finally:
            hangup.unbind(response.abort)
        response.release()
        return b"".join(parts)


async def read_stream_chunk(
    response: Response,
    endpoint: Endpoint,
    *,
    first: bool,
    deadline: float,
    close: Callable[[], Awaitable[None]],
) -> bytes | None:
    """The next chunk of a streamed answer within its timeouts: first-token for the first
    read, idle after it, and never past the call's total `deadline`; on a timeout or a
    broken stream, `close()` the stream and raise the upstream error saying which."""
    timeouts = endpoint.timeouts
    budget = timeouts.first_token if first else timeouts.idle
    remaining = deadline - time.monotonic()
    try:
        if remaining <= 0:
            raise TransportTimeout("")
        return await response.read_chunk(min(budget, remaining))
    except TransportTimeout as error:
        await close()
        message = str(error)
        if budget >= remaining:
            message = f"upstream call exceeded its total timeout of {timeouts.total:g} s"
        raise UpstreamTimeout(message) from None
    except TransportError as error:
        await close()
        raise UpstreamError(f"upstream stream broke: {error}") from None


async def finish_body(response: Response, idle: float) -> None:
    """After a stream's terminal event: read the body to its end so the connection can be
    reused; one that breaks or stalls meanwhile is closed instead."""
    try:
        while await response.read_chunk(idle) is not None:
            pass
    except TransportError:
        response.abort()
        return
    response.release()


def _error_hints(response: Response) -> str:
    """What the headers add to an error: AWS's exception name, and how long the upstream asks
    us to wait (Azure's `retry-after-ms`, else `retry-after`), which the breaker's log shows."""
    hints = []
    kind = response.header(b"x-amzn-errortype")
    if kind:
        hints.append(kind.split(b":", 1)[0].decode("ascii", "replace")[:80])
    wait_ms = response.header(b"retry-after-ms")
    wait = response.header(b"retry-after")
    if wait_ms and wait_ms.isdigit():
        hints.append(f"retry after {int(wait_ms)} ms")
    elif wait and wait.isdigit():
        hints.append(f"retry after {int(wait)} s")
    return f" ({'; '.join(hints)})" if hints else ""


CONTENT_FILTER = "content_filter"


def _filtered(raw: bytes) -> bool:
    if b"content_filter" not in raw:
        return False
    try:
        body = _error_body.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return False
    return isinstance(body.error, _Detail) and body.error.code == CONTENT_FILTER

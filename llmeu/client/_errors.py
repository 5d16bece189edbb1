"""The client's error tree.

    ClientError
    ├── APIConnectionError          no response: connect failed, connection lost before the status
    │   └── APITimeoutError         connect, write or first-byte timeout
    ├── APIStatusError              a non-2xx answer; `status`, `error` (OpenAI-shaped), `body`
    │   ├── BadRequestError         400
    │   ├── AuthenticationError     401
    │   ├── PermissionDeniedError   403
    │   │   └── NoCompliantRouteError  403 with code `no_compliant_route` (never retry it)
    │   ├── NotFoundError           404
    │   ├── RequestTooLargeError    413
    │   ├── RateLimitError          429, `retry_after` from the header when sent
    │   └── ServerError             5xx
    └── IncompleteStreamError       a 200 stream that did not end with `[DONE]`; `.result`
        ├── StreamError             the server sent an error frame; `.error`
        └── MalformedStreamError    a frame that is not a chat-completion chunk

Every stream failure is an `IncompleteStreamError` (docs/design.md §7: a broken stream
is never mistaken for a complete answer) and carries the partial `ChatResult`,
so the text received is never lost. A connection cut or a read timeout after
the status line is such a failure too, not an `APIConnectionError`: by then
text may have arrived. The decoder itself never raises.
"""

from __future__ import annotations

from collections.abc import Mapping

from llmeu.client._types import ChatResult, ErrorInfo


class ClientError(Exception):
    """Base of every error the client raises on purpose."""


class APIConnectionError(ClientError):
    pass


class APITimeoutError(APIConnectionError):
    pass


class APIStatusError(ClientError):
    status = 0

    def __init__(self, status: int, error: ErrorInfo, body: bytes) -> None:
        super().__init__(f"HTTP {status}: {error}")
        self.status = status
        self.error = error
        self.body = body

    @property
    def code(self) -> str | None:
        return self.error.code


class BadRequestError(APIStatusError):
    pass


class AuthenticationError(APIStatusError):
    pass


class PermissionDeniedError(APIStatusError):
    pass


class NoCompliantRouteError(PermissionDeniedError):
    """No endpoint satisfies the policy; `error.raw["details"]` says why, per endpoint."""


class NotFoundError(APIStatusError):
    pass


class RequestTooLargeError(APIStatusError):
    pass


class RateLimitError(APIStatusError):
    def __init__(
        self, status: int, error: ErrorInfo, body: bytes, retry_after: float | None = None
    ) -> None:
        super().__init__(status, error, body)
        self.retry_after = retry_after


class ServerError(APIStatusError):
    pass


_BY_STATUS: Mapping[int, type[APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    413: RequestTooLargeError,
    429: RateLimitError,
}


def status_error(
    status: int, error: ErrorInfo, body: bytes, headers: Mapping[str, str]
) -> APIStatusError:
    """The error class that matches a non-2xx answer."""
    if status == 429:
        return RateLimitError(status, error, body, _retry_after(headers.get("retry-after")))
    if status == 403 and error.code == "no_compliant_route":
        return NoCompliantRouteError(status, error, body)
    cls = _BY_STATUS.get(status, ServerError if status >= 500 else APIStatusError)
    return cls(status, error, body)


def _retry_after(value: str | None) -> float | None:
    # Only the delay-seconds form; an HTTP-date is rare from APIs and not worth a parser.
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


class IncompleteStreamError(ClientError):
    """The stream ended without `[DONE]`; `.result` holds what arrived."""

    def __init__(self, message: str, result: ChatResult) -> None:
        super().__init__(message)
        self.result = result


class StreamError(IncompleteStreamError):
    """The server reported an error in the stream (`{"error": ...}` or `event: error`)."""

    def __init__(self, result: ChatResult) -> None:
        assert result.error is not None
        super().__init__(f"the server ended the stream with an error: {result.error}", result)
        self.error = result.error


class MalformedStreamError(IncompleteStreamError):
    """A frame was not a chat-completion chunk (not JSON, not an object, wrong field types)."""

    def __init__(self, message: str, result: ChatResult, data: str) -> None:
        super().__init__(message, result)
        self.data = data

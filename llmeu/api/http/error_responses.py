"""The one place where the error tree becomes HTTP statuses and error bodies.

Every error a client sees goes through here: from the door (a bad key, an
unknown route), from a call's lifecycle (with its trace id, and the routing
block once an endpoint was chosen), and from the outermost guard. A surface
with its own error shape (its own body and statuses) brings an `ErrorShape`;
OpenAI's is the default. Errors from outside the `ApiError` branch of the tree
are mapped once, in `as_api_error`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Protocol

from llmeu.api.http.asgi import JSON_HEADERS, Headers, Request, with_header
from llmeu.errors import (
    ApiError,
    DatabaseUnavailable,
    LimitsUnavailable,
    RateLimited,
    RequestTimeout,
    ServerBusy,
    ServiceUnavailable,
)
from llmeu.protocol.error_shape import error_body
from llmeu.protocol.routing_block import RoutingBlock

Routing = RoutingBlock | Mapping[str, Any]


class ErrorShape(Protocol):
    """How a surface writes an error: its status and its body."""

    def status(self, error: ApiError) -> int: ...

    def body(self, error: ApiError, routing: Routing | None) -> bytes: ...


class OpenAIErrors:
    """`{"error": {message, type, param, code}}` with the tree's own statuses (design §1)."""

    def status(self, error: ApiError) -> int:
        return error.status

    def body(self, error: ApiError, routing: Routing | None) -> bytes:
        return error_body(error, routing)


OPENAI_ERRORS = OpenAIErrors()


def ledger_unavailable() -> ServiceUnavailable:
    return ServiceUnavailable(
        "the ledger database is unavailable; try again shortly", code="ledger_unavailable"
    )


def internal_error() -> ApiError:
    return ApiError("internal error", code="internal_error")


def as_api_error(error: Exception) -> ApiError:
    """The tree's answer for an exception: itself, a 503 while the ledger's database is away,
    else a 500 (a bug, logged by the caller)."""
    if isinstance(error, ApiError):
        return error
    if isinstance(error, DatabaseUnavailable):
        return ledger_unavailable()
    return internal_error()


def error_headers(error: ApiError, trace_id: str | None = None) -> Headers:
    headers = JSON_HEADERS
    if isinstance(error, RateLimited | LimitsUnavailable | ServerBusy):
        headers = with_header(headers, b"retry-after", str(max(1, math.ceil(error.retry_after))))
    if isinstance(error, RequestTimeout | ServerBusy):
        # What is left of the body is not read: the connection cannot carry another request.
        headers = with_header(headers, b"connection", "close")
    if trace_id is not None:
        headers = with_header(headers, b"x-llmeu-trace-id", trace_id)
    return headers


async def send_error(
    request: Request,
    error: ApiError,
    *,
    shape: ErrorShape = OPENAI_ERRORS,
    trace_id: str | None = None,
    routing: Routing | None = None,
) -> None:
    """Answer `error`; with a trace, its body carries the `llmeu` block (at least the trace id)."""
    if routing is None and trace_id is not None:
        routing = {"trace_id": trace_id}
    await request.respond(
        shape.status(error), shape.body(error, routing), error_headers(error, trace_id)
    )

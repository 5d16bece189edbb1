"""The one place where the error tree becomes HTTP statuses and OpenAI-shaped bodies."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from llmeu.api.http import JSON_HEADERS, Headers, Send, send_response, with_header
from llmeu.errors import ApiError, RateLimited
from llmeu.protocol.errors import encode_error
from llmeu.protocol.wire import RoutingBlock


def error_body(error: ApiError, routing: RoutingBlock | Mapping[str, Any] | None = None) -> bytes:
    return encode_error(
        error.message,
        error.type,
        param=error.param,
        code=error.code,
        details=error.details,
        routing=routing,
    )


def error_headers(error: ApiError, trace_id: str | None = None) -> Headers:
    headers = JSON_HEADERS
    if isinstance(error, RateLimited):
        headers = with_header(headers, b"retry-after", str(max(1, math.ceil(error.retry_after))))
    if trace_id is not None:
        headers = with_header(headers, b"x-llmeu-trace-id", trace_id)
    return headers


async def send_error(
    send: Send,
    error: ApiError,
    *,
    trace_id: str | None = None,
    routing: RoutingBlock | Mapping[str, Any] | None = None,
) -> None:
    if routing is None and trace_id is not None:
        routing = {"trace_id": trace_id}
    await send_response(
        send, error.status, error_body(error, routing), error_headers(error, trace_id)
    )

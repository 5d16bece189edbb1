"""A Python client for llmeu and any OpenAI-compatible server that reads streams exactly right.

    from llmeu.client import Client

    with Client("http://127.0.0.1:8080/v1", api_key="sk-...") as client:
        with client.stream_chat("Hello", model="mistral-small") as stream:
            for item in stream:
                ...  # ContentDelta, ToolCallDelta, ... and the ChatResult last

A stream that stops without `[DONE]`, or with an error frame, raises an
`IncompleteStreamError` whose `.result` holds the text received: a broken
stream is never taken for a complete answer. The pieces are usable on their
own: `SSEDecoder` (bytes in, events out) and `ChatStreamAssembler` (events in,
`ChatResult` out) do no I/O. `client.stream_response(...)` reads a Responses-API
stream as strictly (`ResponsesStreamAssembler`): complete only with
`response.completed` or `response.incomplete`; `response.failed` is an error.

This package imports only `llmeu.protocol` from llmeu.
"""

from llmeu.client._assembler import ChatStreamAssembler, parse_completion
from llmeu.client._client import DEFAULT_TIMEOUT, AsyncClient, Client, Messages
from llmeu.client._errors import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ClientError,
    IncompleteStreamError,
    MalformedStreamError,
    NoCompliantRouteError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    RequestTooLargeError,
    ServerError,
    StreamError,
)
from llmeu.client._responses_assembler import ResponsesStreamAssembler, parse_response
from llmeu.client._stream import AsyncChatStream, ChatStream, StreamItem
from llmeu.client._timings import Timings
from llmeu.client._types import (
    ChatDelta,
    ChatResult,
    ContentDelta,
    CostEstimate,
    ErrorInfo,
    ReasoningDelta,
    RefusalDelta,
    RoutingBlock,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from llmeu.protocol.sse import ServerSentEvent, SSEDecoder

__all__ = [
    "DEFAULT_TIMEOUT",
    "APIConnectionError",
    "APIStatusError",
    "APITimeoutError",
    "AsyncChatStream",
    "AsyncClient",
    "AuthenticationError",
    "BadRequestError",
    "ChatDelta",
    "ChatResult",
    "ChatStream",
    "ChatStreamAssembler",
    "Client",
    "ClientError",
    "ContentDelta",
    "CostEstimate",
    "ErrorInfo",
    "IncompleteStreamError",
    "MalformedStreamError",
    "Messages",
    "NoCompliantRouteError",
    "NotFoundError",
    "PermissionDeniedError",
    "RateLimitError",
    "ReasoningDelta",
    "RefusalDelta",
    "RequestTooLargeError",
    "ResponsesStreamAssembler",
    "RoutingBlock",
    "SSEDecoder",
    "ServerError",
    "ServerSentEvent",
    "StreamError",
    "StreamItem",
    "Timings",
    "ToolCall",
    "ToolCallDelta",
    "Usage",
    "parse_completion",
    "parse_response",
]

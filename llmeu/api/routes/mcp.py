"""`POST /mcp`: MCP over Streamable HTTP, the tool servers the caller's policy admits.

Every message is its own POST, authenticated with the llmeu key (`Authorization:
Bearer`). Both eras are served on the one endpoint (`llmeu.protocol.mcp_wire`):

- a request carrying the 2026-07-28 envelope (`params._meta`, mirrored in the
  `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers) is checked
  rung by rung as the revision asks — the envelope's keys, then the headers
  against the body, then the version — and served statelessly;
- anything else is the handshake era: `initialize` answers with the version
  the client asked for when llmeu speaks it (2025-06-18, 2025-11-25) and a
  session id, later requests name their version in `MCP-Protocol-Version`.
  The session id only scopes a client's `notifications/cancelled` to its own
  calls: no state is kept for it, so any gateway process serves any request.

`GET` and `DELETE` are answered 405 (the app's answer to a method a path does
not have): no stream of server-initiated messages is offered, and a session
holds nothing to end. A browser's `Origin` must be the
gateway's own or one `--cors-origin` allows (403 otherwise), as the
specification asks of every Streamable HTTP server.

Errors are JSON-RPC errors (`McpErrors`): protocol errors with their JSON-RPC
code, llmeu's own with `-31000 - status` (-31403 refused by policy, -31429
over a limit, -31504 a tool server's timeout).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from llmeu.api.call.door import Calls
from llmeu.api.http.asgi import Request
from llmeu.api.http.error_responses import Routing, error_headers, send_error
from llmeu.api.routes.mcp_methods import answer_notification, answer_request
from llmeu.errors import (
    ApiError,
    AuthenticationFailed,
    MethodNotAllowed,
    PayloadTooLarge,
    PermissionDenied,
    ProtocolError,
    RateLimited,
    RequestTimeout,
    ServiceUnavailable,
    ToolServerError,
)
from llmeu.protocol.mcp_headers import check_routing_headers
from llmeu.protocol.mcp_wire import (
    CLIENT_CAPABILITIES_META,
    HANDSHAKE_VERSIONS,
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    LLMEU_ERRORS,
    MODERN_VERSIONS,
    PARSE_ERROR,
    PROTOCOL_VERSION_META,
    UNSUPPORTED_VERSION,
    Message,
    RequestId,
    error_message,
    parse_message,
    unsupported_version,
)
from llmeu.protocol.routing_block import RoutingBlock

_ENVELOPE_CODES = frozenset({PARSE_ERROR, INVALID_REQUEST, HEADER_MISMATCH, UNSUPPORTED_VERSION})
_HTTP_LEVEL = (AuthenticationFailed, MethodNotAllowed, RequestTimeout, PayloadTooLarge,
               RateLimited, ServiceUnavailable)  # fmt: skip
"""Errors about the HTTP request rather than the JSON-RPC call: answered with their status."""
_SESSION_CHARACTERS = frozenset(chr(c) for c in range(0x21, 0x7F))


class McpErrors:
    """JSON-RPC errors with the statuses each era gives them: a 2026-07-28 request gets the
    revision's (400 for envelope errors and invalid params, 404 for an unknown method); a
    handshake-era one 400 for an envelope it cannot read and 200 for an error of the call.
    Errors of the HTTP request itself (key, size, limits, shutdown) keep their status."""

    __slots__ = ("modern", "request_id")

    def __init__(self, request_id: RequestId | None, *, modern: bool = True):
        self.request_id = request_id
        self.modern = modern

    def status(self, error: ApiError) -> int:
        if isinstance(error, ProtocolError):
            if self.modern or error.rpc_code in _ENVELOPE_CODES:
                return error.status
            return 200
        return error.status if isinstance(error, _HTTP_LEVEL) else 200

    def body(self, error: ApiError, routing: Routing | None) -> bytes:
        trace_id = _trace_id(routing)
        if isinstance(error, ProtocolError | ToolServerError):
            given = error.data if error.data is not None else _with_trace({}, trace_id)
            return error_message(self.request_id, error.rpc_code, error.message, given)
        data: dict[str, Any] = {"type": error.type, "code": error.code}
        if error.param is not None:
            data["param"] = error.param
        return error_message(
            self.request_id, LLMEU_ERRORS - error.status, error.message, _with_trace(data, trace_id)
        )


def _trace_id(routing: Routing | None) -> str | None:
    if routing is None:
        return None
    value = routing.trace_id if isinstance(routing, RoutingBlock) else routing.get("trace_id")
    return str(value) if value else None


def _with_trace(data: dict[str, Any], trace_id: str | None) -> dict[str, Any] | None:
    if trace_id is not None:
        data["trace_id"] = trace_id
    return data or None


MCP_ERRORS = McpErrors(None)
"""For what is answered before a message's id is known (a missing key, a body too large)."""

_ID = {"type": ["string", "integer"]}
MESSAGE_SCHEMA = {
    "type": "object",
    "required": ["jsonrpc"],
    "properties": {"jsonrpc": {"const": "2.0"}, "id": _ID, "method": {"type": "string"},
                   "params": {"type": "object"}},
}  # fmt: skip
"""A JSON-RPC request or notification of MCP (the OpenAPI document's view of a body)."""
RESULT_SCHEMA = {
    "type": "object",
    "required": ["jsonrpc", "id", "result"],
    "properties": {"jsonrpc": {"const": "2.0"}, "id": _ID, "result": {"type": "object"}},
}
ERROR_SCHEMA = {
    "type": "object",
    "required": ["jsonrpc", "error"],
    "properties": {
        "jsonrpc": {"const": "2.0"},
        "id": _ID,
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "integer"}, "message": {"type": "string"},
                           "data": {}},
        },
    },
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Envelope:
    """What a message says of itself: its era, its version, its session (handshake era)."""

    modern: bool
    version: str
    session: str
    headers: dict[str, list[str]]


async def handle_mcp(calls: Calls, request: Request) -> None:
    refused = _foreign_origin(request, calls.context.cors_origins)
    if refused is not None:  # an HTTP 403, as the transport asks, whatever the era
        await request.respond(403, MCP_ERRORS.body(refused, None), error_headers(refused))
        return
    key = await calls.key(request)
    body = await request.body(calls.context.max_body_bytes)
    message = parse_message(body)
    shape = McpErrors(message.id)
    try:
        envelope = _envelope(message, _header_lists(request))
        shape.modern = envelope.modern
        if message.is_request:
            await answer_request(calls, request, key, message, envelope, shape, body)
        else:
            answer_notification(calls, key, message, envelope)
            await request.respond(202, b"", [])
    except ApiError as error:
        if request.response_started:
            raise
        await send_error(request, error, shape=shape)


def _header_lists(request: Request) -> dict[str, list[str]]:
    headers: dict[str, list[str]] = {}
    for name, value in request.headers:
        if name.startswith(b"mcp-"):
            headers.setdefault(name.decode("latin-1"), []).append(value.decode("latin-1"))
    return headers


def _envelope(message: Message, headers: dict[str, list[str]]) -> Envelope:
    sent = headers.get("mcp-protocol-version", [])
    header_version = sent[0] if len(sent) == 1 else None
    session = _session(headers)
    meta = message.meta
    modern = message.method != "initialize" and (
        PROTOCOL_VERSION_META in meta or header_version in MODERN_VERSIONS
    )
    if not modern:
        unknown = header_version is not None and header_version not in HANDSHAKE_VERSIONS
        if unknown and message.method != "initialize":
            raise unsupported_version(header_version)
        return Envelope(False, header_version or "", session, headers)
    if not message.is_request:  # no notification of the revision needs its headers
        return Envelope(True, header_version or MODERN_VERSIONS[-1], "", headers)
    missing = [k for k in (PROTOCOL_VERSION_META, CLIENT_CAPABILITIES_META) if k not in meta]
    if missing:
        raise ProtocolError(f"params._meta lacks {', '.join(missing)}", rpc_code=INVALID_PARAMS)
    version = meta[PROTOCOL_VERSION_META]
    assert message.method is not None
    check_routing_headers(message.method, message.params, str(version), headers)
    if version not in MODERN_VERSIONS:
        raise unsupported_version(version)
    return Envelope(True, str(version), "", headers)


def _session(headers: dict[str, list[str]]) -> str:
    sent = headers.get("mcp-session-id", [])
    if not sent:
        return ""
    value = sent[0]
    if len(sent) > 1 or len(value) > 128 or not set(value) <= _SESSION_CHARACTERS:
        raise ProtocolError("Mcp-Session-Id must be one visible ASCII value of at most 128 "
                            "characters", rpc_code=INVALID_REQUEST)  # fmt: skip
    return value


def _foreign_origin(request: Request, allowed: frozenset[str]) -> PermissionDenied | None:
    """The refusal of a browser's request from neither the gateway's own origin nor an
    allowed one (DNS rebinding: a page rebound to the gateway's address must not reach it)."""
    origin = request.header(b"origin")
    if origin is None or "*" in allowed or origin.rstrip("/") in allowed:
        return None
    host = request.header(b"host")
    try:
        same = host is not None and urlsplit(origin).netloc.lower() == host.lower()
    except ValueError:
        same = False
    if same:
        return None
    return PermissionDenied(
        f"requests from origin {origin!r} may not use /mcp (see --cors-origin)",
        code="origin_not_allowed",
    )

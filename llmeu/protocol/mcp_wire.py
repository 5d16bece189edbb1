"""MCP's wire: JSON-RPC 2.0 messages over Streamable HTTP, in the versions llmeu speaks.

Two eras share the one endpoint (the specification's "dual-era" server):

- the handshake era, `2025-06-18` and `2025-11-25`: a client opens with
  `initialize`, then sends `MCP-Protocol-Version` on every request;
- the stateless revision `2026-07-28`: no handshake, every request carries
  its version, client info and capabilities in `params._meta`, mirrored in
  the `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers; results
  carry `resultType`, and list results caching hints (`ttlMs`, `cacheScope`).

This module reads a client's message (`parse_message`), writes responses,
errors, notifications and server-sent events, and reads what a tool server
answers (`read_upstream`). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from llmeu.errors import ProtocolError
from llmeu.protocol.json_codec import MAX_NESTING, encoder, nesting_depth

HANDSHAKE_VERSIONS = ("2025-06-18", "2025-11-25")
MODERN_VERSIONS = ("2026-07-28",)
LATEST_HANDSHAKE = HANDSHAKE_VERSIONS[-1]
LATEST_MODERN = MODERN_VERSIONS[-1]
SUPPORTED_VERSIONS = (*MODERN_VERSIONS, *reversed(HANDSHAKE_VERSIONS))
"""Newest first, as `UnsupportedProtocolVersion` and `server/discover` name them."""

PROTOCOL_VERSION_META = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO_META = "io.modelcontextprotocol/clientInfo"
CLIENT_CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"
TRACE_ID_META = "eu.llmeu/trace_id"
RECEIPT_META = "eu.llmeu/receipt"
"""In a `tools/call` request's `_meta`, `true` asks for the call's receipt; in the result,
the receipt (compact JWS)."""

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
HEADER_MISMATCH = -32020
MISSING_CLIENT_CAPABILITY = -32021
UNSUPPORTED_VERSION = -32022
LLMEU_ERRORS = -31000
"""llmeu's own errors (a refusal by policy, a limit, a tool server's failure) are
`LLMEU_ERRORS - HTTP status` (-31403, -31429, -31504): outside JSON-RPC's reserved range,
so no client mistakes them for a protocol error."""

RequestId = int | str


@dataclass(frozen=True, slots=True)
class Message:
    """A client's message: a request (`id` set), a notification (no `id`), or a response to
    a request of ours (`method` None), which llmeu never sends and so ignores."""

    method: str | None
    id: RequestId | None
    params: dict[str, Any]

    @property
    def is_request(self) -> bool:
        return self.method is not None and self.id is not None

    @property
    def meta(self) -> dict[str, Any]:
        meta = self.params.get("_meta")
        return meta if isinstance(meta, dict) else {}


def parse_message(body: bytes) -> Message:
    """One JSON-RPC message from a POST body; a `ProtocolError` says what is wrong."""
    try:
        value = msgspec.json.decode(body)
    except (msgspec.DecodeError, RecursionError):
        raise ProtocolError("the body is not valid JSON", rpc_code=PARSE_ERROR) from None
    if isinstance(value, list):
        raise ProtocolError("batches are not part of MCP since 2025-06-18: send one message "
                            "per POST", rpc_code=INVALID_REQUEST)  # fmt: skip
    if not isinstance(value, dict) or value.get("jsonrpc") != "2.0":
        raise ProtocolError("not a JSON-RPC 2.0 message", rpc_code=INVALID_REQUEST)
    # Nesting takes two bytes a level: a body shorter than that cannot nest too deeply.
    if len(body) > 2 * MAX_NESTING and nesting_depth(value) > MAX_NESTING:
        raise ProtocolError("the message is nested too deeply", rpc_code=INVALID_REQUEST)
    ident = value.get("id")
    if "id" in value and not _is_id(ident):
        raise ProtocolError("`id` must be a string or an integer", rpc_code=INVALID_REQUEST)
    method = value.get("method")
    if method is None:
        if "result" in value or "error" in value:
            return Message(None, ident, {})
        raise ProtocolError("a message needs a `method`", rpc_code=INVALID_REQUEST)
    if not isinstance(method, str) or not method:
        raise ProtocolError("`method` must be a non-empty string", rpc_code=INVALID_REQUEST)
    params = value.get("params", {})
    if not isinstance(params, dict):
        raise ProtocolError("`params` must be an object", rpc_code=INVALID_PARAMS)
    return Message(method, ident, params)


def _is_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def result_message(ident: RequestId | None, result: Mapping[str, Any]) -> bytes:
    return encoder.encode({"jsonrpc": "2.0", "id": ident, "result": result})


def error_message(ident: RequestId | None, code: int, message: str, data: object = None) -> bytes:
    """A JSON-RPC error; without an id (a message whose id could not be read) none is sent."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    body: dict[str, Any] = {"jsonrpc": "2.0"}
    if ident is not None:
        body["id"] = ident
    body["error"] = error
    return encoder.encode(body)


def notification_message(method: str, params: Mapping[str, Any]) -> bytes:
    return encoder.encode({"jsonrpc": "2.0", "method": method, "params": params})


def sse_event(payload: bytes) -> bytes:
    """One `message` event of a Streamable HTTP response stream around a JSON message."""
    return b"event: message\ndata: " + payload + b"\n\n"


def method_not_found(method: str) -> ProtocolError:
    return ProtocolError(f"method not found: {method}", rpc_code=METHOD_NOT_FOUND, status=404)


def unsupported_version(requested: object) -> ProtocolError:
    return ProtocolError(
        f"unsupported protocol version {requested!r}; supported: {', '.join(SUPPORTED_VERSIONS)}",
        rpc_code=UNSUPPORTED_VERSION,
        data={"supported": list(SUPPORTED_VERSIONS), "requested": requested},
    )


def handshake_version(requested: object) -> str:
    """The version an `initialize` answers with: the client's when llmeu speaks it, else the
    newest of the era (the client then decides whether it can go on)."""
    return (
        requested
        if isinstance(requested, str) and requested in HANDSHAKE_VERSIONS
        else LATEST_HANDSHAKE
    )


class RpcError(msgspec.Struct):
    code: int = INTERNAL_ERROR
    message: str = ""
    data: Any = None


class UpstreamMessage(msgspec.Struct):
    """What a tool server sends: the response to our request, a notification about it, or a
    request of its own (which llmeu answers without relaying)."""

    jsonrpc: str = ""
    id: int | str | None = None
    method: str | None = None
    params: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    error: RpcError | None = None

    @property
    def is_response(self) -> bool:
        return self.method is None and (self.result is not None or self.error is not None)


_upstream = msgspec.json.Decoder(UpstreamMessage)


def read_upstream(data: bytes | str) -> UpstreamMessage:
    """A tool server's message; ValueError when it is not one."""
    try:
        message = _upstream.decode(data)
    except (msgspec.DecodeError, RecursionError) as error:
        raise ValueError(f"not a JSON-RPC message: {error}") from None
    if message.jsonrpc != "2.0":
        raise ValueError("not a JSON-RPC 2.0 message")
    return message

"""The MCP methods `/mcp` answers, and what it does with a client's notifications.

- `initialize` (handshake era): the version, the `tools` capability, a session id;
- `ping` (handshake era): an empty result;
- `server/discover` (2026-07-28): the versions spoken, the capabilities;
- `tools/list`: every tool of every server the caller's policy admits that
  the policy's `allow_tools` admits, named `<server_id>__<tool>`, in one page;
- `tools/call`: one tool call (`llmeu.api.call.tool_call`), with one trace.

Resources, prompts, completions, logging levels and subscriptions are not
offered (the capabilities say so): those methods answer "method not found".
Of the notifications, only a handshake-era `notifications/cancelled` does
something: it cancels the caller's own call in its session.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any

from llmeu import __version__
from llmeu.api.call.door import Caller, Calls
from llmeu.api.http.asgi import JSON_HEADERS, Request, with_header
from llmeu.calls.hangup import Hangup
from llmeu.errors import ProtocolError
from llmeu.protocol.mcp_headers import check_param_headers
from llmeu.protocol.mcp_wire import (
    INVALID_PARAMS,
    SERVER_INFO_META,
    SUPPORTED_VERSIONS,
    Message,
    handshake_version,
    method_not_found,
    result_message,
)

if TYPE_CHECKING:  # the route module imports this one
    from llmeu.api.routes.mcp import Envelope, McpErrors

SERVER_INFO = {"name": "llmeu", "title": "llmeu MCP gateway", "version": __version__}
INSTRUCTIONS = (
    "The tools of the MCP servers this key's sovereignty policy admits, each named "
    "<server>__<tool>. Every call is governed by the policy and recorded by the gateway."
)
CAPABILITIES = {"tools": {"listChanged": False}}
LIST_TTL_MS = 60_000
"""How long a client may keep `tools/list` (2026-07-28 caching hint; the list is the key's)."""
DISCOVER_TTL_MS = 3_600_000


async def answer_request(
    calls: Calls,
    request: Request,
    key: Caller,
    message: Message,
    envelope: Envelope,
    shape: McpErrors,
    body: bytes,
) -> None:
    method = message.method
    if method == "tools/call":
        await _call_tool(calls, request, key, message, envelope, shape, body)
        return
    headers = JSON_HEADERS
    if method == "initialize" and not envelope.modern:
        version = handshake_version(message.params.get("protocolVersion"))
        result: dict[str, Any] = {
            "protocolVersion": version, "capabilities": CAPABILITIES,
            "serverInfo": SERVER_INFO, "instructions": INSTRUCTIONS,
        }  # fmt: skip
        headers = with_header(headers, b"mcp-session-id", "mcp-" + secrets.token_hex(16))
    elif method == "ping" and not envelope.modern:
        result = {}
    elif method == "server/discover" and envelope.modern:
        result = {
            "supportedVersions": list(SUPPORTED_VERSIONS), "capabilities": CAPABILITIES,
            "instructions": INSTRUCTIONS, "ttlMs": DISCOVER_TTL_MS, "cacheScope": "public",
        }  # fmt: skip
    elif method == "tools/list":
        result = await _list_tools(calls, request, key, message, envelope)
    else:
        raise method_not_found(str(method))
    if envelope.modern:
        result = {**result, "resultType": "complete", "_meta": {SERVER_INFO_META: SERVER_INFO}}
    await request.respond(200, result_message(message.id, result), headers)


def answer_notification(calls: Calls, key: Caller, message: Message, envelope: Envelope) -> None:
    """A handshake-era client cancels a call of its session by naming its request id (a
    2026-07-28 one closes the call's connection instead, which the call itself sees)."""
    if message.method == "notifications/cancelled" and not envelope.modern:
        request_id = message.params.get("requestId")
        calls.context.tool_calls.cancel((key.key_id, envelope.session), request_id)


async def _list_tools(
    calls: Calls, request: Request, key: Caller, message: Message, envelope: Envelope
) -> dict[str, Any]:
    if message.params.get("cursor") is not None:
        raise ProtocolError("invalid cursor: the tool list is one page", rpc_code=INVALID_PARAMS)
    policy = calls.tool_policy(request, key)
    listed = await calls.context.tool_servers.tools_for(policy, Hangup())
    tools = [{**tool, "name": server.exposed(tool["name"])} for server, tool in listed]
    result: dict[str, Any] = {"tools": tools}
    if envelope.modern:
        result.update(ttlMs=LIST_TTL_MS, cacheScope="private")
    return result


async def _call_tool(
    calls: Calls,
    request: Request,
    key: Caller,
    message: Message,
    envelope: Envelope,
    shape: McpErrors,
    body: bytes,
) -> None:
    params = message.params
    name = params.get("name")
    arguments = params.get("arguments") or {}
    if not isinstance(name, str) or not name:
        raise ProtocolError("tools/call needs the tool's `name`", rpc_code=INVALID_PARAMS)
    if not isinstance(arguments, dict):
        raise ProtocolError("`arguments` must be an object", rpc_code=INVALID_PARAMS)
    assert message.id is not None
    scope = (key.key_id, envelope.session)
    async with calls.tool_call(
        request, key, name, message.id, shape=shape, modern=envelope.modern
    ) as call:
        call.received(body)
        server, tool, sent = await call.govern(arguments, message.meta)
        if envelope.modern:
            check_param_headers(tool.get("inputSchema"), arguments, envelope.headers)
        calls.context.tool_calls.add(scope, message.id, call.hangup)
        try:
            result = await call.run(server, tool, sent, message.meta)
        finally:
            calls.context.tool_calls.remove(scope, message.id)
        await call.respond(result)

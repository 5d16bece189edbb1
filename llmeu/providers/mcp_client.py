"""The gateway as an MCP client of one catalogued tool server, over Streamable HTTP.

A server's era is learnt once, at its first use, as the specification tells a
dual-era client to: a `server/discover` at 2026-07-28 first; a result naming
that version, or a modern error, means a stateless server; anything else (a
4xx without a modern error, a legacy server's refusal) means the handshake
era, and an `initialize` follows (its session, if the server assigns one, is
kept and renewed when the server forgets it).

The client declares no capabilities of its own: it relays no sampling,
elicitation or roots. A server that asks for them anyway is answered that
llmeu does not relay them (a handshake-era request on its stream) or its
call fails saying so (a 2026-07-28 `input_required` result). A tool whose
`x-mcp-header` annotations are invalid is left out of its list, as a
conforming client must.

On a hang-up the connection is closed at once, which is the cancellation of
the request on Streamable HTTP; a handshake-era server is also sent
`notifications/cancelled`, as its revision asks.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from llmeu import __version__
from llmeu.calls.hangup import Hangup
from llmeu.errors import ClientDisconnected, UpstreamError
from llmeu.protocol.json_codec import encoder
from llmeu.protocol.mcp_headers import (
    NAMED_BY,
    encode_value,
    has_annotations,
    invalid_annotation,
    param_headers,
)
from llmeu.protocol.mcp_wire import (
    CLIENT_CAPABILITIES_META,
    CLIENT_INFO_META,
    LATEST_HANDSHAKE,
    LATEST_MODERN,
    METHOD_NOT_FOUND,
    PROTOCOL_VERSION_META,
    UNSUPPORTED_VERSION,
    RpcError,
    UpstreamMessage,
)
from llmeu.providers.mcp_exchange import Answer, Exchange
from llmeu.providers.transport import HttpClient
from llmeu.routing.tool_servers import ToolServer

log = logging.getLogger("llmeu.mcp")

UPSTREAM_HANDSHAKE_VERSIONS = ("2025-03-26", "2025-06-18", "2025-11-25")
"""What an `initialize` may settle on with a tool server (2025-03-26 only lacks the
version header, which the client then leaves out)."""
CLIENT_INFO = {"name": "llmeu", "version": __version__}
_PAGES = 100
_ENVELOPE = frozenset({PROTOCOL_VERSION_META, CLIENT_INFO_META, CLIENT_CAPABILITIES_META})
Progress = Callable[[dict[str, Any]], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class ToolList:
    """A server's tools (all pages), how long it says the list stays fresh (seconds; None:
    it does not say), and the tools left out with the reason."""

    tools: list[dict[str, Any]]
    ttl: float | None
    left_out: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """A `tools/call`'s answer: its result or the server's JSON-RPC error, and the bytes sent
    and received."""

    result: dict[str, Any] | None
    error: RpcError | None
    sent: int
    received: int


class ToolServerClient:
    def __init__(self, server: ToolServer, http: HttpClient, environ: Mapping[str, str]):
        self.server = server
        credentials: list[tuple[bytes, bytes]] = []
        secrets: list[str] = []
        if server.api_key_env:
            token = environ[server.api_key_env]
            credentials.append((b"authorization", b"Bearer " + token.encode("latin-1")))
            secrets.append(token)
        for header, variable in server.headers_env:
            credentials.append((header.lower().encode("latin-1"), environ[variable].encode()))
            secrets.append(environ[variable])
        self.secrets = tuple(secrets)
        """The values of its credential variables, kept out of what a tenant is shown."""
        self._exchange = Exchange(server, http, credentials)
        self._modern: bool | None = None
        self._version = ""
        self._session: str | None = None
        self._ids = itertools.count(1)
        self._negotiating = asyncio.Lock()
        self._background: set[asyncio.Task[None]] = set()
        self._annotated: dict[str, tuple[object, bool]] = {}

    async def list_tools(self, hangup: Hangup) -> ToolList:
        await self._ready(hangup)
        tools: list[dict[str, Any]] = []
        left_out: list[tuple[str, str]] = []
        ttl: float | None = None
        cursor: str | None = None
        for _ in range(_PAGES):
            params = {"cursor": cursor} if cursor else {}
            answer, _ = await self._request("tools/list", params, hangup)
            result = self._result(answer, "tools/list")
            ttl = _ttl(result) if ttl is None else min(ttl, _ttl(result) or ttl)
            for tool in result.get("tools") or ():
                if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                    continue
                problem = invalid_annotation(tool.get("inputSchema"))
                if problem is None:
                    tools.append(tool)
                else:
                    left_out.append((tool["name"], problem))
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                break
        return ToolList(tools, ttl, left_out)

    async def call_tool(
        self,
        tool: dict[str, Any],
        arguments: dict[str, Any],
        meta: Mapping[str, Any],
        hangup: Hangup,
        progress: Progress | None = None,
    ) -> ToolOutcome:
        """Call `tool` (as its list gave it); `progress` receives the server's progress
        notifications about the call, with the token replaced by the caller's."""
        await self._ready(hangup)
        own_meta = {k: v for k, v in meta.items() if k not in _ENVELOPE and k != "progressToken"}
        token = f"llmeu-{next(self._ids)}" if progress is not None else None
        if token is not None:
            own_meta["progressToken"] = token
        params: dict[str, Any] = {"name": tool["name"], "arguments": arguments}
        if own_meta:
            params["_meta"] = own_meta
        headers = self._mirrored(tool, arguments) if self._modern else []

        async def relay(params: dict[str, Any]) -> None:
            if progress is not None and params.get("progressToken") == token:
                await progress(params)

        answer, sent = await self._request("tools/call", params, hangup, headers, relay)
        message = answer.message
        if message is None:
            raise self._exchange.broken("answered a tools/call with no response")
        if message.error is not None:
            return ToolOutcome(None, message.error, sent, answer.received)
        result = self._result(answer, "tools/call")
        if result.get("resultType", "complete") != "complete":
            raise UpstreamError(
                f"tool server {self.server.server_id} asked for input from the client "
                "(elicitation, sampling or roots), which llmeu does not relay",
                code="tool_input_required",
            )
        return ToolOutcome(result, None, sent, answer.received)

    def _mirrored(self, tool: dict[str, Any], arguments: dict[str, Any]) -> list[tuple[str, str]]:
        """The `Mcp-Param-*` headers of a call: the schema is walked once per tool (the list
        a tool comes from is kept, so the same dict comes back)."""
        schema = tool.get("inputSchema")
        known = self._annotated.get(tool["name"])
        if known is None or known[0] is not schema:
            known = self._annotated[tool["name"]] = (schema, has_annotations(schema))
        return param_headers(schema, arguments) if known[1] else []

    async def aclose(self) -> None:
        for task in list(self._background):
            task.cancel()
        self._exchange.aclose()

    async def _ready(self, hangup: Hangup) -> None:
        if self._modern is not None:
            return
        async with self._negotiating:
            if self._modern is None:
                await self._negotiate(hangup)

    async def _negotiate(self, hangup: Hangup) -> None:
        """The server's era (see the module docstring)."""
        self._modern, self._version = True, LATEST_MODERN
        try:
            answer, _ = await self._request("server/discover", {}, hangup)
        except UpstreamError as error:
            if error.upstream_status is None or error.upstream_status >= 500:
                self._modern = None
                raise
            answer = None  # a 4xx without a modern error: a handshake-era server
        message = answer.message if answer is not None else None
        result = message.result if message is not None else None
        refusal = message.error if message is not None else None
        if result is not None and LATEST_MODERN in (result.get("supportedVersions") or ()):
            return
        if refusal and refusal.code == UNSUPPORTED_VERSION and not _has_handshake(refusal):
            self._modern = None
            raise UpstreamError(f"tool server {self.server.server_id} speaks no version llmeu "
                                f"speaks: {refusal.message}")  # fmt: skip
        await self._initialize(hangup)

    async def _initialize(self, hangup: Hangup) -> None:
        self._modern, self._version, self._session = False, "", None
        params = {
            "protocolVersion": LATEST_HANDSHAKE,
            "capabilities": {},
            "clientInfo": CLIENT_INFO,
        }
        try:
            answer, _ = await self._request("initialize", params, hangup)
            result = self._result(answer, "initialize")
        except BaseException:
            self._modern = None
            raise
        version = result.get("protocolVersion")
        if version not in UPSTREAM_HANDSHAKE_VERSIONS:
            self._modern = None
            raise UpstreamError(
                f"tool server {self.server.server_id} answered initialize with version "
                f"{version!r}, which llmeu does not speak"
            )
        self._version = str(version)
        self._session = answer.session_id
        await self._post({"jsonrpc": "2.0", "method": "notifications/initialized"}, hangup)

    async def _request(
        self,
        method: str,
        params: dict[str, Any],
        hangup: Hangup,
        headers: list[tuple[str, str]] | None = None,
        progress: Progress | None = None,
    ) -> tuple[Answer, int]:
        """One request in the server's era; a forgotten session is renewed once."""

        async def notice(message: UpstreamMessage) -> None:
            await self._on_notice(message, progress, hangup)

        for renewed in (False, True):
            request_id = next(self._ids)
            body = encoder.encode(self._envelope(method, params, request_id))
            wire = self._headers(method, params, headers or ())
            try:
                answer = await self._exchange.send(
                    body, wire, hangup, request_id=request_id, on_notice=notice
                )
            except ClientDisconnected:
                self._cancel_later(request_id)
                raise
            except UpstreamError as error:
                if self._forgotten(error.upstream_status) and not renewed:
                    await self._initialize(hangup)
                    continue
                raise
            if self._forgotten(answer.status) and not renewed:
                await self._initialize(hangup)
                continue
            return answer, len(body)
        raise AssertionError("unreachable")  # pragma: no cover

    def _forgotten(self, status: int | None) -> bool:
        return status == 404 and self._modern is False and self._session is not None

    def _envelope(self, method: str, params: dict[str, Any], request_id: int) -> dict[str, Any]:
        if self._modern:
            meta = dict(params.get("_meta") or {})
            meta[PROTOCOL_VERSION_META] = self._version
            meta[CLIENT_INFO_META] = CLIENT_INFO
            meta[CLIENT_CAPABILITIES_META] = {}
            params = {**params, "_meta": meta}
        return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}

    def _headers(
        self, method: str | None, params: Mapping[str, Any], extra: Iterable[tuple[str, str]]
    ) -> list[tuple[bytes, bytes]]:
        """The era's headers: the version and session; for a 2026-07-28 request, the method,
        the name and the arguments its tool's schema mirrors."""
        headers: list[tuple[str, str]] = []
        if self._version and self._version != "2025-03-26":
            headers.append(("mcp-protocol-version", self._version))
        if self._session:
            headers.append(("mcp-session-id", self._session))
        if self._modern and method is not None:
            headers.append(("mcp-method", method))
            named = NAMED_BY.get(method)
            if named is not None and params.get(named) is not None:
                headers.append(("mcp-name", encode_value(str(params[named]))))
            headers.extend(extra)
        return [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]

    async def _post(self, message: dict[str, Any], hangup: Hangup) -> Answer:
        """A message that is not a request: a notification, or our answer to the server's."""
        headers = self._headers(None, {}, ())
        return await self._exchange.send(encoder.encode(message), headers, hangup, request_id=None)

    async def _on_notice(
        self, message: UpstreamMessage, progress: Progress | None, hangup: Hangup
    ) -> None:
        """A notification about the request, or a request of the server's own (handshake
        era), which is answered at once: a `ping` with an empty result, anything else with
        the error that llmeu does not relay it."""
        if message.id is None:
            if message.method == "notifications/progress" and progress is not None:
                await progress(message.params or {})
            return
        if message.method == "ping":
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message.id, "result": {}}
        else:
            reply = {"jsonrpc": "2.0", "id": message.id, "error": {
                "code": METHOD_NOT_FOUND,
                "message": f"llmeu does not relay {message.method} to its clients",
            }}  # fmt: skip
        await self._post(reply, hangup)

    def _cancel_later(self, request_id: int) -> None:
        """Tell a handshake-era server that a request's client hung up (the closed connection
        already told a 2026-07-28 one)."""
        if self._modern is not False:
            return
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled",
                  "params": {"requestId": request_id, "reason": "the client hung up"}}  # fmt: skip

        async def send() -> None:
            try:
                await self._post(cancel, Hangup())
            except UpstreamError as error:
                log.info("tool server %s: cancellation not delivered: %s",
                         self.server.server_id, error.message)  # fmt: skip

        task = asyncio.get_running_loop().create_task(send())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _result(self, answer: Answer, method: str) -> dict[str, Any]:
        message = answer.message
        if message is None or message.error is not None or message.result is None:
            said = message.error.message if message and message.error else "no result"
            raise UpstreamError(
                f"tool server {self.server.server_id} answered {method} with an error: {said}",
                retryable=True,
            )
        return message.result


def _ttl(result: Mapping[str, Any]) -> float | None:
    ttl = result.get("ttlMs")
    if isinstance(ttl, int | float) and not isinstance(ttl, bool) and ttl >= 0:
        return float(ttl) / 1000
    return None


def _has_handshake(error: RpcError) -> bool:
    supported = error.data.get("supported") if isinstance(error.data, dict) else None
    return isinstance(supported, list) and any(v in UPSTREAM_HANDSHAKE_VERSIONS for v in supported)

"""An MCP tool server built with the official SDK (`mcp` 2.x `MCPServer`), as a real process.

    python -m tests.support.mcp_tool_server --port 8931 [--json] [--stateless] [--token T]

It serves Streamable HTTP on `/mcp` in both eras (the SDK's dual-era
server). Around the SDK's app, a thin ASGI layer counts every request (so a
test can show a server received none), remembers what each `tools/call`
carried (arguments, headers), checks the Bearer token when one is required,
and injects the faults a gateway must survive: a stream broken before its
answer, an answer that never comes. `GET /_stats` reports, `POST /_reset`
forgets.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Annotated, Any

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

Scope = dict[str, Any]
CANCELLED: list[str] = []
"""The tools whose call was cancelled while running (the client's hang-up reached them)."""


def build_server(name: str) -> MCPServer:
    server = MCPServer(name)

    @server.tool()
    def echo(text: str) -> str:
        """Answer the text it is given."""
        return text

    @server.tool()
    def account_note(iban: str, note: str = "") -> str:
        """Store a note on a bank account; answers what it stored."""
        return f"noted for {iban}: {note}"

    @server.tool()
    def customer_record(customer_id: str) -> str:
        """A customer's record, with their contact data."""
        return f"customer {customer_id}: jane.doe@example.com, IBAN DE89370400440532013000"

    @server.tool()
    async def count_slowly(steps: int, ctx: Context, delay: float = 0.05) -> str:
        """Count to `steps`, reporting progress after each."""
        for step in range(1, steps + 1):
            await asyncio.sleep(delay)
            await ctx.report_progress(step, steps, f"step {step}")
        return f"counted to {steps}"

    @server.tool()
    async def sleep(seconds: float) -> str:
        """Sleep, then say so."""
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            CANCELLED.append("sleep")
            raise
        return f"slept {seconds}"

    @server.tool()
    def big(megabytes: float) -> str:
        """A text of the given size."""
        return "x" * int(megabytes * 1024 * 1024)

    @server.tool()
    def fail(reason: str) -> str:
        """Fail with the reason (a tool error, not a protocol error)."""
        raise ToolError(reason)

    @server.tool()
    def weather(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> str:
        """The weather of a region; the region is mirrored in the Mcp-Param-Region header."""
        return f"sunny in {region}"

    @server.tool()
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    @server.tool()
    def break_stream() -> str:
        """Never reached: the layer around the server breaks this call's stream."""
        return "unreachable"

    @server.tool()
    def never_answer() -> str:
        """Never reached: the layer around the server never answers this call."""
        return "unreachable"

    return server


class Recorder:
    """Counts and remembers requests; injects the faults named by the tool called."""

    def __init__(self, app: Any, token: str | None, legacy: bool = False):
        self.app = app
        self.token = token
        self.legacy = legacy
        self.requests = 0
        self.calls: list[dict[str, Any]] = []
        self.hangups = 0

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"].startswith("/_"):
            if scope["type"] == "http":
                await self._admin(scope, receive, send)
                return
            await self.app(scope, receive, send)
            return
        self.requests += 1
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        if self.token is not None and headers.get("authorization") != f"Bearer {self.token}":
            await _respond(send, 401, b'{"error": "missing or wrong token"}')
            return
        body = await _read(receive)
        if self.legacy and _modern(body, headers):
            # What a server of the handshake era answers a request without a session.
            await _respond(
                send,
                400,
                b'{"jsonrpc": "2.0", "id": "server-error", "error": '
                b'{"code": -32600, "message": "Bad Request: No valid session ID provided"}}',
            )
            return
        call = _tool_call(body)
        if call is not None:
            self.calls.append({"name": call.get("name"), "arguments": call.get("arguments"),
                               "headers": headers})  # fmt: skip
            if call.get("name") == "break_stream":
                await _broken_stream(send)
                return
            if call.get("name") == "never_answer":
                await _never(receive, self)
                return
        await self.app(scope, _replay(body, receive), send)

    async def _admin(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["path"] == "/_reset":
            self.requests, self.calls, self.hangups = 0, [], 0
            CANCELLED.clear()
        stats = {"requests": self.requests, "calls": self.calls, "hangups": self.hangups,
                 "cancelled": CANCELLED}  # fmt: skip
        await _respond(send, 200, json.dumps(stats).encode())


def _modern(body: bytes, headers: dict[str, str]) -> bool:
    """A request of the 2026-07-28 revision (a discover probe, or its per-request envelope)."""
    if headers.get("mcp-protocol-version") == "2026-07-28":
        return True
    try:
        message = json.loads(body)
    except ValueError:
        return False
    return isinstance(message, dict) and message.get("method") == "server/discover"


def _tool_call(body: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if isinstance(message, dict) and message.get("method") == "tools/call":
        params = message.get("params")
        return params if isinstance(params, dict) else None
    return None


async def _read(receive: Any) -> bytes:
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


def _replay(body: bytes, receive: Any) -> Any:
    sent = False

    async def replay() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # type: ignore[no-any-return]

    return replay


async def _respond(send: Any, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json")]})  # fmt: skip
    await send({"type": "http.response.body", "body": body})


async def _broken_stream(send: Any) -> None:
    """Headers of a stream, half an event, and the end of the body: no answer."""
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/event-stream")]})  # fmt: skip
    await send({"type": "http.response.body", "body": b'event: message\ndata: {"jsonrpc": "2.0", "id"',
                "more_body": True})  # fmt: skip
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _never(receive: Any, recorder: Recorder) -> None:
    """No answer at all, until the client goes away (then it is counted as a hang-up)."""
    while (await receive())["type"] != "http.disconnect":
        pass
    recorder.hangups += 1


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--name", default="tools")
    parser.add_argument("--json", action="store_true", help="answer JSON, not SSE")
    parser.add_argument("--stateless", action="store_true", help="no handshake-era sessions")
    parser.add_argument("--token", help="the Bearer token every request must carry")
    parser.add_argument("--legacy", action="store_true", help="refuse 2026-07-28 requests as a "
                        "server of the handshake era does")  # fmt: skip
    args = parser.parse_args()
    server = build_server(args.name)
    app = server.streamable_http_app(json_response=args.json, stateless_http=args.stateless)
    uvicorn.run(Recorder(app, args.token, args.legacy), host="127.0.0.1", port=args.port, log_level="warning",
                lifespan="on")  # fmt: skip


if __name__ == "__main__":
    main()

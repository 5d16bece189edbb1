"""A fast MCP tool server for benchmarks: raw asyncio and httptools, JSON answers.

    python bench/mcp_upstream.py --port 8950

It serves `POST /mcp` statelessly in the 2026-07-28 revision — `server/discover`,
`tools/list` (one tool, `echo`) and `tools/call` (the `text` argument back as the
result) — and `GET /healthz`, doing as little per call as a server can, so that
what a benchmark measures in front of it is the proxy, not the tool. It reads
neither the envelope's headers nor its `_meta`: it is the far end of a
measurement, not a conformance target (the SDK's servers are, in the tests).
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any, cast

import httptools
import msgspec

import aio

_DISCOVER = {"resultType": "complete", "supportedVersions": ["2026-07-28"],
             "capabilities": {"tools": {}}, "ttlMs": 60_000, "cacheScope": "public"}  # fmt: skip
_TOOLS = {"resultType": "complete", "ttlMs": 60_000, "cacheScope": "public", "tools": [{
    "name": "echo", "description": "Answer the text it is given.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                    "required": ["text"]},
}]}  # fmt: skip


class _Call(msgspec.Struct):
    jsonrpc: str
    method: str
    id: int | str | None = None
    params: dict[str, Any] = {}


_decode = msgspec.json.Decoder(_Call)
_encode = msgspec.json.Encoder()


def answer(body: bytes) -> bytes:
    call = _decode.decode(body)
    if call.method == "server/discover":
        result: dict[str, Any] = _DISCOVER
    elif call.method == "tools/list":
        result = _TOOLS
    elif call.method == "tools/call":
        text = str((call.params.get("arguments") or {}).get("text", ""))
        result = {"resultType": "complete", "isError": False,
                  "content": [{"type": "text", "text": text}]}  # fmt: skip
    else:
        error = {"code": -32601, "message": "method not found"}
        return _encode.encode({"jsonrpc": "2.0", "id": call.id, "error": error})
    return _encode.encode({"jsonrpc": "2.0", "id": call.id, "result": result})


class _Connection(asyncio.Protocol):
    def __init__(self) -> None:
        self._parser = httptools.HttpRequestParser(self)
        self._transport: asyncio.Transport | None = None
        self._body: list[bytes] = []
        self._url = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError:
            if self._transport is not None:
                self._transport.close()

    def on_url(self, url: bytes) -> None:
        self._url = url

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        body, self._body = b"".join(self._body), []
        if self._url == b"/healthz":
            payload, status = b'{"status":"ok"}', b"200 OK"
        else:
            try:
                payload, status = answer(body), b"200 OK"
            except (msgspec.DecodeError, msgspec.ValidationError):
                payload, status = b'{"error":"not a JSON-RPC call"}', b"400 Bad Request"
        head = (b"HTTP/1.1 " + status + b"\r\ncontent-type: application/json\r\n"
                b"content-length: " + str(len(payload)).encode() + b"\r\n\r\n")  # fmt: skip
        if self._transport is not None:
            self._transport.write(head + payload)


async def serve(port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(_Connection, "127.0.0.1", port, backlog=1024)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    aio.run(serve(args.port))


if __name__ == "__main__":
    main()

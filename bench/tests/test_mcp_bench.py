"""The MCP benchmark's fast tool server answers what the gateway asks of a tool server, and the
benchmark's requests are what each era sends."""

from __future__ import annotations

import json

import msgspec

from mcp_overhead import request
from mcp_upstream import answer


def call(method: str, **params: object) -> dict[str, object]:
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).encode()
    decoded: dict[str, object] = msgspec.json.decode(answer(body))
    return decoded


def test_the_fast_tool_server_discovers_lists_and_echoes() -> None:
    discovered = call("server/discover")["result"]
    assert discovered["supportedVersions"] == ["2026-07-28"]  # type: ignore[index]
    tools = call("tools/list")["result"]["tools"]  # type: ignore[index]
    assert [t["name"] for t in tools] == ["echo"]
    echoed = call("tools/call", name="echo", arguments={"text": "hi"})
    result = {"resultType": "complete", "isError": False,
              "content": [{"type": "text", "text": "hi"}]}  # fmt: skip
    assert echoed == {"jsonrpc": "2.0", "id": 7, "result": result}
    assert call("resources/list")["error"]["code"] == -32601  # type: ignore[index]


def test_each_era_s_request_carries_its_headers() -> None:
    handshake = request(8080, "bench__echo", "sk-x", "2025-11-25").decode()
    assert "mcp-protocol-version: 2025-11-25" in handshake and "mcp-method" not in handshake
    modern = request(8080, "bench__echo", None, "2026-07-28").decode()
    assert "mcp-name: bench__echo" in modern and "authorization" not in modern
    head, body = modern.split("\r\n\r\n")
    assert f"content-length: {len(body.encode())}" in head
    assert json.loads(body)["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == (
        "2026-07-28"
    )

"""An MCP tool call's span (the GenAI and MCP conventions) and metrics, against a real tool
server of the official SDK."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.trace import SpanKind

from tests.observability.harness import AUTH, in_process
from tests.support.mcp_processes import ToolServerProcess, start_tool_server, tool_server_entry


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ToolServerProcess]:
    server = start_tool_server(tmp_path_factory.mktemp("tools"), "--json", "--stateless")
    yield server
    server.stop()


async def test_a_tool_call_is_one_span_and_counts_by_server(
    tmp_path: Path, tools: ToolServerProcess
) -> None:
    config = f"mcp_servers:\n{tool_server_entry('crm', tools.url)}default_policy: eu-strict\n"
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "crm__echo", "arguments": {"text": "hi"}}}  # fmt: skip
    async with in_process(tmp_path, config) as gw:
        response = await gw.client.post("/mcp", json=call, headers=AUTH)
        assert response.status_code == 200 and "result" in response.json(), response.text
        metrics = await gw.metrics()
        spans = gw.spans()
    (server_span,) = [s for s in spans if s.kind is SpanKind.SERVER]
    (attempt,) = [s for s in spans if s.kind is SpanKind.CLIENT]
    assert server_span.name == "tools/call crm__echo"
    attributes = dict(server_span.attributes or {})
    assert attributes["gen_ai.operation.name"] == "execute_tool"
    assert attributes["gen_ai.tool.name"] == "crm__echo"
    assert (attributes["mcp.server"], attributes["mcp.tool"]) == ("crm", "echo")
    assert attributes["llmeu.bytes_in"] > 0 and attributes["llmeu.bytes_out"] > 0
    assert attempt.parent is not None and attempt.parent.span_id == server_span.context.span_id
    assert 'llmeu_mcp_tool_calls_total{server="crm",status="completed"} 1.0' in metrics
    assert 'llmeu_mcp_bytes_total{direction="in",server="crm"}' in metrics
    assert 'llmeu_circuit_breaker_state{endpoint="mcp:crm"} 0.0' in metrics

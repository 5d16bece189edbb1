"""The console's traces show an MCP tool call for what it is: its server, tool and bytes."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.console.conftest import Console, sign_in
from tests.support.mcp_processes import McpSetup, start_mcp_setup
from tests.support.processes import FakeUpstream


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpSetup]:
    started = start_mcp_setup(tmp_path_factory.mktemp("mcp"))
    yield started
    started.stop()


def tool_call(setup: McpSetup, key: str) -> str:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "crm__echo", "arguments": {"text": "hello"}}}  # fmt: skip
    request = urllib.request.Request(setup.url, data=json.dumps(body).encode(), headers={
        "authorization": f"Bearer {key}", "content-type": "application/json",
        "accept": "application/json, text/event-stream"})  # fmt: skip
    with urllib.request.urlopen(request, timeout=30) as answer:
        return str(answer.headers["x-llmeu-trace-id"])


def test_a_tool_call_trace_names_its_server_and_tool(
    page: Page, setup: McpSetup, upstream_process: FakeUpstream
) -> None:
    console = Console(setup.gateway, upstream_process)
    trace_id = tool_call(setup, setup.gateway.admin_key)
    sign_in(page, console, setup.gateway.admin_key)
    page.goto(f"{console.url}#/traces")
    expect(page.get_by_role("table")).to_contain_text("MCP crm")
    page.goto(f"{console.url}#/traces/{trace_id}")
    where = page.get_by_role("region", name="Where it ran")
    expect(where).to_contain_text("MCP tool server")
    expect(where).to_contain_text("crm")
    expect(where).to_contain_text("echo")
    expect(page.get_by_role("region", name="Tool call")).to_contain_text("bytes")
    expect(page.get_by_role("region", name="Call", exact=True)).to_contain_text("/mcp")

"""`/mcp` on a real gateway, driven by the official `mcp` Python SDK in both protocol modes.

`auto` probes `server/discover` and speaks 2026-07-28; `legacy` runs the
`initialize` handshake. The tool servers are the SDK's own servers as real
processes (`tests/support/mcp_tool_server.py`), each counting what it was
sent, so what a server received is read from the server, never assumed.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from llmeu.evidence.receipts import verify_receipt
from tests.support.mcp_processes import McpSetup, start_mcp_setup
from tests.support.waiting import until

MODES = ["auto", "legacy"]
IBAN = "DE89 3704 0044 0532 0130 00"


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpSetup]:
    started = start_mcp_setup(tmp_path_factory.mktemp("mcp"))
    yield started
    started.stop()


@pytest.fixture(autouse=True)
def fresh_servers(setup: McpSetup) -> None:
    for server in setup.servers.values():
        server.reset()


@asynccontextmanager
async def connected(
    setup: McpSetup, key: str, mode: str, headers: dict[str, str] | None = None
) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}", **(headers or {})})
    async with http, Client(streamable_http_client(setup.url, http_client=http), mode=mode) as c:
        yield c


def trace_of(setup: McpSetup, meta: dict[str, Any] | None) -> dict[str, Any]:
    assert meta is not None
    trace: dict[str, Any] = setup.platform(f"traces/{meta['eu.llmeu/trace_id']}")
    return trace


@pytest.mark.parametrize("mode", MODES)
async def test_only_the_tools_of_admitted_servers_are_listed_and_callable(
    setup: McpSetup, mode: str
) -> None:
    async with connected(setup, setup.key(), mode) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        refused = []
        for name in ("search__echo", "crm__no_such_tool", "nobody__echo", "echo"):
            with pytest.raises(MCPError) as error:
                await client.call_tool(name, {"text": "hello"})
            refused.append((error.value.code, error.value.message.replace(name, "<name>")))
    assert {"crm__echo", "crm__weather", "legacy__echo", "faulty__sleep"} <= set(names)
    assert not [n for n in names if n.startswith(("search__", "down__"))]
    # A tool that is not there and one the policy does not admit are the same error.
    assert set(refused) == {(-32602, "Unknown tool: <name>")}
    assert setup.servers["search"].stats()["requests"] == 0


@pytest.mark.parametrize("mode", MODES)
async def test_a_tool_call_round_trips_and_is_one_trace(setup: McpSetup, mode: str) -> None:
    async with connected(setup, setup.key(), mode) as client:
        echoed = await client.call_tool("crm__echo", {"text": "bonjour"})
        legacy = await client.call_tool("legacy__echo", {"text": "hallo"})
        weather = await client.call_tool("crm__weather", {"region": "eu-west"})
    assert echoed.content[0].text == "bonjour"  # type: ignore[union-attr]
    assert legacy.content[0].text == "hallo"  # type: ignore[union-attr]
    assert weather.content[0].text == "sunny in eu-west"  # type: ignore[union-attr]
    trace = trace_of(setup, echoed.meta)
    assert (trace["route"], trace["status"], trace["request_model"]) == (
        "/mcp", "completed", "crm__echo",
    )  # fmt: skip
    assert trace["mcp"]["server"] == "crm" and trace["mcp"]["tool"] == "echo"
    assert trace["mcp"]["bytes_in"] > 0 and trace["mcp"]["bytes_out"] > 0
    assert trace["routing"]["policy_id"] == "eu-strict"
    assert (trace["routing"]["provider"], trace["routing"]["sovereignty_class"]) == (
        "acme", "eu_sovereign",
    )  # fmt: skip
    assert trace["evidence"]["chain_seq"] is not None
    upstream = setup.servers["crm"].stats()["calls"]
    assert [c["name"] for c in upstream] == ["echo", "weather"]
    assert upstream[-1]["headers"].get("mcp-param-region") == "eu-west"
    assert trace_of(setup, legacy.meta)["mcp"]["server"] == "legacy"


@pytest.mark.parametrize("mode", MODES)
async def test_progress_passes_through(setup: McpSetup, mode: str) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, total, message))

    async with connected(setup, setup.key(), mode) as client:
        done = await client.call_tool("crm__count_slowly", {"steps": 3}, progress_callback=progress)
    assert done.content[0].text == "counted to 3"  # type: ignore[union-attr]
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


@pytest.mark.parametrize("mode", MODES)
async def test_a_cancelled_call_is_cancelled_at_the_server(setup: McpSetup, mode: str) -> None:
    async with connected(setup, setup.key(), mode) as client:
        call = asyncio.create_task(client.call_tool("crm__sleep", {"seconds": 30}))
        await until(lambda: bool(setup.servers["crm"].stats()["calls"]), what="the call")
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        await until(lambda: "sleep" in setup.servers["crm"].stats()["cancelled"], timeout=15,
                    what="the server's cancellation")  # fmt: skip
    traces = setup.platform("traces?mcp_server=crm&limit=1")["data"]
    assert traces[0]["status"] == "cancelled"


async def test_a_client_hang_up_cancels_the_upstream_call(setup: McpSetup) -> None:
    key = setup.key()
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "crm__sleep", "arguments": {"seconds": 30}}}  # fmt: skip
    async with httpx2.AsyncClient(timeout=30) as http:
        request = http.post(setup.url, json=body, headers={
            "authorization": f"Bearer {key}", "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2025-11-25"})  # fmt: skip
        hanging = asyncio.create_task(request)
        await until(lambda: bool(setup.servers["crm"].stats()["calls"]), what="the call")
        hanging.cancel()
    await until(lambda: "sleep" in setup.servers["crm"].stats()["cancelled"], timeout=15,
                what="the server's cancellation")  # fmt: skip
    await until(lambda: setup.platform("traces?mcp_server=crm&limit=1")["data"][0]["status"]
                == "cancelled", timeout=10, what="the cancelled trace")  # fmt: skip


@pytest.mark.parametrize("mode", MODES)
async def test_an_iban_under_block_never_reaches_the_server(setup: McpSetup, mode: str) -> None:
    async with connected(setup, setup.key("tools-block"), mode) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("crm__account_note", {"iban": IBAN, "note": "refund"})
    assert refused.value.code == -31403
    assert refused.value.data["code"] == "personal_data_detected"
    assert setup.servers["crm"].stats()["requests"] == 0
    trace = setup.platform(f"traces/{refused.value.data['trace_id']}")
    assert trace["status"] == "rejected"
    assert trace["personal_data"]["findings"] == [
        {"detector": "iban", "path": "arguments.iban", "count": 1, "action": "block"}
    ]


@pytest.mark.parametrize("mode", MODES)
async def test_under_mask_the_server_sees_placeholders_and_the_result_is_restored(
    setup: McpSetup, mode: str
) -> None:
    async with connected(setup, setup.key("tools-mask"), mode) as client:
        noted = await client.call_tool(
            "crm__account_note", {"iban": IBAN, "note": "write to jan@example.nl"}
        )
        record = await client.call_tool("crm__customer_record", {"customer_id": "42"})
    sent = setup.servers["crm"].stats()["calls"][0]["arguments"]
    assert sent == {"iban": "[IBAN_1]", "note": "write to [EMAIL_1]"}
    assert noted.content[0].text == f"noted for {IBAN}: write to jan@example.nl"  # type: ignore[union-attr]
    # What the server itself answered is masked on its way back.
    assert record.content[0].text == "customer 42: [EMAIL_1], IBAN [IBAN_1]"  # type: ignore[union-attr]
    trace = trace_of(setup, noted.meta)
    assert json.loads(trace["content"]["completion"])["content"][0]["text"] == (
        "noted for [IBAN_1]: write to [EMAIL_1]"  # the trace keeps placeholders, never values
    )
    assert trace["personal_data"]["masked"] == 2


@pytest.mark.parametrize(
    ("tool", "arguments", "code", "said"),
    [
        pytest.param("faulty__break_stream", {}, -31502, "ended its stream", id="broken-stream"),
        pytest.param("faulty__never_answer", {}, -31504, "first_token", id="never-answers"),
        pytest.param("faulty__sleep", {"seconds": 30}, -31504, "timeout", id="too-slow"),
        pytest.param("faulty__big", {"megabytes": 10}, -31502, "max_result_bytes",
                     id="ten-megabytes"),
        pytest.param("down__echo", {"text": "x"}, -31503, "could not connect", id="refused"),
    ],
)  # fmt: skip
async def test_tool_server_faults_are_clear_errors_with_a_trace(
    setup: McpSetup, tool: str, arguments: dict[str, Any], code: int, said: str
) -> None:
    async with connected(setup, setup.key(), "auto") as client:
        with pytest.raises(MCPError) as failed:
            await client.call_tool(tool, arguments)
    assert failed.value.code == code
    assert said in failed.value.message
    trace = setup.platform(f"traces/{failed.value.data['trace_id']}")
    assert trace["status"] == "failed"
    assert trace["route"] == "/mcp" and trace["error"]["code"] == failed.value.data["code"]


async def test_a_ten_megabyte_result_costs_no_memory_beyond_the_limit(setup: McpSetup) -> None:
    before = rss_mb(setup.gateway.proc.pid)
    async with connected(setup, setup.key(), "auto") as client:
        for _ in range(3):
            with pytest.raises(MCPError):
                await client.call_tool("faulty__big", {"megabytes": 10})
    assert rss_mb(setup.gateway.proc.pid) - before < 40  # the limit is 4 MiB a result


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


async def test_tool_calls_count_in_the_key_s_requests_per_minute(setup: McpSetup) -> None:
    async with connected(setup, setup.key(rpm_limit=2), "auto") as client:
        await client.call_tool("crm__echo", {"text": "1"})
        await client.call_tool("crm__echo", {"text": "2"})
        with pytest.raises(MCPError) as limited:
            await client.call_tool("crm__echo", {"text": "3"})
    assert limited.value.code == -31429
    assert [c["arguments"]["text"] for c in setup.servers["crm"].stats()["calls"]] == ["1", "2"]


@pytest.mark.parametrize("mode", MODES)
async def test_a_key_s_and_a_request_s_patterns_narrow_the_tools(
    setup: McpSetup, mode: str
) -> None:
    key = setup.key("tools-some", allow_tools=["crm__echo", "crm__sleep", "legacy__*"])
    narrowing = {"x-llmeu-policy": json.dumps({"allow_tools": ["crm__echo", "legacy__echo"]})}
    async with connected(setup, key, mode, narrowing) as client:
        names = sorted(t.name for t in (await client.list_tools()).tools)
        with pytest.raises(MCPError) as refused:
            await client.call_tool("crm__sleep", {"seconds": 0})
    assert names == ["crm__echo", "legacy__echo"]
    assert refused.value.message == "Unknown tool: crm__sleep"
    wider = {"x-llmeu-policy": json.dumps({"allow_tools": ["crm__weather"]})}
    async with connected(setup, key, mode, wider) as client:
        with pytest.raises(MCPError) as widened:
            await client.list_tools()
    assert widened.value.code == -31403 and widened.value.data["code"] == "policy_widening"


async def test_a_receipt_on_request_verifies_against_the_gateway_s_keys(setup: McpSetup) -> None:
    async with connected(setup, setup.key(), "auto") as client:
        done = await client.call_tool("crm__echo", {"text": "x"}, meta={"eu.llmeu/receipt": True})
    assert done.meta is not None
    with urllib.request.urlopen(f"{setup.gateway.url}/.well-known/llmeu/jwks.json") as answer:
        jwks = json.loads(answer.read())
    check = verify_receipt(done.meta["eu.llmeu/receipt"], jwks)
    assert check.valid, check.line
    payload = check.payload
    assert payload is not None and payload["trace_id"] == done.meta["eu.llmeu/trace_id"]
    assert (payload["route"], payload["status"], payload["request_model"]) == (
        "/mcp", "completed", "crm__echo",
    )  # fmt: skip


async def test_usage_groups_tool_calls_by_server(setup: McpSetup) -> None:
    key = setup.key()
    async with connected(setup, key, "auto") as client:
        await client.call_tool("crm__echo", {"text": "x"})
        await client.call_tool("legacy__echo", {"text": "x"})
    usage = {row["mcp_server"]: row for row in setup.platform("usage?group_by=mcp_server")["data"]}
    assert usage["crm"]["completed"] >= 1 and usage["legacy"]["completed"] >= 1
    assert "search" not in usage

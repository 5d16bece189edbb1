"""The gateway's MCP client against tool servers of the official SDK, as real processes.

Each server variant is one era or answer style: the SDK's dual-era server
(streams), its stateless JSON mode, and a server of the handshake era only
(streams, JSON). The client learns the era itself.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from llmeu.calls.hangup import Hangup
from llmeu.errors import ClientDisconnected, UpstreamError, UpstreamTimeout, UpstreamUnavailable
from llmeu.providers.mcp_client import ToolServerClient
from llmeu.providers.transport import HttpClient
from llmeu.routing.catalog import SovereigntyClass, Timeouts
from llmeu.routing.durations import ZERO
from llmeu.routing.tool_servers import ToolServer
from tests.support.mcp_processes import ToolServerProcess, start_tool_server
from tests.support.processes import free_port
from tests.support.waiting import until

VARIANTS = {
    "dual-era": ((), True),
    "stateless-json": (("--json", "--stateless"), True),
    "handshake-era": (("--legacy",), False),
    "handshake-era-json": (("--legacy", "--json"), False),
}
STREAMING = ("dual-era", "handshake-era")
"""Where the client's hang-up reaches the running tool: a 2026-07-28 server answering JSON
reads nothing more of a request once it runs it, so it cannot learn of a closed connection
before it answers (a handshake-era one is also sent `notifications/cancelled`)."""


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, ToolServerProcess]]:
    tmp = tmp_path_factory.mktemp("tool-servers")
    started: dict[str, ToolServerProcess] = {}
    try:
        for name, (flags, _) in VARIANTS.items():
            started[name] = start_tool_server(tmp, *flags)
        yield started
    finally:
        for server in started.values():
            server.stop()


def catalogued(url: str, **fields: Any) -> ToolServer:
    return ToolServer("tools", url, "acme", "FR", SovereigntyClass.EU_SOVEREIGN, ZERO, **fields)


@pytest.fixture
async def http() -> AsyncIterator[HttpClient]:
    client = HttpClient()
    yield client
    await client.aclose()


@dataclass
class Subject:
    client: ToolServerClient
    server: ToolServerProcess
    modern: bool
    variant: str


@pytest.fixture(params=list(VARIANTS))
async def client(
    request: pytest.FixtureRequest, servers: dict[str, ToolServerProcess], http: HttpClient
) -> AsyncIterator[Subject]:
    server = servers[request.param]
    server.reset()
    timeouts = Timeouts(connect=5, first_token=5, idle=5, total=6)
    tool_client = ToolServerClient(
        catalogued(server.url, timeouts=timeouts, max_result_bytes=1 << 20), http, {}
    )
    yield Subject(tool_client, server, VARIANTS[request.param][1], request.param)
    await tool_client.aclose()


async def tools(client: ToolServerClient) -> dict[str, dict[str, Any]]:
    listed = await client.list_tools(Hangup())
    return {t["name"]: t for t in listed.tools}


async def test_lists_and_calls_in_the_server_s_era(
    client: Subject,
) -> None:
    tool_client, server, modern = client.client, client.server, client.modern
    listed = await tools(tool_client)
    assert {"echo", "weather", "count_slowly"} <= set(listed)
    outcome = await tool_client.call_tool(listed["echo"], {"text": "bonjour"}, {}, Hangup())
    assert outcome.result is not None and outcome.result["content"][0]["text"] == "bonjour"
    assert outcome.sent > 0 and outcome.received > 0
    call = server.stats()["calls"][-1]
    assert call["headers"]["mcp-protocol-version"] == ("2026-07-28" if modern else "2025-11-25")
    assert (call["headers"].get("mcp-method") == "tools/call") is modern


async def test_annotated_arguments_travel_in_headers_to_a_modern_server(
    client: Subject,
) -> None:
    tool_client, server, modern = client.client, client.server, client.modern
    listed = await tools(tool_client)
    outcome = await tool_client.call_tool(listed["weather"], {"region": "eu-west"}, {}, Hangup())
    assert outcome.result is not None and "sunny in eu-west" in str(outcome.result["content"])
    headers = server.stats()["calls"][-1]["headers"]
    assert (headers.get("mcp-param-region") == "eu-west") is modern


async def test_progress_comes_back_with_the_caller_s_token(
    client: Subject,
) -> None:
    tool_client = client.client
    listed = await tools(tool_client)
    seen: list[dict[str, Any]] = []

    async def progress(params: dict[str, Any]) -> None:
        seen.append(params)

    outcome = await tool_client.call_tool(
        listed["count_slowly"], {"steps": 3, "delay": 0.01}, {}, Hangup(), progress
    )
    assert outcome.result is not None
    steps = [p["progress"] for p in seen]
    assert steps in ([1, 2, 3], [])  # a JSON answer carries no notifications
    assert all(str(p["progressToken"]).startswith("llmeu-") for p in seen)


async def test_a_tool_error_is_a_result_and_a_protocol_error_is_the_server_s(
    client: Subject,
) -> None:
    tool_client = client.client
    listed = await tools(tool_client)
    failed = await tool_client.call_tool(listed["fail"], {"reason": "nope"}, {}, Hangup())
    assert failed.result is not None and failed.result["isError"] is True
    unknown = {**listed["echo"], "name": "no_such_tool"}
    refused = await tool_client.call_tool(unknown, {}, {}, Hangup())
    assert refused.result is None or refused.result.get("isError") is True
    if refused.error is not None:
        assert refused.error.code == -32602


@pytest.mark.parametrize(
    ("tool", "arguments", "error", "said"),
    [
        pytest.param("break_stream", {}, UpstreamError, "ended its stream before its answer",
                     id="broken-stream"),
        pytest.param("never_answer", {}, UpstreamTimeout, "within", id="never-answers"),
        pytest.param("big", {"megabytes": 2}, UpstreamError, "more than 1048576 bytes",
                     id="too-large"),
        pytest.param("sleep", {"seconds": 30}, UpstreamTimeout, "timeout", id="too-slow"),
    ],
)  # fmt: skip
async def test_faults_are_clear_errors_in_bounded_time(
    client: Subject,
    tool: str,
    arguments: dict[str, Any],
    error: type[Exception],
    said: str,
) -> None:
    tool_client = client.client
    listed = await tools(tool_client)
    began = time.monotonic()
    with pytest.raises(error) as failed:
        await tool_client.call_tool(listed[tool], arguments, {}, Hangup())
    assert said in str(failed.value)
    assert time.monotonic() - began < 15  # bounded by the server's timeouts (total 6 s)


async def test_a_hang_up_cancels_the_call_at_the_server(
    client: Subject,
) -> None:
    tool_client, server = client.client, client.server
    listed = await tools(tool_client)
    hangup = Hangup()
    loop = asyncio.get_running_loop()
    loop.call_later(0.5, hangup.fire)
    began = time.monotonic()
    with pytest.raises(ClientDisconnected):
        await tool_client.call_tool(listed["sleep"], {"seconds": 4}, {}, hangup)
    assert time.monotonic() - began < 3
    if client.variant not in STREAMING:
        return
    await until(lambda: "sleep" in server.stats()["cancelled"], timeout=10, what="the cancel")


async def test_a_server_that_refuses_connections(http: HttpClient) -> None:
    tool_client = ToolServerClient(catalogued(f"http://127.0.0.1:{free_port()}/mcp"), http, {})
    with pytest.raises(UpstreamUnavailable, match="could not connect"):
        await tool_client.list_tools(Hangup())


async def test_the_bearer_token_comes_from_the_environment(
    tmp_path: Path, http: HttpClient
) -> None:
    server = start_tool_server(tmp_path, "--token", "tok-1234567890")
    try:
        entry = catalogued(server.url, api_key_env="TOOLS_TOKEN")
        tool_client = ToolServerClient(entry, http, {"TOOLS_TOKEN": "tok-1234567890"})
        assert "echo" in await tools(tool_client)
        assert tool_client.secrets == ("tok-1234567890",)
        refused = ToolServerClient(entry, http, {"TOOLS_TOKEN": "wrong"})
        with pytest.raises(UpstreamError) as failed:
            await refused.list_tools(Hangup())
        assert failed.value.upstream_status == 401
    finally:
        server.stop()

"""`/mcp`'s protocol in process (httpx.ASGITransport): eras, envelope checks, statuses, errors.

The gateway's catalog holds one tool server whose address answers nothing:
what is checked here is decided before any server would be asked.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from llmeu.api.app import App, create_app
from llmeu.config import Settings
from tests.support.mcp_processes import tool_server_entry
from tests.support.processes import ADMIN_KEY, free_port

MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}}  # fmt: skip


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[App]:
    config = tmp_path / "config.yaml"
    server = tool_server_entry("crm", f"http://127.0.0.1:{free_port()}/mcp")
    config.write_text(f"mcp_servers:\n{server}default_policy: eu-strict\n")
    settings = Settings(data_dir=tmp_path, config_file=config, admin_key=ADMIN_KEY,
                        load_local_models=False, cors_origins=("https://console.example",))  # fmt: skip
    application = create_app(settings)
    await application.gateway.start()
    yield application
    await application.gateway.stop()


@pytest.fixture
async def client(app: App) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://gateway",
        headers={"authorization": f"Bearer {ADMIN_KEY}",
                 "accept": "application/json, text/event-stream"},
    ) as client:  # fmt: skip
        yield client


def message(method: str, params: dict[str, Any] | None = None, ident: int = 1) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
    if params is not None:
        body["params"] = params
    return body


def modern(
    method: str, params: dict[str, Any] | None = None
) -> tuple[dict[str, Any], dict[str, str]]:
    """A 2026-07-28 request: its envelope and its mirrored headers."""
    body = message(method, {**(params or {}), "_meta": META})
    headers = {"mcp-protocol-version": MODERN, "mcp-method": method}
    if params and "name" in params:
        headers["mcp-name"] = params["name"]
    return body, headers


async def test_the_handshake_answers_the_version_asked_for_when_spoken(
    client: httpx.AsyncClient,
) -> None:
    for asked, answered in (("2025-06-18", "2025-06-18"), ("2025-11-25", "2025-11-25"),
                            ("2024-11-05", "2025-11-25")):  # fmt: skip
        response = await client.post("/mcp", json=message("initialize", {
            "protocolVersion": asked, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}))  # fmt: skip
        assert response.status_code == 200
        result = response.json()["result"]
        assert result["protocolVersion"] == answered
        assert result["capabilities"] == {"tools": {"listChanged": False}}
        assert result["serverInfo"]["name"] == "llmeu"
        assert response.headers["mcp-session-id"].startswith("mcp-")
    ping = await client.post(
        "/mcp", json=message("ping"), headers={"mcp-protocol-version": "2025-11-25"}
    )
    assert ping.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}


async def test_discover_answers_the_versions_and_caching_hints(client: httpx.AsyncClient) -> None:
    body, headers = modern("server/discover")
    response = await client.post("/mcp", json=body, headers=headers)
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["supportedVersions"] == ["2026-07-28", "2025-11-25", "2025-06-18"]
    assert result["resultType"] == "complete" and result["cacheScope"] == "public"
    assert result["ttlMs"] > 0
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "llmeu"
    assert "mcp-session-id" not in response.headers


@pytest.mark.parametrize(
    ("change", "status", "code"),
    [
        pytest.param({"body": {"_meta": {}}}, 400, -32602, id="envelope-keys-missing"),
        pytest.param({"headers": {"mcp-method": "tools/list"}}, 400, -32020, id="method-mismatch"),
        pytest.param({"headers": {"mcp-protocol-version": "2025-11-25"}}, 400, -32020,
                     id="version-header-mismatch"),
        pytest.param({"drop": "mcp-method"}, 400, -32020, id="method-header-missing"),
        pytest.param({"version": "2099-01-01"}, 400, -32022, id="unsupported-version"),
    ],
)  # fmt: skip
async def test_a_modern_request_is_checked_rung_by_rung(
    client: httpx.AsyncClient, change: dict[str, Any], status: int, code: int
) -> None:
    body, headers = modern("server/discover")
    if "version" in change:
        body["params"]["_meta"] = {
            **META,
            "io.modelcontextprotocol/protocolVersion": change["version"],
        }
        headers["mcp-protocol-version"] = change["version"]
    body["params"].update(change.get("body", {}))
    headers.update(change.get("headers", {}))
    headers.pop(change.get("drop", ""), None)
    response = await client.post("/mcp", json=body, headers=headers)
    assert response.status_code == status
    error = response.json()["error"]
    assert error["code"] == code
    if code == -32022:
        assert error["data"] == {"supported": ["2026-07-28", "2025-11-25", "2025-06-18"],
                                 "requested": "2099-01-01"}  # fmt: skip


async def test_an_unknown_method_is_404_in_the_modern_era_and_200_in_the_handshake_era(
    client: httpx.AsyncClient,
) -> None:
    body, headers = modern("resources/list")
    modern_answer = await client.post("/mcp", json=body, headers=headers)
    assert modern_answer.status_code == 404
    assert modern_answer.json()["error"]["code"] == -32601
    legacy = await client.post("/mcp", json=message("prompts/list"),
                               headers={"mcp-protocol-version": "2025-11-25"})  # fmt: skip
    assert legacy.status_code == 200
    assert legacy.json() == {"jsonrpc": "2.0", "id": 1,
                             "error": {"code": -32601, "message": "method not found: prompts/list"}}  # fmt: skip


async def trace(client: httpx.AsyncClient, response: httpx.Response) -> dict[str, Any]:
    found: dict[str, Any] = (
        await client.get(f"/v1/platform/traces/{response.headers['x-llmeu-trace-id']}")
    ).json()
    return found


async def test_an_unknown_tool_is_refused_with_a_trace(client: httpx.AsyncClient) -> None:
    body, headers = modern("tools/call", {"name": "nowhere__x", "arguments": {}})
    response = await client.post("/mcp", json=body, headers=headers)
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["code"], error["message"]) == (-32602, "Unknown tool: nowhere__x")
    refused = await trace(client, response)
    assert (refused["route"], refused["status"], refused["request_model"]) == (
        "/mcp", "rejected", "nowhere__x",
    )  # fmt: skip
    legacy = await client.post("/mcp", json=message("tools/call", {"name": "nowhere__x"}),
                               headers={"mcp-protocol-version": "2025-06-18"})  # fmt: skip
    assert legacy.status_code == 200
    assert legacy.json()["error"]["message"] == "Unknown tool: nowhere__x"


async def test_a_server_that_cannot_be_reached_fails_the_call(client: httpx.AsyncClient) -> None:
    body, headers = modern("tools/call", {"name": "crm__nothing", "arguments": {}})
    response = await client.post("/mcp", json=body, headers=headers)
    assert response.status_code == 200
    assert response.json()["error"]["code"] == -31503
    assert "could not connect" in response.json()["error"]["message"]
    failed = await trace(client, response)
    assert failed["status"] == "failed" and failed["error"]["code"] == "upstream_unavailable"


async def test_a_tool_list_without_reachable_servers_is_empty_and_one_page(
    client: httpx.AsyncClient,
) -> None:
    body, headers = modern("tools/list")
    response = await client.post("/mcp", json=body, headers=headers)
    result = response.json()["result"]
    assert (result["tools"], result["cacheScope"], result["resultType"]) == (
        [],
        "private",
        "complete",
    )
    paged = await client.post("/mcp", json=message("tools/list", {"cursor": "abc"}))
    assert paged.json()["error"]["code"] == -32602


@pytest.mark.parametrize(
    ("body", "code"),
    [
        pytest.param(b"{", -32700, id="not-json"),
        pytest.param(b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', -32600, id="batch"),
        pytest.param(b'{"jsonrpc": "2.0", "id": 1}', -32600, id="no-method"),
    ],
)
async def test_what_is_not_a_message_is_400(
    client: httpx.AsyncClient, body: bytes, code: int
) -> None:
    response = await client.post("/mcp", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == code


async def test_notifications_and_responses_are_accepted_with_202(client: httpx.AsyncClient) -> None:
    for body in ({"jsonrpc": "2.0", "method": "notifications/initialized"},
                 {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}},
                 {"jsonrpc": "2.0", "id": "s1", "result": {}}):  # fmt: skip
        response = await client.post("/mcp", json=body)
        assert (response.status_code, response.content) == (202, b"")


async def test_no_stream_and_no_session_to_end(client: httpx.AsyncClient) -> None:
    for method in ("GET", "DELETE"):
        response = await client.request(method, "/mcp")
        assert response.status_code == 405
        assert response.json()["error"]["code"] == -31405


async def test_a_missing_key_is_401_in_json_rpc(app: App) -> None:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://g") as c:
        response = await c.post("/mcp", json=message("tools/list"))
    assert response.status_code == 401
    assert response.json()["error"]["code"] == -31401 and "id" not in response.json()


@pytest.mark.parametrize(
    ("origin", "status"),
    [("https://evil.example", 403), ("https://console.example", 200), ("http://gateway", 200)],
)
async def test_a_browser_origin_must_be_the_gateway_s_or_allowed(
    client: httpx.AsyncClient, origin: str, status: int
) -> None:
    response = await client.post("/mcp", json=message("tools/list"), headers={"origin": origin})
    assert response.status_code == status

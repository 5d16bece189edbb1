"""Hosted `mcp` tools in requests: `{"type": "mcp", "server_url": …}` on `/v1/responses`
and `mcp_servers` on `/v1/messages` are served only for catalogued tool servers the policy
admits; the gateway runs the tool loop itself, each tool call one `/mcp` trace."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from tests.support.mcp_processes import McpSetup, start_mcp_setup
from tests.support.processes import FakeUpstream, fake_endpoint, start_fake_upstream

QUESTION = "What is the weather in Paris? [[tools=1;tool=crm__get_weather]]"


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeUpstream]:
    upstream = start_fake_upstream(tmp_path_factory.mktemp("model"))
    yield upstream
    upstream.stop()


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory, model: FakeUpstream) -> Iterator[McpSetup]:
    started = start_mcp_setup(
        tmp_path_factory.mktemp("mcp"), endpoints=fake_endpoint("fakeprov-fr-a", model)
    )
    yield started
    started.stop()


@pytest.fixture(autouse=True)
def fresh_servers(setup: McpSetup) -> None:
    for server in setup.servers.values():
        server.reset()


def mcp_tool(setup: McpSetup, name: str, **fields: Any) -> dict[str, Any]:
    return {"type": "mcp", "server_label": name, "server_url": setup.servers[name].url,
            "require_approval": "never", **fields}  # fmt: skip


def responses(
    setup: McpSetup, key: str, tools: list[dict[str, Any]], **body: Any
) -> httpx.Response:
    return httpx.post(f"{setup.gateway.base_url}/responses", timeout=60,
                      headers={"authorization": f"Bearer {key}"},
                      json={"model": "fake-model", "input": QUESTION, "tools": tools, **body})  # fmt: skip


def test_the_gateway_runs_the_tool_loop_of_a_responses_request(setup: McpSetup) -> None:
    key = setup.key()
    with openai.OpenAI(base_url=setup.gateway.base_url, api_key=key, max_retries=0) as client:
        response = client.responses.create(
            model="fake-model",
            input=QUESTION,
            tools=[mcp_tool(setup, "crm")],  # type: ignore[list-item]
        )
    kinds = [item.type for item in response.output]
    assert kinds == ["mcp_list_tools", "mcp_call", "message"]
    listed, called = response.output[0], response.output[1]
    assert listed.server_label == "crm"  # type: ignore[union-attr]
    assert "get_weather" in {t.name for t in listed.tools}  # type: ignore[union-attr]
    assert (called.name, called.output) == ("get_weather", "sunny in Paris")  # type: ignore[union-attr]
    assert response.output_text == "tok0 tok1 tok2 tok3 tok4 tok5 "
    assert setup.servers["crm"].stats()["calls"][-1]["arguments"] == {"city": "Paris"}
    routes = [t["route"] for t in setup.platform("traces?limit=2")["data"]]
    assert routes == ["/mcp", "responses"]  # newest first: the tool call came during the call


def test_only_the_allowed_tools_are_offered(setup: McpSetup, model: FakeUpstream) -> None:
    response = responses(setup, setup.key(), [mcp_tool(setup, "crm", allowed_tools=["echo"])],
                         input="hello [[reply=echo]]")  # fmt: skip
    assert response.status_code == 200, response.text
    offered = [t["function"]["name"] for t in json.loads(model.stats()[-1]["body"])["tools"]]
    assert offered == ["crm__echo"]


@pytest.mark.parametrize(
    ("tool", "said"),
    [
        pytest.param({"server_label": "search"}, "not admitted by policy eu-strict",
                     id="excluded-by-policy"),
        pytest.param({"server_label": "elsewhere", "server_url": "https://tools.example.com/mcp"},
                     "not a tool server of the gateway's catalog", id="not-in-the-catalog"),
    ],
)  # fmt: skip
def test_a_server_the_policy_does_not_admit_is_refused_naming_it(
    setup: McpSetup, tool: dict[str, Any], said: str
) -> None:
    hosted = {**mcp_tool(setup, "search"), **tool}
    response = responses(setup, setup.key(), [hosted])
    assert response.status_code == 403
    error = response.json()["error"]
    assert error["code"] == "mcp_server_not_admitted" and said in error["message"]
    assert f"`{tool['server_label']}`" in error["message"]
    assert setup.servers["search"].stats()["requests"] == 0


def test_a_streamed_request_with_hosted_tools_is_refused(setup: McpSetup) -> None:
    response = responses(setup, setup.key(), [mcp_tool(setup, "crm")], stream=True)
    assert response.status_code == 400 and response.json()["error"]["param"] == "stream"


def test_the_gateway_runs_the_tool_loop_of_a_messages_request(setup: McpSetup) -> None:
    body = {"model": "fake-model", "max_tokens": 64,
            "messages": [{"role": "user", "content": QUESTION}],
            "mcp_servers": [{"type": "url", "url": setup.servers["crm"].url, "name": "crm"}]}  # fmt: skip
    response = httpx.post(f"{setup.gateway.base_url}/messages", json=body, timeout=60,
                          headers={"x-api-key": setup.key(),
                                   "anthropic-beta": "mcp-client-2025-04-04"})  # fmt: skip
    assert response.status_code == 200, response.text
    content = response.json()["content"]
    assert [b["type"] for b in content] == ["mcp_tool_use", "mcp_tool_result", "text"]
    assert content[0]["name"] == "get_weather" and content[0]["input"] == {"city": "Paris"}
    assert content[1]["content"] == [{"type": "text", "text": "sunny in Paris"}]
    assert content[1]["tool_use_id"] == content[0]["id"]
    refused = httpx.post(f"{setup.gateway.base_url}/messages", timeout=60,
                         headers={"x-api-key": setup.key()},
                         json={**body, "mcp_servers": [{"type": "url", "name": "search",
                                                        "url": setup.servers["search"].url}]})  # fmt: skip
    assert refused.status_code == 403
    assert refused.json()["error"]["type"] == "permission_error"

"""OpenAI's agents SDK (`openai-agents`) with llmeu on both sides of an agent: its model
through `/v1/chat/completions` and its tools through `/mcp` (the SDK's MCP integration,
`MCPServerStreamableHttp`), under one key's policy, each step a trace."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, set_tracing_disabled
from agents.mcp import MCPServerStreamableHttp
from openai import AsyncOpenAI

from tests.support.mcp_processes import McpSetup, start_mcp_setup
from tests.support.processes import FakeUpstream, fake_endpoint, start_fake_upstream


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


def tools_of(setup: McpSetup, key: str) -> MCPServerStreamableHttp:
    return MCPServerStreamableHttp(
        params={"url": setup.url, "headers": {"Authorization": f"Bearer {key}"}},
        name="llmeu",
        cache_tools_list=True,
    )


async def test_the_agents_sdk_lists_and_calls_tools_through_the_gateway(setup: McpSetup) -> None:
    async with tools_of(setup, setup.key()) as server:
        names = {tool.name for tool in await server.list_tools()}
        result = await server.call_tool("crm__echo", {"text": "bonjour"})
    assert {"crm__echo", "legacy__echo"} <= names
    assert not [n for n in names if n.startswith("search__")]
    assert result.content[0].text == "bonjour"  # type: ignore[union-attr]


async def test_an_agent_s_model_and_its_tools_both_go_through_the_gateway(
    setup: McpSetup, model: FakeUpstream
) -> None:
    set_tracing_disabled(True)
    key = setup.key()
    question = "What is the weather in Paris? [[tools=1;tool=crm__get_weather]]"
    openai = AsyncOpenAI(base_url=setup.gateway.base_url, api_key=key, max_retries=0)
    async with openai, tools_of(setup, key) as server:
        agent = Agent(
            name="weather",
            instructions="Answer with the weather.",
            mcp_servers=[server],
            model=OpenAIChatCompletionsModel(model="fake-model", openai_client=openai),
        )
        result = await Runner.run(agent, question, run_config=RunConfig(tracing_disabled=True))
    assert result.final_output == "tok tok tok tok tok tok"
    assert setup.servers["crm"].stats()["calls"][-1]["arguments"] == {"city": "Paris"}
    second = model.stats()[-1]["messages"]
    assert second[-1]["role"] == "tool"
    assert second[-1]["content"] == [{"type": "text", "text": "sunny in Paris"}]
    routes = [t["route"] for t in setup.platform("traces?limit=3")["data"]]
    assert routes == ["chat.completions", "/mcp", "chat.completions"]

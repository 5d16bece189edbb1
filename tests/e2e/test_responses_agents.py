"""OpenAI's agents SDK (`openai-agents`) running an agent with one function tool through llmeu's
Responses API against the fake upstream: the tool is called with the model's arguments and
the final answer arrives, streamed and not."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from agents import (
    Agent,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from openai import AsyncOpenAI

from tests.support.processes import FakeUpstream, Gateway, config_yaml, fake_endpoint


@pytest.fixture
def gateway(gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream) -> Gateway:
    return gateway_factory(config=config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream)))


def weather_agent(client: AsyncOpenAI, cities: list[str]) -> Agent:
    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        cities.append(city)
        return f"sunny in {city}"

    return Agent(
        name="weather",
        instructions="Answer with the weather.",
        tools=[get_weather],
        model=OpenAIResponsesModel(model="fake-model", openai_client=client),
    )


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run-streamed"])
async def test_an_agent_calls_its_tool_and_answers(
    gateway: Gateway, fake_upstream: FakeUpstream, streamed: bool
) -> None:
    set_tracing_disabled(True)
    cities: list[str] = []
    question = "What is the weather in Paris? [[tools=1;chunks=3]]"
    config = RunConfig(tracing_disabled=True)
    async with AsyncOpenAI(
        base_url=gateway.base_url, api_key=gateway.admin_key, max_retries=0
    ) as client:
        agent = weather_agent(client, cities)
        if streamed:
            result = Runner.run_streamed(agent, question, run_config=config)
            async for _ in result.stream_events():
                pass
            final = result.final_output
        else:
            final = (await Runner.run(agent, question, run_config=config)).final_output
    assert cities == ["Paris"]
    assert final == ("tok0 tok1 tok2 tok3 tok4 tok5 " if streamed else "tok tok tok tok tok tok")
    second = fake_upstream.stats()[-1]["messages"]
    assert second[0] == {"role": "system", "content": "Answer with the weather."}
    assert second[-1] == {"role": "tool", "content": "sunny in Paris", "tool_call_id": "call_1"}

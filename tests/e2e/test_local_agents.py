"""Agent loops with one function tool on the embedded default: a real `llmeu serve` with no
configuration (the bundled SmolLM2 answers), driven by the Agents SDKs (Python and Node) with
their default provider and by the Vercel AI SDK's agent loop.

A 135M model chooses poorly, so the runs leave it no choice where the wire is not what is under
test: the first step must call the tool (`tool_choice: required`); the Agents SDKs stop on the
tool's result (`stop_on_first_tool`), the AI SDK's loop asks for the answer in text on its
second step (`toolChoice: "none"`). What is checked is that the tool ran with arguments of its
schema and that the final output arrived, with one completed trace per model call.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.processes import Gateway, start_gateway

NODE_CLIENTS = Path(__file__).parents[1] / "clients" / "node" / "node_modules"

pytestmark = pytest.mark.skipif(find_spec("llama_cpp") is None, reason="needs the `local` extra")

NODE_AGENTS = """
import { Agent, run, tool, setTracingDisabled } from '@openai/agents';
import { z } from 'zod';

setTracingDisabled(true);
const calls = [];
const getWeather = tool({
  name: 'get_weather',
  description: 'The weather in a city.',
  parameters: z.object({ city: z.string() }),
  execute: async ({ city }) => { calls.push(city); return `sunny in ${city}`; },
});
const agent = new Agent({
  name: 'forecaster',
  instructions: 'Use the tool to answer.',
  model: 'smollm2',
  tools: [getWeather],
  modelSettings: { toolChoice: 'required', maxTokens: 64 },
  toolUseBehavior: 'stop_on_first_tool',
});
const result = await run(agent, 'What is the weather in Paris?');
console.log(JSON.stringify({ calls, output: result.finalOutput }));
"""

VERCEL_AGENT = """
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, stepCountIs, tool } from 'ai';
import { z } from 'zod';

const openai = createOpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY });
const calls = [];
const result = await generateText({
  model: openai.chat('smollm2'),
  maxOutputTokens: 64,
  tools: {
    get_weather: tool({
      description: 'The weather in a city.',
      inputSchema: z.object({ city: z.string() }),
      execute: async ({ city }) => { calls.push(city); return `sunny in ${city}`; },
    }),
  },
  stopWhen: stepCountIs(3),
  prepareStep: ({ stepNumber }) => ({ toolChoice: stepNumber === 0 ? 'required' : 'none' }),
  prompt: 'What is the weather in Paris?',
});
console.log(JSON.stringify({ calls, output: result.text, steps: result.steps.length }));
"""


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    started = start_gateway(tmp_path_factory.mktemp("agents"), local_models=True, timeout=120)
    yield started
    started.kill()


def statuses(gateway: Gateway) -> list[str]:
    response = httpx.get(
        f"{gateway.base_url}/platform/traces?limit=200",
        headers={"authorization": f"Bearer {gateway.admin_key}"},
        timeout=10,
    )
    response.raise_for_status()
    return [trace["status"] for trace in response.json()["data"]]


def run_node(gateway: Gateway, script: str, tmp: Path) -> dict[str, Any]:
    if shutil.which("node") is None:
        pytest.skip("needs Node")
    assert NODE_CLIENTS.is_dir(), "the Node clients are missing: run `make install`"
    (tmp / "node_modules").symlink_to(NODE_CLIENTS)
    (tmp / "agent.mjs").write_text(script, encoding="utf-8")
    env = {**os.environ, "OPENAI_BASE_URL": gateway.base_url, "OPENAI_API_KEY": gateway.admin_key}
    done = subprocess.run(
        ["node", "agent.mjs"], cwd=tmp, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_python_agents_sdk_runs_its_tool(gateway: Gateway) -> None:
    from agents import (
        Agent,
        ModelSettings,
        Runner,
        function_tool,
        set_default_openai_client,
        set_tracing_disabled,
    )
    from openai import AsyncOpenAI

    calls: list[str] = []

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        calls.append(city)
        return f"sunny in {city}"

    set_tracing_disabled(True)
    set_default_openai_client(AsyncOpenAI(base_url=gateway.base_url, api_key=gateway.admin_key))
    agent = Agent(
        name="forecaster",
        instructions="Use the tool to answer.",
        model="smollm2",
        tools=[get_weather],
        model_settings=ModelSettings(tool_choice="required", max_tokens=64),
        tool_use_behavior="stop_on_first_tool",
    )
    before = len(statuses(gateway))
    result = Runner.run_sync(agent, "What is the weather in Paris?")
    assert len(calls) >= 1 and all(isinstance(city, str) for city in calls)
    assert result.final_output == f"sunny in {calls[0]}"
    assert statuses(gateway)[: len(statuses(gateway)) - before] == ["completed"]


def test_node_agents_sdk_runs_its_tool(gateway: Gateway, tmp_path: Path) -> None:
    before = len(statuses(gateway))
    result = run_node(gateway, NODE_AGENTS, tmp_path)
    assert result["calls"] and all(isinstance(city, str) for city in result["calls"])
    assert result["output"] == f"sunny in {result['calls'][0]}"
    after = statuses(gateway)
    assert after[: len(after) - before] == ["completed"]


def test_vercel_ai_sdk_agent_loop_calls_the_tool_then_answers(
    gateway: Gateway, tmp_path: Path
) -> None:
    before = len(statuses(gateway))
    result = run_node(gateway, VERCEL_AGENT, tmp_path)
    assert result["calls"] and all(isinstance(city, str) for city in result["calls"])
    assert result["steps"] == 2
    assert result["output"].strip()
    after = statuses(gateway)
    assert after[: len(after) - before] == ["completed", "completed"]

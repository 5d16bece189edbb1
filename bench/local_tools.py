"""What tools cost the bundled model: time per generated token with and without them.

    python bench/local_tools.py                  # 5 rounds of 64 tokens each way
    python bench/local_tools.py --rounds 9 --tokens 128

One provider and the model host it launches (the gateway's own path), the
same question each round in three ways:
no tools; tools with `tool_choice: auto` (the grammar admits a plain answer,
and SmolLM2 mostly gives one); tools with `tool_choice: required` (every
token under the grammar, until the call is whole). A round's time per token
runs from its first delta to its end, divided by the tokens after the first,
so the prompt (longer with the tools' section) is not counted; the median of
the rounds is reported, and each way's ratio to the one without tools. The
issue's target is an overhead of at most 10 %.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

import msgspec

from llmeu.calls.hangup import Hangup
from llmeu.calls.request import ChatRequest
from llmeu.modelhost.launch import HostLimits
from llmeu.providers.host_link import HostLink
from llmeu.providers.local_chat import LocalChatProvider
from llmeu.routing.builtin import local_endpoints

QUESTION = "Tell me about the weather in Paris in spring, in detail."
TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather forecast for a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    },
}
WAYS: dict[str, dict[str, Any]] = {
    "no tools": {},
    "tools, auto": {"tools": [TOOL], "tool_choice": "auto"},
    "tools, required": {"tools": [TOOL], "tool_choice": "required", "parallel_tool_calls": True},
}


async def _seconds_per_token(
    provider: LocalChatProvider, fields: dict[str, Any], tokens: int
) -> tuple[float, int]:
    body = {"model": "smollm2", "messages": [{"role": "user", "content": QUESTION}],
            "max_tokens": tokens, "temperature": 0, **fields}  # fmt: skip
    stream = await provider.stream_chat(msgspec.convert(body, ChatRequest), Hangup())
    first = 0.0
    while (delta := await stream.next_delta()) is not None:
        if not first and delta.carries_output():
            first = time.perf_counter()
    end = time.perf_counter()
    made = stream.usage.completion_tokens if stream.usage else 0
    await stream.aclose()
    return (end - first) / max(made - 1, 1), made


async def main(rounds: int, tokens: int, threads: int) -> None:
    endpoint = next(e for e in local_endpoints("bench") if "smollm2" in e.aliases)
    provider = LocalChatProvider(endpoint, HostLink(None, limits=HostLimits(threads, 300.0, 0)))
    await provider.start()
    times: dict[str, list[float]] = {way: [] for way in WAYS}
    made: dict[str, list[int]] = {way: [] for way in WAYS}
    await _seconds_per_token(provider, {}, 8)  # warm up
    for _ in range(rounds):
        for way, fields in WAYS.items():  # interleaved: the machine's load hits every way alike
            seconds, count = await _seconds_per_token(provider, fields, tokens)
            times[way].append(seconds)
            made[way].append(count)
    await provider.aclose()
    base = statistics.median(times["no tools"])
    print(f"{'way':<18}{'ms/token':>10}{'tokens':>8}{'ratio':>8}")
    for way in WAYS:
        median = statistics.median(times[way])
        count = statistics.median(made[way])
        print(f"{way:<18}{median * 1000:>10.2f}{count:>8.0f}{median / base:>8.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    options = parser.parse_args()
    asyncio.run(main(options.rounds, options.tokens, options.threads))

"""What decoding a streamed answer costs per provider kind, relative to the OpenAI kind.

    .venv/bin/python bench/native_decode.py [--deltas 200] [--rounds 30]

Each kind's stream class (the product's own: OpenAI SSE, Azure OpenAI's SSE
with its filter annotations, Bedrock's binary event stream through botocore's
parser, Gemini's SSE) decodes the same answer — `--deltas` text deltas, then
the end and the usage — from bytes held in memory, cut into the network
chunks an upstream would send (one frame per chunk), so only decoding is
measured: no socket, no server. Prints the median CPU time per delta of each
kind and the median of its per-round ratio to the OpenAI kind (the kinds take
turns within each round of the same run).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from llmeu.calls.hangup import Hangup
from llmeu.providers.base import ChatStream
from llmeu.providers.bedrock import _ConverseStream
from llmeu.providers.openai import _OpenAIChatStream
from llmeu.providers.vertex import _GeminiStream
from llmeu.routing.catalog import (
    Endpoint,
    EndpointKind,
    Prices,
    SovereigntyClass,
)
from llmeu.routing.durations import ZERO
from tests.support import eventstream

ENDPOINT = Endpoint(
    "bench", "bench", EndpointKind.OPENAI, "m", "1", ("m",), "eu", "FR",
    SovereigntyClass.EU_RESIDENT, ZERO, Prices(0, 0),
)  # fmt: skip


class MemoryResponse:
    """The part of `transport.Response` a stream reads, over chunks held in memory."""

    def __init__(self, chunks: list[bytes]):
        self._chunks = iter(chunks)

    async def read_chunk(self, timeout: float) -> bytes | None:
        return next(self._chunks, None)

    def read_buffered(self) -> bytes | None:
        return None

    def release(self) -> None:
        pass

    def abort(self, error: BaseException | None = None) -> None:
        pass


def openai_chunks(n: int, azure: bool = False) -> list[bytes]:
    def frame(choices: list[object], **extra: object) -> bytes:
        body = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
                "model": "m", "choices": choices, **extra}  # fmt: skip
        return b"data: " + json.dumps(body).encode() + b"\n\n"

    filters = {c: {"filtered": False, "severity": "safe"} for c in ("hate", "violence")}
    annotate = {"content_filter_results": filters} if azure else {}
    out = [frame([{"index": 0, "delta": {"role": "assistant", "content": ""},
                   "finish_reason": None}])]  # fmt: skip
    out += [frame([{"index": 0, "delta": {"content": f"tok{i} "}, "finish_reason": None,
                    **annotate}]) for i in range(n)]  # fmt: skip
    out.append(frame([{"index": 0, "delta": {}, "finish_reason": "stop"}]))
    out.append(frame([], usage={"prompt_tokens": 11, "completion_tokens": n,
                                "total_tokens": 11 + n}))  # fmt: skip
    return [*out, b"data: [DONE]\n\n"]


def bedrock_chunks(n: int) -> list[bytes]:
    out = [eventstream.event("messageStart", {"role": "assistant"})]
    out += [
        eventstream.event(
            "contentBlockDelta", {"delta": {"text": f"tok{i} "}, "contentBlockIndex": 0}
        )
        for i in range(n)
    ]
    out.append(eventstream.event("contentBlockStop", {"contentBlockIndex": 0}))
    out.append(eventstream.event("messageStop", {"stopReason": "end_turn"}))
    usage = {"inputTokens": 11, "outputTokens": n, "totalTokens": 11 + n}
    return [*out, eventstream.event("metadata", {"usage": usage, "metrics": {"latencyMs": 1}})]


def gemini_chunks(n: int) -> list[bytes]:
    def frame(body: object) -> bytes:
        return b"data: " + json.dumps(body).encode() + b"\r\n\r\n"

    out = [frame({"candidates": [{"content": {"role": "model", "parts": [{"text": f"tok{i} "}]}}],
                  "modelVersion": "g"}) for i in range(n)]  # fmt: skip
    usage = {"promptTokenCount": 11, "candidatesTokenCount": n, "totalTokenCount": 11 + n}
    last = {"candidates": [{"content": {"role": "model", "parts": []}, "finishReason": "STOP"}],
            "usageMetadata": usage}  # fmt: skip
    return [*out, frame(last)]


Make = Callable[[MemoryResponse], ChatStream]
KINDS: dict[str, tuple[Callable[[int], list[bytes]], Make]] = {
    "openai": (openai_chunks, lambda r: _OpenAIChatStream(ENDPOINT, r, time.monotonic(), Hangup())),  # type: ignore[arg-type]
    "azure_openai": (lambda n: openai_chunks(n, azure=True),
                     lambda r: _OpenAIChatStream(ENDPOINT, r, time.monotonic(), Hangup())),  # type: ignore[arg-type]
    "bedrock": (bedrock_chunks, lambda r: _ConverseStream(ENDPOINT, r, time.monotonic(), Hangup())),  # type: ignore[arg-type]
    "vertex": (gemini_chunks, lambda r: _GeminiStream(ENDPOINT, r, time.monotonic(), Hangup())),  # type: ignore[arg-type]
}  # fmt: skip


async def decode(chunks: list[bytes], make: Make) -> tuple[float, int]:
    stream = make(MemoryResponse(chunks))
    started = time.process_time()
    deltas = 0
    while await stream.next_delta() is not None:
        deltas += 1
    elapsed = time.process_time() - started
    assert stream.usage is not None and stream.finish_reason == "stop"
    return elapsed, deltas


async def main(n: int, rounds: int) -> None:
    """Kinds take turns within each round, so a neighbour's load on a shared machine hits
    them alike; each round's ratio is to the OpenAI kind of that same round."""
    rendered = {name: render(n) for name, (render, _) in KINDS.items()}
    for name, (_, make) in KINDS.items():
        await decode(rendered[name], make)  # warm-up
    per_delta: dict[str, list[float]] = {name: [] for name in KINDS}
    ratios: dict[str, list[float]] = {name: [] for name in KINDS}
    for _ in range(rounds):
        this_round = {}
        for name, (_, make) in KINDS.items():
            elapsed, deltas = await decode(rendered[name], make)
            assert deltas == n, (name, deltas)
            this_round[name] = elapsed / n
            per_delta[name].append(elapsed / n)
        for name, value in this_round.items():
            ratios[name].append(value / this_round["openai"])
    print(f"decode cost per delta, {n} deltas, median of {rounds} interleaved rounds")
    print(f"{'kind':<14}{'us/delta':>10}{'x openai':>10}")
    for name in KINDS:
        median = statistics.median(per_delta[name]) * 1e6
        print(f"{name:<14}{median:>10.2f}{statistics.median(ratios[name]):>10.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deltas", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    asyncio.run(main(args.deltas, args.rounds))

"""The process hop's cost: the local chat model in this process against the model host.

    .venv/bin/python bench/model_host.py [--rounds 7] [--tokens 64] [--threads 2]

Loads the bundled chat model here, as the gateway's provider did before the
model host, and launches a model host beside it; the two take turns within
each round, generating the same answer (temperature 0, fixed seed, a
`--tokens` cap). In-process generation runs in a thread whose tokens cross to
the event loop through a queue, as the old provider's did; hosted generation
goes through the gateway's own link (`HostLink`): a Unix socket, one msgpack
frame per piece. Prints the median time to first token and time per
generated token of each, and the median of their per-round ratios (target:
at most 1.03). Run it on an otherwise idle machine: both take every core.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from llmeu.modelhost.chat_model import ChatModel, Finished, Job
from llmeu.modelhost.launch import HostLimits
from llmeu.providers.host_link import HostLink

MODEL = "SmolLM2-135M-Instruct"
MESSAGES = [{"role": "user", "content": "Write a long story about a lighthouse keeper."}]
SAMPLING = {"temp": 0.0, "top_p": 0.95, "frequency_penalty": 0.0, "presence_penalty": 0.0}
_END = object()


async def in_process(chat: ChatModel, tokens: int) -> tuple[float, float, int]:
    """Time to first piece, time per generated token after it, and the tokens made."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[object] = asyncio.Queue()
    began = time.perf_counter()
    job = Job(chat.prompt_tokens(MESSAGES), tokens, (), SAMPLING, 1)

    def run() -> None:
        for item in chat.generate(job, threading.Event()):
            loop.call_soon_threadsafe(queue.put_nowait, item)
        loop.call_soon_threadsafe(queue.put_nowait, _END)

    worker = threading.Thread(target=run)
    worker.start()
    first = made = 0.0
    while (item := await queue.get()) is not _END:
        if isinstance(item, str) and not first:
            first = time.perf_counter()
        if isinstance(item, Finished):
            made = item.completion_tokens
    ended = time.perf_counter()
    worker.join()
    return first - began, (ended - first) / max(made - 1, 1), int(made)


async def hosted(link: HostLink, tokens: int) -> tuple[float, float, int]:
    request = {"op": "generate", "messages": MESSAGES, "max_tokens": tokens, "stop": [],
               "sampling": SAMPLING, "seed": 1, "grammar": None}  # fmt: skip
    began = time.perf_counter()
    reader, writer = await link.connect(request)
    first = 0.0
    made = 0
    while (frame := await link.read(reader))["ev"] != "end":
        if frame["ev"] == "text" and not first:
            first = time.perf_counter()
    made = int(frame["tokens"])
    ended = time.perf_counter()
    writer.close()
    return first - began, (ended - first) / max(made - 1, 1), made


async def main(rounds: int, tokens: int, threads: int) -> None:
    link = HostLink(None, limits=HostLimits(threads, 300.0, 0))
    await link.start()
    chat = ChatModel(MODEL, threads=threads)
    try:
        await in_process(chat, 8)  # warm both
        await hosted(link, 8)
        rows: list[tuple[tuple[float, float, int], tuple[float, float, int]]] = []
        for round_number in range(rounds):  # who goes first alternates: no order effect
            if round_number % 2:
                there = await hosted(link, tokens)
                here = await in_process(chat, tokens)
            else:
                here = await in_process(chat, tokens)
                there = await hosted(link, tokens)
            rows.append((here, there))
    finally:
        await link.aclose()
    _report(rows)


def _report(rows: list[tuple[tuple[float, float, int], tuple[float, float, int]]]) -> None:
    def median(values: list[float]) -> float:
        return statistics.median(values)

    ttft_in = median([r[0][0] for r in rows]) * 1e3
    ttft_host = median([r[1][0] for r in rows]) * 1e3
    tpot_in = median([r[0][1] for r in rows]) * 1e3
    tpot_host = median([r[1][1] for r in rows]) * 1e3
    print(f"tokens per answer: in-process {rows[0][0][2]}, hosted {rows[0][1][2]}")
    print(f"time to first token   in-process {ttft_in:7.2f} ms   hosted {ttft_host:7.2f} ms   "
          f"ratio {median([r[1][0] / r[0][0] for r in rows]):.3f}")  # fmt: skip
    print(f"time per output token in-process {tpot_in:7.2f} ms   hosted {tpot_host:7.2f} ms   "
          f"ratio {median([r[1][1] / r[0][1] for r in rows]):.3f}")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    asyncio.run(main(args.rounds, args.tokens, args.threads))

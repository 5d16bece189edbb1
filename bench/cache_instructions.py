"""A cache hit's instructions against a proxied call's, counted by valgrind in one gateway.

    python bench/cache_instructions.py [--calls 300] [--streams 60] [--chunks 64]

`cache.py` measures CPU seconds, which move by tens of percent when other work
shares the machine; the instructions a process executes do not. One llmeu
runs under callgrind (`callgrind.py`: instrumentation off while it starts,
counters zeroed before and dumped after each measured load) with `cache.py`'s
two tenant keys: one under a policy without a cache (every call proxied to the
fake upstream), one under the same policy with `cache: {ttl: PT1H}` (every
call after the first a hit). For non-streamed calls and for streams of
`--chunks` deltas, each key's load runs at concurrency 4 after a warm-up of 8
calls, and the instructions per call of each are printed with hit / proxied.
Last, as many `GET /healthz` at concurrency 4: an HTTP exchange with the same
server and nothing else (no key, no trace), the floor under any call.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
from pathlib import Path

import httpx

import callgrind
from cache import POLICIES


async def _keys(root: str) -> list[str]:
    """A tenant key for each of `cache.py`'s policies: the uncached one first."""
    headers = {"authorization": f"Bearer {callgrind.API_KEY}"}
    keys = []
    async with httpx.AsyncClient(base_url=root, headers=headers, timeout=120) as admin:
        for policy_id, policy in POLICIES.items():
            (await admin.put(f"/v1/platform/policies/{policy_id}", json=policy)).raise_for_status()
            made = await admin.post("/v1/platform/keys", json={"name": policy_id,
                                                               "policy_id": policy_id})  # fmt: skip
            made.raise_for_status()
            keys.append(made.json()["key"])
    return keys


async def _exchanges(root: str, count: int) -> None:
    """`count` bare HTTP exchanges: `GET /healthz`, at concurrency 4."""
    pending = iter(range(count))
    async with httpx.AsyncClient(base_url=root, timeout=120) as client:

        async def worker() -> None:
            for _ in pending:
                response = await client.get("/healthz")
                assert response.status_code == 200, response.text[:300]

        await asyncio.gather(*(worker() for _ in range(4)))


def measure(calls: int, streams: int, chunks: int) -> dict[tuple[bool, str], float]:
    """Instructions per call, by (streamed, "proxied" | "hit"); (False, "exchange") for a bare
    HTTP exchange."""
    counted: dict[tuple[bool, str], float] = {}
    with callgrind.counted_gateway(Path(sys.executable), "llmeu-cache-instr-") as gateway:
        proxied, cached = asyncio.run(_keys(gateway.root))
        for stream, count in ((False, calls), (True, streams)):
            for name, key in (("proxied", proxied), ("hit", cached)):
                # warm the paths and the entry
                asyncio.run(callgrind.load(gateway.root, key, 8, stream, chunks))
                gateway.zero()
                asyncio.run(callgrind.load(gateway.root, key, count, stream, chunks))
                counted[(stream, name)] = gateway.measured() / count
        asyncio.run(_exchanges(gateway.root, 8))
        gateway.zero()
        asyncio.run(_exchanges(gateway.root, calls))
        counted[(False, "exchange")] = gateway.measured() / calls
    return counted


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--streams", type=int, default=60)
    parser.add_argument("--chunks", type=int, default=64)
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("valgrind is missing: apt-get install -y valgrind", file=sys.stderr)
        return 1
    counted = measure(args.calls, args.streams, args.chunks)
    print(f"{'instructions per call':28} {'proxied':>12} {'hit':>12} {'hit / proxied':>14}")
    for stream, label in ((False, "non-stream"), (True, f"stream of {args.chunks} chunks")):
        proxied, hit = counted[(stream, "proxied")], counted[(stream, "hit")]
        print(f"{label:28} {proxied:12,.0f} {hit:12,.0f} {hit / proxied:14.3f}")
    exchange, proxied = counted[(False, "exchange")], counted[(False, "proxied")]
    print(f"{'GET /healthz (the floor)':28} {exchange:12,.0f} {'':12} "
          f"{exchange / proxied:14.3f}  (of a non-streamed proxied call)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

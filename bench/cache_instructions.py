"""A cache hit's instructions against a proxied call's, counted by valgrind in one gateway.

    python bench/cache_instructions.py [--calls 300] [--streams 60] [--chunks 64]

`cache.py` measures CPU seconds, which move by tens of percent when other work
shares the machine; the instructions a process executes do not. One llmeu
runs under callgrind (`instructions.py`: instrumentation off while it starts,
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
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx

import gateways
import procs
from cache import POLICIES
from instructions import API_KEY, _Child, _measured, _zero


async def _keys(base: str) -> list[str]:
    """A tenant key for each of `cache.py`'s policies: the uncached one first."""
    headers = {"authorization": f"Bearer {API_KEY}"}
    keys = []
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=120) as admin:
        for policy_id, policy in POLICIES.items():
            (await admin.put(f"/v1/platform/policies/{policy_id}", json=policy)).raise_for_status()
            made = await admin.post("/v1/platform/keys", json={"name": policy_id,
                                                               "policy_id": policy_id})  # fmt: skip
            made.raise_for_status()
            keys.append(made.json()["key"])
    return keys


async def _exchanges(base: str, count: int) -> None:
    """`count` bare HTTP exchanges: `GET /healthz`, at concurrency 4."""
    pending = iter(range(count))
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:

        async def worker() -> None:
            for _ in pending:
                response = await client.get("/healthz")
                assert response.status_code == 200, response.text[:300]

        await asyncio.gather(*(worker() for _ in range(4)))


async def _load(base: str, key: str, count: int, stream: bool, chunks: int) -> None:
    body = {
        "model": gateways.MODEL,
        "stream": stream,
        "messages": [{"role": "user", "content": f"bench: chunks={chunks}"}],
    }
    pending = iter(range(count))
    headers = {"authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=120) as client:

        async def worker() -> None:
            for _ in pending:
                response = await client.post("/v1/chat/completions", json=body)
                assert response.status_code == 200, response.text[:300]

        await asyncio.gather(*(worker() for _ in range(4)))


def measure(calls: int, streams: int, chunks: int) -> dict[tuple[bool, str], float]:
    """Instructions per call, by (streamed, "proxied" | "hit"); (False, "exchange") for a bare
    HTTP exchange."""
    work = Path(tempfile.mkdtemp(prefix="llmeu-cache-instr-"))
    upstream_port, port = procs.free_port(), procs.free_port()
    upstream = subprocess.Popen(
        [sys.executable, str(gateways.BENCH_DIR / "upstream.py"), "--port", str(upstream_port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    config = work / "llmeu.yaml"
    config.write_text(gateways.llmeu_config(f"http://127.0.0.1:{upstream_port}/v1"))
    out = work / "callgrind.out"
    argv = [
        "valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
        sys.executable, "-m", "llmeu.cli.main", "serve", "--config", str(config),
        "--port", str(port), "--data-dir", str(work / "data"), "--no-local",
        "--log-level", "warning",
    ]  # fmt: skip
    env = {
        **os.environ,
        "LLMEU_ADMIN_KEY": API_KEY,
        "LLMEU_BENCH_UPSTREAM_KEY": gateways.UPSTREAM_KEY,
        "PYTHONHASHSEED": "0",
    }
    log = (work / "gateway.log").open("wb")
    gateway = subprocess.Popen(  # in `work`: `-m` must not find another checkout's llmeu
        argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=work
    )
    root = f"http://127.0.0.1:{port}"
    counted: dict[tuple[bool, str], float] = {}
    try:
        ready = procs.wait_ready(_Child(gateway), f"{root}/healthz", 300)
        asyncio.run(ready)  # type: ignore[arg-type]
        subprocess.run(["callgrind_control", "-i", "on", str(gateway.pid)], check=True,
                       capture_output=True)  # fmt: skip
        proxied, cached = asyncio.run(_keys(root))
        for stream, count in ((False, calls), (True, streams)):
            for name, key in (("proxied", proxied), ("hit", cached)):
                asyncio.run(_load(root, key, 8, stream, chunks))  # the paths, the entry
                _zero(gateway.pid)
                asyncio.run(_load(root, key, count, stream, chunks))
                counted[(stream, name)] = _measured(gateway.pid, out) / count
        asyncio.run(_exchanges(root, 8))
        _zero(gateway.pid)
        asyncio.run(_exchanges(root, calls))
        counted[(False, "exchange")] = _measured(gateway.pid, out) / calls
        return counted
    finally:
        for child in (gateway, upstream):
            child.terminate()
            child.wait(60)
        shutil.rmtree(work, ignore_errors=True)


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

"""CPU a proxied MCP `tools/call` adds over calling the tool server directly, in one run.

    .venv/bin/python bench/mcp_overhead.py [--calls 3000] [--concurrency 1,16]

A fast tool server (bench/mcp_upstream.py) and `llmeu serve` in front of it
(`mcp_servers:` naming it, a tenant key under a policy that admits it). For
each concurrency, the same `tools/call` is sent `--calls` times, closed loop,
over keep-alive connections: straight to the server, then through the
gateway's `/mcp` in the handshake era (2025-11-25, `MCP-Protocol-Version`)
and in the 2026-07-28 revision (`_meta` envelope and mirrored headers). The
gateway is pinned to core 0, the server and this client to core 1.

Printed per row: the server's CPU per call, the gateway's (its whole process
tree, utime + stime from /proc), what a proxied call adds (the gateway's CPU
and what the server spends more than when called directly), and the ratio
of the CPU per proxied call to the CPU per direct call (server and gateway).
The target of issue 36 is at most 1 ms added per proxied call.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

import aio
import gateways
import procs
from httpclient import Connection

TARGET_MS = 1.0
ADMIN_KEY = "sk-bench-mcp-admin-0123456789"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
}


def config(server_url: str) -> str:
    return f"""
mcp_servers:
  - server_id: bench
    url: {server_url}
    provider: bench
    country: DE
    sovereignty_class: on_premise
    retention: P0D
policies:
  - policy_id: bench
    allow_classes: [on_premise]
    max_retention: P0D
    store_content: P0D
default_policy: bench
"""


def request(port: int, tool: str, key: str | None, era: str) -> bytes:
    """One `tools/call` as raw HTTP/1.1, in the era's shape."""
    params: dict[str, object] = {"name": tool, "arguments": {"text": "hello from the bench"}}
    headers = [f"host: 127.0.0.1:{port}", "content-type: application/json",
               "accept: application/json, text/event-stream"]  # fmt: skip
    if era == "2026-07-28":
        params["_meta"] = MODERN_META
        headers += ["mcp-protocol-version: 2026-07-28", "mcp-method: tools/call",
                    f"mcp-name: {tool}"]  # fmt: skip
    else:
        headers.append("mcp-protocol-version: 2025-11-25")
    if key:
        headers.append(f"authorization: Bearer {key}")
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    head = ["POST /mcp HTTP/1.1", *headers, f"content-length: {len(body.encode())}"]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body.encode()


@dataclass
class Cell:
    name: str
    concurrency: int
    calls: int
    server_ms: float
    gateway_ms: float
    seconds: float


async def drive(port: int, raw: bytes, calls: int, concurrency: int) -> None:
    """`calls` requests over `concurrency` keep-alive connections, one at a time each."""
    connections = [await Connection.open("127.0.0.1", port) for _ in range(concurrency)]
    left = calls

    async def worker(connection: Connection) -> None:
        nonlocal left
        while left > 0:
            left -= 1
            exchange = connection.start(raw, stream=False)
            await exchange.done
            if exchange.status != 200:
                raise RuntimeError(f"a call was answered {exchange.status}")

    try:
        await asyncio.gather(*(worker(c) for c in connections))
    finally:
        for connection in connections:
            connection.close()


async def measure(
    name: str, port: int, raw: bytes, calls: int, concurrency: int, server: int, gateway: int | None
) -> Cell:
    await drive(port, raw, max(50, calls // 20), concurrency)  # warm up: pools, lists
    server_before = procs.tree_cpu_seconds(procs.process_tree(server))
    gateway_before = procs.tree_cpu_seconds(procs.process_tree(gateway)) if gateway else 0.0
    began = time.perf_counter()
    await drive(port, raw, calls, concurrency)
    seconds = time.perf_counter() - began
    server_ms = (procs.tree_cpu_seconds(procs.process_tree(server)) - server_before) * 1000
    gateway_ms = 0.0
    if gateway:
        gateway_ms = (procs.tree_cpu_seconds(procs.process_tree(gateway)) - gateway_before) * 1000
    return Cell(name, concurrency, calls, server_ms / calls, gateway_ms / calls, seconds)


async def tenant_key(base: str) -> str:
    async with httpx.AsyncClient(timeout=10) as client:
        created = await client.post(f"{base}/v1/platform/keys", json={"name": "bench"},
                                    headers={"authorization": f"Bearer {ADMIN_KEY}"})  # fmt: skip
        created.raise_for_status()
        return str(created.json()["key"])


async def run(calls: int, levels: list[int]) -> list[Cell]:
    workdir = Path(tempfile.mkdtemp(prefix="mcp-bench-"))
    with procs.supervised(workdir) as supervisor:
        server_port, gateway_port = procs.free_port(), procs.free_port()
        server = supervisor.start("mcp-upstream", [sys.executable, str(
            gateways.BENCH_DIR / "mcp_upstream.py"), "--port", str(server_port)],
            gateways.CLIENT_CORE)  # fmt: skip
        await procs.wait_ready(server, f"http://127.0.0.1:{server_port}/healthz", 15)
        config_file = workdir / "llmeu.yaml"
        config_file.write_text(config(f"http://127.0.0.1:{server_port}/mcp"))
        argv = [str(gateways.llmeu_binary()), "serve", "--config", str(config_file),
                "--port", str(gateway_port), "--host", "127.0.0.1", "--data-dir",
                str(workdir / "data"), "--no-local", "--log-level", "warning",
                "--max-connections-per-client", "0"]  # fmt: skip
        gateway = supervisor.start("llmeu", argv, gateways.GATEWAY_CORE,
                                   {"LLMEU_ADMIN_KEY": ADMIN_KEY}, workdir)  # fmt: skip
        base = f"http://127.0.0.1:{gateway_port}"
        await procs.wait_ready(gateway, f"{base}/healthz", 60)
        key = await tenant_key(base)
        cells = []
        for level in levels:
            direct = request(server_port, "echo", None, "2026-07-28")
            cells.append(await measure("direct", server_port, direct, calls, level, server.pid,
                                       None))  # fmt: skip
            for era in ("2025-11-25", "2026-07-28"):
                proxied = request(gateway_port, "bench__echo", key, era)
                cells.append(await measure(f"via llmeu ({era})", gateway_port, proxied, calls,
                                           level, server.pid, gateway.pid))  # fmt: skip
        return cells


def report(cells: list[Cell]) -> str:
    lines = ["| c | path | calls/s | server CPU ms/call | gateway CPU ms/call | added ms/call | "
             "CPU ratio |", "|---|---|---|---|---|---|---|"]  # fmt: skip
    direct = {c.concurrency: c for c in cells if c.name == "direct"}
    worst = 0.0
    for cell in cells:
        base = direct[cell.concurrency]
        added = cell.gateway_ms + cell.server_ms - base.server_ms if cell.gateway_ms else 0.0
        ratio = (cell.server_ms + cell.gateway_ms) / base.server_ms if base.server_ms else 0.0
        worst = max(worst, added)
        lines.append(f"| {cell.concurrency} | {cell.name} | {cell.calls / cell.seconds:,.0f} | "
                     f"{cell.server_ms:.3f} | {cell.gateway_ms:.3f} | {added:.3f} | "
                     f"{ratio:.2f}x |")  # fmt: skip
    verdict = "met" if worst <= TARGET_MS else "missed"
    lines.append(f"\nMost CPU a proxied tools/call added: {worst:.3f} ms (target <= {TARGET_MS} "
                 f"ms: {verdict}).")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--concurrency", default="1,16")
    args = parser.parse_args()
    procs.pin_self(gateways.CLIENT_CORE)
    levels = [int(level) for level in args.concurrency.split(",")]
    print(report(aio.run(run(args.calls, levels))))


if __name__ == "__main__":
    main()

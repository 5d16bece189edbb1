"""Closed-loop load generator for OpenAI-compatible chat completions.

One cell = one target x one concurrency x streamed or not. `concurrency`
workers each own one keep-alive connection and send the next request as soon
as the previous answer is complete. A cell first warms up (one request per
worker, which also opens the connections), then measures: workers start
requests until `duration_s` has passed and every request started is awaited,
so CPU seconds (read from /proc for the gateway's process tree before and after)
and the call count cover exactly the same work.

Run alone against any server:

    python bench/loadgen.py --url http://127.0.0.1:8900/v1 --concurrency 16 --stream
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from urllib.parse import urlsplit

import msgspec

import aio
import procs
from httpclient import Connection, ConnectionClosed, Exchange, build_request

CHAT_PATH = "/chat/completions"
RESPONSES_PATH = "/responses"
MESSAGES_PATH = "/messages"


@dataclass(frozen=True)
class Target:
    """Where requests go, and which process (tree) pays for them."""

    name: str
    base_url: str
    api_key: str | None = None
    model: str = "bench-model"
    pid: int | None = None
    upstream_pid: int | None = None
    core: int | None = None

    @property
    def host_port(self) -> tuple[str, int]:
        parts = urlsplit(self.base_url)
        return parts.hostname or "127.0.0.1", parts.port or 80

    @property
    def path_prefix(self) -> str:
        return urlsplit(self.base_url).path.rstrip("/")


@dataclass(frozen=True)
class Load:
    concurrency: int
    stream: bool
    chunks: int = 64
    duration_s: float = 3.0
    max_cell_s: float = 60.0
    api: str = "chat"  # or "responses" / "messages": the same answer through that API

    @property
    def label(self) -> str:
        kind = f"stream {self.chunks}" if self.stream else "non-stream"
        api = "" if self.api == "chat" else f" {self.api}"
        return f"c={self.concurrency}{api} {kind}"


@dataclass(frozen=True)
class CellResult:
    target: str
    concurrency: int
    stream: bool
    calls: int
    errors: int
    wall_s: float
    rps: float
    p50_ms: float
    p99_ms: float
    ttfc_p50_ms: float | None
    ttfc_p99_ms: float | None
    gateway_cpu_ms_per_call: float | None
    gateway_core_pct: float | None
    client_core_pct: float
    other_load_on_gateway_core_pct: float | None
    first_error: str | None


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of `values` (q in 0..100); NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = math.ceil(q / 100 * len(ordered))
    return ordered[max(0, min(len(ordered), rank) - 1)]


def chat_body(model: str, stream: bool, directive: str, prompt: str = "Say hello.") -> bytes:
    """A chat request; `directive` (e.g. `chunks=64 delay_ms=5`) shapes the upstream's answer."""
    body: dict[str, object] = {
        "model": model,
        "messages": [{"role": "user", "content": f"{prompt} bench: {directive}"}],
        "stream": stream,
    }
    if stream:
        body["stream_options"] = {"include_usage": True}
    return msgspec.json.encode(body)


def messages_body(model: str, stream: bool, directive: str, prompt: str = "Say hello.") -> bytes:
    """The Anthropic Messages request asking for the same answer as `chat_body`."""
    return msgspec.json.encode(
        {"model": model, "max_tokens": 1024, "stream": stream,
         "messages": [{"role": "user", "content": f"{prompt} bench: {directive}"}]}
    )  # fmt: skip


def responses_body(model: str, stream: bool, directive: str, prompt: str = "Say hello.") -> bytes:
    """The Responses-API request asking for the same answer as `chat_body`."""
    return msgspec.json.encode(
        {"model": model, "input": f"{prompt} bench: {directive}", "stream": stream}
    )


@dataclass
class _Samples:
    latencies: list[float]
    ttfc: list[float]
    errors: int = 0
    first_error: str | None = None

    def add(self, exchange: Exchange, finished: float) -> None:
        if not exchange.ok:
            self.fail(f"status {exchange.status}, complete stream: {exchange.saw_done}")
            return
        self.latencies.append(finished - exchange.started)
        if exchange.stream and exchange.first_content.done():
            self.ttfc.append(exchange.first_content.result() - exchange.started)

    def fail(self, reason: str) -> None:
        self.errors += 1
        self.first_error = self.first_error or reason


class _Worker:
    def __init__(self, target: Target, request: bytes, stream: bool) -> None:
        self._target = target
        self._request = request
        self._stream = stream
        self._connection: Connection | None = None

    async def _connected(self) -> Connection:
        if self._connection is None or self._connection.closed:
            self._connection = await Connection.open(*self._target.host_port)
        return self._connection

    async def call(self, samples: _Samples) -> None:
        for attempt in (1, 2):
            exchange: Exchange | None = None
            connection = await self._connected()
            reused = connection.requests > 0
            try:
                exchange = connection.start(self._request, self._stream)
                samples.add(exchange, await exchange.done)
                return
            except ConnectionClosed as exc:
                # a keep-alive connection the server closed while idle: retry once, as clients do
                if attempt == 2 or not reused or (exchange and exchange.received_bytes):
                    samples.fail(f"connection closed: {exc}")
                    return
            except OSError as exc:
                samples.fail(f"{type(exc).__name__}: {exc}")
                return

    async def run_until(self, deadline: float, samples: _Samples) -> None:
        while True:
            await self.call(samples)
            if time.perf_counter() >= deadline:
                return

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()


def _core_busy(core: int | None) -> float:
    return procs.core_busy_seconds(core) if core is not None else 0.0


def _cpu(pid: int | None) -> float:
    return procs.tree_cpu_seconds(procs.process_tree(pid)) if pid else 0.0


async def run_cell(target: Target, load: Load) -> CellResult:
    """Warm up, then measure one cell; connections are closed at the end."""
    host, port = target.host_port
    make_body, api_path = {
        "responses": (responses_body, RESPONSES_PATH),
        "messages": (messages_body, MESSAGES_PATH),
    }.get(load.api, (chat_body, CHAT_PATH))
    body = make_body(target.model, load.stream, f"chunks={load.chunks}")
    path = target.path_prefix + api_path
    request = build_request(host, port, path, body, target.api_key)
    workers = [_Worker(target, request, load.stream) for _ in range(load.concurrency)]
    try:
        warmup = _Samples([], [])
        await asyncio.wait_for(asyncio.gather(*(w.call(warmup) for w in workers)), load.max_cell_s)
        samples = _Samples([], [])
        gateway_before, client_before = _cpu(target.pid), procs.cpu_seconds(os.getpid())
        core_before = _core_busy(target.core)
        upstream_before = _cpu(target.upstream_pid)
        started = time.perf_counter()
        tasks = [
            asyncio.ensure_future(w.run_until(started + load.duration_s, samples)) for w in workers
        ]
        _, pending = await asyncio.wait(tasks, timeout=load.max_cell_s)
        for task in pending:
            task.cancel()
            samples.fail(f"still running after {load.max_cell_s:.0f}s")
        wall = time.perf_counter() - started
        gateway_cpu = _cpu(target.pid) - gateway_before
        other_load = _core_busy(target.core) - core_before - gateway_cpu
        client_cpu = procs.cpu_seconds(os.getpid()) - client_before
        client_cpu += _cpu(target.upstream_pid) - upstream_before
    finally:
        for worker in workers:
            worker.close()
    calls = len(samples.latencies)
    ms = 1000.0
    return CellResult(
        target=target.name if load.api == "chat" else f"{target.name}/{load.api}",
        concurrency=load.concurrency,
        stream=load.stream,
        calls=calls,
        errors=samples.errors + warmup.errors,
        wall_s=wall,
        rps=calls / wall,
        p50_ms=percentile(samples.latencies, 50) * ms,
        p99_ms=percentile(samples.latencies, 99) * ms,
        ttfc_p50_ms=percentile(samples.ttfc, 50) * ms if load.stream else None,
        ttfc_p99_ms=percentile(samples.ttfc, 99) * ms if load.stream else None,
        gateway_cpu_ms_per_call=gateway_cpu / calls * ms if target.pid and calls else None,
        gateway_core_pct=gateway_cpu / wall * 100 if target.pid else None,
        client_core_pct=client_cpu / wall * 100,
        other_load_on_gateway_core_pct=max(0.0, other_load / wall * 100)
        if target.core is not None
        else None,
        first_error=samples.first_error or warmup.first_error,
    )


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Closed-loop load on /v1/chat/completions.")
    parser.add_argument(
        "--url", required=True, help="base URL with /v1, e.g. http://127.0.0.1:4000/v1"
    )
    parser.add_argument("--api-key")
    parser.add_argument("--model", default="bench-model")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--stream", action="store_true")
    parser.add_argument("--chunks", type=int, default=64)
    parser.add_argument("--duration", type=float, default=3.0)
    parser.add_argument("--pid", type=int, help="gateway PID whose CPU per call to report")
    parser.add_argument("--upstream-pid", type=int)
    parser.add_argument("--core", type=int, help="pin the load generator to this core")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = _parse_args(argv)
    if args.core is not None:
        procs.pin_self(args.core)
    target = Target("target", args.url, args.api_key, args.model, args.pid, args.upstream_pid)
    load = Load(args.concurrency, args.stream, args.chunks, args.duration)
    try:
        result = aio.run(run_cell(target, load))
    except aio.Interrupted:
        raise SystemExit("interrupted") from None
    print(json.dumps(asdict(result), indent=2))


if __name__ == "__main__":
    main()

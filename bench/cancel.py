"""Cancellation latency: from a client hanging up to the upstream seeing its connection close.

    python bench/cancel.py                       # llmeu, 200 disconnects
    python bench/cancel.py --target nginx --abort

Each round starts a long slow stream (2,000 chunks, 10 ms apart) through the
gateway, waits for its first content, takes `time.monotonic()` and closes the
client connection (a FIN; with `--abort`, a RST). The fake upstream records the
`time.monotonic()` at which the connection carrying that stream closed (the
stream is tagged in its prompt), and both clocks are the machine's
CLOCK_MONOTONIC, so the difference is the cancellation latency. A disconnect
that has not reached the upstream after `--wait` seconds counts as missed: the
gateway kept generating (and paying for) tokens nobody reads.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import msgspec

import gateways
import harness
from httpclient import Connection, ConnectionClosed, build_request
from loadgen import CHAT_PATH, Target, chat_body, percentile


@dataclass(frozen=True)
class CancelResult:
    target: str
    disconnects: int
    reached_upstream: int
    p50_ms: float
    p99_ms: float
    max_ms: float


class UpstreamStats:
    """Reads the fake upstream's `/stats` over one keep-alive connection."""

    def __init__(self, host: str, port: int) -> None:
        self._address = (host, port)
        self._request = build_request(host, port, "/stats", b"", None, method="GET")
        self._connection: Connection | None = None

    async def close_times(self) -> dict[str, float]:
        if self._connection is None or self._connection.closed:
            self._connection = await Connection.open(*self._address)
        exchange = self._connection.start(self._request, stream=False, keep_body=True)
        await exchange.done
        stats = msgspec.json.decode(b"".join(exchange.body))
        times: dict[str, float] = stats["close_times"]
        return times

    async def wait_for(self, tag: str, timeout: float) -> float | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            seen = (await self.close_times()).get(tag)
            if seen is not None:
                return seen
            await asyncio.sleep(0.002)
        return None

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()


async def one_disconnect(
    target: Target, stats: UpstreamStats, tag: str, abort: bool, wait_s: float
) -> float | None:
    """Seconds from the client's close to the upstream's, or None when it never arrived."""
    host, port = target.host_port
    body = chat_body(target.model, True, f"chunks=2000 delay_ms=10 tag={tag}")
    request = build_request(host, port, target.path_prefix + CHAT_PATH, body, target.api_key)
    connection = await Connection.open(host, port)
    try:
        exchange = connection.start(request, stream=True)
        await asyncio.wait_for(exchange.first_content, 30)
    except (ConnectionClosed, TimeoutError) as exc:
        connection.abort()
        raise RuntimeError(f"stream did not start: {exc}") from exc
    closed_at = time.monotonic()
    if abort:
        connection.abort()
    else:
        connection.close()
    seen = await stats.wait_for(tag, wait_s)
    return None if seen is None else seen - closed_at


async def measure(
    target: Target, upstream: tuple[str, int], args: argparse.Namespace
) -> CancelResult:
    stats = UpstreamStats(*upstream)
    run = uuid.uuid4().hex[:8]
    latencies: list[float] = []
    try:
        for index in range(args.disconnects):
            latency = await one_disconnect(target, stats, f"{run}-{index}", args.abort, args.wait)
            if latency is not None:
                latencies.append(latency * 1000)
    finally:
        stats.close()
    return CancelResult(
        target=target.name,
        disconnects=args.disconnects,
        reached_upstream=len(latencies),
        p50_ms=percentile(latencies, 50),
        p99_ms=percentile(latencies, 99),
        max_ms=max(latencies, default=math.nan),
    )


async def main_async(args: argparse.Namespace) -> CancelResult:
    async with harness.running(args.target, "cancel", args.nice) as running:
        return await measure(running.target, running.upstream_host_port, args)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Latency of a client disconnect to the upstream.")
    parser.add_argument("--target", choices=gateways.TARGETS, default="llmeu")
    parser.add_argument("--disconnects", type=int, default=200)
    parser.add_argument("--abort", action="store_true", help="hang up with a RST, not a FIN")
    parser.add_argument("--wait", type=float, default=2.0, help="seconds before a close is missed")
    harness.add_nice_argument(parser)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    result = harness.run_script(args.target, args.nice, lambda: main_async(args))
    missed = result.disconnects - result.reached_upstream
    print(
        f"{result.target}: {result.disconnects} disconnects ({'RST' if args.abort else 'FIN'}), "
        f"{result.reached_upstream} reached the upstream, {missed} missed (> {args.wait:.0f} s); "
        f"latency p50 {result.p50_ms:.2f} ms, p99 {result.p99_ms:.2f} ms, "
        f"max {result.max_ms:.2f} ms"
    )


if __name__ == "__main__":
    main()

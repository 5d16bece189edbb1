"""Hold many slow streams open through a gateway at once and watch its memory.

    python bench/streams.py                     # llmeu, 1,000 streams, 5 rounds
    python bench/streams.py --target litellm --streams 200

Each round opens `--streams` connections, starts one slow stream on each (by
default 40 chunks 100 ms apart, so every stream lives about 4 s), waits until
all of them are open and producing, then until they are done. The gateway's RSS
(all its processes, from /proc) is sampled every 50 ms: the peak while the
streams are open is what 1,000 concurrent streams cost, and the RSS after each
round, compared across rounds in one gateway process, shows whether memory
grows.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import gateways
import harness
import procs
from httpclient import Connection, ConnectionClosed, build_request
from loadgen import CHAT_PATH, Target, chat_body

MB = 1024 * 1024


@dataclass(frozen=True)
class Round:
    index: int
    max_open: int
    completed: int
    errors: int
    seconds_to_all_open: float
    peak_rss_mb: float
    rss_after_mb: float
    process_rss_mb: tuple[float, ...] = ()  # each process of the gateway, after the round


@dataclass
class _Gauge:
    """How many streams are producing right now, and the most at once."""

    producing: int = 0
    most: int = 0
    all_open_at: float = math.nan

    def opened(self, total: int, started: float) -> None:
        self.producing += 1
        self.most = max(self.most, self.producing)
        if self.most == total:
            self.all_open_at = time.perf_counter() - started

    def closed(self) -> None:
        self.producing -= 1


async def _one_stream(target: Target, request: bytes, gauge: _Gauge, total: int, t0: float) -> bool:
    try:
        connection = await Connection.open(*target.host_port)
    except OSError:
        return False
    producing = False
    try:
        exchange = connection.start(request, stream=True)
        await exchange.first_content
        gauge.opened(total, t0)
        producing = True
        await exchange.done
        return exchange.ok
    except ConnectionClosed:
        return False
    finally:
        if producing:
            gauge.closed()
        connection.close()


async def _sample_peak(pid: int, stop: asyncio.Event) -> int:
    peak = 0
    while not stop.is_set():
        peak = max(peak, procs.tree_rss_bytes(pid))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.05)
    return peak


async def run_round(target: Target, index: int, streams: int, chunks: int, delay_ms: int) -> Round:
    assert target.pid is not None
    host, port = target.host_port
    body = chat_body(target.model, True, f"chunks={chunks} delay_ms={delay_ms}")
    request = build_request(host, port, target.path_prefix + CHAT_PATH, body, target.api_key)
    gauge = _Gauge()
    stop = asyncio.Event()
    sampler = asyncio.ensure_future(_sample_peak(target.pid, stop))
    started = time.perf_counter()
    tasks = [
        asyncio.ensure_future(_one_stream(target, request, gauge, streams, started))
        for _ in range(streams)
    ]
    done, pending = await asyncio.wait(tasks, timeout=120 + chunks * delay_ms / 1000)
    for task in pending:
        task.cancel()
    stop.set()
    peak = await sampler
    await asyncio.sleep(1.0)  # let the gateway finish its bookkeeping of the last streams
    completed = sum(1 for task in done if task.result())
    return Round(
        index=index,
        max_open=gauge.most,
        completed=completed,
        errors=streams - completed,
        seconds_to_all_open=gauge.all_open_at,
        peak_rss_mb=peak / MB,
        rss_after_mb=procs.tree_rss_bytes(target.pid) / MB,
        process_rss_mb=tuple(procs.rss_bytes(p) / MB for p in procs.process_tree(target.pid)),
    )


def _all_open(seconds: float) -> str:
    if math.isnan(seconds):
        return "never all open at once"
    return f"all open {seconds:.2f} s after the start"


def _print_round(result: Round) -> None:
    print(
        f"round {result.index}: at most {result.max_open} streams producing at once "
        f"({_all_open(result.seconds_to_all_open)}), "
        f"{result.completed} complete, "
        f"{result.errors} errors; peak RSS {result.peak_rss_mb:.1f} MB, "
        f"after {result.rss_after_mb:.1f} MB"
        + (
            " (per process: " + ", ".join(f"{mb:.1f}" for mb in result.process_rss_mb) + " MB)"
            if len(result.process_rss_mb) > 1
            else ""
        ),
        flush=True,
    )


async def main_async(args: argparse.Namespace) -> list[Round]:
    async with harness.running(args.target, "streams", args.nice) as running:
        target = running.target
        if target.pid is None:
            raise SystemExit(
                "streams.py measures a gateway; --target direct has no gateway process"
            )
        print(f"{target.name}: RSS at rest {procs.tree_rss_bytes(target.pid) / MB:.1f} MB")
        rounds = []
        for index in range(1, args.rounds + 1):
            result = await run_round(target, index, args.streams, args.chunks, args.delay_ms)
            _print_round(result)
            rounds.append(result)
        return rounds


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="RSS of a gateway holding many slow streams.")
    parser.add_argument("--target", choices=gateways.TARGETS[1:], default="llmeu")
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--chunks", type=int, default=40)
    parser.add_argument("--delay-ms", type=int, default=100)
    harness.add_nice_argument(parser)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    rounds = harness.run_script(args.target, args.nice, lambda: main_async(args))
    peaks = [r.peak_rss_mb for r in rounds]
    afters = [r.rss_after_mb for r in rounds]
    print(
        f"\n{args.target}: {args.streams} concurrent streams, peak RSS max {max(peaks):.1f} MB; "
        f"RSS after round 1 {afters[0]:.1f} MB, after round {len(afters)} {afters[-1]:.1f} MB "
        f"(growth {afters[-1] - afters[0]:+.1f} MB)"
    )


if __name__ == "__main__":
    main()

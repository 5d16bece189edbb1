"""Instructions per call of llmeu builds, counted by valgrind: exact on a busy machine.

    python bench/instructions.py                                   # this checkout
    python bench/instructions.py --baseline /path/to/other/.venv   # and another, with ratios

CPU seconds per call move by tens of percent when other work shares the
machine; instruction counts do not (valgrind's callgrind counts every
instruction the gateway's threads execute, whatever else runs). Each gateway
runs under callgrind (`callgrind.py`: start-up and idle time not counted)
for `calls` non-streamed chat calls, then
`streams` streams of `chunks` deltas, each at concurrency 4, through the
same config as `compare.py` (authentication and the SQLite ledger on). The
numbers are instructions, not time: use them to compare builds, not to size
a machine. A gateway under valgrind runs ~30x slower; a run takes minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import callgrind


@dataclass(frozen=True)
class Counts:
    label: str
    per_call: float
    per_stream: float


def measure(python: Path, label: str, calls: int, streams: int, chunks: int) -> Counts:
    with callgrind.counted_gateway(python, "llmeu-instr-") as gateway:
        results = []
        for stream, count in ((False, calls), (True, streams)):
            # warm the paths and the connections
            asyncio.run(callgrind.load(gateway.root, callgrind.API_KEY, 8, stream, chunks))
            gateway.zero()
            asyncio.run(callgrind.load(gateway.root, callgrind.API_KEY, count, stream, chunks))
            results.append(gateway.measured() / count)
        return Counts(label, results[0], results[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", type=Path, help="a venv with another llmeu build")
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--streams", type=int, default=100)
    parser.add_argument("--chunks", type=int, default=64)
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("valgrind is missing: apt-get install -y valgrind", file=sys.stderr)
        return 1
    runs = []
    if args.baseline is not None:
        runs.append(("baseline", args.baseline / "bin" / "python"))
    runs.append(("this checkout", Path(sys.executable)))
    counted = [measure(p, label, args.calls, args.streams, args.chunks) for label, p in runs]
    print(f"{'build':16} {'instructions/call':>20} {f'per {args.chunks}-chunk stream':>24}")
    for c in counted:
        print(f"{c.label:16} {c.per_call:20,.0f} {c.per_stream:24,.0f}")
    if len(counted) == 2:
        base, this = counted
        print(
            f"{'ratio':16} {this.per_call / base.per_call:20.3f} "
            f"{this.per_stream / base.per_stream:24.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

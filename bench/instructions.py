"""Instructions per call of llmeu builds, counted by valgrind: exact on a busy machine.

    python bench/instructions.py                                   # this checkout
    python bench/instructions.py --baseline /path/to/other/.venv   # and another, with ratios

CPU seconds per call move by tens of percent when other work shares the
machine; instruction counts do not (valgrind's callgrind counts every
instruction the gateway's threads execute, whatever else runs). Each gateway
runs under callgrind with instrumentation off while it starts; the counters
are zeroed just before a measured load and dumped just after it, so start-up
and idle time are not counted: `calls` non-streamed chat calls, then
`streams` streams of `chunks` deltas, each at concurrency 4, through the
same config as `compare.py` (authentication and the SQLite ledger on). The
numbers are instructions, not time: use them to compare builds, not to size
a machine. A gateway under valgrind runs ~30x slower; a run takes minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import httpx

import gateways
import procs

API_KEY = "sk-bench-0123456789abcdef"
_TOTALS = re.compile(rb"^(?:summary|totals):\s+(\d+)", re.MULTILINE)


@dataclass(frozen=True)
class Counts:
    label: str
    per_call: float
    per_stream: float


async def _load(base: str, count: int, stream: bool, chunks: int) -> None:
    body = {
        "model": gateways.MODEL,
        "stream": stream,
        "messages": [{"role": "user", "content": f"bench: chunks={chunks}"}],
    }
    headers = {"authorization": f"Bearer {API_KEY}"}
    pending = iter(range(count))
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=120) as client:

        async def worker() -> None:
            for _ in pending:
                response = await client.post("/chat/completions", json=body)
                assert response.status_code == 200, response.text[:300]

        await asyncio.gather(*(worker() for _ in range(4)))


def _measured(pid: int, out: Path) -> int:
    """Instructions executed between zeroing the counters and dumping them."""
    dumps = set(out.parent.glob(out.name + "*"))
    subprocess.run(["callgrind_control", "--dump", str(pid)], check=True, capture_output=True)
    new = sorted(set(out.parent.glob(out.name + "*")) - dumps, key=os.path.getmtime)
    match = _TOTALS.search(new[-1].read_bytes())
    assert match, f"no totals in {new[-1]}"
    return int(match.group(1))


def _zero(pid: int) -> None:
    subprocess.run(["callgrind_control", "--zero", str(pid)], check=True, capture_output=True)


def measure(python: Path, label: str, calls: int, streams: int, chunks: int) -> Counts:
    work = Path(tempfile.mkdtemp(prefix="llmeu-instr-"))
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
        str(python), "-m", "llmeu.cli.main", "serve", "--config", str(config),
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
    base = f"http://127.0.0.1:{port}/v1"
    try:
        ready = procs.wait_ready(_Child(gateway), f"http://127.0.0.1:{port}/healthz", 300)
        asyncio.run(ready)  # type: ignore[arg-type]
        subprocess.run(["callgrind_control", "-i", "on", str(gateway.pid)], check=True,
                       capture_output=True)  # fmt: skip
        results = []
        for stream, count in ((False, calls), (True, streams)):
            asyncio.run(_load(base, 8, stream, chunks))  # warm the paths and the connections
            _zero(gateway.pid)
            asyncio.run(_load(base, count, stream, chunks))
            results.append(_measured(gateway.pid, out) / count)
        return Counts(label, results[0], results[1])
    finally:
        for child in (gateway, upstream):
            child.terminate()
            child.wait(60)
        shutil.rmtree(work, ignore_errors=True)


@dataclass
class _Child:
    """The little of `procs.Child` that `wait_ready` uses."""

    proc: subprocess.Popen[bytes]
    name: str = "llmeu under valgrind"

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        return ""


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

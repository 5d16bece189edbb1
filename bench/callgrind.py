"""One llmeu under valgrind's callgrind in front of the fake upstream, and its counters.

The gateway starts with instrumentation off, so start-up is not counted; it is
turned on once the gateway answers. A measurement zeroes the counters just
before a load (`zero`) and dumps them just after it (`measured`), so idle time
is not counted either. `instructions.py` compares builds with it;
`cache_instructions.py` compares a cache hit with a proxied call.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

import gateways
import procs

API_KEY = "sk-bench-0123456789abcdef"
_TOTALS = re.compile(rb"^(?:summary|totals):\s+(\d+)", re.MULTILINE)


@dataclass(frozen=True)
class Counted:
    """A running gateway under callgrind: its process, its root URL and its dump file."""

    process: subprocess.Popen[bytes]
    root: str
    out: Path

    def zero(self) -> None:
        subprocess.run(["callgrind_control", "--zero", str(self.process.pid)], check=True,
                       capture_output=True)  # fmt: skip

    def measured(self) -> int:
        """Instructions executed between zeroing the counters and dumping them."""
        dumps = set(self.out.parent.glob(self.out.name + "*"))
        subprocess.run(["callgrind_control", "--dump", str(self.process.pid)], check=True,
                       capture_output=True)  # fmt: skip
        new = sorted(set(self.out.parent.glob(self.out.name + "*")) - dumps, key=os.path.getmtime)
        match = _TOTALS.search(new[-1].read_bytes())
        assert match, f"no totals in {new[-1]}"
        return int(match.group(1))


@contextmanager
def counted_gateway(python: Path, prefix: str) -> Iterator[Counted]:
    """`python`'s llmeu under callgrind, with `gateways.llmeu_config` (the admin key
    `API_KEY`), in front of a fake upstream; both stopped and their files gone on exit."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
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
    root = f"http://127.0.0.1:{port}"
    try:
        ready = procs.wait_ready(_Child(gateway), f"{root}/healthz", 300)
        asyncio.run(ready)  # type: ignore[arg-type]
        subprocess.run(["callgrind_control", "-i", "on", str(gateway.pid)], check=True,
                       capture_output=True)  # fmt: skip
        yield Counted(gateway, root, out)
    finally:
        for child in (gateway, upstream):
            child.terminate()
            child.wait(60)
        shutil.rmtree(work, ignore_errors=True)


async def load(root: str, key: str, count: int, stream: bool, chunks: int) -> None:
    """`count` chat calls with `key` at concurrency 4, each asking for `chunks` deltas."""
    body = {
        "model": gateways.MODEL,
        "stream": stream,
        "messages": [{"role": "user", "content": f"bench: chunks={chunks}"}],
    }
    pending = iter(range(count))
    headers = {"authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=root, headers=headers, timeout=120) as client:

        async def worker() -> None:
            for _ in pending:
                response = await client.post("/v1/chat/completions", json=body)
                assert response.status_code == 200, response.text[:300]

        await asyncio.gather(*(worker() for _ in range(4)))


@dataclass
class _Child:
    """The little of `procs.Child` that `wait_ready` uses."""

    proc: subprocess.Popen[bytes]
    name: str = "llmeu under valgrind"

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        return ""

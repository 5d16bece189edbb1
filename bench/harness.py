"""One upstream and one proxy under test, started for a single-target benchmark script."""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import resource
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import aio
import gateways
import pgdb
import procs
from gateways import Placement
from loadgen import Target

T = TypeVar("T")
API_KEY = "sk-bench-0123456789abcdef"
RESULTS = gateways.BENCH_DIR / "results"


@dataclass(frozen=True)
class Running:
    target: Target
    place: Placement

    @property
    def upstream_host_port(self) -> tuple[str, int]:
        return "127.0.0.1", self.place.upstream_port


def raise_fd_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 65536)), hard))


def prepare(target_names: Sequence[str], nice: int = 0) -> None:
    """Process-wide set-up before the event loop starts; children inherit pinning and nice.

    A negative `nice` (root only) keeps other jobs on a shared machine from
    preempting the processes being measured.
    """
    procs.pin_self(gateways.CLIENT_CORE)
    raise_fd_limit()
    if nice:
        procs.set_niceness(os.getpid(), nice)
    if "litellm" in target_names:
        gateways.litellm_venv(gateways.LITELLM_VENV)


def add_nice_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--nice", type=int, default=0, help="niceness of the run, e.g. -10 on a shared machine"
    )


def run_script(target_name: str, nice: int, main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Prepare the process, run `main()` on the event loop, exit 130 style when interrupted."""
    prepare([target_name], nice)
    try:
        return aio.run(main())
    except aio.Interrupted:
        raise SystemExit("interrupted; every process this run started was stopped") from None


@contextlib.asynccontextmanager
async def running(target_name: str, script: str, nice: int = 0) -> AsyncIterator[Running]:
    """Start the upstream and the named target; stop both by PID on exit."""
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    workdir = RESULTS / f"{script}-{target_name}-{stamp}"
    with (
        procs.supervised(workdir, nice) as supervisor,
        pgdb.temporary_database_if(target_name.startswith("llmeu-pg")) as database_url,
    ):
        place = await gateways.start_upstream(supervisor, workdir, API_KEY)
        target = await gateways.start_target(target_name, place, database_url)
        yield Running(target, place)

"""Measure the same loads against the upstream directly, nginx, LiteLLM and llmeu in one run.

    python bench/compare.py            # full run, under 10 minutes
    python bench/compare.py --quick    # smoke run, under a minute
    python bench/compare.py --postgres # also llmeu with its ledger on PostgreSQL

The proxy under test runs alone on core 0; the fake upstream and this process
(the load generator) share core 1. Every process started here is stopped by
its PID at the end, on Ctrl-C and on errors too. The table goes to stdout and,
as markdown and JSON, to bench/results/.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import aio
import gateways
import harness
import pgdb
import procs
import report
from gateways import Placement
from loadgen import CellResult, Load, run_cell
from verify import verify

GATEWAY_CORE = gateways.GATEWAY_CORE
CLIENT_CORE = gateways.CLIENT_CORE
API_KEY = harness.API_KEY
ALL_TARGETS = ("direct", "nginx", "llmeu", "litellm")
RESULTS = harness.RESULTS
VENV = gateways.LITELLM_VENV
LITELLM_VERSION = "import importlib.metadata as m; print(m.version('litellm'))"


@dataclass(frozen=True)
class Plan:
    targets: tuple[str, ...]
    concurrency: tuple[int, ...]
    duration_s: float
    chunks: int
    budget_s: float
    postgres: bool
    nice: int = 0
    workers: tuple[int, ...] = ()

    def target_names(self) -> list[str]:
        names = list(self.targets)
        if self.workers and "llmeu" in names:
            at = names.index("llmeu")
            names[at : at + 1] = ["llmeu" if n == 1 else f"llmeu-w{n}" for n in self.workers]
        if self.postgres and "llmeu" in names:
            at = names.index("llmeu") + 1
            names[at:at] = ["llmeu-pg", "llmeu-pg-async"]
        return names

    def loads(self, target: str = "") -> list[Load]:
        """The loads of one target; llmeu's add the same streams through the Responses and
        the Messages APIs."""
        loads = [
            Load(c, stream, self.chunks, self.duration_s)
            for stream in (False, True)
            for c in self.concurrency
        ]
        if target.startswith("llmeu"):
            loads += [
                Load(c, True, self.chunks, self.duration_s, api=api)
                for api in ("responses", "messages")
                for c in self.concurrency
            ]
        return loads


def _run_text(argv: Sequence[str]) -> str:
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (done.stdout + done.stderr).strip().splitlines()[0] if done.stdout + done.stderr else ""


def machine_meta(plan: Plan) -> dict[str, object]:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    pinning = (
        f"proxy pinned to core {GATEWAY_CORE}, load generator + upstream on core {CLIENT_CORE}"
        if procs.pinning_available()
        else "no pinning (taskset or a second core missing)"
    )
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{os.cpu_count()} x {cpu}, Linux {platform.release()}, "
        f"Python {platform.python_version()}",
        "pinning": pinning + (f", niceness {plan.nice}" if plan.nice else ""),
        "duration_s": plan.duration_s,
        "chunks": plan.chunks,
        "concurrency": list(plan.concurrency),
        "nginx": _run_text(["nginx", "-v"]),
        "litellm": _run_text([str(VENV / "bin" / "python"), "-c", LITELLM_VERSION]),
        "llmeu_commit": _run_text(
            ["git", "-C", str(gateways.BENCH_DIR), "rev-parse", "--short", "HEAD"]
        ),
    }


def _progress(cell: CellResult) -> None:
    kind = "stream" if cell.stream else "non-stream"
    cpu = cell.gateway_cpu_ms_per_call
    ttfc = f" ttfc p50 {cell.ttfc_p50_ms:.2f} ms" if cell.ttfc_p50_ms is not None else ""
    print(
        f"  {cell.target:9} c={cell.concurrency:<4}{kind:11} {cell.rps:9.0f} req/s "
        f"p50 {cell.p50_ms:8.2f} ms p99 {cell.p99_ms:8.2f} ms{ttfc} "
        f"cpu/call {'-' if cpu is None else f'{cpu:.3f} ms'} errors {cell.errors}",
        flush=True,
    )


async def _measure_target(
    name: str, place: Placement, plan: Plan, database_url: str | None, deadline: float
) -> list[CellResult]:
    supervisor = place.supervisor
    known = set(id(c) for c in supervisor.children)
    try:
        target = await gateways.start_target(name, place, database_url)
        await verify(target)
        cells = []
        for load in plan.loads(name):
            remaining = deadline - time.monotonic()
            if remaining < load.duration_s + 2:
                print(f"  {name}: time budget spent, skipping {load.label}", flush=True)
                continue
            cell = await run_cell(target, dataclasses.replace(load, max_cell_s=min(60, remaining)))
            _progress(cell)
            cells.append(cell)
        return cells
    finally:
        for child in [c for c in supervisor.children if id(c) not in known]:
            supervisor.stop(child)


async def compare(plan: Plan, workdir: Path) -> tuple[list[CellResult], dict[str, str]]:
    deadline = time.monotonic() + plan.budget_s
    cells: list[CellResult] = []
    failures: dict[str, str] = {}
    with (
        procs.supervised(workdir, plan.nice) as supervisor,
        pgdb.temporary_database_if(plan.postgres) as database_url,
    ):
        place = await gateways.start_upstream(supervisor, workdir, API_KEY, plan.chunks)
        for name in plan.target_names():
            print(f"{name}:", flush=True)
            try:
                cells += await _measure_target(name, place, plan, database_url, deadline)
            except Exception as exc:  # one broken target must not cost the others their numbers
                failures[name] = f"{type(exc).__name__}: {exc}".strip()
                print(f"  {name} failed: {failures[name]}", flush=True)
    return cells, failures


def messages_ratios(cells: Sequence[CellResult]) -> dict[int, float]:
    """CPU per streamed Messages call / CPU per streamed chat call of llmeu, per concurrency
    (the same 64 deltas from the same upstream; target at most 1.3)."""
    chat = {c.concurrency: c for c in cells if c.target == "llmeu" and c.stream}
    ratios = {}
    for cell in cells:
        base = chat.get(cell.concurrency)
        if cell.target != "llmeu/messages" or base is None:
            continue
        if cell.gateway_cpu_ms_per_call and base.gateway_cpu_ms_per_call:
            ratios[cell.concurrency] = cell.gateway_cpu_ms_per_call / base.gateway_cpu_ms_per_call
    return ratios


def postgres_ratios(cells: Sequence[CellResult]) -> dict[tuple[str, bool], float]:
    """SQLite's calls/s over PostgreSQL's at c=1, per PostgreSQL target and kind (target:
    within 1.5x)."""
    sqlite = {c.stream: c for c in cells if c.target == "llmeu" and c.concurrency == 1}
    ratios = {}
    for cell in cells:
        base = sqlite.get(cell.stream)
        if not cell.target.startswith("llmeu-pg") or "/" in cell.target or cell.concurrency != 1:
            continue
        if base is not None and cell.rps:
            ratios[(cell.target, cell.stream)] = base.rps / cell.rps
    return ratios


def write_results(
    meta: dict[str, object], cells: list[CellResult], failures: dict[str, str]
) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    text = report.markdown(meta, cells, failures)
    data = json.dumps(report.as_json(meta, cells, failures), indent=2)
    for stem in (f"compare-{stamp}", "compare-latest"):
        (RESULTS / f"{stem}.md").write_text(text)
        (RESULTS / f"{stem}.json").write_text(data)
    return RESULTS / f"compare-{stamp}.md"


def parse_plan(argv: Sequence[str] | None = None) -> Plan:
    parser = argparse.ArgumentParser(description="Compare direct, nginx, LiteLLM and llmeu.")
    parser.add_argument("--quick", action="store_true", help="smoke run: c=1,16, short cells")
    parser.add_argument(
        "--postgres",
        action="store_true",
        help="also llmeu on PostgreSQL, committing synchronously and with the opt-in "
        "?synchronous_commit=off",
    )
    parser.add_argument("--targets", default=",".join(ALL_TARGETS), help="comma-separated subset")
    parser.add_argument("--concurrency", help="comma-separated levels (default 1,16,64,256)")
    parser.add_argument("--duration", type=float, help="seconds per cell (default 3, quick 0.5)")
    parser.add_argument("--chunks", type=int, default=64, help="content chunks per stream")
    parser.add_argument("--budget", type=float, help="seconds for the whole run (default 540)")
    parser.add_argument(
        "--workers",
        help="llmeu with these worker counts, e.g. 1,2 (more than one: unpinned, with Redis)",
    )
    harness.add_nice_argument(parser)
    args = parser.parse_args(argv)
    targets = tuple(t.strip() for t in args.targets.split(",") if t.strip())
    unknown = set(targets) - set(ALL_TARGETS)
    if unknown:
        parser.error(f"unknown targets: {', '.join(sorted(unknown))}")
    default_levels = "1,16" if args.quick else "1,16,64,256"
    return Plan(
        targets=targets,
        concurrency=tuple(int(c) for c in (args.concurrency or default_levels).split(",")),
        duration_s=args.duration or (0.5 if args.quick else 3.0),
        chunks=args.chunks,
        budget_s=args.budget or (50.0 if args.quick else 540.0),
        postgres=args.postgres,
        nice=args.nice,
        workers=tuple(int(w) for w in args.workers.split(",")) if args.workers else (),
    )


def main(argv: Sequence[str] | None = None) -> int:
    plan = parse_plan(argv)
    harness.prepare(plan.targets, plan.nice)
    workdir = RESULTS / f"run-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}"
    meta = machine_meta(plan)
    try:
        cells, failures = aio.run(compare(plan, workdir))
    except aio.Interrupted:
        print("interrupted; every process this run started was stopped", file=sys.stderr)
        return 130
    path = write_results(meta, cells, failures)
    print()
    print(report.markdown(meta, cells, failures))
    for concurrency, ratio in messages_ratios(cells).items():
        print(f"llmeu CPU per streamed call, messages / chat, c={concurrency}: {ratio:.2f}x")
    for (target, stream), ratio in postgres_ratios(cells).items():
        kind = "streamed" if stream else "non-streamed"
        print(f"calls/s at c=1, {kind}, llmeu (SQLite) / {target}: {ratio:.2f}x")
    print(f"written to {path} (and .json); logs and configs in {workdir}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

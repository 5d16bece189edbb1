"""What an answer-cache hit costs: its CPU against a proxied call's, and the p50 it adds.

    .venv/bin/python bench/cache.py [--concurrency 16] [--duration 3] [--rounds 3] [--nice -10]

One run, one llmeu (SQLite ledger, pinned to the gateway core) in front of the
fake upstream, and two tenant keys under two policies that differ only in
their `cache:` section — both keep content for a day, as a caching policy
must: one without a cache (every call is proxied), one with
`cache: {ttl: PT1H}`. The load sends one request over and over, so past the
warm-up every call of the second key is a hit. For non-streamed calls and
for streams of 64 chunks, cells of `--duration` seconds at `--concurrency` go
round-robin — proxied, hit, and the upstream called directly (the baseline of
"added" latency), the order reversed every other round — `--rounds` times.
Printed, per kind, the medians over rounds and, from the same run:

- CPU ms per call of the gateway (its whole process tree) for a hit and for a
  proxied call, and hit / proxied (the target: at most 0.5);
- the p50 latency a hit adds over calling the upstream directly (the target:
  at most 1 ms at c=16), and that over what a proxied call adds;
- how busy the gateway's core was, and c x a hit's CPU: a closed loop of c
  callers on a saturated core waits about that long per call (Little's law),
  whatever the call waits for besides.

The cache's own counters (`/v1/platform/cache`) are printed at the end, so a
run whose hits were not hits shows it.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
from collections.abc import Sequence

import httpx

import harness
from loadgen import CellResult, Load, Target, run_cell

STORING_POLICY = {"allow_classes": ["on_premise"], "max_retention": "P0D", "store_content": "P1D"}
POLICIES = {"bench-stored": STORING_POLICY,
            "bench-cached": {**STORING_POLICY, "cache": {"ttl": "PT1H"}}}  # fmt: skip


def _admin(target: Target) -> httpx.Client:
    base = target.base_url.removesuffix("/v1")
    return httpx.Client(base_url=base, timeout=30,
                        headers={"authorization": f"Bearer {target.api_key}"})  # fmt: skip


def tenant_targets(gateway: Target) -> tuple[Target, Target]:
    """The gateway as driven with a key of the uncached policy and one of the caching one."""
    with _admin(gateway) as admin:
        keys = []
        for policy_id, policy in POLICIES.items():
            admin.put(f"/v1/platform/policies/{policy_id}", json=policy).raise_for_status()
            made = admin.post("/v1/platform/keys", json={"name": policy_id, "policy_id": policy_id})
            made.raise_for_status()
            keys.append(made.json()["key"])
    proxied = dataclasses.replace(gateway, name="llmeu proxied", api_key=keys[0])
    hit = dataclasses.replace(gateway, name="llmeu hit", api_key=keys[1])
    return proxied, hit


async def measure(
    targets: Sequence[Target], load: Load, rounds: int
) -> dict[str, list[CellResult]]:
    """`rounds` cells of each target; the order turns round every round, so that neither side
    is always measured first after the other (a machine whose load drifts favours none)."""
    cells: dict[str, list[CellResult]] = {t.name: [] for t in targets}
    for round_ in range(rounds):
        for target in targets if round_ % 2 == 0 else targets[::-1]:
            cell = await run_cell(target, load)
            if cell.errors:
                raise SystemExit(f"{target.name}, {load.label}: {cell.first_error}")
            cells[target.name].append(cell)
    return cells


def _median(cells: Sequence[CellResult], field: str) -> float:
    return statistics.median(float(getattr(c, field) or 0.0) for c in cells)


def report(load: Load, cells: dict[str, list[CellResult]]) -> None:
    proxied, hit, direct = cells["llmeu proxied"], cells["llmeu hit"], cells["direct"]
    cpu_proxied = _median(proxied, "gateway_cpu_ms_per_call")
    cpu_hit = _median(hit, "gateway_cpu_ms_per_call")
    p50_direct = _median(direct, "p50_ms")
    added_hit = _median(hit, "p50_ms") - p50_direct
    added_proxied = _median(proxied, "p50_ms") - p50_direct
    per_round = [
        float(h.gateway_cpu_ms_per_call or 0.0) / float(p.gateway_cpu_ms_per_call or 1.0)
        for h, p in zip(hit, proxied, strict=True)
    ]
    print(f"\n{load.label}, {len(hit)} rounds of {load.duration_s:g} s (medians)")
    for name, kind in (("direct", direct), ("llmeu proxied", proxied), ("llmeu hit", hit)):
        cpu = _median(kind, "gateway_cpu_ms_per_call") if name != "direct" else None
        rps, p50 = _median(kind, "rps"), _median(kind, "p50_ms")
        spent = ""
        if cpu is not None:
            core = _median(kind, "gateway_core_pct")
            others = _median(kind, "other_load_on_gateway_core_pct")
            spent = f"  CPU {cpu:.3f} ms/call  gateway core {core:3.0f} % (others {others:.0f} %)"
        print(f"  {name:14} {rps:9,.0f} req/s  p50 {p50:7.3f} ms{spent}")
    rounds = ", ".join(f"{r:.2f}" for r in per_round)
    print(f"  hit CPU / proxied CPU        {cpu_hit / cpu_proxied:.2f}x (target ≤ 0.5; "
          f"each round: {rounds})")  # fmt: skip
    # A closed loop of c callers on a saturated core waits c x CPU per call (Little's law).
    queue = load.concurrency * cpu_hit
    print(f"  c x hit CPU                  {queue:.3f} ms (the p50 of a saturated core)")
    print(f"  added p50 of a hit           {added_hit:+.3f} ms (target ≤ 1 ms)")
    if added_proxied > 0:
        print(f"  hit added p50 / proxied      {added_hit / added_proxied:.2f}x "
              f"(proxied adds {added_proxied:+.3f} ms)")  # fmt: skip


async def main_async(args: argparse.Namespace) -> None:
    async with harness.running("llmeu", "cache", args.nice) as running:
        gateway = running.target
        place = running.place
        direct = place.target("direct", place.upstream_base_url, None)
        proxied, hit = tenant_targets(gateway)
        for stream in (False, True):
            load = Load(args.concurrency, stream, duration_s=args.duration)
            report(load, await measure([proxied, hit, direct], load, args.rounds))
        with _admin(gateway) as admin:
            stats = admin.get("/v1/platform/cache").json()
        hits, ratio = stats["hits"]["exact"], stats["hit_ratio"]
        print(
            f"\ncache: {stats['entries']} entries, {hits} hits, {stats['misses']} misses "
            f"(the warm-up), hit ratio {ratio:.4f}"
        )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="CPU and latency of answer-cache hits.")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--duration", type=float, default=3.0, help="seconds per cell")
    parser.add_argument("--rounds", type=int, default=3)
    harness.add_nice_argument(parser)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    harness.run_script("llmeu", args.nice, lambda: main_async(args))


if __name__ == "__main__":
    main()

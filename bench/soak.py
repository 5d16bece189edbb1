"""Soak: many calls through a real gateway against a faulty upstream; nothing may go missing.

    python bench/soak.py [--calls 5000] [--concurrency 32] [--keys 4] [--seed 1] [--hostile]

Starts the fault-injecting fake upstream of the test suite and `llmeu serve`
(SQLite ledger, in a temporary directory), creates tenant keys, then sends
`--calls` calls: half streamed, about 20% of clients hanging up at a random
point, about 10% with an injected upstream fault (error status, reset, invalid
JSON, error event, missing [DONE], a stall past the idle timeout). Each call's
expected outcome is known from what the client saw: completed (a whole answer
or [DONE]), cancelled (the client hung up first), failed (an error status or
an error frame). At the end it waits until no trace is in progress and
compares, per key, the client's counts with the ledger's (platform usage API):

    soak: N calls, lost=X, mismatched=Y, 5xx=Z, p99_ms=…

lost = calls the ledger has no trace for; mismatched = per key and status, the
difference between client and ledger counts; 5xx = 5xx answers to calls
without an injected fault; p99_ms = client-side duration of completed calls.

`--hostile` runs the soak twice on the same plan: once alone, then beside a
hostile mix from another address (127.0.0.2) — slowloris heads at a byte a
second, chat bodies sent halfway with a key of their own, and bursts of
requests with made-up keys — and prints both lines, what the mix saw, and
the ratio of the honest calls' p99 with the mix to without it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
ADMIN_KEY = "sk-llmeu-admin-soak"
FAULTS = [
    "fault=status_503",
    "fault=reset_mid_stream",
    "fault=invalid_json",
    "fault=error_event",
    "fault=missing_done",
    "fault=stall_between;stall=3",
]
CONFIG = """endpoints:
  - endpoint_id: soak-fr-upstream
    provider: soak
    kind: openai
    base_url: {base_url}
    model: fake
    model_version: "1"
    aliases: [soak-model]
    inference_region: test-1
    country: FR
    sovereignty_class: eu_sovereign
    retention: P0D
    price_eur_per_mtok: {{input: 1.0, output: 2.0}}
    capabilities: [chat]
    timeouts: {{connect: 2, first_token: 5, idle: 1, total: 60}}
default_policy: eu-strict
"""


@dataclass
class Plan:
    key: int
    stream: bool
    fault: str | None
    hang_up: bool


@dataclass
class Seen:
    key: int
    outcome: str  # completed | cancelled | failed
    status: int
    fault: bool
    millis: float


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_http(url: str, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{proc.args} exited with {proc.returncode}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.05)
    raise SystemExit(f"{url} did not answer")


def plan_calls(count: int, keys: int, rng: random.Random) -> list[Plan]:
    plans = []
    for _ in range(count):
        roll = rng.random()
        fault = rng.choice(FAULTS) if roll < 0.10 else None
        plans.append(Plan(rng.randrange(keys), rng.random() < 0.5, fault, 0.10 <= roll < 0.30))
    return plans


async def one_call(
    client: httpx.AsyncClient, token: str, plan: Plan, rng: random.Random, index: int
) -> Seen:
    if plan.hang_up:
        directives = "chunks=200;delay=5" if plan.stream else "chunks=100;delay=30"
    else:
        directives = f"chunks={rng.randint(1, 12)}"
    if plan.fault:
        directives += ";" + plan.fault
    body = {
        "model": "soak-model",
        "messages": [{"role": "user", "content": f"soak call {index} [[{directives}]]"}],
        "stream": plan.stream,
    }
    headers = {"authorization": f"Bearer {token}"}
    started = time.perf_counter()

    def seen(outcome: str, status: int) -> Seen:
        millis = (time.perf_counter() - started) * 1000
        return Seen(plan.key, outcome, status, plan.fault is not None, millis)

    if not plan.stream:
        # A call that never reached the gateway is no call: hang up only once the whole
        # request has been sent.
        sent = asyncio.Event()

        async def on_progress(event: str, _: object) -> None:
            if event == "http11.send_request_body.complete":
                sent.set()

        request = asyncio.ensure_future(
            client.post(
                "/v1/chat/completions",
                json=body,
                headers=headers,
                extensions={"trace": on_progress},
            )
        )
        if plan.hang_up:
            waiting = asyncio.ensure_future(sent.wait())
            await asyncio.wait([request, waiting], return_when=asyncio.FIRST_COMPLETED)
            waiting.cancel()
            await asyncio.wait([request], timeout=rng.uniform(0.05, 0.5))
            if not request.done():
                request.cancel()
                await asyncio.gather(request, return_exceptions=True)
                return seen("cancelled", 0)
        response = await request
        return seen("completed" if response.status_code == 200 else "failed", response.status_code)
    async with client.stream("POST", "/v1/chat/completions", json=body, headers=headers) as r:
        if r.status_code != 200:
            await r.aread()
            return seen("failed", r.status_code)
        stop_after = rng.randint(1, 8) if plan.hang_up else None
        frames = 0
        buffer = b""
        try:
            async for chunk in r.aiter_raw():
                buffer += chunk
                frames = buffer.count(b"\n\n")
                if stop_after is not None and frames >= stop_after:
                    return seen("cancelled", 200)
        except httpx.RemoteProtocolError:
            pass
        last = buffer.rstrip(b"\n").rsplit(b"\n\n", 1)[-1]
        return seen("completed" if last == b"data: [DONE]" else "failed", 200)


async def drive(
    base_url: str, tokens: list[str], plans: list[Plan], concurrency: int
) -> list[Seen]:
    rng = random.Random(7)
    # Idle connections are dropped before the gateway's keep-alive (5 s) would close them:
    # reusing one as the server closes it is a reset no call outcome can account for.
    limits = httpx.Limits(
        max_connections=concurrency, max_keepalive_connections=concurrency, keepalive_expiry=2
    )
    queue: asyncio.Queue[int] = asyncio.Queue()
    for index in range(len(plans)):
        queue.put_nowait(index)
    results: list[Seen] = []
    async with httpx.AsyncClient(base_url=base_url, timeout=60, limits=limits) as client:

        async def worker() -> None:
            while not queue.empty():
                index = queue.get_nowait()
                plan = plans[index]
                results.append(await one_call(client, tokens[plan.key], plan, rng, index))

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return results


def ledger_counts(base_url: str, key_ids: list[str]) -> dict[str, Counter[str]]:
    admin = {"authorization": f"Bearer {ADMIN_KEY}"}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pending = httpx.get(
            f"{base_url}/v1/platform/traces?status=in_progress&limit=1", headers=admin, timeout=30
        ).json()["data"]
        if not pending:
            break
        time.sleep(0.2)
    rows = httpx.get(
        f"{base_url}/v1/platform/usage?group_by=key", headers=admin, timeout=30
    ).json()["data"]
    counts: dict[str, Counter[str]] = {}
    for row in rows:
        statuses = ("completed", "cancelled", "failed", "rejected", "interrupted")
        counts[row["key"]] = Counter({s: row[s] for s in statuses})
        counts[row["key"]]["requests"] = row["requests"]
    return {k: counts.get(k, Counter()) for k in key_ids}


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, -(-len(ordered) * 99 // 100) - 1)] if ordered else 0.0


HOSTILE_ADDRESS = "127.0.0.2"


async def hostile_mix(port: int, token: str, stop: asyncio.Event) -> Counter[str]:
    """Slowloris heads, half-sent bodies and bursts of made-up keys until `stop`."""
    seen: Counter[str] = Counter()

    async def open_hostile() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection("127.0.0.1", port, local_addr=(HOSTILE_ADDRESS, 0))

    async def answered(reader: asyncio.StreamReader, kind: str) -> None:
        status = (await reader.read(64)).split(b" ", 2)[1:2]
        seen[f"{kind}:{status[0].decode() if status else 'closed'}"] += 1

    async def slowloris() -> None:
        while not stop.is_set():
            reader, writer = await open_hostile()
            writer.write(b"GET /healthz HTTP/1.1\r\nhost: soak\r\nx-slow: ")
            done = asyncio.ensure_future(answered(reader, "slowloris"))
            try:
                while not stop.is_set() and not done.done():
                    writer.write(b"a")
                    await writer.drain()
                    await asyncio.wait([done], timeout=1.0)
            except (ConnectionError, OSError):
                seen["slowloris:reset"] += 1
            finally:
                done.cancel()  # once the run is over, what the gateway does is not counted
                writer.close()

    async def half_body() -> None:
        body = b'{"model": "soak-model", "messages": [' + b" " * (512 << 10)
        head = (
            "POST /v1/chat/completions HTTP/1.1\r\nhost: soak\r\n"
            f"authorization: Bearer {token}\r\ncontent-type: application/json\r\n"
            f"content-length: {2 * len(body)}\r\n\r\n"
        ).encode()
        while not stop.is_set():
            reader, writer = await open_hostile()
            waiting = asyncio.ensure_future(answered(reader, "half_body"))
            stopped = asyncio.ensure_future(stop.wait())
            try:
                writer.write(head + body)
                await writer.drain()
                await asyncio.wait([waiting, stopped], return_when=asyncio.FIRST_COMPLETED)
            except (ConnectionError, OSError):
                seen["half_body:reset"] += 1
            finally:
                waiting.cancel()
                stopped.cancel()
                writer.close()

    async def bad_keys() -> None:
        transport = httpx.AsyncHTTPTransport(local_address=HOSTILE_ADDRESS)
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", transport=transport, timeout=30
        ) as client:
            while not stop.is_set():
                for _ in range(50):
                    made_up = f"sk-llmeu-k{random.randbytes(8).hex()}-{random.randbytes(16).hex()}"
                    response = await client.get(
                        "/v1/models", headers={"authorization": f"Bearer {made_up}"}
                    )
                    seen[f"bad_key:{response.status_code}"] += 1
                await asyncio.sleep(0.5)

    tasks = [
        *(asyncio.ensure_future(slowloris()) for _ in range(50)),
        *(asyncio.ensure_future(half_body()) for _ in range(20)),
        asyncio.ensure_future(bad_keys()),
    ]
    await stop.wait()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return seen


async def drive_beside(
    base_url: str, tokens: list[str], plans: list[Plan], concurrency: int, hostile: str | None
) -> tuple[list[Seen], Counter[str]]:
    """The honest calls, with the hostile mix (its key `hostile`) running beside them."""
    if hostile is None:
        return await drive(base_url, tokens, plans, concurrency), Counter()
    stop = asyncio.Event()
    port = int(base_url.rsplit(":", 1)[1])
    mix = asyncio.ensure_future(hostile_mix(port, hostile, stop))
    await asyncio.sleep(2)  # the mix is under way before the first honest call
    try:
        results = await drive(base_url, tokens, plans, concurrency)
    finally:
        stop.set()
    return results, await mix


def run(calls: int, concurrency: int, keys: int, seed: int, hostile: bool = False) -> str:
    tmp = Path(tempfile.mkdtemp(prefix="llmeu-soak-"))
    upstream_port, gateway_port = free_port(), free_port()
    upstream = subprocess.Popen(
        [sys.executable, "-m", "tests.support.fake_upstream", "--port", str(upstream_port)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    config = tmp / "config.yaml"
    config.write_text(CONFIG.format(base_url=f"http://127.0.0.1:{upstream_port}/v1"))
    log = (tmp / "gateway.log").open("wb")
    gateway = subprocess.Popen(
        [sys.executable, "-m", "llmeu.cli.main", "serve", "--no-local", "--port", str(gateway_port),
         "--config", str(config), "--data-dir", str(tmp), "--log-level", "warning",
         "--breaker-threshold", "1000000"],
        env={**os.environ, "LLMEU_ADMIN_KEY": ADMIN_KEY}, stdout=log, stderr=subprocess.STDOUT,
        cwd=REPO,
    )  # fmt: skip
    base_url = f"http://127.0.0.1:{gateway_port}"
    try:
        wait_http(f"http://127.0.0.1:{upstream_port}/_stats", upstream)
        wait_http(f"{base_url}/healthz", gateway)
        created = [
            httpx.post(
                f"{base_url}/v1/platform/keys",
                json={"name": f"soak-{i}"},
                headers={"authorization": f"Bearer {ADMIN_KEY}"},
                timeout=30,
            ).json()
            for i in range(keys)
        ]
        tokens = [c["key"] for c in created]
        key_ids = [c["id"] for c in created]
        hostile_key = None
        if hostile:
            hostile_key = httpx.post(
                f"{base_url}/v1/platform/keys", json={"name": "soak-hostile"},
                headers={"authorization": f"Bearer {ADMIN_KEY}"}, timeout=30,
            ).json()["key"]  # fmt: skip
        plans = plan_calls(calls, keys, random.Random(seed))
        results, mix = asyncio.run(drive_beside(base_url, tokens, plans, concurrency, hostile_key))
        ledger = ledger_counts(base_url, key_ids)
    finally:
        for proc in (gateway, upstream):
            proc.send_signal(signal.SIGTERM)
        for proc in (gateway, upstream):
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        log.close()
    client: dict[str, Counter[str]] = {k: Counter() for k in key_ids}
    for result in results:
        client[key_ids[result.key]][result.outcome] += 1
    lost = sum(max(0, sum(client[k].values()) - ledger[k]["requests"]) for k in key_ids)
    mismatched = sum(
        abs(client[k][s] - ledger[k][s])
        for k in key_ids
        for s in ("completed", "cancelled", "failed", "rejected", "interrupted")
    )
    server_errors = sum(1 for r in results if r.status >= 500 and not r.fault)
    latency = p99([r.millis for r in results if r.outcome == "completed"])
    details = {k: {"client": dict(client[k]), "ledger": dict(ledger[k])} for k in key_ids}
    (tmp / "soak.json").write_text(json.dumps(details, indent=2))
    line = (
        f"soak: {len(results)} calls, lost={lost}, mismatched={mismatched}, "
        f"5xx={server_errors}, p99_ms={latency:.1f}"
    )
    if hostile:
        line += " hostile: " + ", ".join(f"{k}={v}" for k, v in sorted(mix.items()))
    return line


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--keys", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--hostile", action="store_true", help="run alone, then beside a hostile mix; compare"
    )
    args = parser.parse_args()
    line = run(args.calls, args.concurrency, args.keys, args.seed)
    print(line, flush=True)
    if not args.hostile:
        return 0 if "lost=0, mismatched=0," in line else 1
    beside = run(args.calls, args.concurrency, args.keys, args.seed, hostile=True)
    print(beside, flush=True)
    alone_p99, beside_p99 = _p99_of(line), _p99_of(beside)
    print(f"soak: honest p99 with the hostile mix / without = {beside_p99 / alone_p99:.2f}")
    clean = all("lost=0, mismatched=0, 5xx=0," in x for x in (line, beside))
    return 0 if clean else 1


def _p99_of(line: str) -> float:
    return float(line.split("p99_ms=", 1)[1].split()[0])


if __name__ == "__main__":
    sys.exit(main())

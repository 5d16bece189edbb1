"""CPU cost of the evidence on the request path: one receipt, one chain link.

    .venv/bin/python bench/evidence.py [--rounds 5] [--number 2000] [--ledger-batches 200]

Prints the median over rounds of the mean CPU time per call, in microseconds, for:
building and signing one receipt (payload + JCS + Ed25519 through PyJWT), the
Ed25519 signature alone, one chain link (two JCS forms and two SHA-256: the digest
of the metadata a purge empties, then the body), and, off the request path,
verifying one receipt and one chain row. The inputs are a realistic completed
call with two attempts and one excluded endpoint.

Then the ledger as the gateway writes it (SQLite, one file in a temporary
directory): the CPU per final trace of `Store.write_traces` — which links the
batch's rows to the hash chain inside its transaction — against the same
statements without the chain, alternating in one run, batches of 1 and of 16
traces; and what every call pays besides (the digests of its request body and
of its answer). Prints the difference per trace and the ratio.

Then the head: the CPU per final trace, written alone, of a store that goes the locked
way in every transaction (reads the chain head, then links its rows with a second
UPDATE) against one that links them ahead, in their own upsert, from the head it wrote
last (`llmeu.ledger.chaining.link_ahead`), on SQLite and, with `--postgres`, on a
throwaway PostgreSQL database at 127.0.0.1:5432 (bench/pgdb.py).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import statistics
import tempfile
import time
import timeit
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pgdb
from llmeu.calls.record import Attempt, CallStatus, TraceRecord, new_trace_id
from llmeu.evidence import (
    GENESIS,
    KeyRing,
    SigningKey,
    build_receipt,
    canonical_json,
    sha256_hex,
    verify_chain,
    verify_receipt,
)
from llmeu.evidence.chain import CHAIN_VERSION, chain_metadata, link_row
from llmeu.ledger.database import Database
from llmeu.ledger.postgres import PostgresDatabase
from llmeu.ledger.sqlite import SqliteDatabase
from llmeu.ledger.store import Store
from llmeu.ledger.trace_writes import trace_row


def trace_view() -> dict[str, object]:
    attempt = {"provider": "scaleway", "error": None, "upstream_status": None}
    return {
        "id": "trc_0192f3a4b5c6d7e8f9a0b1c2d3e4", "status": "completed", "key_id": "key_7f3a9c",
        "route": "/v1/chat/completions", "stream": True, "request_model": "mistral-small",
        "timings": {"received_at": 1761998400.123456, "first_token_at": 1761998400.345678,
                    "finished_at": 1761998401.5},
        "routing": {"policy_id": "eu-strict", "endpoint_id": "scaleway-fr-par-mistral-small",
                    "provider": "scaleway", "model_used": "mistral-small-3.2-24b-instruct-2506",
                    "model_version": "2506", "inference_region": "fr-par",
                    "sovereignty_class": "eu_sovereign", "retention": "P0D"},
        "usage": {"input_tokens": 12, "output_tokens": 40, "estimated": False,
                  "cost_eur": 0.0000158},
        "finish_reason": "stop", "error": None,
        "attempts": [
            {**attempt, "endpoint_id": "ovh-gra-mistral-small", "started_at": 1761998400.13,
             "finished_at": 1761998400.2, "outcome": "failed", "upstream_status": 503},
            {**attempt, "endpoint_id": "scaleway-fr-par-mistral-small",
             "started_at": 1761998400.2, "finished_at": 1761998401.5, "outcome": "served"},
        ],
        "excluded": [{"endpoint_id": "openai-us-gpt-4o-mini", "rule": "allow_classes",
                      "reason": "sovereignty class global is not in [on_premise, eu_sovereign]"}],
    }  # fmt: skip


def ledger_row() -> dict[str, object]:
    view = trace_view()
    timings, routing, usage = view["timings"], view["routing"], view["usage"]
    assert isinstance(timings, dict) and isinstance(routing, dict) and isinstance(usage, dict)
    return {
        "trace_id": view["id"], "key_id": view["key_id"], "route": view["route"],
        "request_model": view["request_model"], "stream": 1, "status": "completed",
        "instance_id": "inst_a", **timings, "ttft_ms": 222.222, "tpot_ms": 29.1, **routing,
        "input_tokens": 12, "output_tokens": 40, "tokens_estimated": 0, "cost_eur": 0.0000158,
        "finish_reason": "stop", "http_status": 200, "error_type": None, "error_code": None,
        "error_message": None, "attempts": json.dumps(view["attempts"]),
        "excluded": json.dumps(view["excluded"]), "prompt": None, "completion": None,
        "content_expires_at": None,
    }  # fmt: skip


def per_call_us(function: Callable[[], object], number: int, rounds: int) -> float:
    """CPU time of this process per call: what the gateway pays, even on a busy machine."""
    timer = timeit.Timer(function, timer=time.process_time)
    return statistics.median(timer.timeit(number=number) / number * 1e6 for _ in range(rounds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--number", type=int, default=2000)
    parser.add_argument("--ledger-batches", type=int, default=200)
    parser.add_argument("--postgres", action="store_true", help="also the head on PostgreSQL")
    args = parser.parse_args()

    key = SigningKey.generate()
    jwks = KeyRing(key).jwks()
    view, row = trace_view(), ledger_row()
    digests = {"policy_sha256": "a" * 64, "request_sha256": "b" * 64, "content_sha256": "c" * 64}
    receipt = build_receipt(view, key, **digests)
    head, digest = link_row(GENESIS, row)
    chained = [dict(row, chain_seq=1, chain_link=head.link, chain_version=CHAIN_VERSION,
                    metadata_sha256=digest)]  # fmt: skip
    metadata = canonical_json(chain_metadata(row))

    cases: list[tuple[str, Callable[[], object]]] = [
        ("receipt: build + JCS + sign (on demand)", lambda: build_receipt(view, key, **digests)),
        ("  of which the Ed25519 signature", lambda: key.private_key.sign(metadata)),
        ("chain link: 2 x (JCS + SHA-256) (every final trace)", lambda: link_row(GENESIS, row)),
        ("  of which SHA-256 of the body", lambda: sha256_hex(metadata)),
        ("verify one receipt (off the request path)", lambda: verify_receipt(receipt, jwks)),
        ("verify one chain row (off the request path)", lambda: verify_chain(chained)),
    ]  # fmt: skip
    print(f"median of {args.rounds} rounds x {args.number} calls; payload {len(receipt)} B JWS")
    for name, function in cases:
        number = max(args.number // 10, 1) if name.startswith("verify") else args.number
        print(f"{per_call_us(function, number, args.rounds):9.1f} µs  {name}")
    ledger_report(args.ledger_batches, args.rounds, args.number)
    head_report(args.ledger_batches, args.rounds, args.postgres)


def record() -> TraceRecord:
    now = time.time()
    call = TraceRecord(
        trace_id=new_trace_id(), key_id="key_7f3a9c", route="chat.completions",
        request_model="mistral-small", stream=True, received_at=now, instance_id="gw_bench",
        status=CallStatus.COMPLETED, policy_id="eu-strict",
        endpoint_id="scaleway-fr-par-mistral-small", provider="scaleway",
        model_used="mistral-small-3.2-24b-instruct-2506", model_version="2506",
        inference_region="fr-par", sovereignty_class="eu_sovereign", retention="P0D",
        first_token_at=now + 0.2, finished_at=now + 1.4, input_tokens=12, output_tokens=40,
        cost_eur=0.0000158, finish_reason="stop", http_status=200,
        policy_sha256="a" * 64, request_sha256="b" * 64, content_sha256="c" * 64,
    )  # fmt: skip
    call.attempts = [Attempt("scaleway-fr-par-mistral-small", "scaleway", now, now + 1.4, "served")]
    return call


async def ledger_cost(batches: int, batch_size: int) -> tuple[float, float]:
    """CPU µs per final trace: (with the chain, without), alternating batches in one run.

    Two ledgers in one directory, so that the rows written without the chain are not
    chained by the other's next write."""
    with tempfile.TemporaryDirectory() as directory:
        stores = {}
        for name in ("chained", "plain"):
            db = SqliteDatabase(Path(directory) / f"{name}.db")
            await db.open()
            stores[name] = Store(db)
            await stores[name].migrate()
        spent = {"chained": 0.0, "plain": 0.0}
        for n in range(batches * 2):
            rows = [trace_row(record()) for _ in range(batch_size)]
            name = "chained" if n % 2 == 0 else "plain"
            store = stores[name]
            started = time.process_time()
            if name == "chained":
                await store.write_traces([], rows)
            else:  # the same statements, in a transaction without the chain
                closing = [(row[0],) for row in rows]
                await store.db.transaction(
                    [(store.writes.finish_trace, rows), (store.writes.close_open, closing)]
                )
            spent[name] += time.process_time() - started
        for store in stores.values():
            await store.db.close()
    per_trace = batches * batch_size
    return spent["chained"] / per_trace * 1e6, spent["plain"] / per_trace * 1e6


def every_call_us(number: int, rounds: int) -> float:
    """The digests every call computes: a 1 kB request body and a 400-character answer."""
    body = json.dumps({"model": "mistral-small", "messages": [
        {"role": "user", "content": "x" * 1000}]}).encode()  # fmt: skip
    answer = "Bonjour, " * 44

    def digests() -> None:
        hashlib.sha256(body).hexdigest()
        hashlib.sha256(answer.encode()).hexdigest()

    return per_call_us(digests, number, rounds)


def ledger_report(batches: int, rounds: int, number: int) -> None:
    print(f"\nledger (SQLite), CPU per final trace, median of {rounds} runs of {batches} batches:")
    digests = every_call_us(number, rounds)
    for size in (1, 16):
        runs = [asyncio.run(ledger_cost(batches, size)) for _ in range(rounds)]
        chained = statistics.median(r[0] for r in runs)
        plain = statistics.median(r[1] for r in runs)
        print(f"  batch of {size:2d}: {plain:7.1f} µs without the chain, "
              f"{chained:7.1f} µs with it: +{chained - plain:5.1f} µs "
              f"({chained / plain:.2f}x)")  # fmt: skip
    print(f"  every call also hashes its request body and answer: {digests:.1f} µs")


@contextlib.asynccontextmanager
async def databases(kind: str, names: tuple[str, ...]) -> AsyncIterator[dict[str, Database]]:
    """One fresh ledger per name, migrated: SQLite files, or PostgreSQL databases."""
    with tempfile.TemporaryDirectory() as directory, contextlib.ExitStack() as stack:
        opened: dict[str, Database] = {}
        for name in names:
            if kind == "sqlite":
                opened[name] = SqliteDatabase(Path(directory) / f"{name}.db")
            else:
                url = stack.enter_context(pgdb.temporary_database(suffix=name))
                opened[name] = PostgresDatabase(url)
            await opened[name].open()
        try:
            yield opened
        finally:
            for db in opened.values():
                await db.close()


async def head_cost(kind: str, batches: int) -> tuple[float, float]:
    """CPU µs per final trace written alone: (the locked way every time, linked ahead)."""
    async with databases(kind, ("read", "remembered")) as opened:
        stores = {name: Store(db) for name, db in opened.items()}
        for store in stores.values():
            await store.migrate()
        spent = dict.fromkeys(stores, 0.0)
        for n in range(batches * 2):
            name = "read" if n % 2 == 0 else "remembered"
            rows = [trace_row(record())]
            stores["read"].writes.chain_tail.head = None  # forgotten: the locked way
            started = time.process_time()
            await stores[name].write_traces([], rows)
            spent[name] += time.process_time() - started
    return spent["read"] / batches * 1e6, spent["remembered"] / batches * 1e6


def head_report(batches: int, rounds: int, postgres: bool) -> None:
    print(f"\nthe chain head, CPU per final trace written alone, median of {rounds} runs:")
    for kind in ("sqlite", "postgres") if postgres else ("sqlite",):
        runs = [asyncio.run(head_cost(kind, batches)) for _ in range(rounds)]
        read = statistics.median(r[0] for r in runs)
        remembered = statistics.median(r[1] for r in runs)
        print(f"  {kind:8s}: {read:7.1f} µs the locked way, {remembered:7.1f} µs linked ahead: "
              f"{remembered - read:+6.1f} µs ({remembered / read:.2f}x)")  # fmt: skip


if __name__ == "__main__":
    main()

"""Wall time of one call's ledger work at c=1: SQLite against PostgreSQL, in one run.

    .venv/bin/python bench/ledger_write.py [--calls 500] [--rounds 5]

What a call waits for in the gateway at c=1: its in-progress row queued when it
starts, its final row queued when the upstream has answered, and the answer
sent once the final row is durable (`Ledger.durable`). Two shapes: a
non-streamed call (the final row follows at once) and a streamed call (its
first frame waits for the in-progress row, the end for the final row). The
ledgers are a SQLite file in a temporary directory and a throwaway PostgreSQL
database at 127.0.0.1:5432 (bench/pgdb.py), with the chain and its checks as
the gateway writes them; and another through a URL with
`?synchronous_commit=off`, the opt-in that lets final rows commit without
waiting for the WAL flush (docs/ledger.md). Prints the median over rounds of
the median µs per call, and each PostgreSQL / SQLite.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import pgdb
from evidence import record
from llmeu.calls.record import CallStatus
from llmeu.ledger.database import Database
from llmeu.ledger.postgres import PostgresDatabase
from llmeu.ledger.sqlite import SqliteDatabase
from llmeu.ledger.store import Store
from llmeu.ledger.writer import Ledger

SHAPES = ("non-streamed", "streamed")


async def one_call(ledger: Ledger, shape: str) -> float:
    call = record()
    call.status = CallStatus.IN_PROGRESS
    started = time.perf_counter()
    began = ledger.begin(call)
    if shape == "streamed":
        await began
    else:
        await asyncio.sleep(0)  # the upstream answers at once
    call.status = CallStatus.COMPLETED
    await ledger.finish(call)
    return time.perf_counter() - started


async def per_call_us(databases: dict[str, Database], calls: int) -> dict[tuple[str, str], float]:
    ledgers = {}
    for name, db in databases.items():
        await db.open()
        store = Store(db)
        await store.migrate()
        ledgers[name] = Ledger(store)
        ledgers[name].start()
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(calls):
        for shape in SHAPES:
            for name, ledger in ledgers.items():  # alternating: the same moment for each
                times.setdefault((name, shape), []).append(await one_call(ledger, shape))
    for ledger in ledgers.values():
        await ledger.stop()
        await ledger.store.db.close()
    return {key: statistics.median(values) * 1e6 for key, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    runs = []
    for _ in range(args.rounds):
        with (
            tempfile.TemporaryDirectory() as directory,
            pgdb.temporary_database("lw") as url,
            pgdb.temporary_database("lw_relaxed") as relaxed_url,
        ):
            databases: dict[str, Database] = {
                "sqlite": SqliteDatabase(Path(directory) / "ledger.db"),
                "postgres": PostgresDatabase(url),
                "relaxed": PostgresDatabase(relaxed_url + "?synchronous_commit=off"),
            }
            runs.append(asyncio.run(per_call_us(databases, args.calls)))
    print(f"ledger work of one call at c=1, µs, median of {args.rounds} rounds x {args.calls}:")
    for shape in SHAPES:
        sqlite, postgres, relaxed = (
            statistics.median(r[(name, shape)] for r in runs)
            for name in ("sqlite", "postgres", "relaxed")
        )
        print(f"  {shape:13s} SQLite {sqlite:6.0f}  PostgreSQL {postgres:6.0f} "
              f"({postgres / sqlite:.2f}x)  PostgreSQL ?synchronous_commit=off "
              f"{relaxed:6.0f} ({relaxed / sqlite:.2f}x)")  # fmt: skip


if __name__ == "__main__":
    main()

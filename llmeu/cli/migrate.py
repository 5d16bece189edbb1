"""`llmeu migrate`: bring the ledger's schema up to this release, as a step of its own.

    llmeu migrate [--database-url URL | --data-dir DIR]

The same database `llmeu serve` would use with the same options and
environment (`LLMEU_DATABASE_URL`, else the data directory's SQLite file,
created if absent). Applies the pending migrations in order and prints each
one applied and the schema version it leaves; a contract step waits while a
live process runs an older release (`llmeu.ledger.schema`), and the command
says which processes it waits for: run it again once they are gone. `llmeu
serve` migrates at start too, unless `--no-migrate` leaves it to this command
(a Kubernetes init container, deploy/kubernetes/deployment.yaml).

Exit status: 0 when the schema is one this release runs on (a deferred
contract step included); 1 when the database cannot be reached or its schema
holds a newer release's contract step.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from llmeu.config import Settings
from llmeu.errors import DatabaseError
from llmeu.ledger.database import Database
from llmeu.ledger.migration_runner import known_migrations
from llmeu.ledger.opening import open_database
from llmeu.ledger.schema import SCHEMA_VERSION
from llmeu.ledger.store import Store


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "migrate", help="apply the ledger's pending schema migrations (as `llmeu serve` does)"
    )
    parser.add_argument("--data-dir", type=Path, help="where the SQLite ledger lives")
    parser.add_argument("--database-url", help="postgresql://… (a shared ledger)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    settings = Settings.from_env(data_dir=args.data_dir, database_url=args.database_url)
    database = open_database(settings.effective_database_url)
    try:
        lines = asyncio.run(migrate(database, time.time() - 3 * settings.heartbeat_seconds))
    except DatabaseError as error:
        print(f"llmeu migrate: {database.describe()}: {_one_line(error)}", file=sys.stderr)
        return 1
    for line in lines:
        print(line)
    return 0


async def migrate(database: Database, live_after: float) -> list[str]:
    """What was applied, what waits and why, and the schema version now, as lines."""
    await database.open()
    try:
        store = Store(database)
        applied = await store.migrate(live_after=live_after)
        await store.check_schema()
        versions, _ = await store.schema()
        known = known_migrations()
        names = {version: name for version, name, _ in known}
        lines = [f"applied {v}: {names[v]}" for v in applied]
        pending = [(v, contract) for v, _, contract in known if v not in versions]
        if pending:
            # Only a contract step waits (Store.migrate), and every step after it with it.
            first, _ = pending[0]
            older = await store.older_processes(first, live_after)
            lines.append(
                f"waiting: {', '.join(str(v) for v, _ in pending)} (contract step {first} runs "
                f"once no process of an older release is alive; alive now: {', '.join(older)})"
            )
        lines.append(
            f"schema version {max(versions)} in {database.describe()} "
            f"(this release knows {SCHEMA_VERSION})" + ("" if applied else "; nothing to apply")
        )
        return lines
    finally:
        await database.close()


def _one_line(error: Exception) -> str:
    return " ".join(str(error).split()) or type(error).__name__

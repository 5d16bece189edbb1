"""`llmeu ledger purge`: drop stored content, and metadata, whose retention ran out.

The gateway does this itself every few minutes; this command does it now,
straight on the ledger database (the same `--data-dir`/`--database-url` as
`llmeu serve`), with or without a gateway running. Content (prompts and
outputs) goes when the policy's `store_content` ran out; the trace keeps its
timings, routing, tokens and cost until `keep_metadata` (default six months)
ran out too, unless a legal hold covers it (`llmeu.ledger.retention`). A purge run
by this command is an admin event (`ledger.purge`, with the counts) on the ledger's
chain; the gateway's own purges, which only carry out the retention, are not.

Exit status: 0; 1 when the database cannot be reached or holds no ledger.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from llmeu.cli import ledger_backup
from llmeu.cli.local_events import record_local
from llmeu.config import Settings
from llmeu.errors import DatabaseError, DatabaseUnavailable
from llmeu.ledger.database import Database
from llmeu.ledger.opening import open_database
from llmeu.ledger.retention import Retention
from llmeu.ledger.store import Store


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("ledger", help="maintain the ledger database")
    actions = parser.add_subparsers(dest="action", required=True)
    purge = actions.add_parser("purge", help="drop stored content whose retention ran out")
    purge.add_argument("--data-dir", type=Path, help="where the SQLite ledger lives")
    purge.add_argument("--database-url", help="postgresql://… (a shared ledger)")
    purge.add_argument("--json", action="store_true", help="print the result as JSON")
    purge.set_defaults(func=run_purge)
    ledger_backup.register_actions(actions)


def run_purge(args: argparse.Namespace) -> int:
    settings = Settings.from_env(data_dir=args.data_dir, database_url=args.database_url)
    database = open_database(settings.effective_database_url)
    try:
        purged, emptied = asyncio.run(purge(database, time.time()))
    except (DatabaseError, LookupError) as error:
        print(f"llmeu ledger purge: {error}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({"purged": purged, "metadata_purged": emptied,
                          "database": database.describe()}))  # fmt: skip
    else:
        print(
            f"purged the stored content of {purged} traces and the metadata of {emptied} "
            f"traces in {database.describe()}"
        )
    return 0


async def purge(database: Database, now: float) -> tuple[int, int]:
    """Raises LookupError when the database holds no ledger (rather than create one)."""
    try:
        await database.open(create=False)
    except DatabaseUnavailable as error:
        raise LookupError(f"no ledger at {database.describe()}: {error}") from None
    try:
        store = Store(database)
        if not await store.has_schema():
            raise LookupError(
                f"no ledger in {database.describe()} (start `llmeu serve` on it first)"
            )
        purged = await store.purge_content(now), await Retention(database).purge_metadata(now)
        after = {"content_purged": purged[0], "metadata_purged": purged[1]}
        await record_local(store, "ledger.purge", database.describe(), after=after)
        return purged
    finally:
        await database.close()

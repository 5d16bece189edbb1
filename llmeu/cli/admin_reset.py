"""`llmeu keys reset-admin`: a new admin key, for whoever lost the one shown at first start.

    llmeu keys reset-admin [--data-dir DIR | --database-url URL] [--json]

It works on the ledger database itself (the same `--data-dir` /
`--database-url` as `llmeu serve`), since the admin key is what one would
otherwise need to call the platform API. The new key is printed once; only
its hash is stored, and the old key stops working. A gateway that is running
keeps the key it loaded until it restarts (on a shared PostgreSQL ledger,
within a few seconds). To choose the key rather than have one made, set
`LLMEU_ADMIN_KEY` before `llmeu serve`; while it is set, every start installs
that key, whatever a reset made. The reset is an admin event on the ledger's
chain (`key.reset`, by the local account: `llmeu.cli.local_events`).

Exit status: 0; 1 when the database holds no ledger or no admin key yet.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from llmeu.api.services.auth import KeyRing
from llmeu.cli.local_events import record_local
from llmeu.config import Settings
from llmeu.errors import DatabaseError, DatabaseUnavailable
from llmeu.ledger.database import Database
from llmeu.ledger.opening import open_database
from llmeu.ledger.secrets import ADMIN_KEY_ID, new_token
from llmeu.ledger.store import Store


def register_action(actions: Any) -> None:
    reset = actions.add_parser(
        "reset-admin", help="replace the admin key, straight on the ledger (shown once)"
    )
    reset.add_argument("--data-dir", type=Path, help="where the SQLite ledger lives")
    reset.add_argument("--database-url", help="postgresql://… (a shared ledger)")
    reset.add_argument("--json", action="store_true", help="print the result as JSON")
    reset.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    settings = Settings.from_env(data_dir=args.data_dir, database_url=args.database_url)
    database = open_database(settings.effective_database_url)
    try:
        token = asyncio.run(reset_admin(database))
    except (DatabaseError, LookupError) as error:
        print(f"llmeu keys reset-admin: {error}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({"key": token, "database": database.describe()}))
        return 0
    print(
        f"new admin key for {database.describe()} (shown once, store it now):\n\n    {token}\n\n"
        "The old one no longer works; restart a running `llmeu serve` to use the new one."
    )
    return 0


async def reset_admin(database: Database) -> str:
    """The new admin token. Raises LookupError when there is no ledger or no admin key."""
    try:
        await database.open(create=False)
    except DatabaseUnavailable as error:
        raise LookupError(f"no ledger at {database.describe()}: {error}") from None
    try:
        store = Store(database)
        if not await store.has_schema():
            raise LookupError(f"no ledger in {database.describe()} (start `llmeu serve` first)")
        existing = await store.get_key(ADMIN_KEY_ID)
        if existing is None:
            raise LookupError(
                f"no admin key in {database.describe()}: `llmeu serve` makes one at its first start"
            )
        token = new_token(ADMIN_KEY_ID)
        await KeyRing(store).ensure_admin(token, existing.policy_id)
        after = await store.get_key(ADMIN_KEY_ID)
        await record_local(
            store, "key.reset", ADMIN_KEY_ID, before=existing.public(),
            after=None if after is None else after.public(),
        )  # fmt: skip
        return token
    finally:
        await database.close()

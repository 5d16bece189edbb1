"""`llmeu ledger backup` and `llmeu ledger restore`: a copy of the ledger, checked before it counts.

    llmeu ledger backup  --to FILE   [--data-dir DIR | --database-url URL] [--json]
    llmeu ledger restore --from FILE [--data-dir DIR | --database-url URL] [--force] [--json]

The ledger is the same as `llmeu serve`'s (`--data-dir`/`--database-url`).
A backup runs while the gateway serves: SQLite through the online backup API,
PostgreSQL through `pg_dump` (on PATH) of one exported snapshot. Either way
the copy is read back before it replaces FILE, and the command prints what it
holds: schema version, traces, the chain head's position, the newest signed
checkpoint, and whether the hash chain walks intact (`llmeu.ledger.backups`).

A restore wants every gateway on the ledger stopped (a recent heartbeat in
the target refuses it) and refuses to replace a ledger that holds traces,
checkpoints or keys unless `--force`. The backup file's kind must match the
target's: a SQLite file restores into a SQLite ledger, a `pg_dump` archive
into a PostgreSQL database (which must exist). Afterwards, run `llmeu audit
verify --checkpoints DIR` with the checkpoints exported outside the database:
it names the positions the restored ledger lacks.

Exit status: 0 done and the copy verifies; 1 nothing was written (a missing
tool, a path that cannot be written, a corrupt or foreign file, a target in
use or not empty) — or the copy was written but its hash chain is damaged
(the ledger itself is: see `llmeu audit verify`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from llmeu.config import Settings
from llmeu.errors import BackupFailed, ConfigError
from llmeu.ledger.backups import Contents, backup_sqlite, restore_sqlite


def register_actions(actions: Any) -> None:
    backup = actions.add_parser(
        "backup", help="copy the ledger to a file while the gateway runs, and check the copy"
    )
    backup.add_argument("--to", dest="target", type=Path, required=True, help="file to write")
    restore = actions.add_parser(
        "restore", help="replace the ledger with a backup (gateways stopped)"
    )
    restore.add_argument("--from", dest="source", type=Path, required=True, help="backup file")
    restore.add_argument(
        "--force", action="store_true", help="replace a ledger that holds traces or keys"
    )
    for parser, run in ((backup, run_backup), (restore, run_restore)):
        parser.add_argument("--data-dir", type=Path, help="where the SQLite ledger lives")
        parser.add_argument("--database-url", help="postgresql://… (a shared ledger)")
        parser.add_argument("--json", action="store_true", help="print the result as JSON")
        parser.set_defaults(func=run)


def run_backup(args: argparse.Namespace) -> int:
    def work(url: str) -> Contents:
        if url.startswith("sqlite:///"):
            return backup_sqlite(Path(url.removeprefix("sqlite:///")), args.target)
        from llmeu.ledger.pg_backups import backup_postgres  # asyncpg only when needed

        return asyncio.run(backup_postgres(url, args.target, os.environ))

    return _run("backup", args, work, lambda where: f"backup of {where} written to {args.target}")


def run_restore(args: argparse.Namespace) -> int:
    def work(url: str) -> Contents:
        if url.startswith("sqlite:///"):
            path = Path(url.removeprefix("sqlite:///"))
            return restore_sqlite(args.source, path, force=args.force)
        from llmeu.ledger.pg_backups import restore_postgres

        return asyncio.run(restore_postgres(url, args.source, os.environ, force=args.force))

    return _run("restore", args, work, lambda where: f"{args.source} restored into {where}")


def _run(
    action: str,
    args: argparse.Namespace,
    work: Callable[[str], Contents],
    done: Callable[[str], str],
) -> int:
    settings = Settings.from_env(data_dir=args.data_dir, database_url=args.database_url)
    url = settings.effective_database_url
    try:
        if not url.startswith(("sqlite:///", "postgresql://", "postgres://")):
            raise ConfigError("unsupported database URL (sqlite:///… or postgresql://…)")
        contents: Contents = work(url)
    except (BackupFailed, ConfigError) as error:
        print(f"llmeu ledger {action}: {error}", file=sys.stderr)
        return 1
    where = _describe(url)
    if args.json:
        print(json.dumps({"action": action, "database": where, **contents.as_dict()}))
    else:
        print(done(where))
        for line in contents.lines():
            print(f"  {line}")
        if contents.chain.ok:
            print(
                "  check it against the checkpoints exported outside the database: "
                "llmeu audit verify --checkpoints DIR"
            )
    if not contents.chain.ok:
        print(
            f"llmeu ledger {action}: the copy is complete but its hash chain does not verify: "
            "the ledger it was taken from is damaged (see `llmeu audit verify`)",
            file=sys.stderr,
        )
        return 1
    return 0


def _describe(url: str) -> str:
    if url.startswith("sqlite:///"):
        return url
    from llmeu.ledger.postgres import PostgresDatabase

    return PostgresDatabase(url).describe()

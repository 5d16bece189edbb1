"""`llmeu audit export`: what a data-protection officer hands over, for a period.

    llmeu audit export --from 2026-11-01 --to 2026-12-01 --out exports/ [--config FILE]
                       [--data-dir DIR | --database-url URL]

Writes `records-of-processing.json` and `.md` (GDPR Art. 30), `subprocessors.csv`,
`calls.jsonl` (the metadata of every call, never content) and `admin-events.jsonl`
(every administrative change of the period, oldest first, as
`GET /v1/platform/admin-events` shows them: with each one's digest and place in the
chain, which `llmeu audit verify` checks) into `--out`, straight from the ledger
database and the configuration (`--config`, else the built-in catalog) — the same
files as `GET /v1/platform/exports/{name}`. `--to` is exclusive; both take an
ISO-8601 date or time (UTC unless it says otherwise).

Exit status: 0; 1 when the ledger cannot be read; 2 for bad arguments or configuration.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from llmeu.api.services.exports import ADMIN_EVENTS, EXPORTS, Period, admin_events_jsonl, render
from llmeu.cli import audit_verify
from llmeu.config import Settings
from llmeu.errors import ConfigError, DatabaseError, DatabaseUnavailable
from llmeu.ledger.admin_event_rows import all_events
from llmeu.ledger.api_keys import ApiKey
from llmeu.ledger.database import Row
from llmeu.ledger.opening import open_database
from llmeu.ledger.retention import calls_between
from llmeu.ledger.store import Store
from llmeu.routing.load import load_config


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("audit", help="evidence and records for auditors")
    actions = parser.add_subparsers(dest="action", required=True)
    export = actions.add_parser(
        "export", help="records of processing, subprocessors and call metadata for a period"
    )
    export.add_argument("--from", dest="since", type=_moment, required=True)
    export.add_argument("--to", dest="until", type=_moment, required=True)
    export.add_argument("--out", type=Path, required=True, help="directory to write into")
    export.add_argument("--config", type=Path, help="the gateway's configuration file")
    export.add_argument("--data-dir", type=Path, help="where the SQLite ledger lives")
    export.add_argument("--database-url", help="postgresql://… (a shared ledger)")
    export.set_defaults(func=run_export)
    audit_verify.register_action(actions)


def _moment(text: str) -> float:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO-8601 date or time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def run_export(args: argparse.Namespace) -> int:
    if args.since >= args.until:
        print("llmeu audit export: --from must be before --to", file=sys.stderr)
        return 2
    settings = Settings.from_env(
        data_dir=args.data_dir, database_url=args.database_url, config_file=args.config
    )
    try:
        config = load_config(
            settings.config_file, host=socket.gethostname(), local_country=settings.local_country
        )
    except ConfigError as error:
        print(f"llmeu audit export: {error}", file=sys.stderr)
        return 2
    period = Period(args.since, args.until)
    try:
        calls, keys, events = asyncio.run(_read(settings, period))
    except (DatabaseError, LookupError) as error:
        print(f"llmeu audit export: {error}", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    for name in EXPORTS:
        _, text = render(name, calls, keys, config.catalog, period, config.tool_servers)
        path = args.out / name
        path.write_text(text, encoding="utf-8")
        print(f"{path} ({len(text.encode())} bytes)")
    path = args.out / ADMIN_EVENTS
    text = admin_events_jsonl(events)
    path.write_text(text, encoding="utf-8")
    print(f"{path} ({len(text.encode())} bytes)")
    return 0


async def _read(
    settings: Settings, period: Period
) -> tuple[list[dict[str, Any]], list[ApiKey], list[Row]]:
    database = open_database(settings.effective_database_url)
    try:
        await database.open(create=False)
    except DatabaseUnavailable as error:
        raise LookupError(f"no ledger at {database.describe()}: {error}") from None
    try:
        store = Store(database)
        if not await store.has_schema():
            raise LookupError(f"no ledger in {database.describe()}")
        calls = await calls_between(database, period.since, period.until)
        events = await all_events(database, period.since, period.until)
        return calls, await store.list_keys(), events
    finally:
        await database.close()

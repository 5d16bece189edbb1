"""`llmeu audit verify`: walk the ledger's hash chain and its signed checkpoints.

    llmeu audit verify [--database-url URL | --data-dir DIR] [--checkpoints DIR]
                       [--jwks FILE_OR_URL]

Reads every final trace in chain order and every checkpoint (those stored in
the ledger, and those exported to `--checkpoints`, a directory of `*.jws`
files or one file with a token a line), then prints
`OK: N traces [and M admin events], chain intact up to <trace_id> (checkpoint
<time>)` and exits 0,
or one line per broken place — `edited`, `deleted`, `inserted`, `reordered`,
`truncated after checkpoint`, `invalid checkpoint`, `suspect` — with the
trace ids around it, and exits 1. A last line says which keys the checkpoints
were checked against.

Admin events are rows of the same chain (`llmeu.evidence.admin_events`): on
top of the chain's walk, each event's record in `admin_events` must hash to
the digest its chained row holds, and each side must have the other. An
edited, deleted or reordered event is named by its trace id, its place
(`seq`) and its action.

The keys: `--jwks`, a JWKS file or the gateway's
`https://…/.well-known/llmeu/jwks.json`. Without it, a ledger found through
the local settings (`--data-dir`, or neither option) is checked against the
gateway's own keys from the same settings as `llmeu serve`; a ledger named by
`--database-url` may be another machine's, whose keys this machine does not
have, so nothing is read from this machine's data directory: the command asks
for `--jwks` (exit 2) when there are checkpoints to check. Only checkpoints
kept outside the database can show that the tail was cut: keep the exported
ones where whoever can write the database cannot.

Exit status: 0 intact; 1 damage found, or no ledger; 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from llmeu.api.services.signing import configured_key_source, load_signing_keys
from llmeu.config import Settings
from llmeu.errors import ConfigError, DatabaseError, DatabaseUnavailable
from llmeu.evidence.admin_events import ADMIN_ROUTE, check_events, name_events
from llmeu.evidence.audit import ChainReport, verify_chain
from llmeu.ledger.admin_event_rows import all_events
from llmeu.ledger.chaining import chained_rows, read_checkpoint_files
from llmeu.ledger.database import Row
from llmeu.ledger.opening import open_database
from llmeu.ledger.store import Store

_JWKS_TIMEOUT_SECONDS = 10.0


def register_action(actions: Any) -> None:
    verify = actions.add_parser(
        "verify", help="check the ledger's hash chain and checkpoints; name each broken place"
    )
    verify.add_argument("--data-dir", type=Path, help="where the SQLite ledger lives")
    verify.add_argument("--database-url", help="postgresql://… (a shared ledger)")
    verify.add_argument("--checkpoints", type=Path, help="exported checkpoints (dir or file)")
    verify.add_argument("--jwks", help="keys that sign checkpoints: a JWKS file or URL")
    verify.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    settings = Settings.from_env(data_dir=args.data_dir, database_url=args.database_url)
    try:
        keys = _keys(args.jwks, settings, named_database=args.database_url is not None)
        exported = read_checkpoint_files(args.checkpoints) if args.checkpoints else []
    except (ConfigError, OSError, ValueError, httpx.HTTPError) as error:
        print(f"llmeu audit verify: {error}", file=sys.stderr)
        return 2
    try:
        rows, events, stored, where = asyncio.run(_read(settings))
    except (DatabaseError, LookupError) as error:
        print(f"llmeu audit verify: {error}", file=sys.stderr)
        return 1
    tokens = list(dict.fromkeys([*stored, *exported]))
    if tokens and keys is None:
        print(
            f"llmeu audit verify: {len(tokens)} checkpoint(s) of the ledger at {where} to check: "
            "name the keys that signed them with --jwks (the gateway's "
            "https://…/.well-known/llmeu/jwks.json, or a JWKS file); with --database-url no "
            "key is taken from this machine",
            file=sys.stderr,
        )
        return 2
    jwks, source = keys or ({"keys": []}, "")
    chain: ChainReport = verify_chain(rows, tokens, jwks, now=time.time())
    actions = {r["trace_id"]: r["request_model"] for r in rows if r.get("route") == ADMIN_ROUTE}
    findings = [*name_events(chain.findings, actions), *check_events(rows, events)]
    report = dataclasses.replace(chain, findings=tuple(findings), admin_events=len(actions))
    for line in report.lines():
        print(line)
    if tokens:
        print(f"checkpoints checked against {source}")
    return 0 if report.ok else 1


def _keys(
    source: str | None, settings: Settings, *, named_database: bool
) -> tuple[dict[str, Any], str] | None:
    """The JWKS to check checkpoints against, and where it came from; None when the
    command must ask for it."""
    if source is not None:
        return _read_jwks(source), f"the keys of --jwks {source}"
    if named_database:
        return None
    pem = configured_key_source(settings)
    if pem is None and not any(settings.generated_signing_key_dir.glob("*.key")):
        # no keys here: never generate one just to verify
        return {"keys": []}, f"no keys (none in {settings.generated_signing_key_dir})"
    where = pem or str(settings.generated_signing_key_dir)
    return load_signing_keys(settings).jwks(), f"this gateway's own keys ({where})"


def _read_jwks(source: str) -> dict[str, Any]:
    if source.startswith(("http://", "https://")):
        response = httpx.get(source, timeout=_JWKS_TIMEOUT_SECONDS)
        response.raise_for_status()
        document = response.json()
    else:
        document = json.loads(Path(source).read_text(encoding="utf-8"))
    if not isinstance(document, dict):
        raise ValueError(f"{source} is not a JWKS document")
    return document


async def _read(settings: Settings) -> tuple[list[Row], list[Row], list[str], str]:
    """The rows in chain order, the admin events, the stored checkpoints, and where the
    ledger is."""
    database = open_database(settings.effective_database_url)
    try:
        await database.open(create=False)
    except DatabaseUnavailable as error:
        raise LookupError(f"no ledger at {database.describe()}: {error}") from None
    try:
        if not await Store(database).has_schema():
            raise LookupError(f"no ledger in {database.describe()}")
        rows = await chained_rows(database)
        events = await all_events(database)
        checkpoints = await database.fetch("SELECT token FROM chain_checkpoints ORDER BY chain_seq")
        return rows, events, [r["token"] for r in checkpoints], database.describe()
    finally:
        await database.close()

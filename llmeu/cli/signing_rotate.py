"""`llmeu keys rotate-signing`: a new key for receipts and checkpoints; old receipts still verify.

    llmeu keys rotate-signing [--data-dir DIR] [--json]

Works on the key directory in the data dir (`signing-keys/`), where the first
start generated a key: a new key becomes the active one, older private keys
are destroyed and their public keys stay in the published JWKS. A running
gateway signs with the key it loaded until it restarts. When the settings
name a PEM key (`LLMEU_SIGNING_KEY_FILE`, `LLMEU_SIGNING_KEY`), rotation is
the operator's: install the new PEM and list the old public key in
`LLMEU_SIGNING_RETIRED_KEYS`; this command then refuses, saying so. A rotation
is an admin event (`signing.rotate`, the JWKS before and after) on the ledger of
the same settings (`--data-dir`, `LLMEU_DATABASE_URL`), when there is one.

Exit status: 0; 1 when the keys cannot be rotated here.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from llmeu.api.services.signing import configured_pem_source
from llmeu.cli.local_events import record_local
from llmeu.config import Settings
from llmeu.errors import ConfigError, DatabaseError, DatabaseUnavailable
from llmeu.evidence.signing_keys import load_directory_keys, rotate_directory_keys
from llmeu.ledger.opening import open_database
from llmeu.ledger.store import Store


def register_action(actions: Any) -> None:
    rotate = actions.add_parser(
        "rotate-signing", help="a new receipt-signing key; old public keys stay published"
    )
    rotate.add_argument("--data-dir", type=Path, help="the data dir holding signing-keys/")
    rotate.add_argument("--json", action="store_true", help="print the result as JSON")
    rotate.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    settings = Settings.from_env(data_dir=args.data_dir)
    source = configured_pem_source(settings)
    if source is not None:
        print(
            f"llmeu keys rotate-signing: the signing key comes from {source}; rotate it there "
            "and list the old public key in LLMEU_SIGNING_RETIRED_KEYS",
            file=sys.stderr,
        )
        return 1
    directory = settings.signing_key_dir
    try:
        before = load_directory_keys(directory).jwks() if any(directory.glob("*.key")) else None
        ring = rotate_directory_keys(directory)
    except (ConfigError, OSError) as error:
        print(f"llmeu keys rotate-signing: {error}", file=sys.stderr)
        return 1
    published = [key["kid"] for key in ring.jwks()["keys"]]
    try:
        event = asyncio.run(_record(settings, ring.active.kid, before, ring.jwks()))
    except DatabaseError as error:
        event = None
        print(f"llmeu keys rotate-signing: rotated, but not recorded: {error}", file=sys.stderr)
    if args.json:
        print(json.dumps({"active": ring.active.kid, "published": published,
                          "admin_event": event}))  # fmt: skip
        return 0
    print(
        f"new signing key {ring.active.kid} in {settings.signing_key_dir}; "
        f"{len(published)} keys published. Restart a running `llmeu serve` to sign with it."
    )
    if event is None:
        print("no ledger here holds admin events: the rotation is not on record")
    return 0


async def _record(
    settings: Settings, kid: str, before: dict[str, Any] | None, after: dict[str, Any]
) -> str | None:
    """The rotation's admin event on the settings' ledger; its id, or None without one."""
    database = open_database(settings.effective_database_url)
    try:
        await database.open(create=False)
    except DatabaseUnavailable:
        return None
    try:
        store = Store(database)
        if not await store.has_schema():
            return None
        event = await record_local(store, "signing.rotate", kid, before=before, after=after)
        return None if event is None else event.trace_id
    finally:
        await database.close()

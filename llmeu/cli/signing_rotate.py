"""`llmeu keys rotate-signing`: a new key for receipts and checkpoints; old receipts still verify.

    llmeu keys rotate-signing [--signing-key-dir DIR [--activate-in SECONDS] | --data-dir DIR]
                              [--json]

With a fleet's key directory (`--signing-key-dir`, `LLMEU_SIGNING_KEY_DIR`)
it writes one new private key file there, at once (a temporary dotfile
renamed into place), stamped with the moment it may start signing, so that
it is the newest: every gateway reading the directory signs with it within
its poll interval (`signing_key_poll_seconds`, 5 s) or at SIGHUP, without a
restart. `--activate-in` stamps it that many seconds ahead: every gateway
publishes it at once and signs with it only then, so no verifier holding a
gateway's JWKS meets its `kid` before it has it (choose more than the time
the key takes to reach every gateway plus the JWKS's cache lifetime, 300 s).
The older keys stay, private, in the directory: replicas that have not
looked yet still sign with them, and they verify the receipts they signed.
Retiring one is the operator's (`llmeu.evidence.key_directory`,
docs/evidence.md).

Without one it works on the key directory in the data dir (`signing-keys/`),
where the first start generated a key: a new key becomes the active one,
older private keys are destroyed and their public keys stay in the published
JWKS; the gateway processes on that machine pick it up the same way.

When the settings name a PEM key (`LLMEU_SIGNING_KEY_FILE`,
`LLMEU_SIGNING_KEY`), rotation is the operator's: install the new PEM and list
the old public key in `LLMEU_SIGNING_RETIRED_KEYS`; this command then refuses,
saying so.

A rotation is an admin event (`signing.rotate`: the new key's id, the JWKS
published before and after) on the ledger of the same settings (`--data-dir`,
`LLMEU_DATABASE_URL`), when there is one (`llmeu.cli.local_events`).

Exit status: 0; 1 when the keys cannot be rotated here.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from llmeu.api.services.signing import configured_key_source, configured_pem_source
from llmeu.cli.local_events import record_local
from llmeu.config import Settings
from llmeu.errors import ConfigError, DatabaseError, DatabaseUnavailable
from llmeu.evidence.key_directory import read_key_directory, write_new_key
from llmeu.evidence.signing_keys import KeyRing, load_directory_keys, rotate_directory_keys
from llmeu.ledger.opening import open_database
from llmeu.ledger.store import Store


def register_action(actions: Any) -> None:
    rotate = actions.add_parser(
        "rotate-signing", help="a new receipt-signing key; old public keys stay published"
    )
    rotate.add_argument(
        "--signing-key-dir", type=Path, help="a fleet's key directory to add the new key to"
    )
    rotate.add_argument(
        "--activate-in",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="with --signing-key-dir: publish the key now, sign with it this much later (0)",
    )
    rotate.add_argument("--data-dir", type=Path, help="the data dir holding signing-keys/")
    rotate.add_argument("--json", action="store_true", help="print the result as JSON")
    rotate.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    settings = Settings.from_env(data_dir=args.data_dir, signing_key_dir=args.signing_key_dir)
    try:
        configured_key_source(settings)
        if args.activate_in < 0 or (args.activate_in and settings.signing_key_dir is None):
            raise ConfigError("--activate-in takes seconds from 0, with --signing-key-dir")
    except ConfigError as error:
        print(f"llmeu keys rotate-signing: {error}", file=sys.stderr)
        return 1
    source = configured_pem_source(settings)
    if source is not None:
        print(
            f"llmeu keys rotate-signing: the signing key comes from {source}; rotate it there "
            "and list the old public key in LLMEU_SIGNING_RETIRED_KEYS",
            file=sys.stderr,
        )
        return 1
    directory = settings.signing_key_dir or settings.generated_signing_key_dir
    before = _published(settings)
    try:
        ring, signs_from = _rotate(settings, args.activate_in)
    except (ConfigError, OSError) as error:
        print(f"llmeu keys rotate-signing: {error}", file=sys.stderr)
        return 1
    published = [key["kid"] for key in ring.jwks()["keys"]]
    new = published[0] if signs_from is None else signs_from[0]
    try:
        event = asyncio.run(_record(settings, new, before, ring.jwks()))
    except DatabaseError as error:
        event = None
        print(f"llmeu keys rotate-signing: rotated, but not recorded: {error}", file=sys.stderr)
    if args.json:
        moment = None if signs_from is None else signs_from[1]
        result = {"active": ring.active.kid, "new": new, "published": published}
        print(json.dumps({**result, "signs_from": moment, "admin_event": event}))
        return 0
    when = "" if signs_from is None else f" from {signs_from[1]}"
    print(
        f"new signing key {new} in {directory}; {len(published)} keys published. Running "
        f"gateways sign with it{when}, once they have looked (every "
        f"{settings.signing_key_poll_seconds:g} s, or at SIGHUP)."
    )
    if event is None:
        print("no ledger here holds admin events: the rotation is not on record")
    return 0


def _published(settings: Settings) -> dict[str, Any] | None:
    """The JWKS the keys publish before the rotation; None when there is no key yet."""
    try:
        if settings.signing_key_dir is not None:
            return read_key_directory(settings.signing_key_dir).jwks()
        directory = settings.generated_signing_key_dir
        return load_directory_keys(directory).jwks() if any(directory.glob("*.key")) else None
    except (ConfigError, OSError):
        return None


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


def _rotate(settings: Settings, activate_in: float) -> tuple[KeyRing, tuple[str, str] | None]:
    """The ring now, and for a fleet's directory the new key's kid and when it signs."""
    directory = settings.signing_key_dir
    if directory is None:
        return rotate_directory_keys(settings.generated_signing_key_dir), None
    if not directory.is_dir():
        raise ConfigError(f"signing keys in {directory}: no such directory")
    now = time.time_ns()
    signs_from = now + int(activate_in * 1e9)
    key = write_new_key(directory, signs_from_ns=signs_from)
    ring = read_key_directory(directory, now_ns=signs_from)
    if ring.active.kid != key.kid:  # a file stamped even later outranks it
        raise ConfigError(
            f"the new key {key.kid} was written to {directory}, but "
            f"{ring.active.kid} is newer by its file name and will sign instead"
        )
    moment = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(signs_from // 1_000_000_000))
    return read_key_directory(directory, now_ns=now), (key.kid, moment)

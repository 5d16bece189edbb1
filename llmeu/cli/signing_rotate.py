"""`llmeu keys rotate-signing`: a new key for receipts and checkpoints; old receipts still verify.

    llmeu keys rotate-signing [--signing-key-dir DIR | --data-dir DIR] [--json]

With a fleet's key directory (`--signing-key-dir`, `LLMEU_SIGNING_KEY_DIR`)
it writes one new private key file there, at once (a temporary dotfile
renamed into place), named by its creation time so that it is the newest:
every gateway reading the directory signs with it within its poll interval
(`signing_key_poll_seconds`, 5 s) or at SIGHUP, without a restart. The
older keys stay, private, in the directory: replicas that have not looked
yet still sign with them, and they verify the receipts they signed. Retiring
one is the operator's (`llmeu.evidence.key_directory`, docs/evidence.md).

Without one it works on the key directory in the data dir (`signing-keys/`),
where the first start generated a key: a new key becomes the active one,
older private keys are destroyed and their public keys stay in the published
JWKS; the gateway processes on that machine pick it up the same way.

When the settings name a PEM key (`LLMEU_SIGNING_KEY_FILE`,
`LLMEU_SIGNING_KEY`), rotation is the operator's: install the new PEM and list
the old public key in `LLMEU_SIGNING_RETIRED_KEYS`; this command then refuses,
saying so.

Exit status: 0; 1 when the keys cannot be rotated here.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from llmeu.api.services.signing import configured_key_source, configured_pem_source
from llmeu.config import Settings
from llmeu.errors import ConfigError
from llmeu.evidence.key_directory import read_key_directory, write_new_key
from llmeu.evidence.signing_keys import KeyRing, rotate_directory_keys


def register_action(actions: Any) -> None:
    rotate = actions.add_parser(
        "rotate-signing", help="a new receipt-signing key; old public keys stay published"
    )
    rotate.add_argument(
        "--signing-key-dir", type=Path, help="a fleet's key directory to add the new key to"
    )
    rotate.add_argument("--data-dir", type=Path, help="the data dir holding signing-keys/")
    rotate.add_argument("--json", action="store_true", help="print the result as JSON")
    rotate.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    settings = Settings.from_env(data_dir=args.data_dir, signing_key_dir=args.signing_key_dir)
    try:
        configured_key_source(settings)
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
    try:
        ring = _rotate(settings.signing_key_dir, settings.generated_signing_key_dir)
    except (ConfigError, OSError) as error:
        print(f"llmeu keys rotate-signing: {error}", file=sys.stderr)
        return 1
    published = [key["kid"] for key in ring.jwks()["keys"]]
    if args.json:
        print(json.dumps({"active": ring.active.kid, "published": published}))
        return 0
    print(
        f"new signing key {ring.active.kid} in {directory}; {len(published)} keys published. "
        f"Running gateways sign with it within {settings.signing_key_poll_seconds:g} s "
        "or at SIGHUP."
    )
    return 0


def _rotate(fleet_directory: Path | None, generated_directory: Path) -> KeyRing:
    if fleet_directory is None:
        return rotate_directory_keys(generated_directory)
    if not fleet_directory.is_dir():
        raise ConfigError(f"signing keys in {fleet_directory}: no such directory")
    key = write_new_key(fleet_directory)
    ring = read_key_directory(fleet_directory)
    if ring.active.kid != key.kid:  # a file named as from the future outranks it
        raise ConfigError(
            f"the new key {key.kid} was written to {fleet_directory}, but "
            f"{ring.active.kid} is newer by its file name and still signs"
        )
    return ring

"""`llmeu keys rotate-signing`: a new key for receipts and checkpoints; old receipts still verify.

    llmeu keys rotate-signing [--data-dir DIR] [--json]

Works on the key directory in the data dir (`signing-keys/`), where the first
start generated a key: a new key becomes the active one, older private keys
are destroyed and their public keys stay in the published JWKS. A running
gateway signs with the key it loaded until it restarts. When the settings
name a PEM key (`LLMEU_SIGNING_KEY_FILE`, `LLMEU_SIGNING_KEY`), rotation is
the operator's: install the new PEM and list the old public key in
`LLMEU_SIGNING_RETIRED_KEYS`; this command then refuses, saying so.

Exit status: 0; 1 when the keys cannot be rotated here.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from llmeu.api.services.signing import configured_pem_source
from llmeu.config import Settings
from llmeu.errors import ConfigError
from llmeu.evidence.signing_keys import rotate_directory_keys


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
    try:
        ring = rotate_directory_keys(settings.signing_key_dir)
    except (ConfigError, OSError) as error:
        print(f"llmeu keys rotate-signing: {error}", file=sys.stderr)
        return 1
    published = [key["kid"] for key in ring.jwks()["keys"]]
    if args.json:
        print(json.dumps({"active": ring.active.kid, "published": published}))
        return 0
    print(
        f"new signing key {ring.active.kid} in {settings.signing_key_dir}; "
        f"{len(published)} keys published. Restart a running `llmeu serve` to sign with it."
    )
    return 0

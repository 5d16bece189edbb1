"""Which keys `llmeu audit verify` checks checkpoints against: `--jwks`, or, for the ledger of
the local settings, the gateway's own; never this machine's keys for a ledger named by
`--database-url` (it may be another machine's): it asks for `--jwks` instead."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from llmeu.evidence.signing_keys import KeyRing, load_directory_keys
from llmeu.ledger.chaining import CheckpointPolicy, Checkpoints
from llmeu.ledger.store import Store
from tests.ledger.conftest import trace, write
from tests.ledger.test_chain import KEY
from tests.support.processes import REPO


def verify(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    """`llmeu audit verify` on a machine whose data directory holds a key of its own."""
    data_dir = tmp_path / "this-machine"
    load_directory_keys(data_dir / "signing-keys")
    env = {**os.environ, "LLMEU_DATA_DIR": str(data_dir)}
    env.pop("LLMEU_SIGNING_KEY", None)
    done = subprocess.run(
        [sys.executable, "-m", "llmeu.cli.main", "audit", "verify", *args],
        capture_output=True, text=True, cwd=REPO, timeout=60, env=env, check=False,
    )  # fmt: skip
    return done.returncode, done.stdout, done.stderr


async def test_a_named_database_is_checked_against_jwks_or_asks_for_it(
    store: Store, database_url: str, tmp_path: Path
) -> None:
    await write(store, trace(), trace())
    status, out, err = verify(tmp_path, "--database-url", database_url)
    assert (status, out.splitlines()) == (0, [out.splitlines()[0]]), out + err  # nothing to check
    assert out.startswith("OK: 2 traces") and "(no checkpoint)" in out

    await Checkpoints(store.db, KEY, CheckpointPolicy()).make()
    status, out, err = verify(tmp_path, "--database-url", database_url)
    assert (status, out) == (2, ""), err  # not a false alarm: a question
    assert "1 checkpoint(s)" in err and "--jwks" in err and "invalid" not in err

    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(KeyRing(KEY).jwks()))
    status, out, err = verify(tmp_path, "--database-url", database_url, "--jwks", str(jwks))
    assert status == 0, out + err
    assert out.splitlines()[1:] == [f"checkpoints checked against the keys of --jwks {jwks}"]
